"""The root's HTTP API app: FastAPI routes over the running root's engine (``RootServer.call``/``follow``) and the
workspace's bus, one problem-details shape for errors, the OpenAPI document at /openapi.json. See docs/http.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from fastapi import FastAPI, Request
from fastapi.responses import RedirectResponse
from fastapi.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from . import _approvals, _bus, _events, _tree
from ._deps import ApiSettings, Backend
from ._openapi import problem_openapi
from ._problems import ApiProblem, install_handlers, problem_response

if TYPE_CHECKING:
    from ..root_hive import RootServer

__all__ = ["CONSOLE", "ApiSettings", "create_app"]

#: The web console's files, shipped in the package (no build step): served at /console/.
CONSOLE = Path(__file__).with_name("console")


#: The Host headers a request may carry: the API listens on loopback, and a page from another site that made
#: its name point at 127.0.0.1 (DNS rebinding) would otherwise read the API as if it were the console.
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "[::1]"})


class LoopbackHostOnly:
    """Refuse a request whose Host is not a loopback name (``421 http.host_not_allowed``)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            request = Request(scope)
            host = (request.headers.get("host") or "").lower()
            name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
            if name not in LOOPBACK_HOSTS:
                error = ApiProblem(
                    421,
                    f"this API answers to loopback names only, not {host or 'no Host'}",
                    code="http.host_not_allowed",
                    hint="use http://127.0.0.1:PORT or http://localhost:PORT",
                )
                await problem_response(error, request)(scope, receive, send)
                return
        await self.app(scope, receive, send)


#: Sent with every answer: the console runs only its own files (no inline script or style, nothing from
#: elsewhere) and may not be framed, so another page can neither inject into it nor overlay it (clickjacking
#: the approve button).
SECURITY_HEADERS = (
    (
        b"content-security-policy",
        b"default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'self'; "
        b"frame-ancestors 'none'",
    ),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
)


class SecurityHeaders:
    """Add :data:`SECURITY_HEADERS` to every HTTP answer."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
            await send(message)

        await self.app(scope, receive, with_headers)


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
    app.add_middleware(LoopbackHostOnly)
    app.add_middleware(SecurityHeaders)
    for module in (_tree, _approvals, _bus, _events):
        app.include_router(module.router)
    app.mount("/console", StaticFiles(directory=CONSOLE, html=True), name="console")

    @app.get("/", include_in_schema=False)
    async def home() -> RedirectResponse:
        return RedirectResponse("/console/")

    install_handlers(app)
    problem_openapi(app)
    return app
