"""``propose_diff``: an agent changes its hive's files only through a unified diff that a person approves.

Checked before anyone is asked and again before writing, so a diff that does not apply writes nothing
(``diff.conflict``). See docs/agents.md#changing-files-propose_diff.
"""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._files import FileSlice
from ._tools import Tool, ToolError, ToolResult, schema_object

__all__ = ["FilePatch", "Hunk", "apply_patch", "diff_tool", "parse_diff"]

_HUNK = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
#: Files a diff may not touch: the manifest holds the agent's own tool policies.
PROTECTED = frozenset({"subhive.toml"})
MAX_DIFF = 256 * 1024


@dataclass
class Hunk:
    old_start: int
    old_count: int
    new_start: int
    new_count: int
    #: (" " | "-" | "+", text without the newline)
    lines: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class FilePatch:
    """One file's change: ``old`` is None for a new file, ``new`` None for a deleted one."""

    old: str | None
    new: str | None
    hunks: list[Hunk] = field(default_factory=list)
    #: Whether the new content ends without a newline ("\\ No newline at end of file" after a + line).
    no_newline: bool = False

    @property
    def path(self) -> str:
        return self.new if self.new is not None else self.old or ""


def _malformed(line: int, why: str) -> ToolError:
    return ToolError(
        f"the diff is malformed at its line {line}: {why}",
        code="diff.malformed",
        hint="send a unified diff: --- a/PATH, +++ b/PATH, then @@ -l,n +l,n @@ hunks",
    )


def _header_path(text: str) -> str | None:
    name = text.split("\t", 1)[0].strip()
    if name == "/dev/null":
        return None
    return name[2:] if name.startswith(("a/", "b/")) else name


def parse_diff(text: str) -> list[FilePatch]:
    """The file patches of a unified diff; ``diff.malformed`` naming the diff's line for anything else."""
    lines = text.splitlines()
    patches: list[FilePatch] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.startswith("--- "):
            if line.strip() and not line.startswith(("diff ", "index ", "new file", "deleted file")):
                raise _malformed(i + 1, f"expected '--- PATH', found {line[:60]!r}")
            i += 1
            continue
        if i + 1 >= len(lines) or not lines[i + 1].startswith("+++ "):
            raise _malformed(i + 2, "a '--- PATH' line must be followed by '+++ PATH'")
        patch = FilePatch(_header_path(line[4:]), _header_path(lines[i + 1][4:]))
        if patch.old is None and patch.new is None:
            raise _malformed(i + 1, "both sides are /dev/null")
        i += 2
        while i < len(lines) and lines[i].startswith("@@"):
            i = _read_hunk(lines, i, patch)
        if not patch.hunks:
            raise _malformed(i + 1, f"no hunk for {patch.path}")
        patches.append(patch)
    if not patches:
        raise _malformed(1, "no file in it")
    return patches


def _read_hunk(lines: list[str], i: int, patch: FilePatch) -> int:
    match = _HUNK.match(lines[i])
    if match is None:
        raise _malformed(i + 1, f"bad hunk header {lines[i][:60]!r}")
    old_start, old_count, new_start, new_count = (int(g) if g is not None else 1 for g in match.groups())
    hunk = Hunk(old_start, old_count, new_start, new_count)
    i += 1
    seen_old = seen_new = 0
    while i < len(lines) and (seen_old < old_count or seen_new < new_count or lines[i].startswith("\\")):
        line = lines[i]
        if line.startswith("\\"):  # "\ No newline at end of file" for the line before it
            if hunk.lines and hunk.lines[-1][0] != "-":
                patch.no_newline = True
            i += 1
            continue
        kind, body = (line[:1] or " "), line[1:]
        if kind not in " -+":
            raise _malformed(i + 1, f"a hunk line starts with ' ', '-' or '+', not {kind!r}")
        hunk.lines.append((kind, body))
        seen_old += kind != "+"
        seen_new += kind != "-"
        i += 1
    if (seen_old, seen_new) != (old_count, new_count):
        raise _malformed(i, f"the hunk says -{old_count} +{new_count} lines but has -{seen_old} +{seen_new}")
    patch.hunks.append(hunk)
    return i


