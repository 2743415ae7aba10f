"""Who is calling: hive tokens (kept as SHA-256 only) and the admin token, which approvals need."""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import secrets
from pathlib import Path

from ._errors import PermissionDenied, Unauthenticated
from ._lock import fsync_directory
from ._state import RootState

__all__ = ["Authentication", "token_sha", "write_secret"]


def token_sha(token: str) -> str:
    """What the root keeps of a token: its SHA-256, so the state on disk holds no usable secret."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def write_secret(path: Path, secret: str) -> None:
    """Write ``secret`` to ``path`` readable by its owner only (mode 0600 from creation, never wider)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, (secret + "\n").encode("utf-8"))
    finally:
        os.close(fd)
    os.replace(tmp, path)


class Authentication(RootState):
    """Tokens and the admin."""

    def admin_token(self) -> str:
        """The human's token (``.subhive/root/admin.token``, mode 0600): approvals need it."""
        return self._admin_token_file()

    def is_admin(self, token: str) -> bool:
        return isinstance(token, str) and hmac.compare_digest(token_sha(token), self._admin_sha)

    def authenticate(self, token: str) -> str:
        """The name of the hive holding ``token``; raises :class:`Unauthenticated`.

        >>> root.authenticate(root.register_hive("db").token)  # doctest: +SKIP
        'db'
        """
        name = self._tokens.get(token_sha(token)) if isinstance(token, str) and token else None
        if name is None:
            raise Unauthenticated(
                "unknown or rotated token",
                hint="register the hive (or rotate its token) and use the token the root returned",
            )
        return name

    def _admin_token_file(self) -> str:
        path = self.state_dir / "admin.token"
        if not path.exists():
            token = secrets.token_urlsafe(32)
            with contextlib.suppress(FileExistsError):
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                try:
                    os.write(fd, (token + "\n").encode())
                    os.fsync(fd)
                finally:
                    os.close(fd)
                fsync_directory(path.parent)
        return path.read_text(encoding="utf-8").strip()

    def _require_admin(self, token: str) -> None:
        if self.is_admin(token):
            return
        if isinstance(token, str) and token_sha(token) in self._tokens:
            raise PermissionDenied(
                f"hive {self._tokens[token_sha(token)]!r} may not decide approvals: approval is for humans",
                code="auth.not_admin",
                hint="a human approves with the admin token (.subhive/root/admin.token)",
            )
        raise Unauthenticated(
            "approvals need the admin token",
            code="auth.unauthenticated",
            hint="use the token in .subhive/root/admin.token",
        )
