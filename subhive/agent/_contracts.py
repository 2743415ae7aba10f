"""``propose_contract``: an agent proposes a new contract version to the root, as its hive's provider would.

Linted before anyone is asked, then the root's negotiation decides as for any proposal.
See docs/agents.md#tools-confined-to-the-hive.
"""

from __future__ import annotations

import tempfile
from pathlib import Path, PurePosixPath
from typing import Any

from ..contract import lint_paths
from ._tools import Tool, ToolError, schema_object

__all__ = ["contract_tool"]

MAX_FILES = 64
MAX_BYTES = 512 * 1024


def _checked_files(arguments: dict[str, Any]) -> dict[str, bytes]:
    files = arguments["files"]
    if len(files) > MAX_FILES:
        raise ToolError(
            f"a contract of {len(files)} files is over the limit of {MAX_FILES}",
            code="contract.too_many_files",
            hint="keep a contract to its manifest and schemas",
        )
    out: dict[str, bytes] = {}
    for name, text in files.items():
        path = PurePosixPath(name)
        if path.is_absolute() or ".." in path.parts or "\\" in name or not name.strip():
            raise ToolError(
                f"{name!r} is not a path inside the contract's directory",
                code="contract.path_invalid",
                hint="name files relative to the version directory: contract.yaml, schemas/in.json",
            )
        out[str(path)] = str(text).encode("utf-8")
    if "contract.yaml" not in out:
        raise ToolError(
            "the files have no contract.yaml",
            code="contract.manifest_missing",
            hint="the contract's manifest names it, its version, its provider and its members",
        )
    if sum(len(v) for v in out.values()) > MAX_BYTES:
        raise ToolError(
            f"the files are over {MAX_BYTES // 1024} KiB",
            code="contract.too_large",
            hint="contracts hold schemas, not data",
        )
    return out


def _lint(files: dict[str, bytes]) -> None:
    with tempfile.TemporaryDirectory(prefix="subhive-proposal-") as tmp:
        for name, data in files.items():
            target = Path(tmp, name)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        result = lint_paths([tmp])
    if result.problems:
        first = result.problems[0]
        more = f" (and {len(result.problems) - 1} more)" if len(result.problems) > 1 else ""
        where = f"{Path(first.location.file).name}: " if first.location.file else ""
        raise ToolError(
            f"the contract does not pass lint: {where}{first.message}{more}",
            code=first.code,
            hint=first.hint or "fix the files and propose again",
        )


def contract_tool(root: Any, *, hive: str | None = None) -> Tool:
    """``propose_contract {files}`` through ``root`` (a ``RootClient``: the hive's token, or the admin's with
    ``hive`` named as the provider on whose behalf it proposes)."""

    async def check(arguments: dict[str, Any]) -> None:
        _lint(_checked_files(arguments))

    async def run(arguments: dict[str, Any]) -> dict[str, Any]:
        outcome = await root.propose(_checked_files(arguments), on_behalf_of=hive)
        return {
            "status": outcome.status,
            "id": outcome.id,
            "contract": outcome.contract,
            "version": str(outcome.version) if outcome.version is not None else None,
            "code": outcome.code,
            "message": outcome.message,
        }

    return Tool(
        "propose_contract",
        "Propose a new version of a contract this hive provides to the root: the "
        "version directory's files as {path: text} (contract.yaml and its schemas). The root answers "
        "accepted, pending (a person approves a breaking change) or refused with the reason.",
        schema_object(
            {"files": {"type": "object", "minProperties": 1, "additionalProperties": {"type": "string"}}}, ["files"]
        ),
        run,
        check=check,
    )
