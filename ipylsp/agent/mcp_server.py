"""The agent tools over MCP, with the official SDK (`pip install 'ipylsp[mcp]'`), 1.x (as
Jupyter AI 3.2 pins it) or 2.x: one code path, the few differences in named shims
(`_sdk_server`; wire-shaped values, whose camelCase names both lines read). With the Jupyter
server's HTTP transport (`server/mcp_http.py`), the only module that imports `mcp`, and only
inside its functions, so the SDK stays an extra.

- `build_server(toolbox)`: the SDK's low-level `Server`, transport-free, so `ipylsp mcp`
  serves it over stdio and the Jupyter server extension can serve the same object over
  streamable HTTP. Its tools are `tool_schemas("mcp")` as they stand (one table, no second
  definition); a call runs `Toolbox.call` on a worker thread, because the Service blocks.
- `http_session_manager(toolbox)`: that server behind the SDK's streamable-HTTP session
  manager, for the Jupyter server extension (`server/mcp_http.py` bridges Tornado to it).
- `run_stdio(root, settings)`: one Service for the whole session (warm servers, deltas
  across calls), closed when the client closes stdin or on SIGTERM / SIGINT.

A result is the tool's `text` as one `TextContent`, `isError` when it failed (the text starts
`error [code]:` and says what to do next). No `structuredContent`: clients that receive it
show the model that JSON instead of, or beside, the text (doubling what it reads), and the
text is the answer written for a model; the structured `data` stays on the in-kernel API and
the HTTP routes, as the MIME bundle keeps `application/json` out for the same reason.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import signal
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from ipylsp._version import __version__
from ipylsp.agent.schemas import tool_schemas

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext
    from mcp.server.lowlevel import Server

    from ipylsp.agent.result import ToolCaller
    from ipylsp.model.settings import Settings

log = logging.getLogger(__name__)

NAME = "ipylsp"
TITLE = "ipylsp: language servers for agents"
MISSING_SDK = "ipylsp mcp needs the MCP SDK: pip install 'ipylsp[mcp]'"
INSTRUCTIONS = (
    "Language-server tools for this workspace. After editing a file, call lsp_check(path) to "
    "see what the edit introduced (and fixed); pass `content` to check an edit before writing "
    "it. Positions are 1-based; give `symbol` (a name on `line`, or alone) instead of counting "
    "columns."
)


class SdkMissing(ImportError):
    """The `mcp` extra is not installed."""


T = TypeVar("T")


def failure_bases() -> tuple[type[Exception], ...]:
    """The exception classes MCP servers take for an anticipated tool failure (the call marked
    failed, `isError`, with the exception's message as its text): the official SDK's (2.x
    `mcpserver`, 1.x `fastmcp`) and the `fastmcp` package's (Jupyter AI's), those installed.
    Any other exception becomes an unexpected error whose text is only the tool's name."""
    import importlib

    bases: list[type[Exception]] = []
    for module in ("mcp.server.mcpserver.exceptions", "mcp.server.fastmcp.exceptions",
                   "fastmcp.exceptions"):
        try:
            found = importlib.import_module(module).ToolError
        except (ImportError, AttributeError):
            continue
        if isinstance(found, type) and issubclass(found, Exception) and found not in bases:
            bases.append(found)
    return tuple(bases) or (Exception,)


