"""`ipylsp` on the command line: check (exit 0 clean, 1 problems, 2 unknown or failure), status,
list, which. In process through `main([...], out=...)`, and once as the installed script.

`check` runs against clangd (on PATH, one server per C file, stable messages) with an empty
`--data-dir`, so the servers in ipylsp's real data dir do not change what is expected.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ipylsp.cli import EXIT_CLEAN, EXIT_CLOSED_PIPE, EXIT_FAILURE, EXIT_PROBLEMS, main
from ipylsp.model.settings import MB, Settings
from ipylsp.servers import executables, registry

VENV_BIN = Path(sys.executable).parent
SCRIPT = VENV_BIN / "ipylsp"

BAD_C = "int main(void) {\n  1;\n  return missing;\n}\n"
GOOD_C = "int main(void) {\n  return 0;\n}\n"
MISSING = "ERROR [3:10] Use of undeclared identifier 'missing' [undeclared_var_use] (clang)"
UNUSED = "WARN [2:3] Expression result unused [-Wunused-value] (clang)"

@pytest.fixture
def _clangd() -> None:
    assert shutil.which("clangd"), "clangd is not on PATH: apt-get install clangd (CI: .ci/run)"


needs_clangd = pytest.mark.usefixtures("_clangd")


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git workspace as the current directory, and an empty ipylsp data dir beside it."""
    root = tmp_path / "ws"
    root.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    (tmp_path / "data").mkdir()
    monkeypatch.chdir(root)
    return root


