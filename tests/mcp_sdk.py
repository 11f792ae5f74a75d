"""The MCP SDK as the tests speak to it, on the line installed: 2.x in .venv, 1.x (as Jupyter
AI 3.2 pins it) in .venv-jupyter-ai, where scripts/test runs the MCP tests too. Values are read
in their wire shape (`isError`, `inputSchema`: the names 1.x's fields have and 2.x dumps by
alias), so one test reads both lines; what else differs is a helper here."""

from __future__ import annotations

from importlib.metadata import version
from typing import Any

LINE = int(version("mcp").split(".")[0])
"""The SDK's major version: 1 or 2."""


def wire(value: Any) -> dict[str, Any]:
    """A result, tool or annotation as it goes over the wire (camelCase, no nulls)."""
    dumped: dict[str, Any] = value.model_dump(by_alias=True, exclude_none=True, mode="json")
    return dumped


def texts(result: Any) -> tuple[bool, list[str]]:
    """(isError, the text blocks) of a `CallToolResult`."""
    shape = wire(result)
    return bool(shape.get("isError")), [block["text"] for block in shape["content"]]


def http_client(headers: dict[str, str]) -> Any:
    """The HTTP client the line's streamable-HTTP transport takes: 2.x's httpx2, 1.x's httpx."""
    if LINE >= 2:
        import httpx2 as httpx
    else:
        import httpx
    return httpx.AsyncClient(headers=headers, timeout=60)


def signature_server(name: str) -> Any:
    """The SDK's own server that derives a tool's schema from a function's signature (what
    Jupyter AI's MCP server does): `MCPServer` on 2.x, `FastMCP` on 1.x."""
    if LINE >= 2:
        from mcp.server.mcpserver import MCPServer

        return MCPServer(name)
    from mcp.server.fastmcp import FastMCP

    return FastMCP(name)


def tool_error() -> type[Exception]:
    """The exception the signature server raises for a failed call (its `isError` answer)."""
    if LINE >= 2:
        from mcp.server.mcpserver.exceptions import ToolError
    else:
        from mcp.server.fastmcp.exceptions import ToolError
    return ToolError


async def call_texts(server: Any, name: str, arguments: dict[str, Any]) -> list[str]:
    """The text blocks the signature server answers a successful call with (2.x returns a
    `CallToolResult`; 1.x the content, or (content, structured) for a typed return)."""
    result = await server.call_tool(name, arguments)
    if LINE >= 2:
        is_error, blocks = texts(result)
        assert not is_error, blocks
        return blocks
    content = result[0] if isinstance(result, tuple) else result
    return [block.text for block in content]
