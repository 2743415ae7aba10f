"""The root's HTTP API: JSON over FastAPI, an OpenAPI 3.1 document, problem details, Server-Sent Events.

>>> api = await ApiServer.start(root_server, ApiSettings(workspace))  # doctest: +SKIP
>>> api.url
'http://127.0.0.1:41234'

See docs/http.md.
"""

from ._app import ApiSettings, create_app
from ._problems import PROBLEM_JSON, ProblemDetails
from ._server import ApiServer

__all__ = ["PROBLEM_JSON", "ApiServer", "ApiSettings", "ProblemDetails", "create_app"]
