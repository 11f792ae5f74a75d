"""`%lsp` in an in-process IPython shell, on the real ty + ruff: every subcommand's answer
(exact), every `-h`, and bad input.

The shell runs in a temporary git worktree with PATH reduced to a directory holding only `git`
and an empty `IPyLSP.data_dir`, so what is "installed" is exactly what sits beside this Python
(ty and ruff, and whatever else the venv holds). Answers are read as the kernel would publish
them: the `text/plain` that the display formatter makes of the returned object (the
`execute_result` agents read). Bad input raises `UsageError` with a one-line reason.

The tests share one shell and run in file order (status before any server, then a write, then
features against it, then stop/restart).
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

import ipylsp
from ipylsp.cli import main
from ipylsp.ipython.magics import FEATURES
from ipylsp.servers import executables, registry

MIME = "application/vnd.ipylsp.diagnostics+json"
VENV_BIN = Path(sys.executable).parent

APP = """\
class Box:
    def __init__(self, width: int) -> None:
        self.width = width

    def area(self) -> int:
        return self.width * self.width


box = Box(2)
size: str = box.area()
"""

OFF = ("\nthis kernel's servers run in it, not in the broker: the broker is off (IPyLSP.broker, "
       "IPYLSP_BROKER)")
"""The last line of `%lsp status` in these tests, whose kernels run with IPYLSP_BROKER=0."""

APP_ERROR = (
    "ERROR [10:13] Object of type `int` is not assignable to `str` [invalid-assignment] (ty)"
)


@dataclass
class Answer:
    """What one `%lsp` line produced."""

    text: str | None  # text/plain of the returned object (the execute_result)
    mime: list[str] = field(default_factory=list)  # its MIME types
    displays: list[str] = field(default_factory=list)  # text/plain of displays made meanwhile
    error: BaseException | None = None
    stdout: str = ""


def lsp(shell: InteractiveShell, line: str) -> Answer:
    with capture_output() as captured:
        result = shell.run_cell(f"%lsp {line}", store_history=False)
    error = result.error_in_exec or result.error_before_exec
    text, mime = None, []
    if result.result is not None:
        data, _ = shell.display_formatter.format(result.result)
        text, mime = data["text/plain"], sorted(data)
    displays = [o.data.get("text/plain", "") for o in captured.outputs]
    return Answer(text, mime, displays, error, captured.stdout)


def usage_error(shell: InteractiveShell, line: str) -> str:
    """The reason of the UsageError `%lsp line` raises (asserted to be one line)."""
    answer = lsp(shell, line)
    assert isinstance(answer.error, UsageError), (line, answer)
    assert answer.text is None and answer.displays == []
    reason = str(answer.error)
    assert "\n" not in reason, reason
    return reason


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("magics").resolve()


@pytest.fixture(scope="module")
def shell(workspace: Path) -> Iterator[InteractiveShell]:
    ws = workspace / "ws"
    ws.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=ws, check=True)
    bin_dir = workspace / "bin"
    bin_dir.mkdir()
    git = shutil.which("git")
    assert git is not None
    (bin_dir / "git").symlink_to(git)
    old_cwd, old_path = os.getcwd(), os.environ.get("PATH", "")
    os.chdir(ws)
    os.environ["PATH"] = str(bin_dir)
    executables.invalidate()
    ip = InteractiveShell.instance()
    try:
        for line in (
            "%load_ext ipylsp",
            '%config IPyLSP.language_servers = {"python": ["ty", "ruff"]}',
            f"%config IPyLSP.data_dir = {str(workspace / 'data')!r}",
        ):
            assert ip.run_cell(line, store_history=False).success
        yield ip
    finally:
        ip.run_cell("%unload_ext ipylsp", store_history=False)
        os.chdir(old_cwd)
        os.environ["PATH"] = old_path
        executables.invalidate()


@pytest.fixture
def app_written(shell: InteractiveShell, workspace: Path) -> None:
    """app.py written by a cell (its error is pending), as the module's first check leaves it:
    the tests that rely on it also pass when run alone."""
    if not (workspace / "ws" / "app.py").exists():
        with capture_output():
            assert shell.run_cell(f"%%writefile app.py\n{APP}", store_history=False).success


@pytest.fixture
def servers_running(shell: InteractiveShell, app_written: None) -> None:
    """ty and ruff running for the workspace (started unless they already are)."""
    if sorted(row.state for row in ipylsp.status()) != ["running", "running"]:
        lsp(shell, "start app.py")
    assert sorted(row.state for row in ipylsp.status()) == ["running", "running"]


def installed_here() -> list[str]:
    """Registry rows whose command sits beside this Python (PATH holds only git, the data dir
    is empty): what `status` and `list` must call installed. Computed without ipylsp's
    `executables`."""
    return [
        spec.id
        for spec in registry.all_specs()
        if spec.command and os.access(VENV_BIN / spec.command[0], os.X_OK)
    ]


# -- help -----------------------------------------------------------------------------------------

HELP = {
    'status': (
        'usage: %lsp status [-h]\n'
        '\n'
        'running, starting and broken servers; installed ones\n'
        '\n'
        'options:\n'
        '  -h, --help  show this help message and exit\n'
    ),
    'list': (
        'usage: %lsp list [-h] [--installed]\n'
        '\n'
        'every server ipylsp knows\n'
        '\n'
        'options:\n'
        '  -h, --help   show this help message and exit\n'
        '  --installed  only the installed ones\n'
    ),
    'install': (
        'usage: %lsp install [-h] [--all] [ID ...]\n'
        '\n'
        "install servers into ipylsp's data dir\n"
        '\n'
        'positional arguments:\n'
        '  ID          server ids (see %lsp list)\n'
        '\n'
        'options:\n'
        '  -h, --help  show this help message and exit\n'
        '  --all       every server with a pip or npm recipe\n'
    ),
    'which': (
        'usage: %lsp which [-h] id\n'
        '\n'
        'the command ipylsp runs for a server\n'
        '\n'
        'positional arguments:\n'
        '  id          a server id (see %lsp list)\n'
        '\n'
        'options:\n'
        '  -h, --help  show this help message and exit\n'
    ),
    'start': (
        'usage: %lsp start [-h] path\n'
        '\n'
        'start the servers for a file now\n'
        '\n'
        'positional arguments:\n'
        '  path        a file (it need not exist yet)\n'
        '\n'
        'options:\n'
        '  -h, --help  show this help message and exit\n'
    ),
    'stop': (
        'usage: %lsp stop [-h] [--shared] [id]\n'
        '\n'
        'stop servers (all, or one id)\n'
        '\n'
        'positional arguments:\n'
        '  id          a server id (default: all)\n'
        '\n'
        'options:\n'
        '  -h, --help  show this help message and exit\n'
        '  --shared    stop them also when other kernels or agents use them (the\n'
        "              broker's)\n"
    ),
    'restart': (
        'usage: %lsp restart [-h] [--shared] [id]\n'
        '\n'
        'restart servers (all, or one id)\n'
        '\n'
        'positional arguments:\n'
        '  id          a server id (default: all)\n'
        '\n'
        'options:\n'
        '  -h, --help  show this help message and exit\n'
        '  --shared    restart them also when other kernels or agents use them (the\n'
        "              broker's)\n"
    ),
    'check': (
        'usage: %lsp check [-h] [--before FILE] [--all]\n'
        '                  [--severity {error,warning,all}]\n'
        '                  [path]\n'
        '\n'
        "what a file's text introduced (all, with --all)\n"
        '\n'
        'positional arguments:\n'
        '  path                  the file (none: the next files a cell wrote beyond\n'
        '                        IPyLSP.max_files_per_check)\n'
        '\n'
        'options:\n'
        '  -h, --help            show this help message and exit\n'
        '  --before FILE         the text before the edit\n'
        '  --all                 every problem, not only new ones\n'
        '  --severity {error,warning,all}\n'
        '                        default: IPyLSP.severity\n'
    ),
    'check_cell': (
        'usage: %lsp check_cell [-h] [code ...]\n'
        '\n'
        'what CODE would introduce if it ran now as a cell (nothing runs)\n'
        '\n'
        'positional arguments:\n'
        "  code        the code, as written; as a cell magic: the cell's body\n"
        '\n'
        'options:\n'
        '  -h, --help  show this help message and exit\n'
    ),
    'diagnostics': (
        'usage: %lsp diagnostics [-h] [--cached] [path]\n'
        '\n'
        'current diagnostics (changed files checked again)\n'
        '\n'
        'positional arguments:\n'
        '  path        one file (default: all checked)\n'
        '\n'
        'options:\n'
        '  -h, --help  show this help message and exit\n'
        "  --cached    from the store (any kernel's answers, no server needed); PATH\n"
        '              may be a directory (default: the current one)\n'
    ),
    'cache': (
        'usage: %lsp cache [-h] {info,clear}\n'
        '\n'
        "the store of servers' answers: its size, or clear it\n"
        '\n'
        'positional arguments:\n'
        '  {info,clear}\n'
        '\n'
        'options:\n'
        '  -h, --help    show this help message and exit\n'
    ),
    'pending': (
        'usage: %lsp pending [-h]\n'
        '\n'
        'problems not yet handed over, then forget them\n'
        '\n'
        'options:\n'
        '  -h, --help  show this help message and exit\n'
    ),
    'on': (
        'usage: %lsp on [-h]\n'
        '\n'
        'check cells and the files they write\n'
        '\n'
        'options:\n'
        '  -h, --help  show this help message and exit\n'
    ),
    'off': (
        'usage: %lsp off [-h]\n'
        '\n'
        'stop checking cells and the files they write\n'
        '\n'
        'options:\n'
        '  -h, --help  show this help message and exit\n'
    ),
}


SUBCOMMANDS = [*list(HELP)[:list(HELP).index("diagnostics") + 1], *FEATURES, "pending",
               "cache", "on", "off"]
"""`%lsp`'s subcommands in the order it lists them: the features' after `diagnostics`."""


def feature_help(name: str) -> str:
    """The help of a feature's subcommand, made from the magics' table (`FEATURES`): at
    PATH:LINE:COL, or of a file."""
    feature = FEATURES[name]
    if feature.takes == "file":
        return (
            f'usage: %lsp {name} [-h] path\n'
            '\n'
            f'the {feature.kind} of a file\n'
            '\n'
            'positional arguments:\n'
            '  path        the file\n'
            '\n'
            'options:\n'
            '  -h, --help  show this help message and exit\n'
        )
    return (
        f'usage: %lsp {name} [-h] PATH:LINE:COL\n'
        '\n'
        f'{name} at PATH:LINE:COL (1-based)\n'
        '\n'
        'positional arguments:\n'
        '  PATH:LINE:COL  1-based line and column (characters)\n'
        '\n'
        'options:\n'
        '  -h, --help     show this help message and exit\n'
    )


@pytest.mark.real
@pytest.mark.parametrize("name", [*HELP, *FEATURES])
def test_subcommand_help(shell: InteractiveShell, name: str) -> None:
    answer = lsp(shell, f"{name} -h")
    assert answer.error is None
    assert answer.text is not None
    assert answer.text + "\n" == (HELP[name] if name in HELP else feature_help(name))
    assert answer.mime == ["text/plain"] and answer.displays == []


def test_every_subcommand_has_help() -> None:
    from ipylsp.ipython.magics import _parser

    choices = next(a for a in _parser()._actions if a.dest == "command").choices
    assert choices is not None and sorted(choices) == sorted([*HELP, *FEATURES])


def summary(name: str) -> str:
    """What `%lsp -h` says of a subcommand: its help's description."""
    return (HELP[name] if name in HELP else feature_help(name)).split("\n\n")[1]


