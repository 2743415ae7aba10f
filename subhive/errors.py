"""The one exception tree of subhive: each error has a stable ``code``, a message, a :class:`Location` and a hint.
The library raises and never prints; the CLI turns an error into an ``error:`` line, a hint and an exit code, and
what crosses a wire is :meth:`SubhiveError.to_dict`, never a ``repr`` or a traceback::

    SubhiveError                 code, message, location, hint
    ├── InputError               the user's input is wrong (exit 2); may carry several problems
    │   └── ContractInvalid      a contract or schema failed lint
    ├── UsageError               a command or API was called the wrong way (exit 2)
    └── CheckFailed              a check ran and said no, e.g. a wrong semver bump (exit 1)

Each area's errors (``BusError``, ``RpcFailed``, ``NotFound`` ...) derive from one of these.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

__all__ = [
    "CheckFailed",
    "ContractInvalid",
    "InputError",
    "Location",
    "Problem",
    "SubhiveError",
    "UsageError",
]


@dataclass(frozen=True, slots=True)
class Location:
    """Where something happened. Every part is optional; ``str()`` shows the parts that are known."""

    file: str | None = None
    line: int | None = None
    pointer: str | None = None
    subject: str | None = None

    def __str__(self) -> str:
        parts: list[str] = []
        if self.file:
            parts.append(f"{self.file}:{self.line}" if self.line else self.file)
        if self.pointer is not None:
            parts.append(self.pointer or "/")
        if self.subject:
            parts.append(f"subject {self.subject}")
        return " ".join(parts)

    def to_dict(self) -> dict[str, object]:
        return {
            k: v
            for k, v in (("file", self.file), ("line", self.line), ("pointer", self.pointer), ("subject", self.subject))
            if v is not None
        }


@dataclass(frozen=True, slots=True)
class Problem:
    """One finding: a stable code, what is wrong, where, and how to fix it."""

    code: str
    message: str
    location: Location = field(default_factory=Location)
    hint: str | None = None

    def __str__(self) -> str:
        where = str(self.location)
        text = f"{where}: {self.message}" if where else self.message
        return f"{text} [{self.code}]"

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"code": self.code, "message": self.message, **self.location.to_dict()}
        if self.hint:
            out["hint"] = self.hint
        return out


class SubhiveError(Exception):
    """Base of every subhive error."""

    default_code = "subhive.error"
    exit_code = 2

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        location: Location | None = None,
        hint: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code or self.default_code
        self.location = location or Location()
        self.hint = hint

    @property
    def problems(self) -> tuple[Problem, ...]:
        return (Problem(self.code, self.message, self.location, self.hint),)

    def __str__(self) -> str:
        where = str(self.location)
        return f"{where}: {self.message}" if where else self.message

    def to_dict(self) -> dict[str, object]:
        return {"error": self.code, "message": self.message, "problems": [p.to_dict() for p in self.problems]}


class InputError(SubhiveError):
    """The user's input (a file, a schema, a manifest, an argument's value) is wrong."""

    default_code = "input.invalid"


class ContractInvalid(InputError):
    """A contract or schema failed lint; ``problems`` lists every finding, not just the first."""

    default_code = "contract.invalid"

    def __init__(self, problems: Iterable[Problem], *, summary: str | None = None) -> None:
        self._problems = tuple(problems)
        if not self._problems:
            raise ValueError("ContractInvalid needs at least one problem")
        first = self._problems[0]
        count = len(self._problems)
        message = summary or (first.message if count == 1 else f"{count} problems, first: {first.message}")
        super().__init__(message, code=first.code if count == 1 else None, location=first.location, hint=first.hint)

    @property
    def problems(self) -> tuple[Problem, ...]:
        return self._problems

    def __iter__(self) -> Iterator[Problem]:
        return iter(self._problems)


class UsageError(SubhiveError):
    """A command or API was called the wrong way (unknown option value, missing argument, ...)."""

    default_code = "usage.invalid"


class CheckFailed(SubhiveError):
    """A check ran to the end and its answer is no (exit code 1), e.g. a semver bump that hides a break."""

    default_code = "check.failed"
    exit_code = 1
