"""The routes under `{base_url}/ipylsp/api/`: every one authenticated and authorized (auth
resource `ipylsp`), paths confined to the server's `root_dir` by the agent tool box, errors as
JSON `{"error": {"code", "message"}}` with the agent's error codes.

The Service is synchronous (it waits on its own loop), so each call runs on a worker thread and
the Jupyter server's loop never blocks on a language server.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from tornado import web

from ipylsp.agent import ToolResult, tool_schemas
from ipylsp.agent.errors import ErrorCode, ToolError
from ipylsp.agent.schemas import FORMATS
from ipylsp.server.state import ServerState

AUTH_RESOURCE = "ipylsp"

HTTP_STATUS: dict[ErrorCode, int] = {
    "missing_argument": 400,
    "invalid_argument": 400,
    "unknown_tool": 404,
    "file_not_found": 404,
    "outside_workspace": 403,
    "unsupported_language": 422,
    "symbol_not_found": 404,
    "ambiguous_symbol": 409,
    "server_unavailable": 503,
    "timeout": 504,
    "lsp_error": 502,
    "server_exited": 502,
}


NO_TOKEN = (
    "no token valid for this server: send this Jupyter server's token (under JupyterHub, "
    "this user's API token) as the header `Authorization: token <TOKEN>`, or as "
    "`?token=<TOKEN>` in the URL (for clients that cannot send headers)"
)
"""Why a request without a valid token is refused. Jupyter would say `'_xsrf' argument missing
from POST`, which sends people looking for cookies, not for the token."""


class IPyLSPHandler(APIHandler):
    auth_resource = AUTH_RESOURCE

    async def prepare(self) -> None:  # type: ignore[override]  # as APIHandler.prepare
        try:
            await super().prepare()
        except web.HTTPError as exc:
            if exc.status_code == 403 and self.current_user is None:
                raise web.HTTPError(403, NO_TOKEN) from None
            raise
        if self.current_user is None:  # every route is `web.authenticated`: say why here
            raise web.HTTPError(403, NO_TOKEN)

    @property
    def state(self) -> ServerState:
        state: ServerState = self.settings["ipylsp_state"]
        return state

    async def tool(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        return await asyncio.to_thread(self.state.toolbox.call, name, arguments)

    def reply(self, body: object, status: int = 200) -> None:
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(body))

    def reply_data(self, result: ToolResult) -> None:
        """A report's diagnostics JSON (schema ipylsp.diagnostics/2), or the error."""
        if result.ok:
            self.reply(result.data)
        else:
            self.reply_error(result)

    def reply_error(self, result: ToolResult) -> None:
        code = result.error_code or "lsp_error"
        self.reply(result.data, HTTP_STATUS.get(code, 500))

    def json_body(self) -> dict[str, Any]:
        try:
            body = json.loads(self.request.body or b"{}")
        except ValueError:
            raise web.HTTPError(400, "the body is not JSON") from None
        if not isinstance(body, dict):
            raise web.HTTPError(400, "the body must be a JSON object")
        return body


class StatusHandler(IPyLSPHandler):
    """This server's servers (the user's broker's, or its own) and every kernel's (their
    status files), installed servers, the current errors summed over this server and every
    kernel, and why this server's servers run in its own process (`in_process`, else null)."""

    @web.authenticated
    @authorized
    async def get(self) -> None:
        self.reply(await asyncio.to_thread(self.state.status))


class CheckHandler(IPyLSPHandler):
    """`{"path", "content"?}`: what the file's text (or the proposed content) introduced."""

    @web.authenticated
    @authorized
    async def post(self) -> None:
        body = self.json_body()
        self.reply_data(await self.tool("lsp_check", body))


class DiagnosticsHandler(IPyLSPHandler):
    """`?path=`: one file's current problems (checked first when unknown or changed on
    disk); without it, every file this server has checked. `&cached=1`: what the store holds
    (any kernel's answers; `path` may be a directory), no server started. `&max_per_file=N`:
    N problems per file and no report cap (0: all; an editor's marks)."""

    @web.authenticated
    @authorized
    async def get(self) -> None:
        arguments: dict[str, Any] = {"severity": self.get_argument("severity", "all")}
        if self.get_argument("cached", "0") not in ("0", "false", ""):
            arguments["cached"] = True
        path = self.get_argument("path", None)
        if path is not None:
            arguments["path"] = path
        per_file = self.get_argument("max_per_file", None)
        if per_file is not None:
            # a count: isdecimal, not isdigit (int() refuses "²"), and short (int() refuses
            # 4,301 digits); anything else goes as text, which the tool's schema refuses (400)
            arguments["max_per_file"] = (
                int(per_file) if per_file.isdecimal() and len(per_file) < 19 else per_file
            )
        self.reply_data(await self.tool("lsp_diagnostics", arguments))


class PendingHandler(IPyLSPHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        self.reply_data(await self.tool("lsp_pending", {}))


class ToolsHandler(IPyLSPHandler):
    """The tool definitions (`?format=mcp|openai|anthropic`, default mcp)."""

    @web.authenticated
    @authorized
    async def get(self) -> None:
        fmt = self.get_argument("format", "mcp")
        if fmt not in FORMATS:
            message = f"format must be one of {', '.join(FORMATS)}"
            self.reply_error(ToolResult.failure(ToolError("invalid_argument", message)))
            return
        self.reply({"tools": tool_schemas(fmt)})


class ToolCallHandler(IPyLSPHandler):
    """`POST tools/{name}` with the arguments object: the agent dispatcher, its whole
    `ToolResult` (ok, text, data, error_code)."""

    @web.authenticated
    @authorized
    async def post(self, name: str) -> None:
        result = await self.tool(name, self.json_body())
        status = 200 if result.ok else HTTP_STATUS.get(result.error_code or "lsp_error", 500)
        self.reply(result.to_dict(), status)


def routes() -> list[tuple[str, type[IPyLSPHandler]]]:
    """Paths below `{base_url}` (never `/lsp/`: jupyter-lsp owns it)."""
    return [
        (r"/ipylsp/api/status", StatusHandler),
        (r"/ipylsp/api/check", CheckHandler),
        (r"/ipylsp/api/diagnostics", DiagnosticsHandler),
        (r"/ipylsp/api/pending", PendingHandler),
        (r"/ipylsp/api/tools", ToolsHandler),
        (r"/ipylsp/api/tools/(?P<name>[A-Za-z0-9_]+)", ToolCallHandler),
    ]
