"""MCP over streamable HTTP at `{base_url}/ipylsp/mcp`, inside the Jupyter server: no second
port, and Jupyter's own authentication in front (the handler is `@authenticated` and
`@authorized` like every route of the extension).

The MCP server object is `agent.mcp_server.build_server` on the extension's tool box: the same
tools, schemas and texts as `ipylsp mcp` on stdio. The SDK serves HTTP as an ASGI app; a Tornado
handler hands each request to its session manager as an ASGI call (stateless, JSON answers:
every request is complete in itself, so nothing ties a client to one server process). The
manager runs in one task for the Jupyter server's lifetime, started on the first request.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, MutableMapping
from typing import TYPE_CHECKING, Any

from jupyter_server.auth.decorator import authorized
from tornado import web

from ipylsp.server.handlers import IPyLSPHandler

if TYPE_CHECKING:
    from ipylsp.agent.result import ToolCaller

Message = MutableMapping[str, Any]


class McpBridge:
    """The SDK's streamable-HTTP session manager, kept running in one task."""

    def __init__(self, toolbox: ToolCaller) -> None:
        self._toolbox = toolbox
        self._manager: Any = None
        self._task: asyncio.Task[None] | None = None
        self._ready: asyncio.Event | None = None
        self._stop: asyncio.Event | None = None

    async def manager(self) -> Any:
        """The running session manager (started on first use)."""
        if self._task is None:
            from ipylsp.agent.mcp_server import http_session_manager

            self._manager = http_session_manager(self._toolbox)
            self._ready, self._stop = asyncio.Event(), asyncio.Event()
            self._task = asyncio.create_task(self._run(self._manager, self._ready, self._stop))
        assert self._ready is not None
        await self._ready.wait()
        return self._manager

    @staticmethod
    async def _run(manager: Any, ready: asyncio.Event, stop: asyncio.Event) -> None:
        async with manager.run():
            ready.set()
            await stop.wait()

    async def close(self) -> None:
        if self._task is None or self._stop is None:
            return
        self._stop.set()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._task, 5)


class McpHandler(IPyLSPHandler):
    """Each MCP HTTP request as one ASGI call to the SDK's session manager. Jupyter's XSRF
    check stays: token-authenticated clients (every MCP client) pass it, a browser's cookie
    alone does not."""

    _asgi_done: asyncio.Event

    @web.authenticated
    @authorized
    async def post(self) -> None:
        await self._asgi()

    @web.authenticated
    @authorized
    async def get(self) -> None:
        await self._asgi()

    @web.authenticated
    @authorized
    async def delete(self) -> None:
        await self._asgi()

    async def _asgi(self) -> None:
        bridge: McpBridge = self.settings["ipylsp_mcp"]
        try:
            manager = await bridge.manager()
        except ImportError:
            self.reply({"error": {"code": "server_unavailable", "message":
                                  "MCP needs the SDK: pip install 'ipylsp[mcp]'"}}, 503)
            return
        await manager.handle_request(self._scope(), self._receive(), self._send)
        if not self._finished:
            self.finish()

    def _scope(self) -> dict[str, Any]:
        request = self.request
        host, _, port = (request.host or "127.0.0.1").partition(":")
        return {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": "1.1",
            "method": request.method,
            "scheme": request.protocol,
            "path": "/mcp",
            "raw_path": b"/mcp",
            "root_path": "",
            "query_string": (request.query or "").encode("latin-1"),
            "headers": [
                (name.lower().encode("latin-1"), value.encode("latin-1"))
                for name, value in request.headers.get_all()
            ],
            "client": (request.remote_ip or "127.0.0.1", 0),
            "server": (host, int(port) if port.isdigit() else 80),
        }

    def _receive(self) -> Callable[[], Awaitable[Message]]:
        body = self.request.body or b""
        sent = False
        done = asyncio.Event()
        self._asgi_done = done

        async def receive() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            await done.wait()  # nothing more comes: a disconnect once the answer is out
            return {"type": "http.disconnect"}

        return receive

    async def _send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.set_status(int(message["status"]))
            self.clear_header("Content-Type")
            for name, value in message.get("headers", []):
                self.add_header(name.decode("latin-1"), value.decode("latin-1"))
        elif message["type"] == "http.response.body":
            body = message.get("body", b"")
            if body:
                self.write(body)
            if message.get("more_body"):
                await self.flush()
            else:
                self._asgi_done.set()
                if not self._finished:
                    self.finish()
