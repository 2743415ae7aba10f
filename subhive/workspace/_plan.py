"""Plans: the files a scaffold would write, shown by ``--dry-run`` and written all or nothing otherwise,
so a failed run leaves the tree as it was. See docs/workspace.md#dry-runs-and-all-or-nothing-writes.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path, PurePosixPath

from ..errors import InputError, Location

__all__ = ["FileAction", "Plan", "PlannedFile", "apply_plan"]

STAGING_PREFIX = ".subhive-tmp-"


class FileAction(StrEnum):
    create = "create"
    update = "update"


@dataclass(frozen=True, slots=True)
class PlannedFile:
    """One file of a plan: its path relative to the plan's root, its full new content, and what happens."""

    path: PurePosixPath
    content: str
    action: FileAction = FileAction.create
    #: For an update: the content the file must still have when the plan is applied.
    previous: str | None = None

    def to_dict(self, *, content: bool = False) -> dict[str, object]:
        out: dict[str, object] = {
            "path": str(self.path),
            "action": self.action.value,
            "bytes": len(self.content.encode("utf-8")),
        }
        if content:
            out["content"] = self.content
        return out


@dataclass(frozen=True, slots=True)
class Plan:
    """What a scaffold would write under ``root``, in order; ``summary`` names what it makes ("sub-hive 'db' ...")."""

    root: Path
    summary: str
    files: tuple[PlannedFile, ...] = ()
    #: Things worth telling the user once the plan is applied (what to run next).
    next_steps: tuple[str, ...] = ()
    #: Directories the plan creates whole (a sub-hive, a contract): they must still not exist when it is
    #: applied, so a plan never writes into a directory someone else made in the meantime.
    directories: tuple[PurePosixPath, ...] = ()

    def to_dict(self, *, content: bool = False) -> dict[str, object]:
        return {
            "root": str(self.root),
            "summary": self.summary,
            "files": [f.to_dict(content=content) for f in self.files],
            "next_steps": list(self.next_steps),
        }


def apply_plan(plan: Plan) -> None:
    """Write every file of ``plan``, or none of them: ``apply_plan(plan_init("shop"))``.

    Raises :class:`InputError` when a file to create exists, a file to update changed since it was planned
    (``scaffold.conflict``), or the file system refuses a write (``scaffold.write_failed``); in every case
    the tree is left as it was.

    Each step is never half-done on its own: a new directory tree is built in a hidden staging directory
    beside its destination and renamed into place; a new file is written beside its destination and
    hard-linked into place (which fails rather than replace a file that appeared meanwhile); an updated file
    is replaced by rename. A failed step undoes the steps already done, in reverse order, so only a crash of
    the process between two steps can leave some of a plan behind.
    """
    root = Path(os.path.abspath(plan.root))
    for directory in plan.directories:
        if os.path.lexists(root.joinpath(*directory.parts)):
            raise _conflict(root.joinpath(*directory.parts), "already exists")
    steps = _steps(root, plan.files)
    done: list[_Step] = []
    current: _Step | None = None
    try:
        for current in steps:
            current.commit()
            done.append(current)
    except BaseException as exc:
        for step in reversed(done):
            with contextlib.suppress(OSError):  # undo what we can; the error below says what failed
                step.undo()
        if isinstance(exc, FileExistsError) and current is not None:
            raise _conflict(current.target, "appeared while the plan was being written") from exc
        if isinstance(exc, OSError) and current is not None:
            raise InputError(
                f"could not write {current.target}: {exc.strerror or exc}",
                code="scaffold.write_failed",
                location=Location(file=str(current.target)),
                hint="nothing was changed; fix the cause (disk space, permissions, path length) "
                "and run the command again",
            ) from exc
        raise


def _conflict(path: Path, why: str) -> InputError:
    return InputError(
        f"{path} {why}",
        code="scaffold.conflict",
        location=Location(file=str(path)),
        hint="nothing was changed; look at the path, then run the command again",
    )


# --- steps ------------------------------------------------------------------------------------------------


