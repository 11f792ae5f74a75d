"""`ipylsp mcp` as an MCP client sees it: a real session through the SDK's stdio client
(`ClientSession` over `stdio_client`) against the real command, on real ty + ruff; a raw
subprocess to check that stdout carries protocol messages only; and the process's end (stdin
closed, SIGTERM, SIGKILL) leaving no language server behind."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import pytest

from ipylsp.agent import tool_schemas
from ipylsp.lsp.procfs import descendants, running, wait_exited
from tests.conftest import MARKER, MARKER_VAR, cmdline
from tests.mcp_sdk import wire
from tests.real_servers import DATA_DIR, require, write
from tests.test_agent_tools import MAIN, SHAPES
from tests.test_layers import graph

anyio = pytest.importorskip("anyio")
pytest.importorskip("mcp", reason="the test extra installs mcp")
pytestmark = pytest.mark.mcp_sdk

from anyio.from_thread import BlockingPortal, start_blocking_portal  # noqa: E402
from mcp.client.session import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

IPYLSP = Path(sys.executable).parent / "ipylsp"

BAD = 'x: int = "s"\n'
BAD_REPORT = (
    '<diagnostics file="bad.py">\n'
    'ERROR [1:10] Object of type `Literal["s"]` is not assignable to `int` [invalid-assignment] '
    "(ty)\n"
    "</diagnostics>"
)
IMPORTS = "import os\n\nprint(1)\n"


@dataclass
class Workspace:
    root: Path
    env: dict[str, str]
    config: Path

    def command(self) -> list[str]:
        return [str(IPYLSP), "--data-dir", str(DATA_DIR), "--config", str(self.config),
                "mcp", "--root", str(self.root)]


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    require("ty")
    require("ruff")
    base = tmp_path_factory.mktemp("mcp")
    home = base / "home"
    home.mkdir()
    root = base / "ws"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    for name, text in {"shapes.py": SHAPES, "main.py": MAIN, "bad.py": BAD,
                       "imports.py": IMPORTS}.items():
        write(root, name, text)
    config = base / "ipylsp_config.json"
    config.write_text(json.dumps({"IPyLSP": {"language_servers": {"python": ["ty", "ruff"]}}}))
    env = {
        "HOME": str(home),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "TMPDIR": os.environ["TMPDIR"],
        "JUPYTER_CONFIG_DIR": str(home / ".jupyter"),
        MARKER_VAR: MARKER,  # the SDK passes only a few variables on; the leftover check needs it
        # and the run's broker switch (off: these tests are of the in-process server; the
        # relay is tests/test_broker.py's) and runtime directory, never the user's
        "IPYLSP_BROKER": os.environ["IPYLSP_BROKER"],
        "XDG_RUNTIME_DIR": os.environ["XDG_RUNTIME_DIR"],
    }
    return Workspace(root, env, config)


# -- a real session through the SDK's client ------------------------------------------------------


@dataclass
class Client:
    portal: BlockingPortal
    session: ClientSession

    def call(self, name: str, arguments: dict[str, Any]) -> tuple[bool, str]:
        """(is_error, the one text block)."""
        result = wire(self.portal.call(self.session.call_tool, name, arguments))
        [block] = result["content"]
        assert block["type"] == "text"
        assert "structuredContent" not in result
        return bool(result.get("isError")), block["text"]

    def ok(self, name: str, arguments: dict[str, Any]) -> str:
        is_error, text = self.call(name, arguments)
        assert not is_error, text
        return text


@contextlib.contextmanager
def sdk_session(ws: Workspace, errlog_path: Path, cwd: Path | None = None) -> Iterator[Client]:
    """`ipylsp mcp --root <ws.root>` started by the SDK's stdio client (in `cwd`: else this
    process's current directory), one session initialized; it logs nothing."""
    params = StdioServerParameters(command=ws.command()[0], args=ws.command()[1:], env=ws.env,
                                   cwd=cwd)
    with (
        errlog_path.open("w") as errlog,
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(stdio_client(params, errlog=errlog)) as (read, write),
        portal.wrap_async_context_manager(ClientSession(read, write)) as session,
    ):
        portal.call(session.initialize)
        yield Client(portal, session)
    assert errlog_path.read_text() == ""  # nothing logged: no warning, no traceback


