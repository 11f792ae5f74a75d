"""MCP over streamable HTTP at `{base_url}/ipylsp/mcp` on a real `jupyter server` process
(token auth, the extension enabled by its config), through the SDK's streamable-HTTP client:
the same tools and texts as on stdio with the token, 403 without it.

A subprocess rather than pytest-jupyter's in-process server: the SDK's client drives its own
HTTP stack, which pytest-jupyter's test loop does not serve."""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ipylsp.agent import tool_schemas
from ipylsp.lsp.procfs import descendants, wait_exited
from ipylsp.lsp.procfs import running as is_running
from ipylsp.server.handlers import NO_TOKEN
from tests.conftest import cmdline
from tests.mcp_sdk import http_client, texts
from tests.real_servers import DATA_DIR, require

pytestmark = pytest.mark.real

TOKEN = "ipylsp-test-token"
BROKEN = "def total(xs: list[int]) -> int:\n    return sum(xs)\n\nprint(totl)\n"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _status(port: int, headers: dict[str, str]) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", "/ipylsp/api/status", headers=headers)
        return conn.getresponse().status
    finally:
        conn.close()


def stopped(process: subprocess.Popen[bytes], log: Path, timeout: float = 30) -> int:
    """The exit status of a server told to stop; one still running after `timeout` fails
    the test with the end of its log and every thread's stack (faulthandler on SIGUSR2;
    Jupyter's own SIGUSR1 prints only its running info)."""
    try:
        return process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGUSR2)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(2)  # the dump is written by then: nothing to wait on instead
        pytest.fail(f"still running {timeout:.0f} s after the signal:\n"
                    f"{log.read_text(errors='replace')[-8000:]}")


def _start(base: Path, cwd: Path | None = None, *, home: bool = False,
           env: dict[str, str] | None = None, config: str = "", app: str = BROKEN,
           ) -> tuple[subprocess.Popen[bytes], int, Path]:
    """A real `jupyter server` with the extension on a git workspace holding app.py (`app`;
    its log in `base/server.log`), answering; started in `cwd` (else this process's), in
    `env` (else this process's environment). `home`: the root is the user's home instead, no
    workspace (JupyterHub's single-user server), and Jupyter's and the servers' own files go
    elsewhere. `config`: lines of `jupyter_server_config.py` after the test's own."""
    require("ty")
    require("ruff")
    root = base / "root"
    root.mkdir()
    env = {**(os.environ if env is None else env), "JUPYTER_CONFIG_DIR": str(base / "config")}
    if home:
        env.update(HOME=str(root), JUPYTER_RUNTIME_DIR=str(base / "runtime"),
                   JUPYTER_DATA_DIR=str(base / "data"), XDG_CACHE_HOME=str(base / "cache"),
                   IPYTHONDIR=str(base / "ipython"), npm_config_cache=str(base / "npm"))
    else:
        subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "app.py").write_text(app)
    settings = base / "jupyter_server_config.py"
    settings.write_text(
        "c.IPyLSP.language_servers = {'python': ['ty', 'ruff']}\n"
        f"c.IPyLSP.data_dir = {str(DATA_DIR)!r}\n"
        # SIGUSR2: every thread's stack into the log (`stopped`: a stop that hangs says where)
        "import faulthandler, signal\n"
        "faulthandler.register(signal.SIGUSR2, all_threads=True)\n"
        + config
    )
    port = _free_port()
    with (base / "server.log").open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "jupyter_server", "--no-browser", f"--config={settings}",
             f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
             "--ServerApp.ip=127.0.0.1", f"--ServerApp.root_dir={root}",
             f"--IdentityProvider.token={TOKEN}", "--ServerApp.allow_root=True"],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=cwd, env=env,
        )
    deadline = time.monotonic() + 60
    while True:
        assert process.poll() is None, (base / "server.log").read_text()[-3000:]
        try:
            if _status(port, {"Authorization": f"token {TOKEN}"}) == 200:
                return process, port, root
        except OSError:
            pass
        if time.monotonic() > deadline:
            process.kill()
            raise AssertionError("jupyter server did not answer within 60 s")
        time.sleep(0.1)  # polling a starting process: nothing to wait on instead


def _post(port: int, route: str, body: object) -> tuple[int, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        conn.request("POST", f"/ipylsp/api/{route}", body=json.dumps(body),
                     headers={"Authorization": f"token {TOKEN}"})
        answer = conn.getresponse()
        return answer.status, json.loads(answer.read())
    finally:
        conn.close()


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, Path]]:
    process, port, root = _start(tmp_path_factory.mktemp("jupyter"))
    try:
        yield port, root
    finally:
        _stop(process)


Answer = tuple[bool, list[str]]  # (isError, the text blocks)


