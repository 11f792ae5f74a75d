"""A notebook in the home directory (JupyterHub opens every user there): its writes are checked
by servers rooted at the notebook's directory that do not index the whole home, the cells
share those servers, and a source file written where nothing checks it is said once, with
the fix (issue 22, item 6: one rule for one directory). A file below the top is checked by
every Python server too, never reported clean unchecked (issue 28, item 5): ty, which drops
every file its bound excludes, is rooted at that file's own directory.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from ipylsp.analysis.report import format_text
from ipylsp.model.settings import Settings
from ipylsp.servers import roots
from ipylsp.service.service import Service
from tests.real_servers import DATA_DIR, require
from tests.test_ipython_kernel import Kernel, _servers, block, kernel_dir_for, ty_assign
from tests.test_python_env_real import (
    RESOLVED,
    SOURCE,
    _kernel_without_the_package,
    _make_venv,
)
from tests.test_servers_real import BUDGET, CASES, Case

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
        ty = service._state.pool.find("ty", home, home)  # gate: the notebook's directory
        assert ty is not None
        assert ty.spec.settings["ty"]["configuration"]["src"] == {"exclude": ["**/*/"]}


PLAIN_CASES = [c for c in CASES if c.id in ("ty", "ruff", "pyright", "basedpyright", "pyrefly")]


def _moved_home(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """HOME (and the caches servers write) is the plain directory, as under JupyterHub."""
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))


@pytest.mark.parametrize("case", PLAIN_CASES, ids=lambda c: c.id)
def test_a_file_two_levels_below_a_plain_directory_gets_each_servers_error(
    case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each Python server, with the settings of a plain directory (its own discovery bounded),
    checks a file it is given two directories below it: the same error, at the same place, as
    in a git workspace (tests/test_servers_real.py's cases), never a clean report."""
    require(case.server)
    home = _home(tmp_path)
    _moved_home(home, monkeypatch)
    path = home / "sub" / "deeper" / case.filename
    path.parent.mkdir(parents=True)
    path.write_text(case.bad)
    settings = Settings(
        directory=home, data_dir=DATA_DIR, language_servers={"python": (case.server,)},
        wait_budget=BUDGET,
    )
    with Service(settings) as service:
        report = service.check(path, before="")
        [file] = report.files
        assert (file.servers, file.unknown) == ((case.server,), ())
        assert format_text(report) == (
            f'<diagnostics file="sub/deeper/{case.filename}">\n{case.text}\n</diagnostics>'
        )
        [status] = service.status()
        # ty alone is rooted at the file's directory: the others check it from the top
        assert status.root == (path.parent if case.server == "ty" else home)


def test_ty_below_a_plain_directory_resolves_imports_from_it_and_indexes_nothing_below(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ty rooted at `sub/`: `import helper` finds the helper.py beside the notebook (its
    first-party root is the plain directory, as at the top), its own discovery stays bounded
    (subdirectories excluded), and the top's ty keeps the cells and the top's files."""
    require("ty")
    home = _home(tmp_path)
    _moved_home(home, monkeypatch)
    (home / "helper.py").write_text('VALUE = "ten"\n')
    (home / "sub").mkdir()
    deep = home / "sub" / "deep.py"
    deep.write_text("import helper\n\nprice: int = helper.VALUE\n")
    top = home / "top.py"
    top.write_text("x: int = 'a'\n")
    settings = Settings(directory=home, data_dir=DATA_DIR, language_servers={"python": ("ty",)})
    with Service(settings) as service:
        assert format_text(service.check(deep, before="")) == block(
            "sub/deep.py", ty_assign(3, 'Literal["ten"]', column=14)
        )
        assert format_text(service.check(top, before="")) == block(
            "top.py", ty_assign(1, 'Literal["a"]')
        )
        assert sorted((s.server_id, s.root) for s in service.status()) == [
            ("ty", home), ("ty", home / "sub")
        ]
        below = service._state.pool.find("ty", home / "sub", home)
        assert below is not None
        assert below.spec.settings["ty"]["configuration"]["src"] == {"exclude": ["**/*/"]}
        assert below.spec.settings["ty"]["configuration"]["environment"]["root"] == [str(home)]


def test_ty_below_a_plain_directory_resolves_packages_from_its_venv(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The plain directory's `.venv` (found by ipylsp, handed over in section ty) reaches the
    ty rooted at `sub/`, which would not find it by itself; the kernel's own venv lacks the
    package. The bound is in that section too: as an initialization option, ty's
    `configuration` replaced the section's, and the venv was dropped."""
    require("ty")
    home = _home(tmp_path)
    _moved_home(home, monkeypatch)
    _kernel_without_the_package(monkeypatch)
    _make_venv(home / ".venv")
    (home / "sub").mkdir()
    path = home / "sub" / "app.py"
    path.write_text(SOURCE)
    settings = Settings(directory=home, data_dir=DATA_DIR, language_servers={"python": ("ty",)})
    with Service(settings) as service:
        assert format_text(service.check(path, before="")) == block("sub/app.py", RESOLVED["ty"])


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


def test_a_cell_writing_below_a_plain_directory_gets_tys_error(tmp_path: Path) -> None:
    """Through a real kernel in a plain directory: `%%writefile sub/two.py` gets ty's error (it
    got no report: ty was rooted at the top with every subdirectory excluded), and `%lsp check
    --all` says the same, never `no problems`."""
    require("ty")
    require("ruff")
    home = _home(tmp_path)
    (home / "sub").mkdir()
    kernel = Kernel(kernel_dir_for(tmp_path), home)
    kernel.env["HOME"] = str(home)
    with kernel as k:
        assert k.run("%load_ext ipylsp").outputs == []
        wrote = k.run("%%writefile sub/two.py\ny: str = 1\n")
        error = block("sub/two.py", ty_assign(1, "Literal[1]", want="str"))
        assert wrote.displays[-1] == error
        assert k.run("%lsp check sub/two.py --all").result == error


def test_ty_servers_below_a_plain_directory_are_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One ty per directory the user writes in below a plain directory, but never more than
    `PLAIN_DIRECTORY_SERVERS` at once: the least recently used goes (and its process with it),
    and a directory written to again gets a new one and its error."""
    from ipylsp.service.runtime.resolver import PLAIN_DIRECTORY_SERVERS

    require("ty")
    home = _home(tmp_path)
    _moved_home(home, monkeypatch)
    settings = Settings(directory=home, data_dir=DATA_DIR, language_servers={"python": ("ty",)})
    names = [f"d{n}" for n in range(PLAIN_DIRECTORY_SERVERS + 2)]
    with Service(settings) as service:
        for name in names:
            (home / name).mkdir()
            path = home / name / "mod.py"
            path.write_text("x: int = 'a'\n")
            assert format_text(service.check(path, before="")) == block(
                f"{name}/mod.py", ty_assign(1, 'Literal["a"]')
            )
        rows = service.status()
        assert sorted(s.root for s in rows) == [home / n for n in names[-PLAIN_DIRECTORY_SERVERS:]]
        assert len({s.pid for s in rows}) == PLAIN_DIRECTORY_SERVERS
        first = home / names[0] / "mod.py"
        assert format_text(service.check(first, before="")) == block(
            f"{names[0]}/mod.py", ty_assign(1, 'Literal["a"]')
        )
        assert len(service.status()) == PLAIN_DIRECTORY_SERVERS
