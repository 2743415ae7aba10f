"""The engine's pure rules: what a proposal's file map may hold, contract names, version lines.

No state and no I/O, so they are tested directly and the engine's modules share them (docs/root-hive.md).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path, PurePosixPath

from ..errors import InputError, Location, Problem
from ..semver import Version

__all__ = [
    "CONTRACT_NAME",
    "MAX_BYTES",
    "MAX_FILES",
    "check_contract_name",
    "clean_files",
    "peek",
    "relocate",
    "version_line",
]

#: A proposal is a contract directory, not a repository: generous for schemas, small for a request.
MAX_FILES = 256
MAX_BYTES = 8 * 1024 * 1024
CONTRACT_NAME = re.compile(r"[a-z][a-z0-9_-]{0,62}\Z")


def version_line(version: Version) -> str:
    """The line a version belongs to, :attr:`Version.line` (decision 0003-semver-below-1, 0140)."""
    return version.line


def check_contract_name(contract: object, code: str) -> None:
    """Raise :class:`InputError` with ``code`` unless ``contract`` is a contract name."""
    if not isinstance(contract, str) or not CONTRACT_NAME.match(contract):
        raise InputError(
            f"{contract!r} is not a contract name",
            code=code,
            hint="[a-z][a-z0-9_-]*, at most 63 characters, as in contract.yaml",
        )


def clean_files(files: Mapping[str, bytes]) -> dict[str, bytes]:
    """Check a proposal's file map: relative POSIX paths inside the directory, bytes, a manifest, limits."""
    if not isinstance(files, Mapping) or not files:
        raise InputError(
            "a proposal needs the contract directory's files",
            code="proposal.no_files",
            hint="send {relative path: bytes}, including contract.yaml",
        )
    if len(files) > MAX_FILES:
        raise InputError(f"{len(files)} files; a contract has at most {MAX_FILES}", code="proposal.too_many_files")
    out: dict[str, bytes] = {}
    total = 0
    for name, content in files.items():
        where = Location(file=str(name))
        path = PurePosixPath(name) if isinstance(name, str) else None
        if (
            path is None
            or not name
            or name.startswith("/")
            or "\\" in name
            or "\0" in name
            or any(part in ("", ".", "..") for part in name.split("/"))
            or len(name) > 255
        ):
            raise InputError(
                f"{name!r} is not a relative path inside the contract directory",
                code="proposal.bad_path",
                location=where,
                hint="use relative POSIX paths like schemas/order.json, without '..'",
            )
        if not isinstance(content, bytes | bytearray):
            raise InputError(f"the content of {name} must be bytes", code="proposal.bad_content", location=where)
        total += len(content)
        out[name] = bytes(content)
    if total > MAX_BYTES:
        raise InputError(f"the proposal holds {total} bytes; the limit is {MAX_BYTES}", code="proposal.too_large")
    if "contract.yaml" not in out:
        raise InputError(
            "the proposal has no contract.yaml",
            code="proposal.no_manifest",
            hint="send the whole contract directory, with its contract.yaml at the top",
        )
    names = set(out)
    for name in out:  # a file and a directory of the same name cannot both exist on disk
        parts = name.split("/")
        for i in range(1, len(parts)):
            if "/".join(parts[:i]) in names:
                raise InputError(
                    f"{'/'.join(parts[:i])} is both a file and a directory",
                    code="proposal.bad_path",
                    location=Location(file=name),
                )
    return out


def relocate(problem: Problem, staging: Path) -> Problem:
    """Name files relative to the proposal, not to the root's private staging directory."""
    file = problem.location.file
    if file and file.startswith(str(staging)):
        rel = file[len(str(staging)) :].lstrip("/") or "."
        return replace(problem, location=replace(problem.location, file=rel))
    return problem


def peek(files: Mapping[str, bytes]) -> tuple[str, Version]:
    """Best-effort name and version of a contract that does not lint (for the verdict frame)."""
    name, version = "", Version(0, 0, 0)
    for line in files.get("contract.yaml", b"").decode("utf-8", "replace").splitlines():
        key, _, value = line.partition(":")
        value = value.strip().strip("'\"")
        if key == "contract":
            name = value
        elif key == "version":
            with contextlib.suppress(ValueError):
                version = Version.parse(value)
    return name, version