@pytest.fixture(scope="module")
def client(ws: Workspace, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Client]:
    with sdk_session(ws, tmp_path_factory.mktemp("mcp-log") / "stderr.txt") as started:
        yield started


@pytest.mark.real
def test_the_tools_are_the_table(client: Client) -> None:
    listed = client.portal.call(client.session.list_tools).tools
    expected = tool_schemas("mcp")
    assert [tool.name for tool in listed] == [schema["name"] for schema in expected]
    for tool, schema in zip(listed, expected, strict=True):
        assert tool.description == schema["description"]
        assert wire(tool)["inputSchema"] == schema["inputSchema"]
        assert tool.annotations is not None
        assert wire(tool.annotations) == (
            schema["annotations"]
        )
    assert wire(listed[0])["annotations"]["readOnlyHint"] is True


@pytest.mark.real
def test_check_reports_a_planted_error(client: Client) -> None:
    assert client.ok("lsp_check", {"path": "bad.py"}) == BAD_REPORT


@pytest.mark.real
def test_check_of_proposed_content_writes_nothing(client: Client, ws: Workspace) -> None:
    text = client.ok("lsp_check", {"path": "main.py",
                                   "content": MAIN + "print(sq.perimeter())\n"})
    assert text == (
        '<diagnostics file="main.py">\n'
        "ERROR [5:7] Object of type `Square` has no attribute `perimeter` [missing-attribute] "
        "(ty)\n"
        "</diagnostics>\n"
        "(proposed content; nothing was written)"
    )
    assert (ws.root / "main.py").read_text() == MAIN


CELL = "from shapes import Square\n\nprint(Square().perimeter())\n"


def _mcp_process(cwd: Path) -> int:
    """The `ipylsp mcp` process this test started in `cwd`."""
    [pid] = [p for p in descendants(os.getpid())
             if " mcp --root " in cmdline(p) and Path(f"/proc/{p}/cwd").resolve() == cwd]
    return pid


@pytest.mark.real
@pytest.mark.parametrize("started_in", ["a directory outside any workspace", "another workspace"])
def test_a_cells_code_is_checked_in_the_root_wherever_the_process_started(
    ws: Workspace, tmp_path: Path, started_in: str
) -> None:
    """Issue 28: `ipylsp mcp --root DIR` gave its service no cells' directory, so the cells'
    document lived in the current directory's project (or in a directory of its own): a
    second pair of servers checked it there, where DIR's modules do not resolve. It lives
    in the root now, as under the server extension: the root's ty and ruff check it, its
    `shapes` resolves, and nothing is written in the current directory or the root."""
    cwd = (tmp_path / "cwd").resolve()
    cwd.mkdir()
    if started_in == "another workspace":
        subprocess.run(["git", "init", "-q", str(cwd)], check=True)
    in_cwd = sorted(p.name for p in cwd.iterdir())
    in_root = sorted(p.name for p in ws.root.iterdir())
    with sdk_session(ws, tmp_path / "stderr.txt", cwd) as started:
        assert started.ok("lsp_check", {"path": "bad.py"}) == BAD_REPORT
        assert started.ok("lsp_check_cell", {"code": CELL}) == (
            '<diagnostics file="cell [ ]">\n'
            "ERROR [3:7] Object of type `Square` has no attribute `perimeter` "
            "[missing-attribute] (ty)\n"
            "</diagnostics>"
        )
        names = [Path(argv[0]).name for p in descendants(_mcp_process(cwd))
                 if (argv := cmdline(p).split())]  # not one that ended meanwhile
        assert sorted(n for n in names if n in ("ty", "ruff")) == ["ruff", "ty"]
    assert sorted(p.name for p in cwd.iterdir()) == in_cwd
    assert sorted(p.name for p in ws.root.iterdir()) == in_root