def listed(text: str) -> list[tuple[str, str]]:
    """The subcommands `%lsp -h` lists, in order, each with its summary (one line, however
    argparse wrapped it)."""
    body = text.split("  SUBCOMMAND\n", 1)[1].split("\n\n", 1)[0]
    found: list[tuple[str, str]] = []
    for line in body.splitlines():
        if line.startswith("    ") and not line.startswith("     "):  # a subcommand
            name, _, rest = line.strip().partition(" ")
            found.append((name, rest.strip()))
        else:  # its summary, or the rest of it
            name, said = found[-1]
            found[-1] = (name, f"{said} {line.strip()}".strip())
    return found


@pytest.mark.real
@pytest.mark.parametrize("line", ["", "-h", "--help"])
def test_top_level_help(shell: InteractiveShell, line: str) -> None:
    answer = lsp(shell, line)
    assert answer.text is not None
    assert answer.text.startswith(
        'usage: %lsp [-h] SUBCOMMAND ...\n'
        '\n'
        'Language servers for this notebook.\n'
        '\n'
        'positional arguments:\n'
        '  SUBCOMMAND\n'
    )
    assert answer.text.endswith('\n\noptions:\n  -h, --help   show this help message and exit')
    assert listed(answer.text) == [(name, summary(name)) for name in SUBCOMMANDS]


