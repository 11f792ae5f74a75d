"""Private by construction (ARCHITECTURE.md): what ipylsp keeps outside a workspace is in
directories of this user's (0700, checked before use, never adopted by a predictable name from
a shared place), and no server starts where another user could plant its configuration.

The attack is made as it would be: another uid (`nobody`) plants, in a world-writable sticky
directory standing for /tmp, every path a clean run created there and the configuration files
that ruff, ty and pyright read from parent directories; the kernel runs the same cell again.
Acting as another user needs root (CI runs as root): without it these tests fail, not skip.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from ipylsp import private
from ipylsp.cells.session import CellSession
from ipylsp.model.diagnostics import UnknownReason
from ipylsp.servers import cells_place
from tests.test_cells_kernel import ours
from tests.test_ipython_kernel import TY_RUFF, Cell, Kernel, block, kernel_dir_for

pytestmark = pytest.mark.timeout(240)

NOBODY = pwd.getpwnam("nobody").pw_uid

PLANTED = {
    "ruff.toml": '[lint]\nignore = ["F821"]\n',
    ".ruff.toml": '[lint]\nignore = ["F821"]\n',
    "ty.toml": '[rules]\nunresolved-reference = "ignore"\n',
    "pyproject.toml": '[tool.ruff.lint]\nignore = ["F821"]\n'
    '[tool.ty.rules]\nunresolved-reference = "ignore"\n',
    "pyrightconfig.json": '{"reportUndefinedVariable": "none"}\n',
}
"""Configuration another user plants: undefined names would go unreported."""

UNDEFINED = "def f():\n    return undefined_name\n"
UNDEFINED_LINE = ("ERROR [2:12] Name `undefined_name` used when not defined "
                  "[unresolved-reference, F821] (ty, Ruff)")


def as_nobody(code: str) -> None:
    """Run Python `code` as the user `nobody` (needs root)."""
    assert os.geteuid() == 0, "acting as another user needs root (CI runs as root)"
    python = shutil.which("python3", path="/usr/local/bin:/usr/bin:/bin")
    assert python, "no python3 on the system PATH for the other user"
    subprocess.run([python, "-c", code], user=NOBODY, group=NOBODY, check=True,
                   env={"PATH": "/usr/bin:/bin"}, cwd="/")


def plant(directory: Path, names: list[str]) -> None:
    """As `nobody`: every name in `names` made a directory of theirs (0777) holding the
    configuration, and the configuration files themselves in `directory`."""
    as_nobody(planting(directory, names))


def planting(directory: Path, names: list[str]) -> str:
    """The Python code that plants what `plant` says, run by whichever other user plants."""
    return (
        "import os, sys\n"
        f"top = {str(directory)!r}\n"
        f"files = {PLANTED!r}\n"
        f"for name in {names!r}:\n"
        "    path = os.path.join(top, name)\n"
        "    os.makedirs(path, exist_ok=True); os.chmod(path, 0o777)\n"
        "    for f, text in files.items():\n"
        "        open(os.path.join(path, f), 'w').write(text)\n"
        "for f, text in files.items():\n"
        "    open(os.path.join(top, f), 'w').write(text)\n"
        "venv = os.path.join(top, '.venv')\n"
        "os.makedirs(os.path.join(venv, 'bin'), exist_ok=True)\n"
        "open(os.path.join(venv, 'pyvenv.cfg'), 'w').write('home = /usr/bin\\n')\n"
        "os.symlink('/usr/bin/python3', os.path.join(venv, 'bin', 'python'))\n"
    )


def result(cell: Cell) -> str:
    """The text/plain of the cell's value (what a `%lsp` line returns)."""
    (text,) = [o["data"]["text/plain"] for o in cell.outputs
               if o["output_type"] == "execute_result"]
    assert isinstance(text, str)
    return text


def tree(top: Path) -> set[Path]:
    """Every path below `top`."""
    return {Path(d) / n for d, dirs, files in os.walk(top) for n in (*dirs, *files)}


