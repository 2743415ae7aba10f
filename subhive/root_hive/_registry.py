"""The hive tree: registrations, and the sub-hive manifests the root follows (new hives, needs, removals).

A workspace's hives register from ``subhives/*/subhive.toml`` at open and whenever a manifest changes.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
from collections.abc import Mapping
from typing import Any

from ..errors import InputError, SubhiveError
from ..workspace import MANIFEST_NAME, Kind, SubhiveManifest, Workspace, check_hive_name, open_workspace
from ._auth import token_sha, write_secret
from ._errors import Conflict, NotFound
from ._log import Frame
from ._model import Registration
from ._state import ROOT, TOKENS_DIR, HiveEntry, Record, RootState, batched

__all__ = ["HiveRegistry"]


class HiveRegistry(RootState):
    """Registered hives and the manifests they come from."""

    @batched
    def register_hive(
        self,
        name: str,
        *,
        kind: str = "custom",
        parent: str = ROOT,
        rotate: bool = False,
        _token: str | None = None,
        _manifest: bool = False,
    ) -> Registration:
        """Register ``name`` and return its token (shown once). ``rotate=True`` replaces an existing token.

        >>> root.register_hive("db", kind="db").name  # doctest: +SKIP
        'db'
        """
        check_hive_name(name)
        if kind not in {k.value for k in Kind}:
            raise InputError(
                f"{kind!r} is not a hive kind", code="hive.kind", hint="one of: " + ", ".join(k.value for k in Kind)
            )
        if parent != ROOT and parent not in self._hives:
            raise NotFound(
                f"parent hive {parent!r} is not registered",
                code="hive.parent_unknown",
                hint=f"register {parent!r} first, or use parent {ROOT!r}",
            )
        if name in self._hives and not rotate:
            raise Conflict(
                f"hive {name!r} is already registered",
                code="hive.exists",
                hint="register it with rotate=True to issue a new token; the old one stops working",
            )
        if parent == name or parent in self._descendants(name):
            raise InputError(
                f"hive {name!r} cannot have {parent!r} as parent: the tree would have a cycle", code="hive.parent_cycle"
            )
        token = _token or secrets.token_urlsafe(32)
        data: dict[str, Any] = {"name": name, "kind": kind, "parent": parent, "rotated": name in self._hives}
        if _manifest:
            data["manifest"] = True
        self._commit([("hive_registered", data, {"token_sha256": token_sha(token)})])
        return Registration(name, token)

    def hives(self) -> list[str]:
        return sorted(self._hives)

    def _descendants(self, name: str) -> set[str]:
        found: set[str] = set()
        frontier = [name]
        while frontier:
            current = frontier.pop()
            for hive in self._hives.values():
                if hive.parent == current and hive.name not in found:
                    found.add(hive.name)
                    frontier.append(hive.name)
        return found

    def _known_hive(self, hive: str) -> None:
        if hive not in self._hives and hive in self._workspace_hive_names():
            # Made with `subhive new` after this root opened: registered now, as it would have been at open.
            self._register_workspace_hives(open_workspace(self.workspace_root))
        if hive not in self._hives:
            raise NotFound(
                f"hive {hive!r} is not registered",
                code="hive.unknown",
                hint="create it with `subhive new` (the root registers the workspace's sub-hives), "
                "or register it through the RegisterHive call with the admin token",
            )

    def _workspace_hive_names(self) -> set[str]:
        """The names of ``subhives/<name>/subhive.toml`` on disk now (cheap: no manifest is parsed)."""
        hives_dir = open_workspace(self.workspace_root).hives_dir
        return {p.parent.name for p in hives_dir.glob(f"*/{MANIFEST_NAME}")} if hives_dir.is_dir() else set()

    def _register_workspace_hives(self, workspace: Workspace) -> None:
        """Register every valid sub-hive manifest not registered yet, parents first; write each new token to
        ``.subhive/tokens/<hive>.token`` (0600) so the hive (and ``subhive contract propose``) can use it."""
        manifests = dict(workspace.hives().hives)
        tokens_dir = self.workspace_root / TOKENS_DIR
        with self.batch():
            progress = True
            while progress:
                progress = False
                for name, manifest in sorted(manifests.items()):
                    if name in self._hives:
                        continue
                    if manifest.parent != ROOT and manifest.parent not in self._hives:
                        continue  # its parent first (next round), or never if the parent's manifest is broken
                    token = secrets.token_urlsafe(32)
                    self._make_dirs(tokens_dir)
                    os.chmod(tokens_dir, 0o700)
                    write_secret(tokens_dir / f"{name}.token", token)
                    self._barrier.add_tree(tokens_dir)  # the token on disk before the record that makes it valid
                    self.register_hive(
                        name, kind=manifest.kind.value, parent=manifest.parent, _token=token, _manifest=True
                    )
                    progress = True
            self._declare_manifest_needs(manifests)
            self._forget_removed_hives()

    def sync_manifests(self) -> bool:
        """Register the manifests as they are now, if any changed since the last look: new hives, changed
        ranges, and no more requirement (nor hive) whose line (or manifest) is gone. True if it looked.

        The views (:meth:`status`, :meth:`contracts`) call it first, so the root reflects the workspace of now
        and not of when it opened; a manifest that does not parse changes nothing until it is fixed.

        >>> root.sync_manifests()  # doctest: +SKIP
        True
        """
        digest = self._manifests_digest()
        if digest == self._manifests_seen or self._log is None:
            return False
        try:
            workspace = open_workspace(self.workspace_root)
        except SubhiveError:  # hive.toml is being edited: keep what is registered
            return False
        self._manifests_seen = digest
        self._register_workspace_hives(workspace)
        return True

    def _manifests_digest(self) -> bytes:
        digest = hashlib.sha256()
        hives_dir = self.workspace_root / "subhives"
        for path in sorted(hives_dir.glob(f"*/{MANIFEST_NAME}")) if hives_dir.is_dir() else ():
            with contextlib.suppress(OSError):
                data = path.read_bytes()
                digest.update(f"{path.parent.name}\0{len(data)}\0".encode() + data)
        return digest.digest()

    def _forget_removed_hives(self) -> None:
        """A hive registered from a manifest whose directory is gone leaves the tree, with its requirements
        (so an old major it pinned can retire); its children first. Hives registered through RegisterHive stay."""
        present = self._workspace_hive_names()
        tokens_dir = self.workspace_root / TOKENS_DIR
        gone = {
            name
            for name, hive in self._hives.items()
            if name not in present and (hive.from_manifest or (tokens_dir / f"{name}.token").exists())
        }
        while gone:
            leaves = sorted(n for n in gone if not any(h.parent == n for h in self._hives.values()))
            if not leaves:
                return  # a child still registered: it keeps its parent
            for name in leaves:
                records: list[Record] = [
                    ("requirement_withdrawn", {"hive": name, "contract": contract}, {})
                    for (who, contract) in sorted(self._requirements)
                    if who == name
                ]
                self._commit([*records, ("hive_removed", {"name": name}, {})])
                (tokens_dir / f"{name}.token").unlink(missing_ok=True)
                gone.discard(name)

    def _declare_manifest_needs(self, manifests: Mapping[str, SubhiveManifest]) -> None:
        """What a manifest consumes becomes the hive's requirement (announced when nothing meets it yet), so
        the root negotiates what the hives declared; unchanged needs are not declared again."""
        # What each hive required before, looked up rather than searched for once per hive (500 hives hold
        # 16,000 requirements: decision 0139). Declaring below adds only what ``wanted`` holds.
        held: dict[str, list[str]] = {}
        for who, contract in self._requirements:
            held.setdefault(who, []).append(contract)
        for name, manifest in sorted(manifests.items()):
            if name not in self._hives:
                continue
            for need in manifest.consumes:
                known = self._requirements.get((name, need.contract))
                if known is None or str(known.range) != str(need.versions):
                    self.declare_requirement(name, need.contract, str(need.versions))
            # A line removed from the manifest: the hive no longer needs it, whatever it declared before.
            wanted = {need.contract for need in manifest.consumes}
            stale = sorted(c for c in held.get(name, ()) if c not in wanted)
            if stale:
                self._commit([("requirement_withdrawn", {"hive": name, "contract": c}, {}) for c in stale])

    def _apply_registered(self, data: dict[str, Any], frame: Frame, replaying: bool) -> None:
        old = self._hives.get(data["name"])
        if old is not None:
            self._tokens.pop(old.token_sha256, None)
        sha = frame.private["token_sha256"]
        manifest = bool(data.get("manifest")) or (old is not None and old.from_manifest)
        self._hives[data["name"]] = HiveEntry(data["name"], data["kind"], data["parent"], sha, manifest)
        self._tokens[sha] = data["name"]

    def _apply_hive_removed(self, data: dict[str, Any], frame: Frame, replaying: bool) -> None:
        old = self._hives.pop(data["name"], None)
        if old is not None:
            self._tokens.pop(old.token_sha256, None)