# -- answers --------------------------------------------------------------------------------------


def cli(workspace: Path, *argv: str) -> str:
    """What `ipylsp ARGV` prints for the shell's data dir, in this environment."""
    out = io.StringIO()
    assert main(["--data-dir", str(workspace / "data"), *argv], out=out) == 0
    return out.getvalue()


@pytest.mark.real
def test_status_before_any_server(shell: InteractiveShell, workspace: Path) -> None:
    text = lsp(shell, "status").text
    assert text == (
        "no server running (servers start when a file is checked)\n"
        f"installed: {', '.join(installed_here())}\n"
        "checking cell writes: on, cells' code: on" + OFF
    )
    assert cli(workspace, "status") == text.removesuffix(
        "checking cell writes: on, cells' code: on" + OFF
    )


@pytest.mark.real
def test_list_is_the_clis_table(shell: InteractiveShell, workspace: Path) -> None:
    here = installed_here()
    assert {"ty", "ruff"} <= set(here)
    text = lsp(shell, "list").text
    assert text is not None and text + "\n" == cli(workspace, "list")
    rows = text.splitlines()
    assert [row.split()[:2] for row in rows] == [
        [s.id, "installed" if s.id in here else "missing"] for s in registry.all_specs()
    ]
    width = max(len(s.id) for s in registry.all_specs())
    assert f"{'ty':<{width}}  installed  {'python':<32}  {VENV_BIN / 'ty'} server" in rows
    installed = lsp(shell, "list --installed").text
    assert installed is not None and installed + "\n" == cli(workspace, "list", "--installed")
    assert [r.split() for r in installed.splitlines()] == [
        r.split() for r in rows if r.split()[1] == "installed"
    ]


