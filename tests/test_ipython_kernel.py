"""The IPython extension on a real ipykernel, driven by nbclient: exact cell outputs.

One kernel per notebook, cells run one at a time so the test side can look at the kernel's
process tree between cells. The kernel is this venv's Python (a kernelspec written to a temporary
directory, `argv[0] = sys.executable`), its cwd a temporary git worktree, its IPYTHONDIR a temporary
directory. Language servers: the embedded default ty + ruff (`.venv/bin`), no node.

- write paths: every way a cell writes a file (issue 5 item 3) gives exactly the expected
  `<diagnostics>` block as the `text/plain` of one display_data; clean writes, skipped paths and
  deleted temporary files give no output; a fixing write says "fixed N errors in X"; a cell that
  raises still reports; one display per cell, with exactly the three MIME types of DESIGN §1;
- lifecycle: loading twice, `%reload_ext`, `%config IPyLSP.enabled`, `%lsp off/on`,
  `%unload_ext` (no hook, no magic, no loop thread, no language-server process left in the
  kernel's process tree);
- loading from configuration: `c.InteractiveShellApp.extensions` in IPYTHONDIR's profile_default,
  and `--InteractiveShellApp.extensions=ipylsp` on the kernel's command line;
- progress: `%lsp install ruff` into a temporary data dir is one display updated in place; a
  server still starting when the budget runs out is reported as such, then answers;
- notebooks/agent_loop.ipynb runs through and ends with "fixed".
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat
import pytest
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import AsyncKernelManager
from nbclient import NotebookClient
from nbclient.util import run_sync

from ipylsp.lsp.process import wait_exited
from tests.conftest import cmdline
from tests.contracts import validate_report

REPO = Path(__file__).resolve().parent.parent
FAKE_SERVER = REPO / "tests" / "fixtures" / "fake_server.py"
MIME = "application/vnd.ipylsp.diagnostics+json"
TY_RUFF = '%config IPyLSP.language_servers = {"python": ["ty", "ruff"]}'

pytestmark = [pytest.mark.real, pytest.mark.timeout(180)]


# -- harness --------------------------------------------------------------------------------------


def kernel_dir_for(tmp: Path, *extra_argv: str) -> Path:
    """A kernelspec directory whose "python3" kernel is this interpreter's ipykernel."""
    top = tmp / "kernels"
    (top / "python3").mkdir(parents=True, exist_ok=True)
    spec = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}",
                 *extra_argv],
        "display_name": "Python 3 (ipylsp tests)",
        "language": "python",
    }
    (top / "python3" / "kernel.json").write_text(json.dumps(spec))
    return top


def git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=cwd, check=True, capture_output=True,
    )


def seed_workspace(tmp: Path, files: dict[str, str] | None = None) -> Path:
    """A git worktree with `files` committed (git HEAD is the baseline of child writes)."""
    ws = tmp / "ws"
    ws.mkdir()
    git(ws, "init", "-q")
    for name, text in (files or {}).items():
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_text(text)
    if files:
        git(ws, "add", "-A")
        git(ws, "commit", "-q", "-m", "seed")
    return ws


@dataclass
class Cell:
    source: str
    outputs: list[dict[str, Any]]
    messages: list[dict[str, Any]] = field(default_factory=list)
    count: int | None = None
    """The execution count (`In [n]`)."""

    @property
    def displays(self) -> list[str]:
        """text/plain of every display_data output, in order."""
        return [o["data"].get("text/plain", "") for o in self.outputs
                if o["output_type"] == "display_data"]

    @property
    def stdout(self) -> str:
        return "".join(o["text"] for o in self.outputs
                       if o["output_type"] == "stream" and o["name"] == "stdout")

    @property
    def stderr(self) -> str:
        return "".join(o["text"] for o in self.outputs
                       if o["output_type"] == "stream" and o["name"] == "stderr")

    @property
    def result(self) -> str | None:
        found = [o["data"]["text/plain"] for o in self.outputs
                 if o["output_type"] == "execute_result"]
        return found[0] if found else None

    @property
    def error(self) -> tuple[str, str] | None:
        found = [(o["ename"], o["evalue"]) for o in self.outputs if o["output_type"] == "error"]
        return found[0] if found else None

    @property
    def kinds(self) -> list[str]:
        return [o["output_type"] for o in self.outputs]


