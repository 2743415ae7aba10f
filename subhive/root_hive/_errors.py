"""Errors of the root hive, beside the library's tree in :mod:`subhive.errors`; each has a stable ``code``.

Their gRPC statuses: docs/root-hive.md#the-grpc-service.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..errors import Location, Problem, SubhiveError

__all__ = ["Conflict", "NotFound", "PermissionDenied", "Unauthenticated"]


class Unauthenticated(SubhiveError):
    """The token is missing, unknown, or was rotated away."""

    default_code = "auth.unauthenticated"


class PermissionDenied(SubhiveError):
    """The caller is known but may not do this (a hive approving, or proposing another provider's contract)."""

    default_code = "auth.permission_denied"


class Conflict(SubhiveError):
    """The request is well-formed but clashes with the root's state (e.g. an accepted version is immutable).

    It may carry the changes or problems that explain it, so a caller sees *why* and not just *no*.
    """

    default_code = "state.conflict"
    exit_code = 1

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        location: Location | None = None,
        hint: str | None = None,
        problems: Iterable[Problem] = (),
        details: dict[str, object] | None = None,
    ) -> None:
        super().__init__(message, code=code, location=location, hint=hint)
        self._extra = tuple(problems)
        self.details = details or {}

    @property
    def problems(self) -> tuple[Problem, ...]:
        return self._extra or super().problems

    def to_dict(self) -> dict[str, object]:
        out = super().to_dict()
        out.update(self.details)
        return out


class NotFound(SubhiveError):
    """No hive, approval, proposal or announcement has that name or id."""

    default_code = "state.not_found"