@pytest.mark.real
def test_which(shell: InteractiveShell) -> None:
    assert lsp(shell, "which ty").text == f"{VENV_BIN / 'ty'} server"
    assert lsp(shell, "which ruff").text == f"{VENV_BIN / 'ruff'} server"
    assert lsp(shell, "which pyright").text == (
        "pyright: pyright-langserver not found (searched ipylsp's data dir, the kernel's "
        "environment and PATH). ipylsp install pyright  # npm install pyright into ipylsp's "
        "data dir"
    )


@pytest.mark.real
def test_install_failure_is_one_display_and_a_summary(shell: InteractiveShell) -> None:
    """No npm on PATH: pyright cannot be installed; the progress display ends FAILED and the
    answer says why (a real install is in test_ipython_kernel)."""
    answer = lsp(shell, "install pyright")
    assert answer.text == (
        "pyright: npm not found on PATH: install Node.js >= 18 (apt-get install nodejs npm) or "
        "use a pip server"
    )
    # in-process, the display and its in-place update are captured as two states of one display
    assert answer.displays == ["installing pyright ...", "installing pyright: FAILED"]


@pytest.mark.real
def test_start_check_and_features(shell: InteractiveShell, workspace: Path) -> None:
    ws = workspace / "ws"
    # start: the servers of a file (one not written yet is fine: warming up before a write)
    started = lsp(shell, "start app.py").text
    pids = {row.server_id: row.pid for row in ipylsp.status()}
    assert started == (
        f"ty: running (pid {pids['ty']}) for {ws}\nruff: running (pid {pids['ruff']}) for {ws}"
    )
    assert lsp(shell, "start README.md").text == "no server serves this file"
    pid_width = max(len(str(pid)) for pid in pids.values())
    status = (
        f"ty    running  {ws}  pid {pids['ty']:<{pid_width}}  (this process)\n"
        f"ruff  running  {ws}  pid {pids['ruff']:<{pid_width}}  (this process)\n"
        f"installed: {', '.join(installed_here())}\n"
    )
    assert lsp(shell, "status").text == status + "checking cell writes: on, cells' code: on" + OFF
    assert cli(workspace, "status") == status  # the same rows, from the kernel's status file

    # a cell writes app.py: reported by the hook
    with capture_output() as captured:
        shell.run_cell(f"%%writefile app.py\n{APP}", store_history=False)
    assert [o.data["text/plain"] for o in captured.outputs] == [
        f'<diagnostics file="app.py">\n{APP_ERROR}\n</diagnostics>'
    ]

    # check: nothing new against the last known text; everything with --all; --before FILE
    assert lsp(shell, "check app.py").text == "app.py: no new problems"
    (ws / "clean.py").write_text("x = 1\n")
    assert lsp(shell, "check clean.py --all").text == "clean.py: no problems"
    full = lsp(shell, "check app.py --all")
    assert full.text == f'<diagnostics file="app.py">\n{APP_ERROR}\n</diagnostics>'
    assert full.mime == sorted(["text/plain", "text/html", MIME])
    (ws / "before.txt").write_text(APP.replace("size: str", "size: int"))
    assert lsp(shell, "check app.py --before before.txt").text == full.text
    assert lsp(shell, "check app.py --all --severity warning").text == full.text

    # diagnostics: last known, no round trip
    assert lsp(shell, "diagnostics app.py").text == full.text
    assert lsp(shell, "diagnostics").text == full.text
    assert lsp(shell, "diagnostics other.py").text == "nothing checked yet"

    # features at 1-based PATH:LINE:COL
    assert lsp(shell, "hover app.py:10:17").text == "bound method Box.area() -> int"
    assert lsp(shell, "hover app.py:4:1").text == "(no hover information here)"
    assert lsp(shell, "definition app.py:10:17").text == "app.py:5:9"
    assert lsp(shell, "definition app.py:4:1").text == "(no definition found)"
    assert lsp(shell, "references app.py:1:7").text == "app.py:1:7\napp.py:9:7"
    assert lsp(shell, "symbols app.py").text == (
        "class Box [1:7]\n"
        "  constructor __init__ [2:9]\n"
        "  method area [5:9]\n"
        "variable box [9:1]\n"
        "variable size [10:1]"
    )
    (ws / "typing_box.py").write_text(APP.replace("size: str = box.area()", "box.ar"))
    assert lsp(shell, "completions typing_box.py:10:7").text == (
        "area\n__delattr__\n__getattribute__\n__setattr__"
    )
    (ws / "empty.py").write_text("\n")
    assert lsp(shell, "symbols empty.py").text == "(no symbols)"


