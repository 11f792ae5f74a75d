"""textDocument/signatureHelp on every surface, from its one `Feature` value: the service
(real ty, basedpyright and pyright), the Python API, the agent tool and `%lsp signature`."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

import ipylsp
from ipylsp.agent import TOOLS, Toolbox
from ipylsp.lsp.requests.signature_help import SIGNATURE_HELP
from ipylsp.model.diagnostics import UnknownReason
from ipylsp.model.settings import Settings
from ipylsp.service.service import Service
from tests.real_servers import DATA_DIR, require

pytestmark = pytest.mark.real

SHAPES = '''\
def area(width: int, height: int) -> int:
    """The area of a rectangle."""
    return width * height


total = area(3, 4)
'''
AT_HEIGHT = (5, 16)  # 0-based: `area(3, |4)`
ON_HEIGHT = (
    "(width: int, height: int) -> int\nparameter: height: int\n\nThe area of a rectangle."
)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ws = tmp_path_factory.mktemp("signature")
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    (ws / "shapes.py").write_text(SHAPES)
    return ws


@pytest.mark.parametrize("server_id", ["ty", "basedpyright", "pyright"])
def test_the_signature_and_the_parameter_being_written(root: Path, server_id: str) -> None:
    require(server_id)
    settings = Settings(language_servers={"python": (server_id,)}, data_dir=DATA_DIR)
    with Service(settings) as service:
        found = service.feature(SIGNATURE_HELP, root / "shapes.py", *AT_HEIGHT)
        assert (found.answer, found.server_id) == (ON_HEIGHT, server_id)
        assert service.feature(SIGNATURE_HELP, root / "shapes.py", 5, 13).answer == (
            ON_HEIGHT.replace("parameter: height: int", "parameter: width: int")
        )
        outside = service.feature(SIGNATURE_HELP, root / "shapes.py", 0, 2)
        assert outside.format(root) == "(no signature here)" and outside.reason is None


def test_a_server_without_it_is_said(root: Path) -> None:
    require("ruff")  # ruff offers no signature help
    settings = Settings(language_servers={"python": ("ruff",)}, data_dir=DATA_DIR)
    with Service(settings) as service:
        found = service.feature(SIGNATURE_HELP, root / "shapes.py", *AT_HEIGHT)
    assert (found.reason, found.error) == (
        UnknownReason.NO_PROVIDER, "no server for shapes.py offers signature_help"
    )


@pytest.fixture
def process_service(root: Path) -> Iterator[Service]:
    ipylsp._reset_service()
    yield ipylsp.get_service(
        Settings(language_servers={"python": ("ty", "ruff")}, data_dir=DATA_DIR)
    )
    ipylsp._reset_service()


def test_the_python_api_and_the_agent_tool(root: Path, process_service: Service) -> None:
    line, column = AT_HEIGHT
    answer = ipylsp.signature_help(root / "shapes.py", line + 1, column + 1)
    assert repr(answer) == ON_HEIGHT
    assert " ".join((ipylsp.signature_help.__doc__ or "").split()) == (
        "The signature of the call at a place, with the parameter being written. "
        "Positions are 1-based (characters)."
    )
    assert "lsp_signature_help" in TOOLS
    result = Toolbox(process_service, root).call(
        "lsp_signature_help", {"path": "shapes.py", "line": line + 1, "symbol": "4"}
    )
    assert (result.ok, result.text) == (True, ON_HEIGHT)
    assert result.data == {"at": {"path": "shapes.py", "line": 6, "column": 17},
                           "signature_help": ON_HEIGHT, "server": "ty"}
