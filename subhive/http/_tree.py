"""Routes: the root's health, the hive tree, contracts, their versions and the diff between two."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import APIRouter, Query

from ..root_hive import NotFound
from ._deps import PAGE_DEFAULT, PREFIX, Cursor, Limit, Root, page
from ._models import ContractOut, DiffOut, HealthOut, HiveNode, Page, TreeOut, VersionOut
from ._openapi import errors

if TYPE_CHECKING:
    from ..root_hive import HiveStatus

__all__ = ["router"]

router = APIRouter(prefix=PREFIX)


@router.get("/health", tags=["tree"])
async def health(backend: Root) -> HealthOut:
    """The root answers; the newest frame's seq; whether the tree is up."""
    last = await backend.server.call(lambda r: r.last_seq)
    running = await asyncio.to_thread(backend.settings.runtime)
    return HealthOut(status="ok", last_seq=last, up=running is not None)


@router.get("/hives", tags=["tree"])
async def hive_tree(backend: Root) -> TreeOut:
    """The hive tree: each hive's contracts, endpoints and, while the tree is up, its health."""
    tree = await backend.server.call(lambda r: r.status())
    running = await asyncio.to_thread(backend.settings.runtime)
    live = (running or {}).get("hives", {})
    return TreeOut(up=running is not None, hives=[_node(h, live) for h in tree])


def _node(node: HiveStatus, live: dict[str, Any]) -> HiveNode:
    info = live.get(node.name)
    return HiveNode.model_validate(
        {
            **node.to_dict(),
            "children": [_node(c, live) for c in node.children],
            "health": str(info.get("health")) if isinstance(info, dict) and info.get("health") else None,
            "runtime": info if isinstance(info, dict) else None,
        }
    )


@router.get("/contracts", tags=["contracts"], responses=errors(422))
async def list_contracts(backend: Root, limit: Limit = PAGE_DEFAULT, cursor: Cursor = None) -> Page[ContractOut]:
    """Accepted contracts by name, each with its newest version."""
    infos = await backend.server.call(lambda r: r.contracts())
    items, next_cursor = page(infos, limit, cursor)
    return Page[ContractOut](
        items=[
            ContractOut(
                name=c.name,
                provider=c.versions[-1].provider,
                newest=str(c.versions[-1].version),
                versions=len(c.versions),
            )
            for c in items
        ],
        next_cursor=next_cursor,
    )


async def _versions(backend: Root, name: str) -> list[VersionOut]:
    infos = await backend.server.call(lambda r: [c for c in r.contracts() if c.name == name])
    if not infos:
        raise NotFound(f"no accepted contract {name!r}", code="contract.unknown", hint="GET /api/v1/contracts")
    return [VersionOut.model_validate(v.to_dict()) for v in infos[0].versions]


@router.get("/contracts/{name}/versions", tags=["contracts"], responses=errors(404, 422))
async def list_versions(
    backend: Root, name: str, limit: Limit = PAGE_DEFAULT, cursor: Cursor = None
) -> Page[VersionOut]:
    """A contract's accepted versions, oldest first, with their status and consumers."""
    items, next_cursor = page(await _versions(backend, name), limit, cursor)
    return Page[VersionOut](items=items, next_cursor=next_cursor)


@router.get("/contracts/{name}/diff", tags=["contracts"], responses=errors(404, 422))
async def diff_versions(
    backend: Root,
    name: str,
    old: Annotated[str, Query(alias="from", description="The old version, e.g. 1.0.0.")],
    new: Annotated[str, Query(alias="to", description="The new version, e.g. 2.0.0.")],
) -> DiffOut:
    """Every change between two accepted versions, per part and direction (`subhive contract diff`)."""
    known = {v.version for v in await _versions(backend, name)}
    for version in (old, new):
        if version not in known:
            raise NotFound(
                f"{name} has no accepted version {version!r}",
                code="contract.unknown_version",
                hint=f"accepted: {', '.join(sorted(known))}",
            )
    check = await asyncio.to_thread(_diff, backend.settings.workspace / "contracts" / name, old, new)
    return DiffOut.model_validate(check)


def _diff(directory: Path, old: str, new: str) -> dict[str, Any]:
    from ..compat.contract_check import check_contract
    from ..contract import load_contract

    return check_contract(load_contract(directory / new), load_contract(directory / old)).to_dict()
