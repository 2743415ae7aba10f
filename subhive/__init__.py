"""subhive: contract-first sub-hives for multi-agent work on large codebases.

The public surface is organised by area: ``subhive.compat`` (per-direction diffs and contract checks),
``subhive.contract`` (the contract format and lint), ``subhive.semver`` and ``subhive.errors``.
"""

from .errors import CheckFailed, ContractInvalid, InputError, Location, Problem, SubhiveError, UsageError

__all__ = ["CheckFailed", "ContractInvalid", "InputError", "Location", "Problem", "SubhiveError", "UsageError"]