@contextlib.contextmanager
def sticky_dir() -> Iterator[Path]:
    """A world-writable sticky directory in /tmp, as /tmp is (another user reaches it)."""
    directory = Path(tempfile.mkdtemp(prefix="ipylsp-shared-", dir="/tmp"))
    os.chmod(directory, 0o1777)
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def shared() -> Iterator[Path]:
    assert os.geteuid() == 0, "acting as another user needs root (CI runs as root)"
    with sticky_dir() as directory:
        yield directory


@pytest.fixture
def home(shared: Path) -> Path:
    """The user's home, in the shared directory (as a fresh `mktemp -d` home is in /tmp)."""
    directory = shared / "home"
    directory.mkdir(mode=0o700)
    return directory


def kernel_env(kernel: Kernel, home: Path, shared: Path) -> None:
    env = {k: v for k, v in kernel.env.items()
           if not k.startswith("XDG_") and k != "IPYLSP_STORE"}
    kernel.env = {**env, "HOME": str(home), "TMPDIR": str(shared)}


# -- the attack, in a real kernel ------------------------------------------------------------------


@pytest.fixture
def attacked_kernel(tmp_path: Path, shared: Path, home: Path) -> Iterator[Kernel]:
    kernel = Kernel(kernel_dir_for(tmp_path), home, ipython_dir=home / ".ipython")
    kernel_env(kernel, home, shared)
    with kernel:
        yield kernel


@pytest.mark.real
def test_paths_planted_by_another_user_are_never_adopted(
    attacked_kernel: Kernel, shared: Path, home: Path
) -> None:
    k = attacked_kernel
    before = tree(shared)
    assert k.run("%load_ext ipylsp").outputs == []
    assert k.run(TY_RUFF).outputs == []
    clean = k.run(UNDEFINED)
    assert ours(clean) == [_cell_block(clean, UNDEFINED_LINE)]
    created = tree(shared) - before
    status = result(k.run("%lsp status"))
    # everything the clean run keeps is in directories of ours, 0700, below the home; the
    # cells' place is the one every kernel of the user's working in `home` shares
    mine = [p for p in created if p.is_dir() and p.name == cells_place.shared_name(home)]
    assert len(mine) == 1, created
    assert stat.S_IMODE(os.stat(mine[0]).st_mode) == 0o700
    assert str(mine[0]) in status
    assert k.run("%unload_ext ipylsp").outputs == []  # the service closes, its servers stop

    # another user plants every path the clean run made in the shared directory, and the
    # configuration servers read from parent directories, before the next service starts
    in_shared = sorted({p.relative_to(shared).parts[0] for p in created} - {"home"})
    plant(shared, in_shared)
    assert k.run("%load_ext ipylsp").outputs == []
    assert k.run(TY_RUFF).outputs == []
    again = k.run(UNDEFINED)
    assert ours(again) == [_cell_block(again, UNDEFINED_LINE)]
    status = result(k.run("%lsp status"))
    roots = [line.split()[2] for line in status.splitlines() if " running " in line]
    assert len(roots) == 2, status
    for root in roots:
        assert Path(root).parent == home / ".local/share/ipylsp/cells", status
        assert os.stat(root).st_uid == os.geteuid()


def _cell_block(cell: Cell, *lines: str) -> str:
    return "\n".join(
        [f'<diagnostics file="cell [{cell.count}]">', *lines, "</diagnostics>"]
    )