async def _in_daemon_thread(call: Callable[..., T], *args: Any) -> T:
    """`call(*args)` on a daemon thread of its own, awaited. Not anyio's worker threads: they
    are not daemons, and one left idle after the event loop stops keeps a Jupyter server that
    answered an MCP call alive after SIGINT, until it is killed. A call takes at most its
    budget; a thread still running at exit is a daemon and does not hold the interpreter."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[T] = loop.create_future()

    def settle(value: T | None, error: BaseException | None) -> None:
        if done.done():
            return
        if error is not None:
            done.set_exception(error)
        else:
            done.set_result(cast("T", value))

    def run() -> None:
        try:
            value = call(*args)
        except BaseException as exc:  # handed to the awaiting task, raised there
            with contextlib.suppress(RuntimeError):  # the loop is gone: nobody waits
                loop.call_soon_threadsafe(settle, None, exc)
        else:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(settle, value, None)

    threading.Thread(target=run, name="ipylsp-mcp-call", daemon=True).start()
    return await done


def build_server(toolbox: ToolCaller) -> Server[Any]:
    """The MCP server for `toolbox`'s tools; run it on any transport."""
    try:
        import anyio
        import mcp.types as types  # both lines (2.x: a mirror of `mcp_types`)
        from mcp.server.lowlevel import Server
    except ImportError as exc:
        raise SdkMissing(MISSING_SDK) from exc

    # Made from their wire shape (camelCase): 1.x's fields are named so, 2.x's accept it.
    tools = [types.Tool.model_validate(schema) for schema in tool_schemas("mcp")]

    async def call_tool(name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        # Not abandoned when cancelled (the client went away or gave up): the thread ends
        # within the check's budget, and the Service must not close under it.
        with anyio.CancelScope(shield=True):
            result = await _in_daemon_thread(toolbox.call, name, arguments)
        return types.CallToolResult.model_validate({
            "content": [{"type": "text", "text": result.text}], "isError": not result.ok,
        })

    return _sdk_server(Server, tools, call_tool)


CallTool = Callable[[str, "dict[str, Any]"], Awaitable[Any]]


def _sdk_server(
    server_class: type[Server[Any]], tools: list[Any], call_tool: CallTool
) -> Server[Any]:
    """The SDK's low-level `Server` answering `tools/list` with `tools` and `tools/call` with
    `call_tool(name, arguments)`. 2.x takes the handlers in its constructor (with a request
    context and the request's params); 1.x registers them with decorators, has no `title`,
    and would validate arguments against the schema itself (off: the tool box validates them
    and answers with its own error line)."""
    if not _sdk_1x():
        import mcp.types as types

        async def on_list_tools(
            ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
        ) -> types.ListToolsResult:
            return types.ListToolsResult(tools=tools)

        async def on_call_tool(
            ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
        ) -> types.CallToolResult:
            return cast("types.CallToolResult",
                        await call_tool(params.name, params.arguments or {}))

        return server_class(
            NAME,
            version=__version__,
            title=TITLE,
            instructions=INSTRUCTIONS,
            on_list_tools=on_list_tools,
            on_call_tool=on_call_tool,
        )
    server: Any = cast(Any, server_class)(NAME, version=__version__, instructions=INSTRUCTIONS)
    # 1.x warns of a call to a tool it did not list, which the tool box answers itself
    # (`error [unknown_tool]` with the tools' names): not a warning for the client's log.
    logging.getLogger(server_class.__module__).addFilter(_unlisted_tool_warning)

    async def list_tools() -> list[Any]:
        return tools

    server.list_tools()(list_tools)
    server.call_tool(validate_input=False)(call_tool)
    return cast("Server[Any]", server)


def http_session_manager(toolbox: ToolCaller) -> Any:
    """The SDK's streamable-HTTP session manager for `toolbox`'s tools: stateless, JSON
    answers (each request complete in itself). Run it with `async with manager.run()` and
    hand it ASGI calls (`handle_request`); the Jupyter server extension does."""
    try:
        from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    except ImportError as exc:
        raise SdkMissing(MISSING_SDK) from exc
    return StreamableHTTPSessionManager(
        app=build_server(toolbox), json_response=True, stateless=True
    )


def run_stdio(root: str | os.PathLike[str], settings: Settings,
              tools: ToolCaller | None = None) -> int:
    """Serve the tools for `root` over stdin/stdout until the client closes stdin or a
    SIGTERM/SIGINT arrives (exit code). `tools`: who answers (the broker's, relayed); None:
    a service of this process's own, whose servers are all stopped before returning."""
    try:
        import anyio
        from mcp.server.stdio import stdio_server
    except ImportError as exc:
        raise SdkMissing(MISSING_SDK) from exc
    service = None
    if tools is None:
        from ipylsp.agent.toolbox import Toolbox
        from ipylsp.service import Service

        where = Path(root).resolve()  # the files' workspace, and the cells': the root's servers
        service = Service(dataclasses.replace(settings, directory=where), cells_dir=where)
        tools = Toolbox(service, where)
        threading.Thread(target=_warm_up, name="ipylsp-mcp-warm-up", daemon=True).start()
    try:
        server = build_server(tools)

        async def serve() -> None:
            async with anyio.create_task_group() as group:
                group.start_soon(_cancel_on_signal, group.cancel_scope)
                # The transport claims the real stdout first; then stray prints go to stderr.
                stdin = cast("anyio.AsyncFile[str]", _StdinLines(sys.stdin.fileno()))
                async with stdio_server(stdin=stdin, stdout=_sdk_stdout()) as (read, write):
                    with _stdout_to_stderr():
                        await server.run(read, write, server.create_initialization_options())
                group.cancel_scope.cancel()

        anyio.run(serve)
    except KeyboardInterrupt:
        pass
    finally:
        if service is not None:
            service.close()
    return 0


def _unlisted_tool_warning(record: logging.LogRecord) -> bool:
    return "not listed, no validation will be performed" not in record.getMessage()


def _sdk_1x() -> bool:
    """The SDK's 1.x line: its low-level `Server` registers handlers with decorators."""
    from mcp.server.lowlevel import Server

    return hasattr(Server, "call_tool")


def _sdk_stdout() -> Any:
    """The stdout `stdio_server` writes to: 2.x's own (None), which points fd 1 at stderr
    while it serves; for 1.x, a file of our own on a duplicate of fd 1: its default wraps
    `sys.stdout.buffer` and closes it when the wrapper goes, so the CLI's last flush failed
    (`I/O operation on closed file`)."""
    if not _sdk_1x():
        return None
    import anyio

    return anyio.wrap_file(open(os.dup(sys.stdout.fileno()), "w", encoding="utf-8"))


def _warm_up() -> None:
    """While the client is still starting, import the argument validator. Not lsprotocol
    (what the first hover or definition needs): its slow import beside the first `lsp_check`
    holds the GIL and slows that check several times over (benchmarks/README.md, bench_mcp.py),
    and checks come first."""
    with contextlib.suppress(Exception):
        import fastjsonschema  # noqa: F401


async def _cancel_on_signal(scope: Any) -> None:
    """SIGTERM / SIGINT end the session like a closed stdin: the Service closes after."""
    import anyio

    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for signum in signals:
            log.info("ipylsp mcp: %s, stopping", signal.Signals(signum).name)
            scope.cancel()
            return


class _StdinLines:
    """Lines of stdin, read without a thread: the SDK's own reader blocks a worker thread in
    `readline`, which a cancel cannot interrupt, so a SIGTERM would wait for the client's
    next message. Only `async for` is used by the transport."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._buffer = b""
        self._eof = False

    def __aiter__(self) -> _StdinLines:
        return self

    async def __anext__(self) -> str:
        import anyio

        while True:
            line, found, rest = self._buffer.partition(b"\n")
            if found or (self._eof and line):
                self._buffer = rest
                if line.strip():
                    return line.decode("utf-8", errors="replace")
                continue
            if self._eof:
                raise StopAsyncIteration
            # Readable, so this read returns what is there without blocking (the descriptor
            # stays blocking: a terminal's flags are shared with the shell).
            await anyio.wait_readable(self._fd)
            chunk = os.read(self._fd, 1 << 16)
            self._eof = not chunk
            self._buffer += chunk


@contextlib.contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """While serving, a stray `print` lands on stderr, not in the protocol stream (the SDK's
    stdio transport also points fd 1 at stderr and writes to its own duplicate of it)."""
    saved = sys.stdout
    sys.stdout = sys.stderr
    try:
        yield
    finally:
        sys.stdout = saved