@pytest.mark.real
def test_definition_by_symbol(client: Client) -> None:
    assert client.ok("lsp_definition", {"symbol": "Square"}) == (
        "shapes.py:6:7: class Square(Shape):"
    )
    assert client.ok("lsp_definition", {"path": "main.py", "line": 3, "symbol": "Square"}) == (
        "shapes.py:6:7: class Square(Shape):"
    )


@pytest.mark.real
def test_a_code_action_is_a_diff(client: Client, ws: Workspace) -> None:
    text = client.ok("lsp_code_actions", {"path": "imports.py", "line": 1})
    assert text.startswith(
        "1. Ruff (F401): Remove unused import: `os` [ruff] (F401)\n"
        "--- a/imports.py\n+++ b/imports.py\n@@ -1,3 +1,2 @@\n-import os\n \n print(1)\n"
    )
    assert (ws.root / "imports.py").read_text() == IMPORTS


@pytest.mark.real
def test_a_path_outside_the_root_is_refused(client: Client, ws: Workspace) -> None:
    outside = write(ws.root.parent, "outside.py", "secret = 1\n")
    for path in (str(outside), "../outside.py"):
        is_error, text = client.call("lsp_check", {"path": path})
        assert is_error
        assert text.startswith("error [outside_workspace]: "), text


@pytest.mark.real
def test_an_unknown_tool_is_an_error_result(client: Client) -> None:
    is_error, text = client.call("lsp_nothing", {})
    assert is_error
    assert text.startswith("error [unknown_tool]: there is no tool 'lsp_nothing'; the tools are "
                           "lsp_check, ")


@pytest.mark.real
def test_bad_arguments_are_an_error_result(client: Client) -> None:
    is_error, text = client.call("lsp_check", {})
    assert is_error
    assert text.startswith("error [missing_argument]: lsp_check needs `path`")


# -- the process: stdout, stdin closed, signals ------------------------------------------------


class Raw:
    """`ipylsp mcp` spoken to by hand (newline-delimited JSON-RPC)."""

    def __init__(self, ws: Workspace) -> None:
        self.proc = subprocess.Popen(
            ws.command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, env={**os.environ, **ws.env},
        )
        self.lines: list[bytes] = []
        self._id = 0

    def send(self, method: str, params: dict[str, Any] | None = None, *, notify: bool = False
             ) -> int:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        if not notify:
            self._id += 1
            message["id"] = self._id
        stdin = self.stdin
        stdin.write(json.dumps(message).encode() + b"\n")
        stdin.flush()
        return self._id

    @property
    def stdin(self) -> IO[bytes]:
        assert self.proc.stdin is not None
        return self.proc.stdin

    def answer(self, request_id: int) -> dict[str, Any]:
        """Read stdout up to the answer to `request_id` (every line kept for the checks)."""
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            assert line, f"stdout ended; stderr: {self.stderr_text()}"
            self.lines.append(line)
            message = json.loads(line)
            if message.get("id") == request_id:
                return dict(message)

    def stderr_text(self) -> str:
        self.proc.kill()
        assert self.proc.stderr is not None
        return self.proc.stderr.read().decode(errors="replace")

    def start_session(self) -> None:
        self.answer(self.send("initialize", {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"},
        }))
        self.send("notifications/initialized", notify=True)

    def check_bad(self) -> str:
        answer = self.answer(self.send("tools/call", {"name": "lsp_check",
                                                      "arguments": {"path": "bad.py"}}))
        return str(answer["result"]["content"][0]["text"])

    def servers(self) -> list[int]:
        """The language servers (and the watchdog) this process started."""
        found = descendants(self.proc.pid)
        assert found, "ipylsp mcp started no process"
        return found