class _RecordingClient(NotebookClient):
    """nbclient that also keeps every iopub message (to see display updates)."""

    def process_message(self, msg: dict[str, Any], cell: Any, cell_index: int) -> Any:
        if msg.get("msg_type") not in ("status", "execute_input"):
            self.recorded.setdefault(cell_index, []).append(msg)
        return super().process_message(msg, cell, cell_index)


class Kernel:
    """A real ipykernel running cells one at a time in `workspace` (a context manager)."""

    def __init__(
        self,
        kernel_dir: Path,
        workspace: Path,
        *,
        ipython_dir: Path | None = None,
        timeout: int = 120,
    ) -> None:
        self.workspace = workspace
        self.nb = nbformat.v4.new_notebook()
        specs = KernelSpecManager(kernel_dirs=[str(kernel_dir)])
        km = AsyncKernelManager(kernel_name="python3", kernel_spec_manager=specs)
        self.client = _RecordingClient(
            self.nb, km=km, timeout=timeout, allow_errors=True,
            resources={"metadata": {"path": str(workspace)}},
        )
        self.client.recorded = {}
        ipython_dir = ipython_dir or workspace.parent / "ipython"
        ipython_dir.mkdir(exist_ok=True)
        self.env = {**os.environ, "IPYTHONDIR": str(ipython_dir),
                    "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
        self._stack = contextlib.ExitStack()

    def __enter__(self) -> Kernel:
        self._stack.enter_context(self.client.setup_kernel(env=self.env))
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self._stack.close()
        finally:  # nbclient leaves a kernel manager it was given running: shut it down here
            km = self.client.km
            if km is not None and run_sync(km.is_alive)():
                run_sync(km.shutdown_kernel)(now=False)

    @property
    def pid(self) -> int:
        pid = self.client.km.provisioner.pid  # type: ignore[union-attr]
        assert isinstance(pid, int)
        return pid

    def run(self, source: str) -> Cell:
        cell = nbformat.v4.new_code_cell(source)
        self.nb.cells.append(cell)
        index = len(self.nb.cells) - 1
        self.client.execute_cell(cell, index)
        return Cell(source, [dict(o) for o in cell.outputs], self.client.recorded.get(index, []),
                    cell.get("execution_count"))


def block(path: str, *lines: str) -> str:
    return "\n".join([f'<diagnostics file="{path}">', *lines, "</diagnostics>"])


def ty_assign(line: int, got: str, want: str = "int", column: int = 10) -> str:
    """ty's error for `name: <want> = <value of type got>`."""
    return (f"ERROR [{line}:{column}] Object of type `{got}` is not assignable to `{want}` "
            "[invalid-assignment] (ty)")


# -- process tree ---------------------------------------------------------------------------------


def _live_descendants(pid: int) -> dict[int, str]:
    """Descendants of `pid` (every thread's children: servers are spawned by the loop thread),
    zombies left out, with their command lines."""
    children: dict[int, list[int]] = {}
    states: dict[int, bytes] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        fields = stat[stat.rindex(b")") + 2 :].split()
        children.setdefault(int(fields[1]), []).append(int(entry))
        states[int(entry)] = fields[0]
    found: dict[int, str] = {}
    stack = [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            stack.append(child)
            if states.get(child) not in (b"Z", b"X"):
                found[child] = cmdline(child)
    return found


def _is_watchdog(cmdline: str) -> bool:
    """ipylsp's parent-death guard (not a server): its command line names it."""
    from ipylsp.lsp.process import WATCHDOG

    return f" {WATCHDOG} " in f" {cmdline} "


def _servers(pid: int) -> list[str]:
    return sorted(c for c in _live_descendants(pid).values() if not _is_watchdog(c))


def _servers_gone(pid: int, within: float = 10.0) -> list[str]:
    """Server processes left below `pid` once they had `within` seconds to exit."""
    pids = [p for p, c in _live_descendants(pid).items() if not _is_watchdog(c)]
    wait_exited(pids, within)
    return _servers(pid)


def _server_names(cmdlines: list[str]) -> list[str]:
    return sorted(os.path.basename(c.split()[0]) + " " + " ".join(c.split()[1:]) for c in cmdlines)


# -- write paths ----------------------------------------------------------------------------------

SEED = {
    "seed.py": 'a: int = "s"\n',  # shutil.copy*, subprocess and os.system copy it
    "kernel_append.py": 'a: int = "s"\n',  # an existing error; open(..., "a") adds one
    "child_append.py": 'a: int = "s"\n',  # the same through a child (baseline: git HEAD)
    "fix_me.py": 'a: int = "s"\nb: str = 1\n',
    "move_me.py": 'a: int = "s"\n',  # renamed: its error is not new under the new name
}
BAD = 'x: int = "s"\n'
BAD_ERROR = ty_assign(1, 'Literal["s"]')

# (name, cell source, expected text/plain of each display_data)
WRITE_CELLS: list[tuple[str, str, list[str]]] = [
    ("writefile", f"%%writefile wf.py\n{BAD}",
     [block("wf.py", BAD_ERROR)]),
    ("writefile -a", "%%writefile -a wf.py\ny: str = 1\n",
     [block("wf.py", ty_assign(2, "Literal[1]", "str"))]),
    ("open w", f"with open('open_w.py', 'w') as f:\n    f.write({BAD!r})",
     [block("open_w.py", BAD_ERROR)]),
    ("open a", "with open('kernel_append.py', 'a') as f:\n    f.write('b: str = 1\\n')",
     [block("kernel_append.py", ty_assign(2, "Literal[1]", "str"))]),
    ("open x", f"with open('open_x.py', 'x') as f:\n    f.write({BAD!r})",
     [block("open_x.py", BAD_ERROR)]),
    ("open w+", f"with open('open_wplus.py', 'w+') as f:\n    f.write({BAD!r})",
     [block("open_wplus.py", BAD_ERROR)]),
    ("clean file for r+", "with open('open_rplus.py', 'w') as f:\n    f.write('pass\\n')",
     []),
    ("open r+", f"with open('open_rplus.py', 'r+') as f:\n    f.write({BAD!r})",
     [block("open_rplus.py", BAD_ERROR)]),
    ("Path.write_text", "from pathlib import Path\nPath('pkg').mkdir()\n"
     f"Path('pkg/mod.py').write_text({BAD!r});",
     [block("pkg/mod.py", BAD_ERROR)]),
    ("Path.write_bytes", f"Path('write_bytes.py').write_bytes({BAD.encode()!r});",
     [block("write_bytes.py", BAD_ERROR)]),
    ("os.open", "import os\n"
     "fd = os.open('os_open.py', os.O_WRONLY | os.O_CREAT | os.O_TRUNC)\n"
     f"os.write(fd, {BAD.encode()!r})\nos.close(fd)",
     [block("os_open.py", BAD_ERROR)]),
    ("os.replace", f"with open('replaced.py.tmp', 'w') as f:\n    f.write({BAD!r})\n"
     "os.replace('replaced.py.tmp', 'replaced.py')",
     [block("replaced.py", BAD_ERROR)]),
    ("os.rename", f"with open('.renamed.py.part', 'w') as f:\n    f.write({BAD!r})\n"
     "os.rename('.renamed.py.part', 'renamed.py')",
     [block("renamed.py", BAD_ERROR)]),
    ("shutil.copy", "import shutil\nshutil.copy('seed.py', 'copied.py');",
     [block("copied.py", ty_assign(1, 'Literal["s"]'))]),
    ("shutil.copy2", "shutil.copy2('seed.py', 'copied2.py');",
     [block("copied2.py", ty_assign(1, 'Literal["s"]'))]),
    ("shutil.copyfile", "shutil.copyfile('seed.py', 'copyfile.py');",
     [block("copyfile.py", ty_assign(1, 'Literal["s"]'))]),
    ("!cmd", "!printf 'x: int = \"s\"\\n' > bang.py",
     [block("bang.py", BAD_ERROR)]),
    ("%%bash", "%%bash\nprintf 'x: int = \"s\"\\n' > bash.py",
     [block("bash.py", BAD_ERROR)]),
    ("%%sh", "%%sh\nprintf 'x: int = \"s\"\\n' > sh.py",
     [block("sh.py", BAD_ERROR)]),
    ("subprocess.run", "import subprocess\nsubprocess.run(['cp', 'seed.py', 'sub_run.py']);",
     [block("sub_run.py", ty_assign(1, 'Literal["s"]'))]),
    ("os.system", "os.system('cp seed.py os_system.py');",
     [block("os_system.py", ty_assign(1, 'Literal["s"]'))]),
    ("child append (git HEAD baseline)", "!printf 'b: str = 1\\n' >> child_append.py",
     [block("child_append.py", ty_assign(2, "Literal[1]", "str"))]),
    ("two files, one display", "for name in ('two_a.py', 'two_b.py'):\n"
     f"    Path(name).write_text({BAD!r})",
     [block("two_a.py", BAD_ERROR) + "\n" + block("two_b.py", BAD_ERROR)]),
    ("clean write", "Path('clean.py').write_text('x: int = 1\\n');", []),
    ("temporary file", f"Path('scratch.py').write_text({BAD!r})\nos.remove('scratch.py')", []),
    ("node_modules skipped", "Path('node_modules/pkg').mkdir(parents=True)\n"
     f"Path('node_modules/pkg/mod.py').write_text({BAD!r});",
     ["not checked: node_modules/pkg/mod.py, below a directory ipylsp does not watch (build "
      "output, dependencies, caches, environments); `%lsp check node_modules/pkg/mod.py` "
      "checks it"]),
    ("binary skipped", "Path('blob.py').write_bytes(b'\\x00\\x01x: int = 2');", []),
    ("fixing write", "Path('fix_me.py').write_text('a: int = 1\\nb: str = \"t\"\\n');",
     ["fixed 2 errors in fix_me.py"]),
    ("fix + new error", "Path('wf.py').write_text('x: int = 1\\ny: str = 1\\nz: bytes = 1\\n');",
     [block("wf.py", ty_assign(3, "Literal[1]", "bytes", column=12)) + "\nfixed 1 error in wf.py"]),
    ("raising cell", f"Path('raised.py').write_text({BAD!r})\nraise ValueError('boom')",
     [block("raised.py", BAD_ERROR)]),
    # a move fixes nothing (its error is the one under the new name, not new); no check knew
    # move_me.py's problems, so there is nothing to say (tests/test_batch_kernel: the note)
    ("os.rename of a file", "os.rename('move_me.py', 'moved.py')", []),
]


@pytest.fixture(scope="module")
def write_paths(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Cell]:
    tmp = tmp_path_factory.mktemp("writes")
    ws = seed_workspace(tmp, SEED)
    with Kernel(kernel_dir_for(tmp), ws) as kernel:
        assert kernel.run("%load_ext ipylsp").outputs == []
        assert kernel.run(TY_RUFF).outputs == []
        return {name: kernel.run(source) for name, source, _ in WRITE_CELLS}


@pytest.mark.parametrize(
    ("name", "expected"), [(n, e) for n, _, e in WRITE_CELLS], ids=[n for n, _, _ in WRITE_CELLS]
)
def test_write_path_report(write_paths: dict[str, Cell], name: str, expected: list[str]) -> None:
    cell = write_paths[name]
    assert cell.displays == expected, cell.outputs


def test_write_paths_leave_no_other_output(write_paths: dict[str, Cell]) -> None:
    """Nothing but the report (and what the cell itself prints) appears."""
    assert write_paths["writefile"].stdout == "Writing wf.py\n"
    assert write_paths["writefile -a"].stdout == "Appending to wf.py\n"
    for name, cell in write_paths.items():
        assert cell.stderr == "", (name, cell.stderr)
        if name == "raising cell":
            assert cell.kinds == ["error", "display_data"]
            assert cell.error == ("ValueError", "boom")
        elif name not in ("writefile", "writefile -a"):
            assert set(cell.kinds) <= {"display_data"}, (name, cell.outputs)
        if name == "clean write":
            assert cell.outputs == []


def test_report_bundle_has_exactly_three_mime_types(write_paths: dict[str, Cell]) -> None:
    (display,) = [o for o in write_paths["open w"].outputs if o["output_type"] == "display_data"]
    assert set(display["data"]) == {"text/plain", "text/html", MIME}
    html = display["data"]["text/html"]
    assert "open_w.py" in html and "is not assignable to" in html and "<script" not in html
    payload = display["data"][MIME]
    validate_report(payload)
    assert payload["schema"] == "ipylsp.diagnostics/2"
    (entry,) = payload["files"]
    assert entry["path"] == "open_w.py"
    assert [(d["line"], d["column"], d["severity"], d["code"], d["source"])
            for d in entry["diagnostics"]] == [(1, 10, "error", "invalid-assignment", "ty")]
    # a "fixed" display carries the same three, never text/markdown or application/json
    for cell in write_paths.values():
        for output in cell.outputs:
            if output["output_type"] == "display_data":
                assert set(output["data"]) == {"text/plain", "text/html", MIME}


# -- lifecycle ------------------------------------------------------------------------------------

HOOKS = (
    "print(sorted(f'{e}:{c.__qualname__}' for e in ('pre_run_cell', 'post_run_cell') "
    "for c in get_ipython().events.callbacks[e] if 'ipylsp' in getattr(c, '__module__', '')))"
)
STATE = (
    "import threading\n"
    "print('lsp' in get_ipython().magics_manager.magics['line'],\n"
    "      [t.name for t in threading.enumerate() if t.name.startswith('ipylsp')],\n"
    "      [type(c).__name__ for c in get_ipython().configurables "
    "if type(c).__name__ in ('IPyLSP', 'LspMagics')],\n"
    "      [n for n in get_ipython().magics_manager.registry if n == 'LspMagics'])"
)
BOTH_HOOKS = "['post_run_cell:CellChecks.post_run_cell', 'pre_run_cell:CellChecks.pre_run_cell']\n"


def write(name: str) -> str:
    return f"open({name!r}, 'w').write({BAD!r});"


def test_lifecycle_load_reload_config_unload(tmp_path: Path) -> None:
    ws = seed_workspace(tmp_path)
    with Kernel(kernel_dir_for(tmp_path), ws) as k:
        assert k.run("%load_ext ipylsp").outputs == []
        assert _servers(k.pid) == []  # loading spawns nothing
        assert k.run("%load_ext ipylsp").stdout == (
            "The ipylsp extension is already loaded. To reload it, use:\n  %reload_ext ipylsp\n"
        )
        direct = k.run("import ipylsp\nipylsp.load_ipython_extension(get_ipython())")
        assert direct.outputs == []
        assert k.run(HOOKS).stdout == BOTH_HOOKS  # one pair, however often it was loaded
        assert k.run(TY_RUFF).outputs == []
        assert k.run(write("a.py")).displays == [block("a.py", BAD_ERROR)]  # one display
        servers = _server_names(_servers(k.pid))
        assert [s.split("/")[-1] for s in servers] == ["ruff server", "ty server"]

        # %reload_ext: the old servers go, %config survives, one pair of hooks, reports work
        assert k.run("%reload_ext ipylsp").outputs == []
        assert k.run(HOOKS).stdout == BOTH_HOOKS
        assert k.run(write("b.py")).displays == [block("b.py", BAD_ERROR)]
        assert k.run("%config IPyLSP.language_servers").result == (
            "{'python': ['ty', 'ruff']}"
        )

        # %config IPyLSP.enabled takes effect at once, also within the cell that sets it
        assert k.run("%config IPyLSP.enabled = False").outputs == []
        assert k.run(write("c.py")).outputs == []
        assert k.run("%config IPyLSP.enabled = True").outputs == []
        same_cell = "%config IPyLSP.enabled = False\n" + write("d.py")
        assert k.run(same_cell).outputs == []
        assert k.run("%lsp on").result == "ipylsp: checking files written by cells"
        assert k.run(write("e.py")).displays == [block("e.py", BAD_ERROR)]
        assert k.run("%lsp off").result == "ipylsp: not checking files written by cells"
        assert k.run(write("f.py")).outputs == []
        assert k.run("%lsp on").outputs != []

        # %unload_ext: no hook, no magic, no loop thread, no configurable, no server process
        assert _servers(k.pid) != []
        assert k.run("%unload_ext ipylsp").outputs == []
        assert k.run(HOOKS).stdout == "[]\n"
        assert k.run(STATE).stdout == "False [] [] []\n"
        assert _servers_gone(k.pid) == []
        assert k.run(write("g.py")).outputs == []
        assert k.run("%lsp status").stderr == "UsageError: Line magic function `%lsp` not found.\n"
        assert _servers(k.pid) == []

        # and it loads again
        assert k.run("%load_ext ipylsp").outputs == []
        assert k.run(HOOKS).stdout == BOTH_HOOKS
        assert k.run(write("h.py")).displays == [block("h.py", BAD_ERROR)]


# -- loading from configuration -------------------------------------------------------------------


def test_loaded_from_profile_config(tmp_path: Path) -> None:
    """`c.InteractiveShellApp.extensions` in IPYTHONDIR/profile_default/ipython_config.py; the
    `c.IPyLSP.*` lines of the same file apply (ty + ruff, show_clean)."""
    ws = seed_workspace(tmp_path)
    ipython_dir = tmp_path / "ipython"
    (ipython_dir / "profile_default").mkdir(parents=True)
    (ipython_dir / "profile_default" / "ipython_config.py").write_text(
        "c.InteractiveShellApp.extensions = ['ipylsp']\n"
        "c.IPyLSP.language_servers = {'python': ['ty', 'ruff']}\n"
        "c.IPyLSP.show_clean = True\n"
    )
    with Kernel(kernel_dir_for(tmp_path), ws, ipython_dir=ipython_dir) as k:
        assert "ipylsp" in k.run("print(get_ipython().extension_manager.loaded)").stdout
        assert k.run(HOOKS).stdout == BOTH_HOOKS
        assert k.run(write("a.py")).displays == [block("a.py", BAD_ERROR)]
        clean = k.run("open('b.py', 'w').write('x: int = 1\\n');")
        assert clean.displays == ["ipylsp: b.py clean (ty, ruff)"]
        # %load_ext on top of the configured load is harmless
        assert "already loaded" in k.run("%load_ext ipylsp").stdout
        assert k.run(HOOKS).stdout == BOTH_HOOKS


def test_loaded_from_kernel_argv(tmp_path: Path) -> None:
    """`--InteractiveShellApp.extensions=ipylsp` (and an `--IPyLSP.*` option) in kernel.json."""
    ws = seed_workspace(tmp_path)
    kernel_dir = kernel_dir_for(
        tmp_path,
        "--InteractiveShellApp.extensions=ipylsp",
        '--IPyLSP.language_servers={"python": ["ty"]}',
    )
    with Kernel(kernel_dir, ws) as k:
        assert k.run(HOOKS).stdout == BOTH_HOOKS
        assert k.run(write("a.py")).displays == [block("a.py", BAD_ERROR)]
        # ruff is not configured: an undefined name is ty's finding alone
        undefined = k.run("open('b.py', 'w').write('print(nope)\\n');")
        assert undefined.displays == [
            block("b.py",
                  "ERROR [1:7] Name `nope` used when not defined [unresolved-reference] (ty)")
        ]


# -- progress -------------------------------------------------------------------------------------


def test_install_progress_is_one_display_updated_in_place(tmp_path: Path) -> None:
    """`%lsp install ruff` (from PyPI) into a temporary data dir: one display_data, then only
    update_display_data for that display id; the summary is the execute_result."""
    ws = seed_workspace(tmp_path)
    data = tmp_path / "data"
    with Kernel(kernel_dir_for(tmp_path), ws) as k:
        assert k.run("%load_ext ipylsp").outputs == []
        assert k.run(f"%config IPyLSP.data_dir = {str(data)!r}").outputs == []
        cell = k.run("%lsp install ruff")
        ruff = data / "venv" / "bin" / "ruff"
        assert cell.result == f"ruff: installed ruff -> {ruff}"
        assert cell.kinds == ["display_data", "execute_result"]
        assert cell.displays == ["installing ruff: done"]  # the display's last state
        kinds = [m["msg_type"] for m in cell.messages]
        assert kinds[0] == "display_data" and kinds[-1] == "execute_result"
        updates = kinds[1:-1]
        assert updates and set(updates) == {"update_display_data"}, kinds
        ids = {m["content"]["transient"]["display_id"] for m in cell.messages[:-1]}
        assert len(ids) == 1
        texts = [m["content"]["data"]["text/plain"] for m in cell.messages[:-1]]
        assert texts[0] == "installing ruff ..."
        assert all(t.startswith("installing ruff") and "\n" not in t and "\x1b" not in t
                   for t in texts), texts
        assert k.run("%lsp which ruff").result == f"{ruff} server"


def test_server_still_starting_when_the_budget_ends(tmp_path: Path) -> None:
    """First indexing: a server whose initialize outlives the cell's budget is reported as
    unknown and still starting (never as clean); once it is up, the next write is checked."""
    ws = seed_workspace(tmp_path)
    slow = [sys.executable, str(FAKE_SERVER), "--slow-initialize-ms", "3000", "--lifetime-s", "60"]
    with Kernel(kernel_dir_for(tmp_path), ws) as k:
        assert k.run("%load_ext ipylsp").outputs == []
        k.run("%config IPyLSP.check_cells = False")  # the write path alone: the fixture
        # flags every "bad" in any Python document, the cells' own document too
        k.run(f"%config IPyLSP.custom_servers = {{'slow': {{'command': {slow!r}, "
              "'languages': ['python']}}")
        k.run("%config IPyLSP.language_servers = {'python': ['slow']}")
        k.run("%config IPyLSP.wait_budget = 0.5")
        first = k.run("open('a.py', 'w').write('x = 1  # ERROR:bad\\n');")
        assert first.displays == [block(
            "a.py",
            "UNKNOWN [slow] timed out after 0.5 s, still starting (initialize unanswered): "
            "results for this file are incomplete",
        )]
        second = k.run("open('b.py', 'w').write('x = 1  # ERROR:bad\\n');")
        (text,) = second.displays
        assert text.startswith('<diagnostics file="b.py">\nUNKNOWN [slow] timed out after ')
        assert "still starting (initialize unanswered)" in text
        status = k.run("%lsp status").result or ""
        assert status.split()[:2] == ["slow", "starting"]
        k.run("%config IPyLSP.wait_budget = 10")
        up = k.run(  # waits on the start itself (no polling)
            "import ipylsp\nipylsp.get_service().start('c.py')\nprint(ipylsp.status()[0].state)"
        )
        assert up.stdout == "running\n"
        third = k.run("open('c.py', 'w').write('x = 1  # ERROR:bad\\n');")
        assert third.displays == [block("c.py", "ERROR [1:10] bad [E1] (fake)")]


def test_a_long_check_shows_what_it_waits_for_then_the_report(tmp_path: Path) -> None:
    """A check that outlives half a second shows one waiting line (which server, why),
    updated in place and finally replaced by the report itself: one output, not a flood."""
    ws = seed_workspace(tmp_path)
    slow = [sys.executable, str(FAKE_SERVER), "--slow-initialize-ms", "1500", "--lifetime-s", "60"]
    with Kernel(kernel_dir_for(tmp_path), ws) as k:
        assert k.run("%load_ext ipylsp").outputs == []
        k.run("%config IPyLSP.check_cells = False")  # the write path alone: the fixture
        # flags every "bad" in any Python document, the cells' own document too
        k.run(f"%config IPyLSP.custom_servers = {{'slow': {{'command': {slow!r}, "
              "'languages': ['python']}}")
        k.run("%config IPyLSP.language_servers = {'python': ['slow']}")
        cell = k.run("open('w.py', 'w').write('x = 1  # ERROR:late\\n');")
        assert cell.displays == [block("w.py", "ERROR [1:10] late [E1] (fake)")]
        assert cell.kinds == ["display_data"]
        kinds = [m["msg_type"] for m in cell.messages]
        assert kinds[0] == "display_data" and set(kinds[1:]) == {"update_display_data"}, kinds
        texts = [m["content"]["data"]["text/plain"] for m in cell.messages]
        assert texts[0] == "ipylsp: waiting for slow (starting)"
        assert texts[-1] == cell.displays[0]


def test_a_shown_waiting_line_never_ends_as_an_empty_output(tmp_path: Path) -> None:
    """A clean write whose check waited for a server to start: the waiting line becomes a
    one-line outcome, so the saved notebook holds no empty output (a quick clean check
    prints nothing at all)."""
    ws = seed_workspace(tmp_path)
    slow = [sys.executable, str(FAKE_SERVER), "--slow-initialize-ms", "1500", "--lifetime-s", "60"]
    with Kernel(kernel_dir_for(tmp_path), ws) as k:
        k.run("%load_ext ipylsp")
        k.run("%config IPyLSP.check_cells = False")  # the write path alone: the fixture
        # flags every "bad" in any Python document, the cells' own document too
        k.run(f"%config IPyLSP.custom_servers = {{'slow': {{'command': {slow!r}, "
              "'languages': ['python']}}")
        k.run("%config IPyLSP.language_servers = {'python': ['slow']}")
        waited = k.run("open('w.py', 'w').write('x = 1\\n');")
        quick = k.run("open('w.py', 'w').write('x = 2\\n');")
    assert waited.kinds == ["display_data"]
    [text] = waited.displays
    assert re.fullmatch(r"checked w\.py: nothing new \(slow; \d+\.\d s\)", text), text
    assert quick.outputs == []
    every = [o for c in (waited, quick) for o in c.outputs]
    assert all(o.get("data", {}).get("text/plain", "x") for o in every)


# -- notebooks/agent_loop.ipynb -------------------------------------------------------------------


def test_agent_loop_notebook_ends_with_fixed(tmp_path: Path) -> None:
    ws = seed_workspace(tmp_path)
    nb = nbformat.read(REPO / "notebooks" / "agent_loop.ipynb", as_version=4)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")  # committed clean
    with Kernel(kernel_dir_for(tmp_path), ws) as k:
        cells = [k.run(c.source) for c in nb.cells if c.cell_type == "code"]
    for cell in cells:
        assert cell.error is None, (cell.source, cell.outputs)
    load, define, draft, plan, fix = cells
    assert load.outputs == [] and define.outputs == []
    report = block(
        "geometry.py",
        "ERROR [2:20] Name `heigth` used when not defined [unresolved-reference, F821] "
        "(ty, Ruff)",
        "ERROR [5:15] Argument to function `area` is incorrect: Expected `float`, found "
        '`Literal["4"]` [invalid-argument-type] (ty)',
    )
    assert draft.displays == [report]  # what the agent would read in the cell output...
    revised = ("def area(width: float, height: float) -> float:\n    return width * height\n\n\n"
               "print(area(3, 4))\n")
    assert plan.stdout == f"{report}\n{revised}\n"  # ...is what ipylsp.pending() handed over
    assert fix.displays == ["fixed 2 errors in geometry.py"]  # heigth counts once
    assert fix.outputs[-1]["data"]["text/plain"].startswith("fixed")  # the notebook's last word
