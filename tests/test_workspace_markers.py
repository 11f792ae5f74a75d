"""`IPyLSP.workspace_markers` reaches the service: in a directory marked only by a user's own
marker (no git), reports show paths relative to it, from a real kernel (`%config`), from the
CLI (`--config` file) and from the Python API (`Settings.workspace_markers`).

Servers: ty + ruff (`.venv/bin`); the report's first line is asserted, not the servers' wording.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ipylsp.model.settings import WORKSPACE_MARKERS, Settings
from ipylsp.service.service import Service
from tests.test_ipython_kernel import TY_RUFF, Kernel, kernel_dir_for

pytestmark = pytest.mark.timeout(180)

BAD = 'x: int = "a"\n'
SCRIPT = Path(sys.executable).parent / "ipylsp"


@pytest.fixture
def marked(tmp_path: Path) -> Path:
    """A directory whose only workspace marker is `my.marker` (tmp is in no git worktree)."""
    root = tmp_path / "proj"
    root.mkdir()
    (root / "my.marker").write_text("")
    assert subprocess.run(["git", "rev-parse"], cwd=root, capture_output=True).returncode != 0
    return root


def test_default_markers_are_the_settings() -> None:
    from ipylsp.config import IPyLSP
    from ipylsp.servers import roots

    assert roots.WORKSPACE_MARKERS is WORKSPACE_MARKERS
    assert Settings().workspace_markers == WORKSPACE_MARKERS
    assert IPyLSP().to_settings().workspace_markers == WORKSPACE_MARKERS
    assert IPyLSP(workspace_markers=["my.marker"]).to_settings().workspace_markers == (
        "my.marker",
    )


@pytest.mark.real
def test_api_relative_path(marked: Path, tmp_path: Path) -> None:
    (marked / "app.py").write_text(BAD)
    languages = {"python": ("ty", "ruff")}
    with Service(Settings(language_servers=languages, data_dir=tmp_path / "data")) as plain:
        assert plain.check(marked / "app.py").files[0].display_path == str(marked / "app.py")
    settings = Settings(
        language_servers=languages, data_dir=tmp_path / "data", workspace_markers=("my.marker",)
    )
    with Service(settings) as service:
        report = service.check(marked / "app.py")
    assert [f.display_path for f in report.files] == ["app.py"]
    assert report.files[0].diagnostics


@pytest.mark.real
def test_kernel_report_relative(marked: Path, tmp_path: Path) -> None:
    with Kernel(kernel_dir_for(tmp_path), marked) as kernel:
        kernel.run(f"%load_ext ipylsp\n{TY_RUFF}\n%config IPyLSP.workspace_markers = ['my.marker']")
        cell = kernel.run(f"open('app.py', 'w').write({BAD!r})")
        kernel.run("%unload_ext ipylsp")
    assert len(cell.displays) == 1
    assert cell.displays[0].splitlines()[0] == '<diagnostics file="app.py">'


@pytest.mark.real
def test_cli_config_file_relative(marked: Path, tmp_path: Path) -> None:
    (marked / "app.py").write_text(BAD)
    cfg = tmp_path / "cfg.py"
    cfg.write_text(
        'c.IPyLSP.workspace_markers = ["my.marker"]\n'
        'c.IPyLSP.language_servers = {"python": ["ty", "ruff"]}\n'
    )
    done = subprocess.run(
        [str(SCRIPT), "--data-dir", str(tmp_path / "data"), "--config", str(cfg),
         "check", "app.py"],
        cwd=marked, capture_output=True, text=True, timeout=120,
    )
    assert done.stderr == ""
    assert done.stdout.splitlines()[0] == '<diagnostics file="app.py">'