def run(ws: Path, *argv: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main(["--data-dir", str(ws.parent / "data"), *argv], out=out)
    return code, out.getvalue()


def block(path: str, *lines: str) -> str:
    return "\n".join([f'<diagnostics file="{path}">', *lines, "</diagnostics>"]) + "\n"


# --- check ------------------------------------------------------------------------------------


@pytest.mark.real
@needs_clangd
def test_check_exit_codes_and_text(ws: Path) -> None:
    (ws / "good.c").write_text(GOOD_C)
    (ws / "src").mkdir()
    (ws / "src" / "bad.c").write_text(BAD_C)
    assert run(ws, "check", "good.c") == (EXIT_CLEAN, "")
    # Paths are shown relative to the workspace root; errors only by default.
    assert run(ws, "check", "src/bad.c") == (EXIT_PROBLEMS, block("src/bad.c", MISSING))
    # From another directory, the same path is shown the same way.
    os.chdir(ws / "src")
    assert run(ws, "check", "bad.c", "../good.c") == (EXIT_PROBLEMS, block("src/bad.c", MISSING))


@pytest.mark.real
@needs_clangd
def test_check_severity(ws: Path) -> None:
    (ws / "warn.c").write_text("int main(void) {\n  1;\n  return 0;\n}\n")
    (ws / "bad.c").write_text(BAD_C)
    # A warning is not a problem unless asked for.
    assert run(ws, "check", "warn.c") == (EXIT_CLEAN, "")
    assert run(ws, "check", "--severity", "warning", "warn.c") == (
        EXIT_PROBLEMS, block("warn.c", UNUSED),
    )
    # Errors first, then warnings.
    assert run(ws, "check", "--severity", "all", "bad.c") == (
        EXIT_PROBLEMS, block("bad.c", MISSING, UNUSED),
    )


@pytest.mark.real
@needs_clangd
def test_check_json(ws: Path) -> None:
    (ws / "bad.c").write_text(BAD_C)
    code, out = run(ws, "check", "--json", "bad.c")
    assert code == EXIT_PROBLEMS
    assert json.loads(out) == {
        "schema": "ipylsp.diagnostics/2",
        "root": str(ws),
        "severity": "error",
        "files": [
            {
                "path": "bad.c",
                "absolute_path": str(ws / "bad.c"),
                "servers": ["clangd"],
                "diagnostics": [
                    {
                        "severity": "error", "line": 3, "column": 10, "end_line": 3,
                        "end_column": 17, "message": "Use of undeclared identifier 'missing'",
                        "code": "undeclared_var_use", "source": "clang", "server": "clangd",
                    }
                ],
                "fixed": [],
                "fixed_count": 0,
                "unknown": [],
                "omitted": 0,
            }
        ],
        "notes": [],
        "unknown": [],
        # The summary counts what was introduced at any severity; `shown` what passed.
        "summary": {"errors": 1, "warnings": 1, "fixed": 0, "unknown": 0, "shown": 1,
                    "omitted": 0},
    }
    code, out = run(ws, "check", "--json", "--severity", "warning", "bad.c")
    data = json.loads(out)
    assert [d["message"] for d in data["files"][0]["diagnostics"]] == [
        "Use of undeclared identifier 'missing'", "Expression result unused",
    ]
    assert data["severity"] == "warning" and data["summary"]["shown"] == 2


@pytest.mark.real
@needs_clangd
def test_check_before(ws: Path, tmp_path: Path) -> None:
    old = tmp_path / "old.c"
    old.write_text("int main(void) {\n  return missing;\n}\n")
    # The old error moved down a line; nothing else changed: clean.
    (ws / "app.c").write_text("int main(void) {\n\n  return missing;\n}\n")
    assert run(ws, "check", "app.c", "--before", str(old)) == (EXIT_CLEAN, "")
    # A new error beside it: only the new one.
    (ws / "app.c").write_text("int main(void) {\n\n  return missing + other;\n}\n")
    assert run(ws, "check", "app.c", "--before", str(old)) == (
        EXIT_PROBLEMS,
        block("app.c", "ERROR [3:20] Use of undeclared identifier 'other' "
                       "[undeclared_var_use] (clang)"),
    )
    # The old error fixed: said outside any block, and that is not a problem.
    (ws / "app.c").write_text("int main(void) {\n  return 0;\n}\n")
    assert run(ws, "check", "app.c", "--before", str(old)) == (
        EXIT_CLEAN, "fixed 1 error in app.c\n",
    )
    # The file deleted: a delete fixes nothing (issue 9), and nothing is known about it here.
    (ws / "app.c").unlink()
    assert run(ws, "check", "app.c", "--before", str(old)) == (EXIT_CLEAN, "")


@pytest.mark.real
def test_check_failures_exit_2(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (ws / "a.c").write_text(GOOD_C)
    (ws / "b.c").write_text(GOOD_C)
    assert run(ws, "check", "nope.c") == (EXIT_FAILURE, "")
    assert capsys.readouterr().err == "ipylsp check: no such file: nope.c\n"
    assert run(ws, "check", "a.c", "--before", "missing-old.c") == (EXIT_FAILURE, "")
    assert capsys.readouterr().err == (
        "ipylsp check: cannot read missing-old.c: No such file or directory\n"
    )
    assert run(ws, "check", "a.c", "b.c", "--before", "a.c") == (EXIT_FAILURE, "")
    assert capsys.readouterr().err == "ipylsp check: --before takes exactly one PATH\n"
    with pytest.raises(SystemExit) as exc:
        run(ws, "check", "--severity", "loud", "a.c")
    assert exc.value.code == 2


@pytest.mark.real
@needs_clangd
def test_check_unknown_exits_2_never_clean(ws: Path) -> None:
    (ws / "good.c").write_text(GOOD_C)
    code, out = run(ws, "check", "--timeout", "0.001", "good.c")
    assert code == EXIT_FAILURE
    lines = out.splitlines()
    assert lines[0] == '<diagnostics file="good.c">' and lines[-1] == "</diagnostics>"
    [unknown] = lines[1:-1]
    assert unknown.startswith("UNKNOWN [clangd] timed out ")
    assert unknown.endswith(": results for this file are incomplete")


@pytest.mark.real
def test_check_missing_server_exits_2(ws: Path) -> None:
    spec = registry.get("zls")
    assert spec is not None
    if executables.resolve_command(spec, ws.parent / "data") is not None:
        pytest.skip("zls is installed here")
    (ws / "main.zig").write_text("pub fn main() void {}\n")
    code, out = run(ws, "check", "main.zig")
    assert code == EXIT_FAILURE
    lines = out.splitlines()
    assert lines[0] == '<diagnostics file="main.zig">' and lines[-1] == "</diagnostics>"
    [unknown] = lines[1:-1]
    assert unknown.startswith("UNKNOWN [zls] not installed (")
    assert unknown.endswith(f"; {registry.install_hint(spec)}")


@pytest.mark.real
def test_check_python_syntax_error_at_once(ws: Path) -> None:
    (ws / "broken.py").write_text("x = [1,\n")
    assert run(ws, "check", "broken.py") == (
        EXIT_PROBLEMS,
        block("broken.py", "ERROR [1:5] '[' was never closed [SyntaxError] (ipylsp-syntax)"),
    )


@pytest.mark.real
def test_check_python_with_whatever_servers_are_installed(ws: Path) -> None:
    """Which Python servers run depends on the machine (the first installed of basedpyright,
    pyright, ty, plus ruff): a clean file is clean and an undefined name is found."""
    (ws / "good.py").write_text("def f(x: int) -> int:\n    return x\n")
    (ws / "bad.py").write_text("def f(x: int) -> int:\n    return x\n\n\nprint(missing)\n")
    assert run(ws, "check", "good.py") == (EXIT_CLEAN, "")
    code, out = run(ws, "check", "bad.py")
    assert code == EXIT_PROBLEMS, out
    lines = out.splitlines()
    assert lines[0] == '<diagnostics file="bad.py">' and lines[-1] == "</diagnostics>"
    assert lines[1:-1] and all(line.startswith("ERROR [5:7] ") for line in lines[1:-1])


@pytest.mark.real
@needs_clangd
def test_check_as_a_real_process(ws: Path) -> None:
    (ws / "bad.c").write_text(BAD_C)
    done = subprocess.run(
        [str(SCRIPT), "--data-dir", str(ws.parent / "data"), "check", "bad.c"],
        cwd=ws, capture_output=True, text=True, timeout=60,
    )
    assert (done.returncode, done.stdout, done.stderr) == (
        EXIT_PROBLEMS, block("bad.c", MISSING), "",
    )
    done = subprocess.run(
        [str(SCRIPT), "--data-dir", str(ws.parent / "data"), "check", "--json", "bad.c"],
        cwd=ws, capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == EXIT_PROBLEMS
    assert json.loads(done.stdout)["summary"]["shown"] == 1


@pytest.mark.real
def test_a_fifo_a_directory_and_a_file_over_the_limit_are_one_line_each(ws: Path) -> None:
    """Issue 28: a FIFO named app.py took 37 s (reading it waited for a writer), then said both
    "timed out" and "no language server"; a 22 MB file said `cannot check /abs/big.py:
    TextTooLarge(...)`. Now each is one sentence at once: the file as the workspace shows it,
    why, and for size the limit and its knob; exit 2 (not checked is not clean). The process
    gets 60 s against a budget of 10: a regression fails here, it does not hang the run."""
    os.mkfifo(ws / "app.py")
    (ws / "pkg").mkdir()
    (ws / "src").mkdir()
    (ws / "src" / "big.py").write_bytes(b"x = 1\n" * (9 * MB // 6))  # 9 MB
    (ws / "src" / "mid.py").write_bytes(b"x = 1\n" * (3 * MB // 12))  # 1.5 MB
    config = ws.parent / "ipylsp_config.json"
    config.write_text(json.dumps({"IPyLSP": {"max_file_mb": 1}}))

    def check(*argv: str) -> tuple[int, str, str]:
        done = subprocess.run(
            [str(SCRIPT), "--data-dir", str(ws.parent / "data"), *argv],
            cwd=ws, capture_output=True, text=True, timeout=60,
        )
        return done.returncode, done.stdout, done.stderr

    assert check("check", "--timeout", "10", "app.py") == (
        EXIT_FAILURE, "not checked: app.py is a FIFO, not a regular file\n", "",
    )
    assert check("check", "--timeout", "10", "pkg") == (
        EXIT_FAILURE, "not checked: pkg is a directory, not a regular file\n", "",
    )
    assert check("check", "--timeout", "10", "src/big.py") == (
        EXIT_FAILURE,
        "not checked: src/big.py is 9 MB, over the 8 MB limit (IPyLSP.max_file_mb)\n", "",
    )
    assert check("--config", str(config), "check", "--timeout", "10", "src/mid.py") == (
        EXIT_FAILURE,
        "not checked: src/mid.py is 1.5 MB, over the 1 MB limit (IPyLSP.max_file_mb)\n", "",
    )


# --- status, list, which ----------------------------------------------------------------------


@pytest.mark.real
def test_status(ws: Path) -> None:
    """What runs in any process, then the installed servers: the data dir is part of it."""
    code, out = run(ws, "status")
    assert code == EXIT_CLEAN
    data_dir = ws.parent / "data"
    installed = [s.id for s in registry.all_specs() if executables.resolve_command(s, data_dir)]
    assert {"ty", "ruff"} <= set(installed)
    assert out.splitlines() == [
        "no server running (servers start when a file is checked)",
        f"installed: {', '.join(installed)}",
    ]


@pytest.mark.real
def test_status_lists_servers_running_in_other_services(ws: Path) -> None:
    """A kernel's servers (here: Services in this process, and a file another process left)
    show in `ipylsp status`, aligned whatever the lengths."""
    from ipylsp.model.server_spec import InstallRecipe, ServerSpec
    from ipylsp.model.settings import Settings
    from ipylsp.service.service import Service
    from tests.conftest import fake_command

    fake = ServerSpec(id="fake", name="Fake", languages=("shellscript",),
                      command=fake_command(), install=InstallRecipe("path"))
    settings = Settings(data_dir=ws.parent / "data", extra_specs=(fake,),
                        language_servers={"shellscript": ("fake",)})
    (ws / "a.sh").write_text("echo ok\n")
    parent = os.getppid()  # a live process that is not this one
    run_dir = ws.parent / "data" / "run"
    run_dir.mkdir()
    (run_dir / f"status-{parent}-1.json").write_text(json.dumps({"pid": parent, "servers": [
        {"server": "typescript-language-server", "root": "/elsewhere", "state": "starting",
         "detail": "indexing 3/10", "pid": None},
    ]}))
    with Service(settings) as service:
        service.check(ws / "a.sh")
        (pid,) = service.server_pids()
        _, out = run(ws, "status")
        width, root = len("typescript-language-server"), max(len(str(ws)), len("/elsewhere"))
        assert sorted(out.splitlines()[:2]) == [  # (in the order of the status files)
            f"{'fake':<{width}}  running   {ws!s:<{root}}  pid {pid}  (this process)",
            f"{'typescript-language-server':<{width}}  starting  {'/elsewhere':<{root}}"
            f"  {'':<{len(f'pid {pid}')}}  {f'(process {parent})':<14}  indexing 3/10",
        ]
    _, out = run(ws, "status")
    assert out.splitlines()[0].startswith("typescript-language-server  starting  /elsewhere")
    (run_dir / f"status-{parent}-1.json").unlink()
    _, out = run(ws, "status")
    assert out.splitlines()[0] == "no server running (servers start when a file is checked)"


@pytest.mark.real
def test_list(ws: Path) -> None:
    """One aligned table (`%lsp list` prints the same): id, installed or missing, languages
    (long lists end in "…"), the command or how to install it."""
    code, out = run(ws, "list")
    assert code == EXIT_CLEAN
    data_dir = ws.parent / "data"
    rows = out.splitlines()
    assert [row.split()[0] for row in rows] == [spec.id for spec in registry.all_specs()]
    width = max(len(spec.id) for spec in registry.all_specs())
    assert f"{'ty':<{width}}  installed  {'python':<32}  {VENV_BIN}/ty server" in rows
    typescript = next(row for row in rows if row.startswith("typescript "))
    assert typescript.split()[2] == "typescript,typescriptreact,java…"
    # every row's third column starts at the same place: the long TypeScript lists fit
    assert len({row.index(row.split()[2], width) for row in rows}) == 1
    if executables.resolve_command(registry.get("pyright"), data_dir) is None:  # type: ignore[arg-type]
        pyright = next(row for row in rows if row.startswith("pyright "))
        assert pyright.endswith(f"missing    {'python':<32}  ipylsp install pyright  "
                                "# npm install pyright into ipylsp's data dir")
    code, out = run(ws, "list", "--installed")
    assert code == EXIT_CLEAN
    installed = [row.split()[0] for row in out.splitlines()]
    assert installed == [
        s.id for s in registry.all_specs() if executables.resolve_command(s, data_dir)
    ]
    assert {"ty", "ruff"} <= set(installed)
    assert all(row.split()[1] == "installed" for row in out.splitlines())


@pytest.mark.real
def test_which(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(ws, "which", "ty") == (EXIT_CLEAN, f"{VENV_BIN}/ty server\n")
    assert run(ws, "which", "ruff") == (EXIT_CLEAN, f"{VENV_BIN}/ruff server\n")
    if shutil.which("pyright-langserver") is None:
        assert run(ws, "which", "pyright") == (
            EXIT_FAILURE,
            "pyright: pyright-langserver not found (searched ipylsp's data dir, the kernel's "
            "environment and PATH). ipylsp install pyright  # npm install pyright into "
            "ipylsp's data dir\n",
        )
    assert run(ws, "which", "no-such-server") == (EXIT_FAILURE, "")
    assert capsys.readouterr().err == (
        "ipylsp: unknown server 'no-such-server' (see 'ipylsp list')\n"
    )


@pytest.mark.real
def test_install_bad_requests_exit_2(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(ws, "install") == (EXIT_FAILURE, "")
    assert capsys.readouterr().err == "ipylsp install: name servers, or --all (see 'ipylsp list')\n"
    assert run(ws, "install", "ruff", "nope") == (EXIT_FAILURE, "")
    assert capsys.readouterr().err == (
        "ipylsp install: unknown server(s): nope (see 'ipylsp list')\n"
    )


def test_which_in_the_real_data_dir() -> None:
    """Without --data-dir, ipylsp's own data dir is searched (where `ipylsp install` puts
    servers)."""
    spec = registry.get("pyright")
    assert spec is not None
    command = executables.resolve_command(spec, executables.data_dir(Settings()))
    out = io.StringIO()
    code = main(["which", "pyright"], out=out)
    if command is None:
        assert code == EXIT_FAILURE
    else:
        assert (code, out.getvalue()) == (EXIT_CLEAN, " ".join(command) + "\n")


@pytest.mark.real
def test_which_as_a_real_process(ws: Path) -> None:
    done = subprocess.run(
        [str(SCRIPT), "--data-dir", str(ws.parent / "data"), "which", "ty"],
        capture_output=True, text=True, timeout=60,
    )
    assert (done.returncode, done.stdout, done.stderr) == (
        EXIT_CLEAN, f"{VENV_BIN}/ty server\n", "",
    )


@pytest.mark.real
@pytest.mark.parametrize(
    "argv", [["status"], ["list"], ["check", "--server", "ty", "app.py"]], ids=" ".join
)
def test_a_closed_pipe_ends_quietly(ws: Path, argv: list[str]) -> None:
    """`ipylsp status | head -3`: the reader is gone before the output is written. Exit 141
    (as for a tool ended by SIGPIPE), nothing on stderr (no "internal error", no "Exception
    ignored" from the interpreter's last flush)."""
    (ws / "app.py").write_text("count: int = 'x'\n")
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            [str(SCRIPT), "--data-dir", str(ws.parent / "data"), *argv],
            stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=60,
        )
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr) == (EXIT_CLOSED_PIPE, "")


@pytest.mark.real
def test_head_of_status(ws: Path) -> None:
    """The shell pipeline itself: the first lines, and no message whenever head leaves."""
    done = subprocess.run(
        f"{SCRIPT} --data-dir {ws.parent / 'data'} status | head -2",
        shell=True, capture_output=True, text=True, timeout=60,
    )
    assert done.stderr == ""
    assert done.stdout.splitlines() == [
        "no server running (servers start when a file is checked)", done.stdout.splitlines()[1]
    ]
    assert done.stdout.splitlines()[1].startswith("installed: ty, ruff")


@pytest.mark.real
def test_a_reader_that_leaves_after_one_line(ws: Path) -> None:
    """A real pipe read one line at a time and closed while `ipylsp list` still writes (its
    output made longer than the pipe's buffer by a long user-defined server list)."""
    config = ws.parent / "many.json"
    config.write_text(json.dumps({"IPyLSP": {"custom_servers": {
        f"mine-{n:04}": {"command": [f"mine-{n}"], "languages": ["python"]}
        for n in range(2000)
    }}}))
    process = subprocess.Popen(
        [str(SCRIPT), "--data-dir", str(ws.parent / "data"), "--config", str(config), "list"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    assert process.stdout is not None and process.stderr is not None
    assert process.stdout.readline().split()[0] == b"ty"
    process.stdout.close()
    assert (process.wait(timeout=60), process.stderr.read()) == (EXIT_CLOSED_PIPE, b"")
    process.stderr.close()


# --- configuration and server choice ------------------------------------------------------------


PY_BROKEN = "count: int = 'x'\nprint(missing)\n"


@pytest.mark.real
def test_check_with_chosen_servers(ws: Path) -> None:
    (ws / "app.py").write_text(PY_BROKEN)
    code, out = run(ws, "check", "--server", "ty", "app.py")
    assert code == EXIT_PROBLEMS
    assert out == block(
        "app.py",
        "ERROR [1:14] Object of type `Literal[\"x\"]` is not assignable to `int` "
        "[invalid-assignment] (ty)",
        "ERROR [2:7] Name `missing` used when not defined [unresolved-reference] (ty)",
    )
    code, out = run(ws, "check", "--server", "ruff", "app.py")
    assert (code, out) == (EXIT_PROBLEMS, block(
        "app.py", "ERROR [2:7] Undefined name `missing` [F821] (Ruff)"
    ))


@pytest.mark.real
def test_check_reads_an_ipylsp_config_file(ws: Path) -> None:
    (ws / "app.py").write_text("import os\n")
    config = ws.parent / "ipylsp_config.json"
    config.write_text(json.dumps({"IPyLSP": {"severity": "all",
                                             "language_servers": {"python": ["ruff"]}}}))
    code, out = run(ws, "--config", str(config), "check", "app.py")
    assert (code, out) == (EXIT_PROBLEMS, block(
        "app.py", "WARN [1:8] `os` imported but unused; help: Remove unused import: `os` "
        "[F401] (Ruff)"
    ))
    code, out = run(ws, "--config", str(config), "check", "--severity", "error", "app.py")
    assert (code, out) == (EXIT_CLEAN, "")


@pytest.mark.real
def test_bad_configuration_and_unknown_servers_exit_2(
    ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (ws / "app.py").write_text("x = 1\n")
    bad = ws.parent / "bad.json"
    bad.write_text(json.dumps({"IPyLSP": {"severity": "loud"}}))
    assert run(ws, "--config", str(bad), "check", "app.py") == (EXIT_FAILURE, "")
    assert "ipylsp: bad configuration:" in capsys.readouterr().err
    # a bare string is not a list of servers (it would be read one character per id)
    bad.write_text(json.dumps({"IPyLSP": {"language_servers": {"python": "ruff"}}}))
    assert run(ws, "--config", str(bad), "check", "app.py") == (EXIT_FAILURE, "")
    assert "language_servers['python'] must be a list of server ids" in capsys.readouterr().err
    assert run(ws, "--config", str(ws / "nope.json"), "status") == (EXIT_FAILURE, "")
    assert "no such config file" in capsys.readouterr().err
    assert run(ws, "check", "--server", "nonesuch", "app.py") == (EXIT_FAILURE, "")
    assert capsys.readouterr().err == "ipylsp check: unknown server(s): nonesuch\n"


@pytest.mark.real
def test_a_file_nothing_can_check_is_not_clean(
    ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (ws / "notes.zzz").write_text("anything\n")
    assert run(ws, "check", "notes.zzz") == (EXIT_FAILURE, "")
    assert capsys.readouterr().err == "ipylsp check: no language server for notes.zzz\n"