@pytest.mark.real
def test_pending_hands_over_once(shell: InteractiveShell, app_written: None) -> None:
    with capture_output():
        shell.run_cell("open('pend.py', 'w').write('x: int = \"s\"\\n')", store_history=False)
    first = lsp(shell, "pending").text
    assert first is not None
    assert first.startswith('<diagnostics file="app.py">\n')  # errors first, then by file
    assert (
        '<diagnostics file="pend.py">\nERROR [1:10] Object of type `Literal["s"]` is not '
        "assignable to `int` [invalid-assignment] (ty)\n</diagnostics>"
    ) in first
    assert lsp(shell, "pending").text == "nothing pending"


@pytest.mark.real
def test_on_off(shell: InteractiveShell) -> None:
    assert lsp(shell, "off").text == "ipylsp: not checking files written by cells"
    assert lsp(shell, "status").text.endswith("checking cell writes: off, cells' code: off" + OFF)  # type: ignore[union-attr]
    with capture_output() as captured:
        shell.run_cell("open('off.py', 'w').write('x: int = \"s\"\\n')", store_history=False)
    assert captured.outputs == []
    assert lsp(shell, "on").text == "ipylsp: checking files written by cells"
    assert lsp(shell, "status").text.endswith("checking cell writes: on, cells' code: on" + OFF)  # type: ignore[union-attr]


