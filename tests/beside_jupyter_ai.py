"""ipylsp's tools as Jupyter AI serves them: jupyter-server-mcp (as Jupyter AI 3.2 pins it)
starts its MCP server the way it does in a Jupyter server, finding ipylsp through the
`jupyter_server_mcp.tools` entry point with its own loader, on a port of its own without
authentication, and an MCP client (the SDK's 1.x line, as installed beside Jupyter AI) calls
them there. By default nothing of ipylsp's is served; with `c.IPyLSP.jupyter_ai_tools = True`
every tool is, answers from the server extension's Service, and a failed call is `isError`.

Not collected by a plain `pytest` (its name has no `test_` prefix): it needs Jupyter AI, which
only .venv-jupyter-ai has (scripts/bootstrap makes it); scripts/test runs it there, and fails
when that venv is missing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jupyter_server.serverapp import ServerApp
from traitlets.config import Config

from ipylsp.agent import TOOLS
from ipylsp.model.settings import Settings
from ipylsp.server import state
from tests.mcp_sdk import http_client, texts
from tests.real_servers import DATA_DIR, require, workspace, write

try:
    from jupyter_server_mcp.extension import MCPExtensionApp
except ImportError as missing:
    raise ImportError(
        "tests/beside_jupyter_ai.py runs in .venv-jupyter-ai, beside Jupyter AI: make it with "
        "scripts/bootstrap, run it with scripts/test (jupyter-server-mcp is not installed here)"
    ) from missing

pytestmark = [pytest.mark.real, pytest.mark.mcp_sdk]

Answer = tuple[bool, list[str]]  # (isError, the text blocks)


@pytest.fixture
def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The ipylsp server extension's state on a workspace (real ty and ruff), as in a Jupyter
    server that loaded it; jupyter-server-mcp's runtime file kept under `tmp_path`."""
    require("ty")
    require("ruff")
    root = workspace(tmp_path, monkeypatch)
    write(root, "app.py", "count: int = 'three'\n")
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    state.start(root, Settings(language_servers={"python": ("ty", "ruff")}, data_dir=DATA_DIR))
    try:
        yield root
    finally:
        state.stop()
        ServerApp.clear_instance()


async def _through_jupyter_server_mcp(
    ipylsp: dict[str, Any], calls: dict[str, dict[str, Any]]
) -> tuple[list[str], dict[str, Answer]]:
    """The tools jupyter-server-mcp serves, listed and called over HTTP on its port (no
    token: it has none), when the Jupyter server's configuration holds `ipylsp` as `IPyLSP`."""
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    ServerApp.clear_instance()
    ServerApp.instance(config=Config({"IPyLSP": ipylsp}))  # what the entry point reads
    app = MCPExtensionApp(config=Config({"MCPExtensionApp": {"mcp_port": 0}}))
    await app.start_extension()  # its own loader: entry points, then its port
    try:
        assert app.mcp_server_instance is not None
        port = app.mcp_server_instance.port  # type: ignore[attr-defined]
        async with (
            http_client({}) as client,
            streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=client) as (
                read, write_stream, *_),
            ClientSession(read, write_stream) as session,
        ):
            await session.initialize()
            names = [tool.name for tool in (await session.list_tools()).tools]
            answers = {}
            for name, arguments in calls.items():
                answers[name] = texts(await session.call_tool(name, arguments))
            return names, answers
    finally:
        await app.stop_extension()


def test_nothing_of_ipylsp_is_served_by_default(served: Path) -> None:
    for setting in ({}, {"jupyter_ai_tools": False}):
        names, answers = asyncio.run(_through_jupyter_server_mcp(
            setting, {"lsp_check": {"path": "app.py"}}))
        assert [name for name in names if name in TOOLS] == []
        is_error, _ = answers["lsp_check"]
        assert is_error  # an unknown tool there: nothing answers from the workspace


def test_once_turned_on_every_tool_is_served_and_a_failure_is_an_error(served: Path) -> None:
    names, answers = asyncio.run(_through_jupyter_server_mcp(
        {"jupyter_ai_tools": True},
        {"lsp_check": {"path": "app.py"}, "lsp_hover": {"path": "../outside.py", "line": 1}},
    ))
    assert [name for name in names if name in TOOLS] == list(TOOLS)
    assert answers["lsp_check"] == (False, [
        '<diagnostics file="app.py">\n'
        "ERROR [1:14] Object of type `Literal[\"three\"]` is not assignable to `int` "
        "[invalid-assignment] (ty)\n"
        "</diagnostics>"
    ])
    is_error, [text] = answers["lsp_hover"]
    assert is_error
    assert "error [outside_workspace]: ../outside.py is outside the workspace" in text
