"""ipylsp's tools for Jupyter AI: the `jupyter_server_mcp.tools` entry point names one
`module:function` per tool once `c.IPyLSP.jupyter_ai_tools` turns them on (none by default),
and an MCP server that derives schemas from signatures (the SDK's own, as Jupyter AI's does)
sees the same tools, arguments and answers as every other surface. jupyter-server-mcp itself:
tests/jupyter_ai/check_jupyter_server_mcp.py."""

from __future__ import annotations

import asyncio
import importlib
import logging
from collections.abc import Callable, Iterator
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, cast

import pytest
from jupyter_server.serverapp import ServerApp
from traitlets.config import Config

from ipylsp.agent import TOOLS, tool_schemas
from ipylsp.model.settings import Settings
from ipylsp.server import state
from ipylsp.server.jupyter_ai import FUNCTIONS, MCP_TOOLS, TURN_ON, ToolFailed
from tests.mcp_sdk import call_texts, signature_server, tool_error, wire
from tests.real_servers import DATA_DIR, require, workspace, write

pytestmark = pytest.mark.mcp_sdk


@pytest.fixture
def jupyter_server(caplog: pytest.LogCaptureFixture) -> Iterator[Callable[..., ServerApp]]:
    """The running Jupyter server as the entry point finds it (the ServerApp singleton), made
    with the given configuration; its log captured."""

    def make(**ipylsp: Any) -> ServerApp:
        server = ServerApp.instance(config=Config({"IPyLSP": ipylsp}))
        server.log = logging.getLogger("test-jupyter-server")
        return server

    caplog.set_level(logging.INFO, logger="test-jupyter-server")
    try:
        yield make
    finally:
        ServerApp.clear_instance()


def _server_log(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    """What the Jupyter server's log said: not what other loggers say meanwhile (an earlier
    test's kernel client, collected now, warns through traitlets' logger)."""
    return [r for r in caplog.records if r.name == "test-jupyter-server"]


def _entry_point() -> Callable[[], list[str]]:
    [point] = [e for e in entry_points(group="jupyter_server_mcp.tools") if e.name == "ipylsp"]
    loaded = point.load()
    assert callable(loaded)  # jupyter-server-mcp calls it, without arguments, as it starts
    return cast("Callable[[], list[str]]", loaded)


def test_the_entry_point_serves_nothing_by_default(
    jupyter_server: Callable[..., ServerApp], caplog: pytest.LogCaptureFixture
) -> None:
    """jupyter-server-mcp's port has no authentication: no tool there unless turned on, and
    the server's log says how."""
    assert _entry_point()() == []  # no Jupyter server at all
    jupyter_server()
    assert _entry_point()() == []
    assert [r.levelname for r in _server_log(caplog)] == ["INFO"]
    assert "no authentication" in caplog.text and TURN_ON in caplog.text
    caplog.clear()
    ServerApp.clear_instance()
    jupyter_server(jupyter_ai_tools=False)
    assert _entry_point()() == []


def test_a_bad_setting_serves_nothing_and_says_why(
    jupyter_server: Callable[..., ServerApp], caplog: pytest.LogCaptureFixture
) -> None:
    jupyter_server(jupyter_ai_tools=True, language_servers={"python": "ty"})
    assert _entry_point()() == []
    assert [r.levelname for r in _server_log(caplog)] == ["ERROR"]
    assert "IPyLSP.language_servers['python'] must be a list" in caplog.text


def test_the_entry_point_lists_every_tool_once_turned_on(
    jupyter_server: Callable[..., ServerApp], caplog: pytest.LogCaptureFixture
) -> None:
    jupyter_server(jupyter_ai_tools=True)
    listed = _entry_point()()
    assert [r.levelname for r in _server_log(caplog)] == ["WARNING"]  # no authentication there
    assert "no authentication" in caplog.text
    assert listed == MCP_TOOLS
    for spec in listed:
        module, _, name = spec.partition(":")
        assert getattr(importlib.import_module(module), name) is FUNCTIONS[name]
    assert [spec.rpartition(":")[2] for spec in listed] == list(TOOLS)


def _jupyter_ai_like() -> Any:
    server = signature_server("jupyter-ai-like")
    for function in FUNCTIONS.values():
        server.add_tool(function)
    return server


def test_signatures_give_the_same_arguments() -> None:
    derived = {t.name: wire(t) for t in asyncio.run(_jupyter_ai_like().list_tools())}
    for ours in tool_schemas("mcp"):
        tool = derived[ours["name"]]
        schema = tool["inputSchema"]
        assert tool["description"] == ours["description"]
        assert set(schema["properties"]) == set(ours["inputSchema"]["properties"])
        assert sorted(schema.get("required", [])) == sorted(ours["inputSchema"].get("required", []))
        for name, prop in ours["inputSchema"]["properties"].items():
            text = str(schema["properties"][name])
            assert prop["description"] in text
            if "enum" in prop:
                assert str(prop["enum"]) in text


@pytest.fixture
def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    require("ty")
    require("ruff")
    root = workspace(tmp_path, monkeypatch)
    state.start(root, Settings(language_servers={"python": ("ty", "ruff")}, data_dir=DATA_DIR))
    try:
        yield root
    finally:
        state.stop()


@pytest.mark.real
def test_a_call_answers_from_the_server_extensions_service(served: Path) -> None:
    write(served, "app.py", "count: int = 'three'\n")
    answered = asyncio.run(call_texts(_jupyter_ai_like(), "lsp_check", {"path": "app.py"}))
    assert answered == [
        '<diagnostics file="app.py">\n'
        "ERROR [1:14] Object of type `Literal[\"three\"]` is not assignable to `int` "
        "[invalid-assignment] (ty)\n"
        "</diagnostics>"
    ]
    direct = asyncio.run(FUNCTIONS["lsp_check"](path="app.py", content="count: int = 3\n"))
    assert direct == "fixed 1 error in app.py\n(proposed content; nothing was written)"
    with pytest.raises(ToolFailed) as refused:  # marked failed, never an answer
        asyncio.run(FUNCTIONS["lsp_check"](path="/etc/hostname"))
    assert str(refused.value).startswith(
        "error [outside_workspace]: /etc/hostname is outside the workspace"
    )


@pytest.mark.real
def test_a_failed_call_is_marked_failed(served: Path) -> None:
    """`error [...]` as a plain answer would read as success (`isError` false): it is raised,
    and the MCP server marks the call failed with the tool's own error line."""
    # an anticipated failure: the server answers `isError` with this very text (2.x's
    # unexpected one, a subclass, would say only "Error executing tool lsp_check")
    with pytest.raises(tool_error()) as failed:
        asyncio.run(_jupyter_ai_like().call_tool("lsp_check", {"path": "../outside.py"}))
    assert type(failed.value) is tool_error()
    assert str(failed.value).startswith(  # the SDK's prefix, then the tool's own line
        "Error executing tool lsp_check: error [outside_workspace]: ../outside.py is outside "
        "the workspace"
    )
    with pytest.raises(ToolFailed, match=r"^error \[outside_workspace\]"):
        asyncio.run(FUNCTIONS["lsp_check"](path="../outside.py"))
