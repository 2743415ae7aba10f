"""A contract as the runtime sees it: operations, events, and compiled validators for their payloads.
Validation uses jsonschema-rs with formats asserted (docs/decisions/0009-format-is-asserted.md) and patterns read
by an engine that matches them right (decision 0137).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .._rs_validator import runtime_validator
from ..errors import InputError, Location
from ..semver import Version

__all__ = ["ContractBinding", "PayloadInvalid", "UnknownOperation"]

Moving = Literal["outgoing", "incoming"]


class PayloadInvalid(InputError):
    """A payload does not match its schema: ``pointer`` is where in the payload, ``keyword`` which rule."""

    default_code = "payload.invalid"

    def __init__(
        self,
        message: str,
        *,
        contract: str,
        schema: str,
        pointer: str,
        keyword: str,
        moving: Moving,
        code: str | None = None,
    ) -> None:
        super().__init__(
            message,
            code=code,
            location=Location(file=f"{contract}:{schema}", pointer=pointer),
            hint="fix the payload to match the contract's schema"
            if moving == "outgoing"
            else "the sender broke the contract; the message was refused",
        )
        self.contract = contract
        self.schema = schema
        self.pointer = pointer
        self.keyword = keyword
        self.moving = moving

    def to_dict(self) -> dict[str, object]:
        return {**super().to_dict(), "pointer": self.pointer, "keyword": self.keyword, "schema": self.schema}


class UnknownOperation(InputError):
    default_code = "contract.unknown_operation"


@dataclass(frozen=True)
class ContractBinding:
    """One accepted contract version, ready to validate payloads.

    ``operations`` maps an operation to its (input, output) schema keys, ``events`` an event to its payload
    schema key; ``schemas`` maps those keys (``"operations.place_order.input"``) to self-contained schemas.
    Generated stub packages ship it as ``contract.json`` (name, version, provider, hash, which schema each
    operation and event uses, every schema bundled) and load it once; a validator is compiled on first use.

    >>> CONTRACT = ContractBinding.load(Path(__file__).with_name("contract.json"))  # doctest: +SKIP
    >>> CONTRACT.check("operations.place_order.input", payload, moving="outgoing")  # doctest: +SKIP
    """

    name: str
    version: Version
    provider: str
    operations: Mapping[str, tuple[str, str]]
    events: Mapping[str, str]
    schemas: Mapping[str, Any]
    hash: str = ""
    #: Operations whose provider promises that a request handled twice is handled once (sent again on a drop).
    idempotent: frozenset[str] = frozenset()
    _validators: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def major(self) -> int:
        return self.version.major

    @property
    def line(self) -> str:
        """The compatibility line the bus serves this version on: "1", or below 1.0.0 "0.2", "0.0.3" (decision
        0140). Two versions of one line share subjects; two lines never do."""
        return self.version.line

    @functools.cached_property
    def id(self) -> str:
        """``orders@1.1.0``: how headers and errors name the contract version (every message's header: kept)."""
        return f"{self.name}@{self.version}"

    @classmethod
    def load(cls, path: Path) -> ContractBinding:
        """Read a generated ``contract.json``."""
        data = json.loads(path.read_text(encoding="utf-8"))
        return cls.from_dict(data)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ContractBinding:
        return cls(
            name=data["name"],
            version=Version.parse(data["version"]),
            provider=data["provider"],
            operations={k: (v["input"], v["output"]) for k, v in data["operations"].items()},
            events=dict(data["events"]),
            schemas=dict(data["schemas"]),
            hash=data.get("hash", ""),
            idempotent=frozenset(k for k, v in data["operations"].items() if v.get("idempotent") is True),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": str(self.version),
            "provider": self.provider,
            "hash": self.hash,
            "operations": {
                k: {"input": i, "output": o, **({"idempotent": True} if k in self.idempotent else {})}
                for k, (i, o) in sorted(self.operations.items())
            },
            "events": dict(sorted(self.events.items())),
            "schemas": dict(sorted(self.schemas.items())),
        }

    def operation(self, name: str) -> tuple[str, str]:
        try:
            return self.operations[name]
        except KeyError:
            raise UnknownOperation(
                f"{self.id} has no operation {name!r}; it has: {', '.join(sorted(self.operations)) or 'none'}"
            ) from None

    def event(self, name: str) -> str:
        try:
            return self.events[name]
        except KeyError:
            raise UnknownOperation(
                f"{self.id} has no event {name!r}; it has: {', '.join(sorted(self.events)) or 'none'}",
                code="contract.unknown_event",
            ) from None

    def validator(self, schema: str) -> Any:
        """The compiled jsonschema-rs validator of the schema named ``schema`` (compiled once, then kept): for
        callers that check many payloads against one schema, ``is_valid`` first and :meth:`check` for why not."""
        validator = self._validators.get(schema)
        if validator is None:
            validator = runtime_validator(self.schemas[schema], validate_formats=True)
            self._validators[schema] = validator
        return validator

    def check(self, schema: str, payload: Any, *, moving: Moving) -> None:
        """Raise :class:`PayloadInvalid` unless ``payload`` is valid under the schema named ``schema``; a value
        the validator cannot even read (a lone surrogate, a key that is not text) is ``payload.bad_unicode`` or
        ``payload.malformed``, never the validator's own exception."""
        validator = self._validators.get(schema) or self.validator(schema)
        try:
            if validator.is_valid(payload):
                return
            error = next(iter(validator.iter_errors(payload)))
        except Exception as exc:  # jsonschema-rs raises UnicodeEncodeError, ValueError... for non-JSON values
            # ... and "Recursion limit reached" describing an error more than ~255 levels deep.
            deep = isinstance(exc, RecursionError) or "recursion limit" in str(exc).lower()
            code = (
                "payload.bad_unicode"
                if isinstance(exc, UnicodeError)
                else "payload.too_deep"
                if deep
                else "payload.malformed"
            )
            raise PayloadInvalid(
                f"{moving} {self.id} {schema} payload is not JSON text: {type(exc).__name__}: "
                f"{str(exc).encode('ascii', 'backslashreplace').decode()}"[:500],
                contract=self.id,
                schema=schema,
                pointer="",
                keyword="",
                moving=moving,
                code=code,
            ) from None
        pointer = "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in error.instance_path)
        keyword = str(error.schema_path[-1]) if error.schema_path else ""
        raise PayloadInvalid(
            f"{moving} {self.id} {schema} payload is invalid at {pointer or '/'}: {error.message}",
            contract=self.id,
            schema=schema,
            pointer=pointer,
            keyword=keyword,
            moving=moving,
        )