def apply_patch(original: list[str], patch: FilePatch) -> list[str]:
    """``original``'s lines (no newlines) with ``patch`` applied strictly: every line a hunk quotes or removes
    must be at the line it names; otherwise ``diff.conflict`` naming the file and line."""
    out: list[str] = []
    position = 0  # index into original
    for hunk in patch.hunks:
        start = max(hunk.old_start - 1, 0) if hunk.old_count else hunk.old_start
        if start < position or start > len(original):
            raise _conflict(patch.path, hunk.old_start, "the hunk is out of order or past the end")
        out.extend(original[position:start])
        position = start
        for kind, body in hunk.lines:
            if kind in " -":
                if position >= len(original) or original[position] != body:
                    found = original[position] if position < len(original) else "(end of file)"
                    raise _conflict(patch.path, position + 1, f"expected {body[:80]!r}, found {found[:80]!r}")
                position += 1
            if kind in " +":
                out.append(body)
    out.extend(original[position:])
    return out


def _conflict(path: str, line: int, why: str) -> ToolError:
    return ToolError(
        f"{path}:{line}: the diff does not apply: {why}",
        code="diff.conflict",
        hint="read the file again and propose a diff against what it holds now",
    )


def _plan(files: FileSlice, text: str) -> list[tuple[Path, str, str | None]]:
    """What applying ``text`` now would do: (real path, path as written, new content or None to delete)."""
    if len(text.encode("utf-8")) > MAX_DIFF:
        raise ToolError(f"the diff is over {MAX_DIFF // 1024} KiB", code="diff.too_large", hint="propose smaller diffs")
    plan = []
    for patch in parse_diff(text):
        for name in {patch.old, patch.new} - {None}:
            if Path(str(name)).name in PROTECTED and Path(str(name)).parent in (Path("."), Path("")):
                raise ToolError(
                    f"{name} cannot be changed by an agent",
                    code="diff.protected",
                    hint="the manifest holds the agent's own permissions; a person edits it",
                )
        real = files.resolve(patch.path)
        if patch.old is None:
            if real.exists():
                raise _conflict(patch.path, 1, "the diff creates the file, but it exists")
            original: list[str] = []
        else:
            if not real.is_file():
                raise _conflict(patch.path, 1, "the file does not exist")
            original = real.read_text(encoding="utf-8").splitlines()
        new = apply_patch(original, patch)
        content = None if patch.new is None else "\n".join(new) + ("" if patch.no_newline or not new else "\n")
        plan.append((real, patch.path, content))
    return plan


def _write(plan: list[tuple[Path, str, str | None]]) -> None:
    for real, _shown, content in plan:
        if content is None:
            real.unlink()
            continue
        real.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=real.parent, prefix=f".{real.name}.", suffix=".tmp")
        try:
            with os.fdopen(handle, "w", encoding="utf-8", newline="") as out:
                out.write(content)
            if real.exists():
                os.chmod(temporary, real.stat().st_mode & 0o7777)
            os.replace(temporary, real)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise


def diff_tool(files: FileSlice) -> Tool:
    """``propose_diff {diff}``: checked before a person is asked, applied (all or nothing) once approved."""

    async def check(arguments: dict[str, Any]) -> None:
        _plan(files, arguments["diff"])

    async def run(arguments: dict[str, Any]) -> ToolResult:
        plan = _plan(files, arguments["diff"])  # again: the files may have changed while the person decided
        _write(plan)
        return ToolResult(
            {"status": "applied", "files": [shown for _real, shown, _content in plan]},
            files_changed=tuple(shown for _real, shown, _content in plan),
        )

    return Tool(
        "propose_diff",
        "Propose a change to the hive's files as a unified diff (--- a/PATH, +++ b/PATH, "
        "@@ hunks). A person approves it; then it is applied, all files or none. Answers applied, or the "
        "reason it was rejected or does not apply.",
        schema_object({"diff": {"type": "string", "minLength": 1}}, ["diff"]),
        run,
        check=check,
    )