@pytest.mark.real
def test_stop_and_restart(shell: InteractiveShell, workspace: Path, servers_running: None) -> None:
    ws = workspace / "ws"
    pids = {row.server_id: row.pid for row in ipylsp.status()}
    assert lsp(shell, "stop ty").text == "stopped 1 server"
    assert lsp(shell, "status").text == (
        f"ty    stopped  {ws}  {'':<{len(str(pids['ruff'])) + 4}}  (this process)\n"
        f"ruff  running  {ws}  pid {pids['ruff']}  (this process)\n"
        f"installed: {', '.join(installed_here())}\n"
        "checking cell writes: on, cells' code: on" + OFF
    )
    assert lsp(shell, "stop").text == "stopped 1 server"  # ty was stopped already
    assert lsp(shell, "stop").text == "stopped 0 servers"
    assert lsp(shell, "stop nope").text == "stopped 0 servers"
    # restart forgets the (server, root) slots, stopped or broken ones too: next use starts afresh
    assert lsp(shell, "restart ruff").text == "restarted 1 server (they start on next use)"
    assert lsp(shell, "restart").text == "restarted 1 server (they start on next use)"
    assert lsp(shell, "restart").text == "restarted 0 servers (they start on next use)"
    assert lsp(shell, "status").text == (
        "no server running (servers start when a file is checked)\n"
        f"installed: {', '.join(installed_here())}\n"
        "checking cell writes: on, cells' code: on" + OFF
    )
    with capture_output() as captured:  # and the next write starts them again
        shell.run_cell("open('again.py', 'w').write('x: int = \"s\"\\n')", store_history=False)
    assert [o.data["text/plain"] for o in captured.outputs] == [
        '<diagnostics file="again.py">\nERROR [1:10] Object of type `Literal["s"]` is not '
        "assignable to `int` [invalid-assignment] (ty)\n</diagnostics>"
    ]
    assert sorted(row.state for row in ipylsp.status()) == ["running", "running"]


# -- bad input ------------------------------------------------------------------------------------


@pytest.mark.real
@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("bogus", "%lsp: argument SUBCOMMAND: invalid choice: 'bogus' (choose from "
         f"{', '.join(map(repr, SUBCOMMANDS))})"),
        ("status extra", "%lsp: unrecognized arguments: extra"),
        ("'unbalanced", "%lsp: No closing quotation"),
        ("hover", "%lsp hover: the following arguments are required: PATH:LINE:COL"),
        ("hover app.py", "%lsp: expected PATH:LINE:COL, got 'app.py'"),
        ("hover app.py:1", "%lsp: expected PATH:LINE:COL, got 'app.py:1'"),
        ("hover :1:1", "%lsp: expected PATH:LINE:COL, got ':1:1'"),
        ("hover app.py:x:1", "%lsp: LINE and COL must be numbers in 'app.py:x:1'"),
        ("definition app.py:1:y", "%lsp: LINE and COL must be numbers in 'app.py:1:y'"),
        ("references app.py:0:1", "%lsp: LINE and COL are 1-based, got 'app.py:0:1'"),
        ("completions app.py:1:0", "%lsp: LINE and COL are 1-based, got 'app.py:1:0'"),
        ("hover missing.py:1:1", "%lsp hover: no such file: missing.py"),
        ("definition missing.py:1:1", "%lsp definition: no such file: missing.py"),
        ("references missing.py:1:1", "%lsp references: no such file: missing.py"),
        ("completions missing.py:1:1", "%lsp completions: no such file: missing.py"),
        ("symbols missing.py", "%lsp symbols: no such file: missing.py"),
        ("check missing.py", "%lsp check: no such file: missing.py"),
        ("check app.py --before missing.txt",
         "%lsp check: cannot read missing.txt: No such file or directory"),
        ("check app.py --severity loud", "%lsp check: argument --severity: invalid choice: "
         "'loud' (choose from 'error', 'warning', 'all')"),
        ("which", "%lsp which: the following arguments are required: id"),
        ("which nope", "%lsp which: unknown server 'nope' (see %lsp list)"),
        ("install", "%lsp install: name servers, or --all (see %lsp list)"),
        ("install ruff nope", "%lsp install: unknown server(s): nope (see %lsp list)"),
        ("start", "%lsp start: the following arguments are required: path"),
    ],
)
def test_bad_input_raises_usage_error(shell: InteractiveShell, line: str, reason: str) -> None:
    assert usage_error(shell, line) == reason


