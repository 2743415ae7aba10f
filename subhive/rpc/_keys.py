"""What proves a gRPC caller's hive: one token per (consumer, provider) pair, derived from a master secret only
the supervisor holds, and the file each hive gets (re-read when it changes, so a new consumer needs no restart).
Why this scheme: docs/decisions/0027-grpc-caller-identity.md; files and limits: docs/rpc.md#who-may-call.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._files import read_json, write_json
from ..errors import InputError, Location

__all__ = ["HIVE_HEADER", "TOKEN_HEADER", "GrpcKeys", "KeyFile", "Keys", "issue_keys", "pair_token", "write_keys"]

log = logging.getLogger("subhive.rpc")

#: The metadata a caller sends: the hive it speaks for, and its token for the provider it calls.
HIVE_HEADER = "subhive-hive"
TOKEN_HEADER = "subhive-token"
KEYS_FORMAT = 1
_LABEL = b"subhive grpc caller v1"


def pair_token(master: bytes, consumer: str, provider: str) -> str:
    """The token ``consumer`` presents to ``provider``: HMAC-SHA256(master, label, consumer, provider), hex.

    Hive names cannot hold a NUL, so no two pairs share an input.

    >>> master = bytes(32)
    >>> pair_token(master, "backend", "db") == pair_token(master, "backend", "db") != pair_token(master, "ui", "db")
    True
    """
    message = b"\0".join((_LABEL, consumer.encode(), provider.encode()))
    return hmac.new(master, message, hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class GrpcKeys:
    """One hive's gRPC credentials.

    ``present``: provider hive -> the token this hive sends it. ``verify``: caller hive -> the token this
    hive accepts from it (a provider's whole tree). ``consumers``: (contract, major) this hive provides -> the
    hives the lock lists as its consumers, the only ones it answers besides itself.
    """

    hive: str
    present: Mapping[str, str] = field(default_factory=dict)
    verify: Mapping[str, str] = field(default_factory=dict)
    consumers: Mapping[tuple[str, int], frozenset[str]] = field(default_factory=dict)

    def current(self) -> GrpcKeys:
        """These keys (a :class:`KeyFile` answers with what its file holds now)."""
        return self

    def to_dict(self) -> dict[str, Any]:
        nested: dict[str, dict[str, list[str]]] = {}
        for (contract, major), hives in sorted(self.consumers.items()):
            nested.setdefault(contract, {})[str(major)] = sorted(hives)
        return {
            "format": KEYS_FORMAT,
            "hive": self.hive,
            "present": dict(sorted(self.present.items())),
            "verify": dict(sorted(self.verify.items())),
            "consumers": nested,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, where: Location | None = None) -> GrpcKeys:
        """Keys from :meth:`to_dict`'s shape; anything else is an InputError ``rpc.keys_invalid``."""
        try:
            if data.get("format") != KEYS_FORMAT or not isinstance(data.get("hive"), str):
                raise ValueError(f'expected {{"format": {KEYS_FORMAT}, "hive": ...}}')
            present = _strings(data.get("present", {}))
            verify = _strings(data.get("verify", {}))
            consumers = {
                (str(contract), int(major)): frozenset(str(h) for h in hives)
                for contract, lines in dict(data.get("consumers", {})).items()
                for major, hives in dict(lines).items()
            }
        except (TypeError, ValueError, AttributeError) as exc:
            raise InputError(
                f"not a gRPC key file: {exc}",
                code="rpc.keys_invalid",
                location=where,
                hint="subhive up writes it; run subhive down && subhive up to get a new one",
            ) from None
        return cls(str(data["hive"]), present, verify, consumers)


def _strings(raw: object) -> dict[str, str]:
    if not isinstance(raw, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in raw.items()):
        raise ValueError("present and verify must map hive names to tokens")
    return dict(raw)


class KeyFile:
    """A hive's :class:`GrpcKeys` in a file, re-read whenever the file changes.

    >>> keys = KeyFile(Path(os.environ["SUBHIVE_GRPC_KEYS"]))      # doctest: +SKIP
    >>> keys.current().hive                                          # doctest: +SKIP
    'db'

    The file must be readable when the object is made (InputError ``rpc.keys_missing`` or
    ``rpc.keys_invalid`` otherwise). Each :meth:`current` costs one ``stat``; a later unreadable or broken
    version is logged and the last good keys stay in force, so a half-finished edit never opens anything.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._stamp: tuple[int, int, int] | None = None
        self._keys = self._load()

    @property
    def hive(self) -> str:
        return self._keys.hive

    def current(self) -> GrpcKeys:
        try:
            stamp = _stamp(self.path)
        except OSError:
            return self._keys
        if stamp != self._stamp:
            try:
                self._keys = self._load()
            except InputError as exc:
                self._stamp = stamp  # say it once per version of the file
                log.warning("keeping the previous gRPC keys: %s", exc)
        return self._keys

    def _load(self) -> GrpcKeys:
        where = Location(file=str(self.path))
        try:
            stamp = _stamp(self.path)
        except OSError:
            raise InputError(
                f"no gRPC key file at {self.path}",
                code="rpc.keys_missing",
                location=where,
                hint="subhive up writes one per hive; outside up pass GrpcKeys yourself",
            ) from None
        data = read_json(self.path)
        if data is None:
            raise InputError(
                f"{self.path} is not a JSON object",
                code="rpc.keys_invalid",
                location=where,
                hint="subhive up writes it; run subhive down && subhive up to get a new one",
            )
        keys = GrpcKeys.from_dict(data, where=where)
        self._stamp = stamp
        return keys


def _stamp(path: Path) -> tuple[int, int, int]:
    # The writer replaces the file (a new inode), so the inode tells a rewrite apart even within one mtime tick.
    info = os.stat(path)
    return (info.st_ino, info.st_mtime_ns, info.st_size)


#: Either fixed keys or a file followed while it changes: both answer ``current()``.
Keys = GrpcKeys | KeyFile


def issue_keys(master: bytes, hives: Iterable[str], lock: Iterable[Any]) -> dict[str, GrpcKeys]:
    """Every hive's keys for a tree, from the lock's entries (``provider``, ``consumers`` of each version).

    >>> from types import SimpleNamespace as E
    >>> lock = [E(name="store", version=E(major=1), provider="db", consumers={"api": "^1.0"})]
    >>> keys = issue_keys(bytes(32), ["db", "api", "ui"], lock)
    >>> sorted(keys["ui"].present), sorted(keys["db"].verify), dict(keys["db"].consumers), keys["ui"].verify
    (['db'], ['api', 'db', 'ui'], {('store', 1): frozenset({'api'})}, {})

    Identity and permission apart: every hive of the tree gets a token for every hive that provides a
    contract in the lock, and a provider verifies every hive of the tree, so a hive that calls what it does
    not consume is told so (PERMISSION_DENIED), not taken for a stranger; ``consumers`` says who may call
    what. Only hives of ``hives`` get or accept tokens: a consumer the lock names that the tree does not run
    has no process to hand one to. A provider may call itself.
    """
    names = set(hives)
    consumers: dict[str, dict[tuple[str, int], set[str]]] = {}
    for entry in lock:
        if entry.provider in names:
            line = consumers.setdefault(entry.provider, {}).setdefault((entry.name, entry.version.major), set())
            line.update(h for h in entry.consumers if h in names)
    issued: dict[str, GrpcKeys] = {}
    for hive in sorted(names):
        provided = consumers.get(hive, {})
        issued[hive] = GrpcKeys(
            hive,
            present={p: pair_token(master, hive, p) for p in sorted(consumers)},
            verify={c: pair_token(master, c, hive) for c in sorted(names)} if provided else {},
            consumers={line: frozenset(c) for line, c in provided.items()},
        )
    return issued


def write_keys(directory: Path, keys: Mapping[str, GrpcKeys]) -> dict[str, Path]:
    """Write each hive's keys to ``directory/<hive>.json`` (0600, atomically); the paths, by hive.

    An unchanged file is not rewritten, so a hive does not re-read what did not change.
    """
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    paths: dict[str, Path] = {}
    for hive, hive_keys in keys.items():
        path = directory / f"{hive}.json"
        data = hive_keys.to_dict()
        if read_json(path) != data:
            write_json(path, data, private=True)
        paths[hive] = path
    return paths