@contextlib.contextmanager
def raw_process(ws: Workspace) -> Iterator[Raw]:
    raw = Raw(ws)
    try:
        yield raw
    finally:
        if raw.proc.poll() is None:
            raw.proc.kill()
        raw.proc.wait()
        for stream in (raw.proc.stdin, raw.proc.stdout, raw.proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()


def commands(pids: list[int]) -> set[str]:
    names = set()
    for pid in pids:
        with contextlib.suppress(OSError):
            names.add(Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode())
    return {Path(name).name for name in names}


@pytest.mark.real
def test_stdout_carries_protocol_messages_only_and_closing_stdin_ends_everything(
    ws: Workspace,
) -> None:
    with raw_process(ws) as raw:
        raw.start_session()
        listed = raw.answer(raw.send("tools/list", {}))
        assert [t["name"] for t in listed["result"]["tools"]] == [
            s["name"] for s in tool_schemas("mcp")
        ]
        assert raw.check_bad() == BAD_REPORT
        started = raw.servers()
        assert {"ty", "ruff"} <= commands(started)
        raw.stdin.close()
        assert raw.proc.stdout is not None
        raw.lines += raw.proc.stdout.read().splitlines(keepends=True)
        assert raw.proc.wait(timeout=30) == 0
        assert raw.proc.stderr is not None
        assert raw.proc.stderr.read() == b""
    messages = [json.loads(line) for line in raw.lines]
    assert all(line.endswith(b"\n") for line in raw.lines)
    assert [(m["jsonrpc"], m["id"]) for m in messages] == [("2.0", 1), ("2.0", 2), ("2.0", 3)]
    assert wait_exited(started, 10.0) == []


@pytest.mark.real
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_the_servers_and_the_process(ws: Workspace, signum: int) -> None:
    with raw_process(ws) as raw:
        raw.start_session()
        assert raw.check_bad() == BAD_REPORT
        started = raw.servers()
        raw.proc.send_signal(signum)
        assert raw.proc.wait(timeout=30) == 0
    assert wait_exited(started, 10.0) == []


@pytest.mark.real
def test_sigkill_leaves_no_language_server_behind(ws: Workspace) -> None:
    """The watchdog of the `ipylsp mcp` process (any Python process that starts servers has
    one) kills them when that process dies without a chance to clean up."""
    with raw_process(ws) as raw:
        raw.start_session()
        assert raw.check_bad() == BAD_REPORT
        started = raw.servers()
        assert {"ty", "ruff"} <= commands(started)
        raw.proc.kill()
        raw.proc.wait()
    assert wait_exited(started, 10.0) == []
    assert not [pid for pid in started if running(pid)]


@pytest.mark.real
def test_without_the_sdk_one_line_and_exit_2(ws: Workspace, tmp_path: Path) -> None:
    blocker = tmp_path / "no-sdk" / "mcp"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text("raise ImportError('no mcp here')\n")
    done = subprocess.run(
        ws.command(), capture_output=True, stdin=subprocess.DEVNULL, timeout=60,
        env={**os.environ, **ws.env, "PYTHONPATH": str(blocker.parent)},
    )
    assert (done.returncode, done.stdout) == (2, b"")
    assert done.stderr.decode() == "ipylsp mcp needs the MCP SDK: pip install 'ipylsp[mcp]'\n"


@pytest.mark.real
def test_a_root_that_is_no_directory_is_refused(ws: Workspace) -> None:
    command = ws.command()
    command[-1] = str(ws.root / "bad.py")
    done = subprocess.run(command, capture_output=True, stdin=subprocess.DEVNULL, timeout=60,
                          env={**os.environ, **ws.env})
    assert (done.returncode, done.stdout) == (2, b"")
    assert done.stderr.decode() == f"ipylsp mcp: --root {ws.root / 'bad.py'} is not a directory\n"


def test_only_the_mcp_module_imports_the_sdk() -> None:
    """The server object, stdio and the HTTP session manager in agent/mcp_server.py; the
    Jupyter server extension's transport (server/mcp_http.py) gets the manager from it."""
    importers = {module for module, targets in graph().items()
                 for target, _ in targets if target.split(".")[0] in ("mcp", "mcp_types")}
    assert importers == {"ipylsp.agent.mcp_server"}