@pytest.mark.real
def test_usage_error_is_shown_as_one_line(shell: InteractiveShell) -> None:
    """What the user sees: IPython prints `UsageError: <reason>` on stderr, no traceback."""
    with capture_output() as captured:
        shell.run_cell("%lsp hover app.py:0:1", store_history=False)
    assert captured.stderr == "UsageError: %lsp: LINE and COL are 1-based, got 'app.py:0:1'\n"
    assert captured.stdout == "" and captured.outputs == []

@pytest.mark.real
def test_the_signature_of_the_call_at_a_place(shell: InteractiveShell, app_written: None) -> None:
    """`%lsp signature`, made from the feature's value (no magic written for it)."""
    answer = lsp(shell, "signature app.py:9:11")  # box = Box(|2)
    assert answer.error is None
    assert answer.text == "(width: int) -> Box\nparameter: width: int"


@pytest.mark.real
def test_the_highlights_of_a_symbol_in_its_file(shell: InteractiveShell, app_written: None
                                                ) -> None:
    """`%lsp highlight`, made from the magics' table (one line for it)."""
    answer = lsp(shell, "highlight app.py:1:7")  # class |Box
    assert answer.error is None
    assert answer.text == "app.py:1:7\napp.py:9:7"
    assert lsp(shell, "highlight app.py:4:1").text == "(no highlights here)"


@pytest.mark.real
def test_a_file_the_check_does_not_read_is_one_line_on_every_surface(
    shell: InteractiveShell, workspace: Path
) -> None:
    """Issue 28: a cell's write over `IPyLSP.max_file_mb` is skipped in one line (the watcher
    reads no text before it, the check none at all), and `%lsp check` and `ipylsp.check()`
    say the same sentence of it and of a FIFO, which is never opened: no repr, no
    traceback, no other line."""
    ws = workspace / "ws"
    os.mkfifo(ws / "pipe.py")
    big = "not checked: big.py is 1.5 MB, over the 1 MB limit (IPyLSP.max_file_mb)"
    fifo = "not checked: pipe.py is a FIFO, not a regular file"
    bundle = sorted(["text/plain", "text/html", MIME])
    assert shell.run_cell("%config IPyLSP.max_file_mb = 1", store_history=False).success
    try:
        with capture_output() as captured:
            result = shell.run_cell("open('big.py', 'w').write('x = 1\\n' * 262144)",
                                    store_history=False)
        assert result.success
        assert [o.data["text/plain"] for o in captured.outputs] == [big]
        assert (ws / "big.py").stat().st_size == 3 * 1024 * 1024 // 2
        for line, said in (("check big.py", big), ("check pipe.py", fifo)):
            answer = lsp(shell, line)
            assert (answer.text, answer.mime, answer.displays, answer.error) == (
                said, bundle, [], None,
            )
        assert repr(ipylsp.check(ws / "big.py")) == big
        assert repr(ipylsp.check(ws / "pipe.py")) == fifo
    finally:
        assert shell.run_cell("%config IPyLSP.max_file_mb = 8", store_history=False).success