@pytest.mark.real
def test_a_workspace_below_a_shared_directory_starts_no_server_and_says_why(
    tmp_path: Path, shared: Path, home: Path
) -> None:
    project = shared / "project"
    project.mkdir(mode=0o700)
    (project / "pyproject.toml").write_text('[project]\nname = "p"\nversion = "0"\n')
    plant(shared, [])
    kernel = Kernel(kernel_dir_for(tmp_path), project, ipython_dir=home / ".ipython")
    kernel_env(kernel, home, shared)
    with kernel as k:
        assert k.run("%load_ext ipylsp").outputs == []
        configured = k.run(TY_RUFF)  # the first cell checked: told in full, with the fix
        first = k.run("%%writefile app.py\n" + UNDEFINED)  # after that: without the fix
        why = (f"(another user can write to {shared}, where {{}} would read configuration "
               f"they put there): results for this file are incomplete")
        fix = ("; move the project below a directory only you can write to (or, if you vouch "
               "for whoever else can write there, add it to IPyLSP.trusted_roots)")
        lines = [f"UNKNOWN [{server}] refused {why.format(server)}" for server in ("ty", "ruff")]
        assert ours(configured) == [_cell_block(configured, *(line + fix for line in lines))]
        assert ours(first) == [
            block("app.py", *lines) + "\n" + _cell_block(first, *lines)
        ]
        assert result(k.run("%lsp status")).startswith("no server running")


# -- the rules, on the file system -------------------------------------------------------------


@pytest.mark.real
def test_owned_dir_makes_private_directories_and_refuses_what_is_not_ours(
    tmp_path: Path, shared: Path
) -> None:
    made = private.owned_dir(tmp_path / "a" / "b")
    assert [stat.S_IMODE(os.stat(p).st_mode) for p in (made.parent, made)] == [0o700, 0o700]
    loose = tmp_path / "loose"
    loose.mkdir(mode=0o755)
    os.chmod(loose, 0o755)
    private.owned_dir(loose)
    assert stat.S_IMODE(os.stat(loose).st_mode) == 0o700  # ours: narrowed
    chosen = tmp_path / "chosen"
    chosen.mkdir()
    os.chmod(chosen, 0o755)
    private.owned_dir(chosen, narrow=False)
    assert stat.S_IMODE(os.stat(chosen).st_mode) == 0o755  # the user's choice: left alone

    as_nobody(f"import os; os.mkdir({str(shared / 'theirs')!r}, 0o700)")
    with pytest.raises(private.NotPrivate, match="belongs to another user"):
        private.owned_dir(shared / "theirs")
    (shared / "link").symlink_to(tmp_path / "a")
    with pytest.raises(private.NotPrivate, match="symbolic link"):
        private.owned_dir(shared / "link")
    open_dir = tmp_path / "open"
    open_dir.mkdir()
    os.chmod(open_dir, 0o777)  # not sticky: anyone could rename what we put there
    with pytest.raises(private.NotPrivate, match=f"another user can write to {open_dir}"):
        private.owned_dir(open_dir / "mine")
    # in a sticky directory (as /tmp), a directory of ours stays ours
    assert private.owned_dir(shared / "ours") == shared / "ours"


@pytest.mark.real
def test_other_writer_names_the_directory_another_user_can_write(
    tmp_path: Path, shared: Path
) -> None:
    inner = shared / "home" / "project"
    inner.mkdir(parents=True)
    assert private.other_writer(inner) == shared  # sticky or not: others create files there
    assert private.other_writer(tmp_path) is None
    as_nobody(f"import os; os.mkdir({str(shared / 'theirs')!r}, 0o755)")
    assert private.other_writer(shared / "theirs") == shared / "theirs"


def test_a_sealed_directory_is_safe_whatever_is_above_it(shared: Path, home: Path) -> None:
    cells = private.fresh_dir(home / "cells", prefix="1-")
    assert not private.is_sealed(cells)
    private.seal(cells)
    assert private.is_sealed(cells)
    (cells / private.SEAL_NAME).write_text("[tool.ruff]\n")  # not the seal as written
    assert not private.is_sealed(cells)


