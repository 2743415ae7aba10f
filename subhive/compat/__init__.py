"""Compatibility analysis: per-direction diffs of JSON Schema and protobuf, and contract-level checks.

    >>> from subhive.compat import diff_schemas
    >>> report = diff_schemas({"type": "integer"}, {"type": "number"})
    >>> report.backward, report.forward
    (True, False)
"""

from ._report import Change, DiffReport, Direction
from .files import diff_files
from .jsonschema import diff_schemas
from .protobuf import diff_protos

__all__ = ["Change", "DiffReport", "Direction", "diff_files", "diff_protos", "diff_schemas"]