class _Step:
    target: Path

    def commit(self) -> None:
        raise NotImplementedError

    def undo(self) -> None:
        raise NotImplementedError


def _write(path: Path, content: str) -> None:
    with open(path, "x", encoding="utf-8", newline="") as handle:
        handle.write(content)
        handle.flush()
        os.fsync(handle.fileno())


def _sibling(path: Path) -> Path:
    return path.parent / f"{STAGING_PREFIX}{secrets.token_hex(6)}"


@dataclass(slots=True)
class _NewTree(_Step):
    """A directory that does not exist yet, built aside and renamed into place."""

    target: Path
    files: list[tuple[PurePosixPath, str]] = field(default_factory=list)

    def commit(self) -> None:
        staging = _sibling(self.target)
        os.mkdir(staging)  # not tempfile.mkdtemp: the tree keeps the user's usual permissions (umask)
        try:
            for relative, content in self.files:
                path = staging.joinpath(*relative.parts)
                path.parent.mkdir(parents=True, exist_ok=True)
                _write(path, content)
            if os.path.lexists(self.target):
                raise FileExistsError(self.target)
            os.rename(staging, self.target)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise

    def undo(self) -> None:
        shutil.rmtree(self.target)


@dataclass(slots=True)
class _NewFile(_Step):
    """A new file in an existing directory."""

    target: Path
    content: str

    def commit(self) -> None:
        staging = _sibling(self.target)
        _write(staging, self.content)
        try:
            try:
                os.link(staging, self.target)  # atomic, and never replaces a file that appeared meanwhile
            except FileExistsError:
                raise
            except OSError:  # a file system without hard links
                if os.path.lexists(self.target):
                    raise FileExistsError(self.target) from None
                os.replace(staging, self.target)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(staging)

    def undo(self) -> None:
        os.unlink(self.target)


@dataclass(slots=True)
class _Update(_Step):
    """An existing file replaced as a whole, if it still holds what the plan was made from."""

    target: Path
    content: str
    previous: str

    def commit(self) -> None:
        self._replace(self.content, expect=self.previous)

    def undo(self) -> None:
        self._replace(self.previous, expect=self.content)

    def _replace(self, content: str, *, expect: str) -> None:
        if self.target.read_text(encoding="utf-8") != expect:
            raise _conflict(self.target, "changed while the plan was being written")
        staging = _sibling(self.target)
        _write(staging, content)
        try:
            shutil.copymode(self.target, staging)
            os.replace(staging, self.target)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(staging)
            raise


def _steps(root: Path, files: tuple[PlannedFile, ...]) -> list[_Step]:
    """Check the plan against the disk and group its files into steps; raise before anything is written."""
    steps: list[_Step] = []
    trees: dict[Path, _NewTree] = {}
    for planned in files:
        target = root.joinpath(*planned.path.parts)
        if planned.action is FileAction.update:
            steps.append(_update_step(target, planned))
            continue
        if os.path.lexists(target):
            raise _conflict(target, "already exists")
        top = _topmost_missing(target)
        if top == target:
            steps.append(_NewFile(target, planned.content))
            continue
        if top not in trees:
            trees[top] = _NewTree(top)
            steps.append(trees[top])
        trees[top].files.append((PurePosixPath(target.relative_to(top).as_posix()), planned.content))
    return steps


def _update_step(target: Path, planned: PlannedFile) -> _Update:
    try:
        current = target.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise _conflict(target, "cannot be read to update it") from exc
    if planned.previous is None or current != planned.previous:
        raise _conflict(target, "changed since the plan was made")
    return _Update(target, planned.content, planned.previous)


def _topmost_missing(target: Path) -> Path:
    """The highest missing directory on the way to ``target`` (``target`` itself if its parent exists)."""
    top = target
    while not os.path.lexists(top.parent):
        top = top.parent
    if not top.parent.is_dir():
        raise InputError(
            f"{top.parent} is not a directory",
            code="scaffold.not_a_directory",
            location=Location(file=str(top.parent)),
            hint="move the file out of the way, or choose another location",
        )
    return top
