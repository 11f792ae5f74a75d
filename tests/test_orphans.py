"""No process left, ever: helpers a server starts in their own session die with it.

The fixture server's `--setsid-helper` starts a sleeping python in its own session, as gopls
(`go list`) and rust-analyzer (proc-macro server) do. When the server exits cleanly, the
helper is reparented: no longer a descendant nor in the server's group, only its environment
tag (process.TAG_VAR) still ties it to the server. Stop, close, `%unload_ext` and the kernel's
watchdog (kernel SIGKILLed) must all kill it. Exits are awaited with pidfds, never by sleeping.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ipylsp.lsp.client import LanguageClient
from ipylsp.lsp.process import TAG_VAR, WATCHDOG, descendants, running, wait_exited
from ipylsp.model.server_spec import InstallRecipe, ServerSpec
from ipylsp.model.settings import Settings
from ipylsp.service.service import Service
from tests.conftest import FAKE_SERVER, cmdline, fake_command, marked
from tests.test_ipython_kernel import Kernel, kernel_dir_for, seed_workspace

pytestmark = pytest.mark.real


def fake_spec(*flags: str) -> ServerSpec:
    return ServerSpec(
        id="fake",
        name="Fake",
        languages=("shellscript",),
        command=fake_command(*flags),
        install=InstallRecipe("path", hint="it is a test fixture"),
    )


def service(*flags: str, shutdown_grace: float = 2.0) -> Service:
    return Service(Settings(
        language_servers={"shellscript": ("fake",)},
        extra_specs=(fake_spec(*flags),),
        wait_budget=10.0,
        shutdown_grace=shutdown_grace,
    ))


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def events(record: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in record.read_text().splitlines()]


def received(record: Path) -> list[object]:
    return [e.get("method") for e in events(record) if e["event"] == "recv"]


def environ(pid: int) -> list[bytes]:
    with open(f"/proc/{pid}/environ", "rb") as handle:
        return handle.read().split(b"\0")


def session(pid: int) -> int:
    with open(f"/proc/{pid}/stat", "rb") as handle:
        stat = handle.read()
    return int(stat[stat.rindex(b")") + 2 :].split()[3])


def test_stop_kills_the_helper_of_a_server_that_exited_cleanly(tmp_path: Path) -> None:
    pidfile, record = tmp_path / "helper.pid", tmp_path / "record.jsonl"
    spec = fake_spec()
    command = fake_command("--setsid-helper", str(pidfile), "--record", str(record))

    async def body() -> tuple[int, int]:
        client = LanguageClient(spec, tmp_path, command)
        await client.start(10)
        pid = client.pid
        assert pid is not None
        helper = int(pidfile.read_text())
        assert running(helper) and session(helper) == helper != session(pid)
        tag = next(e for e in environ(pid) if e.startswith(TAG_VAR.encode() + b"="))
        assert tag in environ(helper)  # inherited: what finds it once reparented
        await client.stop()
        return pid, helper

    pid, helper = asyncio.run(body())
    # The server honoured shutdown + exit (code 0): the helper was orphaned, not killed with a
    # tree, and is dead all the same when stop() returns.
    assert [e["code"] for e in events(record) if e["event"] == "exit"] == [0]
    assert not running(pid)
    assert not running(helper)


def test_service_stop_and_close_kill_the_helpers(workspace: Path, tmp_path: Path) -> None:
    pidfile = tmp_path / "helper.pid"
    path = workspace / "a.sh"
    path.write_text("ERROR:x\n")
    with service("--setsid-helper", str(pidfile)) as svc:
        assert [d.message for f in svc.check(path).files for d in f.diagnostics] == ["x"]
        first = int(pidfile.read_text())
        (server,) = svc.server_pids()
        assert svc.stop() == 1  # %lsp stop
        assert not running(server) and not running(first)
        svc.check(path)  # started again: a new helper
        second = int(pidfile.read_text())
        assert second != first and running(second)
        (server,) = svc.server_pids()
    assert not running(server) and not running(second)  # close


def test_a_server_that_ignores_exit_costs_close_at_most_half_a_second(workspace: Path) -> None:
    """Issue 9: killed after a short grace (<= 0.5 s); the budget plus 0.25 s for the test."""
    path = workspace / "a.sh"
    path.write_text("fine\n")
    svc = service("--ignore-exit", "--ignore-sigterm")
    svc.check(path)
    (server,) = svc.server_pids()
    began = time.monotonic()
    svc.close()
    elapsed = time.monotonic() - began
    assert elapsed <= 0.5 + 0.25, elapsed
    assert not running(server)


def test_a_server_that_does_not_answer_shutdown_is_killed_without_exit(
    workspace: Path, tmp_path: Path
) -> None:
    """No answer within shutdown_grace: `exit` cannot help a server that is not reading."""
    record, pidfile = tmp_path / "record.jsonl", tmp_path / "helper.pid"
    path = workspace / "a.sh"
    path.write_text("fine\n")
    svc = service("--hang-on", "shutdown", "--ignore-exit", "--record", str(record),
                  "--setsid-helper", str(pidfile), shutdown_grace=0.3)
    svc.check(path)
    (server,) = svc.server_pids()
    svc.close()
    assert not running(server) and not running(int(pidfile.read_text()))
    assert "shutdown" in received(record) and "exit" not in received(record)


def _sleeper_in_own_session(tmp_path: Path) -> int:
    """A process reparented away from us at once (double fork, own session): its pid."""
    pidfile = tmp_path / "orphan.pid"
    code = ("import os, subprocess, sys; p = subprocess.Popen([sys.executable, '-c', "
            "'import time; time.sleep(600)'], start_new_session=True); "
            f"open({str(pidfile)!r}, 'w').write(str(p.pid))")
    subprocess.run([sys.executable, "-c", code], check=True)
    return int(pidfile.read_text())


def test_the_leftover_check_sees_reparented_processes(tmp_path: Path) -> None:
    orphan = _sleeper_in_own_session(tmp_path)
    try:
        assert orphan not in descendants(os.getpid())
        assert orphan in marked()
    finally:
        os.kill(orphan, signal.SIGKILL)
    assert wait_exited([orphan], 5.0) == []
    assert orphan not in marked()


# -- a real kernel -------------------------------------------------------------------------------


def _kernel_with_helper_server(k: Kernel, pidfile: Path, record: Path) -> tuple[int, int]:
    """Load ipylsp with the helper-starting fake server for Python; a write starts it."""
    command = [sys.executable, str(FAKE_SERVER), "--lifetime-s", "120",
               "--setsid-helper", str(pidfile), "--record", str(record)]
    assert k.run("%load_ext ipylsp").outputs == []
    k.run("%config IPyLSP.check_cells = False")  # the fixture flags markers in any document
    k.run(f"%config IPyLSP.custom_servers = {{'helpers': {{'command': {command!r}, "
          "'languages': ['python']}}")
    k.run("%config IPyLSP.language_servers = {'python': ['helpers']}")
    cell = k.run("open('a.py', 'w').write('x = 1  # ERROR:bad\\n');")
    assert cell.displays == ['<diagnostics file="a.py">\nERROR [1:10] bad [E1] (fake)\n'
                             "</diagnostics>"]
    (server,) = [e["pid"] for e in events(record) if e["event"] == "start"]
    assert isinstance(server, int)
    return server, int(pidfile.read_text())


def test_unload_ext_leaves_no_server_and_no_helper(tmp_path: Path) -> None:
    pidfile, record = tmp_path / "helper.pid", tmp_path / "record.jsonl"
    with Kernel(kernel_dir_for(tmp_path), seed_workspace(tmp_path)) as k:
        server, helper = _kernel_with_helper_server(k, pidfile, record)
        assert running(server) and running(helper)
        assert k.run("%unload_ext ipylsp").outputs == []
        assert not running(server)
        assert not running(helper)
        assert running(k.pid)


def test_a_sigkilled_kernel_leaves_no_server_and_no_helper(tmp_path: Path) -> None:
    pidfile, record = tmp_path / "helper.pid", tmp_path / "record.jsonl"
    with Kernel(kernel_dir_for(tmp_path), seed_workspace(tmp_path)) as k:
        server, helper = _kernel_with_helper_server(k, pidfile, record)
        watchdogs = [p for p in descendants(k.pid) if f" {WATCHDOG} " in cmdline(p)]
        assert len(watchdogs) == 1
        os.kill(k.pid, signal.SIGKILL)
        # The watchdog acts on the kernel's death, then exits itself.
        assert wait_exited([k.pid, server, helper, *watchdogs], 5.0) == []
