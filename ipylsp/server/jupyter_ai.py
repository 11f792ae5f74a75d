"""The agent tools as plain Python functions, for Jupyter AI (3.x): its MCP server
(jupyter-server-mcp) finds tools through the `jupyter_server_mcp.tools` entry point as
`module:function` strings and derives each schema from the function's signature. The functions
are made from the one tool table (`agent.registry.TOOLS`), so names, arguments and texts are the
same as on every surface.

jupyter-server-mcp serves them on a port of its own without authentication, so the entry point
(`mcp_tools`) names none unless the Jupyter server's configuration turns them on
(`c.IPyLSP.jupyter_ai_tools = True`).

They answer from the ipylsp server extension's tools when it is loaded (the same Jupyter
server: the user's broker's, unless it is off or cannot be had), else from the process-wide
service rooted at the current directory. A failed call raises
`ToolFailed` with the tool's error line, so the MCP server marks it failed.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import Annotated, Any, Literal

from ipylsp.agent.mcp_server import failure_bases
from ipylsp.agent.registry import TOOLS, Tool
from ipylsp.agent.result import ToolCaller
from ipylsp.agent.toolbox import Toolbox

ToolFunction = Callable[..., Awaitable[str]]

_JSON_TYPES: dict[str, type] = {"string": str, "integer": int, "boolean": bool, "number": float}


ToolFailed: type[Exception] = type("ToolFailed", failure_bases(), {
    "__module__": __name__,
    "__doc__": "A tool call that failed, its message the tool's `error [code]: what to do "
    "next` line: raised as the MCP servers' own anticipated failure, so that the one calling "
    "the function marks the call failed (`isError`) and shows the line, where a returned "
    "text would read as success.",
})


def _toolbox() -> ToolCaller:
    from ipylsp.server.state import current

    state = current()
    return state.toolbox if state is not None else Toolbox()


def _annotation(schema: Mapping[str, Any]) -> Any:
    """The Python type of an argument, with its description (and bounds) as a pydantic
    `Field` when pydantic is there (it is wherever an MCP server reads the signature)."""
    base: Any = Literal[tuple(schema["enum"])] if "enum" in schema else _JSON_TYPES[schema["type"]]
    try:
        from pydantic import Field
    except ImportError:
        return base
    bounds = {key: schema[key] for key in ("minimum",) if key in schema}
    field = Field(description=schema.get("description"), ge=bounds.get("minimum"))
    return Annotated[base, field]


def _function(tool: Tool) -> ToolFunction:
    parameters = []
    for name, schema in tool.properties.items():
        annotation = _annotation(schema)
        if name in tool.required:
            parameters.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY,
                                                annotation=annotation))
        else:
            parameters.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY,
                                                default=None, annotation=annotation | None))

    async def call(**arguments: Any) -> str:
        given = {name: value for name, value in arguments.items() if value is not None}
        result = await asyncio.to_thread(_toolbox().call, tool.name, given)
        if not result.ok:  # the MCP server that calls it marks the call failed (isError)
            raise ToolFailed(result.text)
        return result.text

    call.__name__ = call.__qualname__ = tool.name
    call.__doc__ = tool.description
    call.__signature__ = inspect.Signature(parameters, return_annotation=str)  # type: ignore[attr-defined]
    call.__annotations__ = {p.name: p.annotation for p in parameters} | {"return": str}
    return call


FUNCTIONS: dict[str, ToolFunction] = {name: _function(tool) for name, tool in TOOLS.items()}
globals().update(FUNCTIONS)  # `ipylsp.server.jupyter_ai:lsp_check` and so on

MCP_TOOLS: list[str] = [f"{__name__}:{name}" for name in FUNCTIONS]
"""One `module:function` per tool, what the entry point names when the tools are turned on."""

TURN_ON = "c.IPyLSP.jupyter_ai_tools = True"


def mcp_tools() -> list[str]:
    """The `jupyter_server_mcp.tools` entry point, called (without arguments) by
    jupyter-server-mcp as the Jupyter server starts: `MCP_TOOLS` when the running Jupyter
    server's configuration says `c.IPyLSP.jupyter_ai_tools = True`, else none. Said once in
    the server's log either way: that port has no authentication."""
    from jupyter_server.serverapp import ServerApp

    from ipylsp.config import IPyLSP

    if not ServerApp.initialized():
        return []
    server = ServerApp.instance()
    try:
        turned_on = IPyLSP(config=server.config).to_settings().jupyter_ai_tools
    except Exception as exc:  # a bad IPyLSP setting: said, and nothing served
        server.log.error("ipylsp: agent tools not served on jupyter-server-mcp's port: %s", exc)
        return []
    if not turned_on:
        server.log.info(
            "ipylsp: agent tools not served on jupyter-server-mcp's port, which has no "
            "authentication (ipylsp's own /ipylsp/mcp needs the token); to serve them there "
            "too: %s", TURN_ON)
        return []
    server.log.warning(
        "ipylsp: agent tools served on jupyter-server-mcp's port (%s), which has no "
        "authentication: any process or user on this machine can call them", TURN_ON)
    return list(MCP_TOOLS)
