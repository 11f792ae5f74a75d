"""A notebook in the home directory (JupyterHub opens every user there): its writes are checked
by servers rooted at the notebook's directory that do not index the whole home, the cells
share those servers, and a source file written where nothing checks it is said once, with
the fix (issue 22, item 6: one rule for one directory).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from ipylsp.model.settings import Settings
from ipylsp.servers import roots
from ipylsp.service.service import Service
from tests.real_servers import require
from tests.test_ipython_kernel import Kernel, _servers, block, kernel_dir_for, ty_assign

pytestmark = pytest.mark.real


def _home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (home / "data").mkdir(parents=True)
    (home / "data" / "old.py").write_text("x: int = 'not discovered, not checked'\n")
    home.chmod(0o700)
    return home


def test_the_notebooks_directory_is_its_workspace_and_the_home_is_not_indexed(
    tmp_path: Path,
) -> None:
    """The rule, through the service: a file in no project below `Settings.directory` is in
    that workspace (the home included); its servers start with `ServerSpec.plain` merged."""
    require("ty")
    require("ruff")
    home = _home(tmp_path)
    assert roots.workspace_gate(home / "a.py", home=home) is None
    assert roots.workspace_gate(home / "a.py", home=home, directory=home) == home
    assert roots.workspace_gate(tmp_path / "a.py", home=home, directory=home) is None
    (home / "a.py").write_text("x: int = 'a'\n")
    with Service(Settings(directory=home)) as service:
        report = service.check(home / "a.py", before="")
        [file] = report.files
        assert file.display_path == "a.py"
        assert [d.code for d in file.diagnostics] == ["invalid-assignment"]
        ty = service._state.pool.find("ty", home)
        assert ty is not None
        assert ty.spec.initialization_options == {
            "configuration": {"src": {"exclude": ["**/*/"]}}
        }


def test_a_notebook_in_the_home_directory_checks_its_writes_and_says_what_it_does_not(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    require("ty")
    require("ruff")
    home = _home(tmp_path)
    # in no project, not below the notebook's directory, below no directory writes are never
    # watched in (the tests' temporary directories may be in a `.cache`)
    elsewhere = Path(tempfile.mkdtemp(prefix="ipylsp-elsewhere-", dir=Path.home()))
    request.addfinalizer(lambda: shutil.rmtree(elsewhere, ignore_errors=True))
    kernel = Kernel(kernel_dir_for(tmp_path), home)
    kernel.env["HOME"] = str(home)
    with kernel as k:
        assert k.run("%load_ext ipylsp").outputs == []
        wrote = k.run('%%writefile shop.py\nprice: int = "ten"\n')
        assert wrote.displays[-1] == block("shop.py", ty_assign(1, 'Literal["ten"]', column=14))
        status = k.run("%lsp status").result or ""
        assert "ty" in status and str(home) in status
        # the cells and the written files share one ty and one Ruff, rooted at the home
        k.run("total = price + 1")
        names = sorted(os.path.basename(c.split()[0]) for c in _servers(k.pid))
        assert names.count("ty") == 1 and names.count("ruff") == 1, names
        code = f"open({str(elsewhere / 'out.py')!r}, 'w').write('y: int = \"s\"\\n')"
        first = k.run(code)
        note = (
            f"not checked: out.py in {elsewhere}, which is in no project and not below the "
            f"notebook's directory {home} (or another user can write there); `%cd` there, or "
            "make it a project (`git init`, a pyproject.toml)"
        )
        assert any(note in d for d in first.displays), first.displays
        again = k.run(code.replace("out.py", "more.py"))
        assert not any("not checked" in d for d in again.displays), again.displays


def test_ipylsps_own_files_in_the_home_are_not_the_cells_writes(tmp_path: Path) -> None:
    """ipylsp's data dir is below the home (`~/.local/share/ipylsp`): the status file its
    service publishes there while a cell runs a check is ipylsp's own, never reported as a
    file the cell wrote (it was: `UNKNOWN [vscode-json-language-server] not installed`)."""
    require("ty")
    require("ruff")
    home = _home(tmp_path)
    kernel = Kernel(kernel_dir_for(tmp_path), home)
    kernel.env = {k: v for k, v in kernel.env.items() if not k.startswith("XDG_")}
    kernel.env["HOME"] = str(home)
    with kernel as k:
        assert k.run("%load_ext ipylsp").outputs == []
        cell = k.run("import ipylsp\n_ = ipylsp.check_cell('x = 1')")
        assert list((home / ".local/share/ipylsp/run").glob("status-*.json"))
        assert cell.displays == []
