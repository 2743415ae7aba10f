"""The blackboard schema: which keys a hive's board holds and what each value must look like.
A board is one JSON object from keys to values, so a write ``key = value`` is valid exactly when ``{key: value}``
is: plain JSON Schema tools check it too. See docs/hives.md#the-blackboard.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema_rs

from .._rs_validator import runtime_validator
from ..errors import InputError, Location

__all__ = ["BlackboardInvalid", "BoardSchema"]


class BlackboardInvalid(InputError):
    """A write the hive's blackboard schema refuses: ``key`` and ``pointer`` (inside the value) say where."""

    default_code = "blackboard.invalid"

    def __init__(self, message: str, *, hive: str, key: str, pointer: str, keyword: str, writer: str = "") -> None:
        super().__init__(
            message,
            location=Location(file=f"blackboard {hive}", pointer=pointer, subject=key),
            hint="write a value the hive's blackboard.schema.json declares for this key",
        )
        self.hive = hive
        self.key = key
        self.pointer = pointer
        self.keyword = keyword
        self.writer = writer

    def to_dict(self) -> dict[str, object]:
        return {
            **super().to_dict(),
            "key": self.key,
            "pointer": self.pointer,
            "keyword": self.keyword,
            "writer": self.writer,
        }


def _escape(token: object) -> str:
    return str(token).replace("~", "~0").replace("/", "~1")


class BoardSchema:
    """A compiled blackboard schema. ``None`` as the schema accepts every JSON value under every key.

    >>> schema = BoardSchema({"type": "object", "patternProperties": {"^tasks\\.[^.]+$": {"type": "object"}},
    ...                       "additionalProperties": False})
    >>> schema.check("tasks.t1", {"title": "x"}) is None
    True
    """

    def __init__(self, schema: dict[str, Any] | None, *, hive: str = "") -> None:
        self.schema = schema
        self.hive = hive
        self._validator = None if schema is None else runtime_validator(schema, validate_formats=True)

    @classmethod
    def load(cls, path: Path, *, hive: str = "") -> BoardSchema:
        """Read ``blackboard.schema.json`` (JSON or YAML); a file that is not a valid schema is an InputError."""
        from .._source import load_document

        document = load_document(path).data  # a missing or unparsable file is already a located InputError
        if not isinstance(document, dict):
            raise InputError(
                "the blackboard schema must be a JSON object",
                code="blackboard.schema_invalid",
                location=Location(file=str(path), pointer=""),
            )
        try:
            return cls(document, hive=hive)
        except (ValueError, jsonschema_rs.ValidationError) as exc:
            raise InputError(
                f"the blackboard schema does not compile: {exc}",
                code="blackboard.schema_invalid",
                location=Location(file=str(path)),
                hint="check it against JSON Schema 2020-12",
            ) from None

    def check(self, key: str, value: Any, *, writer: str = "") -> None:
        """Raise :class:`BlackboardInvalid` unless ``value`` may be stored under ``key``."""
        if self._validator is None or self._validator.is_valid({key: value}):
            return
        error = next(iter(self._validator.iter_errors({key: value})))
        path = list(error.instance_path)
        # The instance is {key: value}: drop the key from the pointer, so it points into the value.
        pointer = "".join("/" + _escape(p) for p in path[1:])
        keyword = str(error.schema_path[-1]) if error.schema_path else ""
        what = (
            f"{key!r} is not a key this blackboard declares"
            if not path and keyword == "additionalProperties"
            else f"the value for {key!r} is invalid at {pointer or '/'}: {error.message}"
        )
        raise BlackboardInvalid(what, hive=self.hive, key=key, pointer=pointer, keyword=keyword, writer=writer)
