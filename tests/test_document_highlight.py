"""textDocument/documentHighlight on every surface, from its one module
(`lsp/requests/document_highlight.py`) and a line in each surface's table: the service (real
ty and basedpyright), the Python API, the agent tool; `%lsp highlight` is in
tests/test_magics.py, with its help."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

import ipylsp
from ipylsp.agent import TOOLS, Toolbox
from ipylsp.lsp.requests.document_highlight import DOCUMENT_HIGHLIGHT
from ipylsp.model.settings import Settings
from ipylsp.service import Service
from tests.real_servers import DATA_DIR, require

pytestmark = pytest.mark.real

SHAPES = '''\
def area(width: int) -> int:
    return width * width


total = area(2)
print("\U0001d11e", total)
'''
ON_WIDTH = ["shapes.py:1:10", "shapes.py:2:12", "shapes.py:2:20"]
ON_TOTAL = ["shapes.py:5:1", "shapes.py:6:12"]
"""After `"𝄞", ` (one code point, two UTF-16 units): column 12, not 13."""


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ws = tmp_path_factory.mktemp("highlight")
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    (ws / "shapes.py").write_text(SHAPES)
    return ws


@pytest.mark.parametrize("server_id", ["ty", "basedpyright"])
def test_where_the_symbol_is_written_and_read_in_its_file(root: Path, server_id: str) -> None:
    require(server_id)
    settings = Settings(language_servers={"python": (server_id,)}, data_dir=DATA_DIR)
    with Service(settings) as service:
        width = service.feature(DOCUMENT_HIGHLIGHT, root / "shapes.py", 0, 9)
        assert (width.format(root).splitlines(), width.server_id) == (ON_WIDTH, server_id)
        total = service.feature(DOCUMENT_HIGHLIGHT, root / "shapes.py", 5, 12)
        assert total.format(root).splitlines() == ON_TOTAL
        blank = service.feature(DOCUMENT_HIGHLIGHT, root / "shapes.py", 2, 0)
        assert (blank.answer, blank.format(root), blank.reason) == (
            (), "(no highlights here)", None
        )


def test_a_server_without_it_is_the_agents_error(root: Path) -> None:
    require("ruff")  # ruff highlights nothing
    settings = Settings(language_servers={"python": ("ruff",)}, data_dir=DATA_DIR)
    with Service(settings) as service:
        result = Toolbox(service, root).call(
            "lsp_document_highlight", {"path": "shapes.py", "line": 1, "symbol": "width"}
        )
    assert (result.ok, result.error_code, result.text) == (
        False, "server_unavailable",
        "error [server_unavailable]: no server for shapes.py offers document_highlight; no "
        "server for this file offers it; lsp_status lists the installed servers",
    )


def test_the_python_api_and_the_agent_tool(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(root)
    ipylsp._reset_service()  # the process-wide service, as the API and the agent share it
    service = ipylsp.get_service(
        Settings(language_servers={"python": ("ty", "ruff")}, data_dir=DATA_DIR)
    )
    try:
        answer = ipylsp.document_highlight(root / "shapes.py", 1, 10)
        assert repr(answer) == "\n".join(ON_WIDTH)
        assert "document_highlight" in ipylsp.__all__
        assert " ".join((ipylsp.document_highlight.__doc__ or "").split()) == (
            "Every place in its file where the symbol at a place is written or read. "
            "Positions are 1-based (characters)."
        )
        assert "lsp_document_highlight" in TOOLS
        box = Toolbox(service, root)
        result = box.call(
            "lsp_document_highlight", {"path": "shapes.py", "line": 6, "symbol": "total"}
        )
        shown = 'print("\U0001d11e", total)'
        assert (result.ok, result.text) == (
            True, f"shapes.py:5:1: total = area(2)\nshapes.py:6:12: {shown}"
        )
        assert result.data == {
            "at": {"path": "shapes.py", "line": 6, "column": 12},
            "locations": [
                {"path": "shapes.py", "line": 5, "column": 1, "text": "total = area(2)"},
                {"path": "shapes.py", "line": 6, "column": 12, "text": shown},
            ],
            "server": "ty",
        }
        nothing = box.call("lsp_document_highlight", {"path": "shapes.py", "line": 3, "column": 1})
        assert (nothing.ok, nothing.text) == (True, "(no highlights here)")
    finally:
        ipylsp._reset_service()