async def _session(url: str, headers: dict[str, str]) -> tuple[list[str], Answer, Answer]:
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with (
        http_client(headers) as client,
        streamable_http_client(url, http_client=client) as (read, write, *_),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        listed = await session.list_tools()
        checked = await session.call_tool("lsp_check", {"path": "app.py"})
        refused = await session.call_tool("lsp_check", {"path": "../outside.py"})
        return [t.name for t in listed.tools], texts(checked), texts(refused)


@pytest.mark.mcp_sdk
def test_mcp_over_http_with_the_token(server: tuple[int, Path]) -> None:
    port, _ = server
    url = f"http://127.0.0.1:{port}/ipylsp/mcp"
    names, checked, refused = asyncio.run(
        _session(url, {"Authorization": f"token {TOKEN}"})
    )
    assert names == [t["name"] for t in tool_schemas("mcp")]
    assert checked == (False, [
        '<diagnostics file="app.py">\n'
        "ERROR [4:7] Name `totl` used when not defined [unresolved-reference, F821] (ty, Ruff)\n"
        "</diagnostics>"
    ])
    assert refused[0]
    assert refused[1][0].startswith(
        "error [outside_workspace]: ../outside.py is outside the workspace"
    )


@pytest.mark.mcp_sdk
@pytest.mark.parametrize("authorization", ["", "token wrong"])
def test_mcp_over_http_without_the_token_is_refused(
    server: tuple[int, Path], authorization: str
) -> None:
    port, _ = server
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"}}}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("POST", "/ipylsp/mcp", body=json.dumps(initialize), headers={
            "Authorization": authorization, "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream"})
        answer = conn.getresponse()
        assert answer.status == 403
        assert json.loads(answer.read())["message"] == NO_TOKEN  # the token, never `_xsrf`
    finally:
        conn.close()


@pytest.mark.mcp_sdk
def test_mcp_over_http_with_the_token_in_the_url(server: tuple[int, Path]) -> None:
    """For clients that cannot send headers (docs/jupyter.md's `?token=` form): the same session."""
    port, _ = server
    names, checked, refused = asyncio.run(
        _session(f"http://127.0.0.1:{port}/ipylsp/mcp?token={TOKEN}", {})
    )
    assert names == [t["name"] for t in tool_schemas("mcp")]
    assert not checked[0] and "app.py" in checked[1][0]  # new, or known
    assert refused[0]


@pytest.mark.mcp_sdk
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_server_that_served_mcp_stops_at_once_and_cleanly(
    tmp_path: Path, signum: signal.Signals
) -> None:
    """JupyterHub stops a user's server with SIGINT (SIGTERM elsewhere): after MCP calls it
    stops as promptly as without them (a worker thread of ours used to keep it alive until
    it was killed), with its servers gone and its status file removed."""
    process, port, _ = _start(tmp_path)
    try:
        names, checked, _ = asyncio.run(
            _session(f"http://127.0.0.1:{port}/ipylsp/mcp", {"Authorization": f"token {TOKEN}"})
        )
        assert "lsp_check" in names and not checked[0]
        servers = {p: Path(argv[0]).name for p in descendants(process.pid)
                   if (argv := cmdline(p).split())}  # not one that ended meanwhile
        running = [p for p, name in servers.items() if name in ("ty", "ruff")]
        assert sorted(servers[p] for p in running) == ["ruff", "ty"]  # they answered
        process.send_signal(signum)
        assert stopped(process, tmp_path / "server.log") == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    wait_exited(running, 10)  # the stop ended them; a reaped process may linger a moment
    assert [p for p in running if is_running(p)] == []  # its servers are gone with it
    assert not list((DATA_DIR / "run").glob(f"status-*-{process.pid}-*.json"))


@pytest.mark.parametrize("started_in", [
    "a directory outside any workspace", "another workspace", "the home directory, its root",
])
def test_cell_checks_run_on_the_servers_of_the_root(tmp_path: Path, started_in: str) -> None:
    """`lsp_check_cell` through the server extension runs on the ty and ruff its file checks
    use at its root, wherever the server was started and whatever the root is (the cells'
    document had a directory of its own, or the server's working directory: a second pair
    of servers), and leaves no file in the root."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    if started_in == "another workspace":
        subprocess.run(["git", "init", "-q", str(cwd)], check=True)
    home = started_in.startswith("the home")
    process, port, root = _start(tmp_path, cwd=tmp_path / "root" if home else cwd, home=home)
    try:
        code, checked = _post(port, "check", {"path": "app.py"})
        assert code == 200 and checked["files"][0]["path"] == "app.py"
        code, cell = _post(port, "tools/lsp_check_cell", {"code": "print(undefined_name)\n"})
        assert code == 200, cell
        assert cell["text"] == (
            '<diagnostics file="cell [ ]">\n'
            "ERROR [1:7] Name `undefined_name` used when not defined "
            "[unresolved-reference, F821] (ty, Ruff)\n"
            "</diagnostics>"
        )
        # a process gone between the listing and its command line (a helper exiting) has none
        names = [Path(line.split()[0]).name
                 for line in map(cmdline, descendants(process.pid)) if line]
        assert sorted(n for n in names if n in ("ty", "ruff")) == ["ruff", "ty"]
        left = sorted(p.name for p in root.iterdir())  # the document was never a file
        assert left == (["app.py"] if home else [".git", "app.py"])
    finally:
        _stop(process)
