"""The root's HTTP API app: FastAPI routes over the running root's engine (``RootServer.call``/``follow``) and the
workspace's bus, one problem-details shape for errors, the OpenAPI document at /openapi.json. See docs/http.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from fastapi import FastAPI
from fastapi.responses import RedirectResponse
from fastapi.staticfiles import StaticFiles

from . import _approvals, _bus, _events, _tree
from ._deps import ApiSettings, Backend
from ._openapi import problem_openapi
from ._problems import install_handlers

if TYPE_CHECKING:
    from ..root_hive import RootServer

__all__ = ["CONSOLE", "ApiSettings", "create_app"]

#: The web console's files, shipped in the package (no build step): served at /console/.
CONSOLE = Path(__file__).with_name("console")


def create_app(server: RootServer, settings: ApiSettings) -> FastAPI:
    """The API over ``server`` (a started :class:`~subhive.root_hive.RootServer`)."""
    app = FastAPI(
        title="subhive root hive",
        version="1.0.0",
        summary="The root of a subhive workspace: hive tree, contracts, approvals, boards, dead letters, events.",
        openapi_url="/openapi.json",
        docs_url=None,
        redoc_url=None,
    )
    app.state.backend = Backend(server, settings)
    for module in (_tree, _approvals, _bus, _events):
        app.include_router(module.router)
    app.mount("/console", StaticFiles(directory=CONSOLE, html=True), name="console")

    @app.get("/", include_in_schema=False)
    async def home() -> RedirectResponse:
        return RedirectResponse("/console/")

    install_handlers(app)
    problem_openapi(app)
    return app
