"""Shared fixtures: the fake server's command, and the no-orphans guarantee.

After every test module, no process started by the tests may be alive except this process's
ipylsp watchdog: a leaked language server fails the run. "Started by the tests" is decided by
a marker in the environment (`MARKER_VAR`, set here at import, so kernels, servers and their
helpers inherit it), not by ancestry: a helper in its own session that was reparented when its
server exited is no descendant of pytest, but it carries the marker.

The run leaves nothing behind: TMPDIR points into a directory of its own (set here at import, so
servers such as pyright, kernels and their helpers write there; removed when pytest ends), and the
status files (`<data_dir>/run/status-<pid>-<n>.json`) of this process, or of processes that are
gone (a SIGKILLed kernel), are swept at the end.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from ipylsp.lsp.process import Watchdog, carrying, descendants, running, wait_exited
from ipylsp.private import scratch_dir

FAKE_SERVER = Path(__file__).parent / "fixtures" / "fake_server.py"

MARKER_VAR = "IPYLSP_TEST_MARKER"
MARKER = f"{os.getpid()}-{uuid.uuid4().hex}"
os.environ[MARKER_VAR] = MARKER  # before any test starts anything: everything inherits it

# Below no directory another user can write to (never a shared /tmp): ipylsp starts no server
# rooted where others could plant configuration, and the tests' workspaces are made here.
SESSION_TMP = scratch_dir("ipylsp-tests-", Path(__file__).resolve().parent.parent / ".cache")
os.environ["TMPDIR"] = str(SESSION_TMP)  # pyright-*, kernels' and pytest's temp dirs go here
tempfile.tempdir = None  # this process's tempfile reads TMPDIR again
# The persistent store (issue 14) of every service, kernel and server extension of the run:
# never the user's, and gone with the run. Tests of the store itself pass their own file.
os.environ["IPYLSP_STORE"] = str(SESSION_TMP / "store.sqlite3")


def fake_command(*flags: str) -> tuple[str, ...]:
    """The command line of the scriptable fake server with `flags`."""
    return (sys.executable, str(FAKE_SERVER), "--lifetime-s", "120", *flags)


def cmdline(pid: int) -> str:
    """A process's command line, or "" when it is gone."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def marked() -> list[int]:
    """Live processes that carry this run's marker, this process and its watchdog left out."""
    watchdog = Watchdog._instance
    skip = {os.getpid()} | ({watchdog.pid} if watchdog is not None else set())
    return [pid for pid in carrying(MARKER_VAR, MARKER) if pid not in skip and running(pid)]


def _stray_processes() -> list[tuple[int, str]]:
    watchdog = Watchdog._instance
    allowed = {watchdog.pid} if watchdog is not None else set()
    strays = []
    for pid in sorted({*descendants(os.getpid()), *marked()}):
        if pid in allowed or not running(pid):
            continue
        command = cmdline(pid)
        if not command:
            continue
        strays.append((pid, command))
    return strays


def _wait_gone(deadline_s: float) -> list[tuple[int, str]]:
    """Processes get a moment to be reaped after a stop (exit is asynchronous)."""
    strays = _stray_processes()
    if strays:
        wait_exited([pid for pid, _ in strays], deadline_s)
        strays = _stray_processes()
    return strays


@pytest.fixture(autouse=True, scope="module")
def no_orphans() -> Iterator[None]:
    """Every test module must leave no server process behind (checked, then cleaned)."""
    yield
    import ipylsp

    ipylsp._reset_service()
    strays = _wait_gone(5.0)
    for pid, _ in strays:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    assert not strays, f"processes left alive after the module: {strays}"


def _sweep_status_files() -> None:
    """Status files of this process and of dead ones (a SIGKILLed kernel cannot remove its own)."""
    from ipylsp.servers import executables
    from ipylsp.service.runtime.status_file import read_status

    run_dir = executables.data_dir() / "run"
    read_status(executables.data_dir())  # the reader drops the files of dead processes
    for path in run_dir.glob(f"status-{os.getpid()}-*.json"):
        with contextlib.suppress(OSError):
            path.unlink()


def pytest_unconfigure(config: pytest.Config) -> None:
    _sweep_status_files()
    shutil.rmtree(SESSION_TMP, ignore_errors=True)