def test_scratch_dir_is_never_below_a_shared_directory(
    tmp_path: Path, shared: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMPDIR", str(shared))
    monkeypatch.setenv("XDG_CACHE_HOME", str(shared / "cache"))
    monkeypatch.setattr("tempfile.tempdir", None)
    # $HOME may be a fresh directory in /tmp: the home the user database gives comes next
    home = Path(pwd.getpwuid(os.geteuid()).pw_dir) / ".cache" / "ipylsp" / "tmp"
    made = private.scratch_dir("x-", tmp_path / "fallback")
    assert made.parent == home and private.other_writer(made) is None
    made.rmdir()

    class Shared:
        pw_name = pwd.getpwuid(os.geteuid()).pw_name
        pw_dir = str(shared / "home")

    monkeypatch.setattr("pwd.getpwuid", lambda uid: Shared)
    made = private.scratch_dir("x-", tmp_path / "fallback")
    assert made.parent == tmp_path / "fallback"
    assert private.other_writer(made) is None
    with pytest.raises(private.NotPrivate, match="set TMPDIR"):
        private.scratch_dir("x-", shared / "also-shared")


@pytest.mark.real
def test_cells_outside_a_workspace_refused_a_data_dir_another_user_owns(
    tmp_path: Path, shared: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    as_nobody(f"import os; os.makedirs({str(shared / 'data' / 'cells')!r}, 0o777)")
    # no workspace (a directory another user can write to is none): the document needs a
    # directory of its own
    monkeypatch.chdir(shared)

    class NoChecks:
        def check_files(self, *args: object, **kwargs: object) -> object:
            raise AssertionError("nothing may be checked")

    session = CellSession(NoChecks(), private_parent=shared / "data")  # type: ignore[arg-type]
    report = session.run("x = 1\n", count=1)
    (unknown,) = report.unknown
    assert unknown.reason is UnknownReason.REFUSED
    assert unknown.detail.startswith(f"another user can write to {shared / 'data'}, so they "
                                     f"could replace {shared / 'data' / 'cells'}")


@pytest.mark.real
def test_a_notebook_is_told_when_its_cells_have_no_directory_of_their_own(
    tmp_path: Path, shared: Path, home: Path
) -> None:
    """In a real kernel: the data dir's `cells` is another user's, so the cells' document has
    no directory of its own; each cell says so, with the fix, and nothing raises."""
    as_nobody(f"import os; os.makedirs({str(shared / 'xdg' / 'ipylsp' / 'cells')!r}, 0o777)")
    kernel = Kernel(kernel_dir_for(tmp_path), home, ipython_dir=home / ".ipython")
    kernel_env(kernel, home, shared)
    kernel.env["XDG_DATA_HOME"] = str(shared / "xdg")
    with kernel as k:
        assert k.run("%load_ext ipylsp").outputs == []
        cell = k.run(UNDEFINED)
        assert not [o for o in cell.outputs if o["output_type"] == "error"]
        assert ours(cell) == [
            f"UNKNOWN [cells] another user can write to {shared / 'xdg' / 'ipylsp'}, so they "
            f"could replace {shared / 'xdg' / 'ipylsp' / 'cells'}; choose a directory below "
            "one only you can write to; set IPyLSP.data_dir to a directory only you can "
            "write to"
        ]


@pytest.mark.real
def test_a_trusted_root_starts_its_servers(shared: Path, home: Path) -> None:
    """`IPyLSP.trusted_roots`: the user vouches for whoever else can write there (a bind
    mount owned by the host's user): its servers start and answer."""
    from ipylsp.model.settings import Settings
    from ipylsp.service.service import Service
    from tests.real_servers import DATA_DIR

    project = shared / "project"
    project.mkdir(mode=0o700)
    (project / "pyproject.toml").write_text('[project]\nname = "p"\nversion = "0"\n')
    (project / "app.py").write_text(UNDEFINED)
    settings = Settings(language_servers={"python": ("ty",)}, data_dir=DATA_DIR)
    with Service(settings) as refused:
        (unknown,) = refused.check(project / "app.py", before="").files[0].unknown
        assert unknown.reason is UnknownReason.REFUSED
    trusted = Settings(language_servers={"python": ("ty",)}, data_dir=DATA_DIR,
                       trusted_roots=(shared,))
    with Service(trusted) as service:
        (found,) = service.check(project / "app.py", before="").files
        assert [(d.code, d.range.start.line) for d in found.diagnostics] == [
            ("unresolved-reference", 1)
        ]