@pytest.mark.real
def test_a_query_on_a_file_the_check_does_not_read_says_the_checks_sentence(
    shell: InteractiveShell, workspace: Path
) -> None:
    """Issue 28: `%lsp hover` and the other queries, and `ipylsp.hover()`, on a FIFO, a
    directory or a file over `IPyLSP.max_file_mb` answered `no such file: /abs/path`. They
    say what the check says of it, the path as the workspace shows it; one byte over a small
    limit reads in bytes (`1,049 bytes, over the 1,048-byte limit`), never `0.001 MB, over
    the 0.001 MB limit`."""
    sub = workspace / "ws" / "refused"
    sub.mkdir()
    os.mkfifo(sub / "pipe.py")
    (sub / "pkg.py").mkdir()
    (sub / "over.py").write_bytes(b"#" * 1048 + b"\n")  # 0.001 MB is 1,048 bytes: + 1
    refused = {
        "pipe.py": "refused/pipe.py is a FIFO, not a regular file",
        "pkg.py": "refused/pkg.py is a directory, not a regular file",
        "over.py": "refused/over.py is 1,049 bytes, over the 1,048-byte limit "
                   "(IPyLSP.max_file_mb)",
    }
    assert shell.run_cell("%config IPyLSP.max_file_mb = 0.001", store_history=False).success
    try:
        for name, why in refused.items():
            for magic, kind in (("hover", "hover"), ("definition", "definition"),
                                ("references", "references"), ("completions", "completions"),
                                ("signature", "signature_help")):
                answer = lsp(shell, f"{magic} refused/{name}:1:1")
                assert (answer.text, answer.displays, answer.error) == (
                    f"{kind}: {why}", [], None), magic
            answer = lsp(shell, f"symbols refused/{name}")
            assert (answer.text, answer.error) == (f"symbols: {why}", None)
            assert lsp(shell, f"check refused/{name}").text == f"not checked: {why}"
            assert repr(ipylsp.hover(sub / name, 1, 1)) == f"hover: {why}"
            assert repr(ipylsp.symbols(sub / name)) == f"symbols: {why}"
    finally:
        assert shell.run_cell("%config IPyLSP.max_file_mb = 8", store_history=False).success


@pytest.mark.real
def test_a_write_below_a_directory_the_watcher_skips_is_said_once(
    shell: InteractiveShell, workspace: Path
) -> None:
    """A cell writing `dist/app.py` (build output, dependencies, caches, environments are not
    watched) printed nothing, which reads as a clean write: it says once per directory that
    the file was not checked, and how to check it; `%lsp check` then says what each server
    does with it."""
    ws = workspace / "ws"
    note = ("not checked: dist/app.py, below a directory ipylsp does not watch (build output, "
            "dependencies, caches, environments); `%lsp check dist/app.py` checks it")
    with capture_output() as captured:
        result = shell.run_cell(
            "import os\nos.makedirs('dist', exist_ok=True)\n"
            "open('dist/app.py', 'w').write('x: int = \"a\"\\n')", store_history=False)
    assert result.success
    assert [o.data["text/plain"] for o in captured.outputs] == [note]
    with capture_output() as captured:  # the same directory: said once
        assert shell.run_cell("open('dist/other.py', 'w').write('y = 1\\n')",
                              store_history=False).success
    assert captured.outputs == []
    cache = workspace / "home" / ".cache" / "modules"  # a library's cache, in no workspace
    cache.mkdir(parents=True)
    with capture_output() as captured:
        assert shell.run_cell(f"open({str(cache / 'mod.py')!r}, 'w').write('x: int = \\'a\\'\\n')",
                              store_history=False).success
    assert captured.outputs == []
    assert (ws / "dist" / "app.py").exists()
    assert lsp(shell, "check dist/app.py").text.splitlines() == [
        '<diagnostics file="dist/app.py">',
        "UNKNOWN [ty] excluded (ty does not check files under dist/ (its default "
        "`src.exclude`)): results for this file are incomplete; add \"!**/dist/\" to "
        "`src.exclude` ([tool.ty.src] in pyproject.toml, or [src] in ty.toml) to have ty check "
        "them",
        "UNKNOWN [ruff] excluded (ruff does not check files under dist/ (its default "
        "`exclude`)): results for this file are incomplete; ruff checks them once `exclude` "
        "([tool.ruff] in pyproject.toml, or ruff.toml) lists its defaults without \"dist\" "
        "(`ruff check --show-settings` prints them)",
        "</diagnostics>",
    ]
