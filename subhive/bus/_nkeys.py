"""NATS NKeys: each identity (every hive, the framework's admin) proves itself with its own Ed25519 seed, and the
server's configuration holds only public keys, so nothing written for the server is a secret. Decision 0058.
"""

from __future__ import annotations

import contextlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

from subhive.errors import InputError, Location

__all__ = ["NKey", "nkey_of", "public_key_of"]

# A user's public key: "U" and 55 more base32 characters.
_PUBLIC = re.compile(r"U[A-Z2-7]{55}")


@dataclass(frozen=True)
class NKey:
    """A user's public NKey, as the server's configuration names it.

    >>> NKey("U" + "A" * 55).public_key[:1]
    'U'
    """

    public_key: str

    def __post_init__(self) -> None:
        if not isinstance(self.public_key, str) or not _PUBLIC.fullmatch(self.public_key):
            raise InputError(
                "not a NATS user public key (U followed by 55 base32 characters)",
                code="bus.nkey_invalid",
                hint="derive it from the user's seed: subhive.bus.public_key_of",
            )


def public_key_of(seed: bytes) -> NKey:
    """The public key of a user seed (``SU...``)."""
    import nkeys

    try:
        return NKey(nkeys.from_seed(bytearray(seed)).public_key.decode())
    except Exception as exc:  # nkeys raises its own error types, and ValueError for bad base32
        raise InputError(
            f"not a NATS user seed ({type(exc).__name__})", code="bus.nkey_invalid", hint="make a new one"
        ) from None


def nkey_of(path: Path) -> NKey:
    """The public key of the user seed in ``path``, made (owner-only, 0600) if the file does not exist yet."""
    import nkeys

    if not path.exists():
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        seed = nkeys.encode_seed(os.urandom(32), nkeys.PREFIX_BYTE_USER)
        # Written whole under another name, then linked into place: a crash leaves no empty seed behind, and of
        # two processes making it at once the first wins and the second reads the first's.
        temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(seed)
                out.flush()
                os.fsync(out.fileno())
            with contextlib.suppress(FileExistsError):
                os.link(temporary, path)
        finally:
            temporary.unlink(missing_ok=True)
    try:
        seed = path.read_bytes().strip()
    except OSError as exc:
        raise InputError(
            f"cannot read the NKey seed {path}: {exc.strerror or exc}",
            code="bus.nkey_invalid",
            location=Location(file=str(path)),
        ) from None
    return public_key_of(seed)
