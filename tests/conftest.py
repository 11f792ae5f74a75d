"""Shared fixtures: the fake server's command, and the no-orphans guarantee.

After every test module, no process started by the tests may be alive except this process's
ipylsp watchdog: a leaked language server fails the run. "Started by the tests" is decided by
a marker in the environment (`MARKER_VAR`, set here at import, so kernels, servers and their
helpers inherit it), not by ancestry: a helper in its own session that was reparented when its
server exited is no descendant of pytest, but it carries the marker.

The run leaves nothing behind: TMPDIR points into a directory of its own (set here at import, so
servers such as pyright, kernels and their helpers write there; removed when pytest ends), and the
status files (`<data_dir>/run/status-<host>-<pid>-<n>.json`) of this process, or of processes
that are gone (a SIGKILLed kernel), are swept at the end.

Unit tests and real-part tests apart: a test that starts a process (a language server, a kernel,
a Jupyter server, a browser, git, any subprocess), itself or through a fixture, is marked
`real`. With `IPYLSP_TESTS_FAST=1` (`scripts/test --fast`, which also deselects them with
`-m "not real"`) an audit hook fails any test not marked `real` that starts one: the spawning
call raises `SpawnInFastRun`, and the test fails even when the code under test catches it.
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
from typing import Any

import pytest

from ipylsp.ipython.audit import SPAWN_EVENTS
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
# The broker (issue 30): off for every CLI call and `ipylsp mcp` of the run, so that each test
# sees the process it started; tests/test_broker.py turns it on for its own clients. Its place
# is the run's own runtime directory (short: a socket path has at most 107 bytes), never the
# user's, so no broker of the user's is ever used or stopped by the tests.
os.environ["IPYLSP_BROKER"] = "0"
RUNTIME_DIR = Path(tempfile.mkdtemp(prefix="ipylsp-run-", dir="/tmp"))  # 0700, unpredictable
os.environ["XDG_RUNTIME_DIR"] = str(RUNTIME_DIR)


def pytest_configure(config: pytest.Config) -> None:
    """SIGINT as from a terminal. A suite started in the background of a non-interactive shell
    (`cmd &`) inherits SIGINT ignored, and so does every server it starts: Jupyter keeps an
    inherited SIG_IGN, and the tests that stop a server with SIGINT, as JupyterHub does, hung
    (ipylsp, rightly, replaces only Python's default handler). With a Python handler here,
    the children start with the default disposition, as they do under CI or a terminal."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    from tests import contracts

    contracts.install()  # every report the tests render is checked against its schema


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
    for path in run_dir.glob(f"status-*-{os.getpid()}-*.json"):
        with contextlib.suppress(OSError):
            path.unlink()


def pytest_unconfigure(config: pytest.Config) -> None:
    _sweep_status_files()
    shutil.rmtree(SESSION_TMP, ignore_errors=True)
    shutil.rmtree(RUNTIME_DIR, ignore_errors=True)


# -- the fast run: a test not marked `real` starts no process ------------------------------------

FAST_VAR = "IPYLSP_TESTS_FAST"


class SpawnInFastRun(RuntimeError):
    """Raised into the call that would start a process during a test not marked `real`."""


class _SpawnGuard:
    """The audit hook of the fast run: the test now running, and what it tried to start."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.nodeid: str | None = None  # a test not marked `real` is in setup, call or teardown
        self.spawns: list[str] = []

    def hook(self, event: str, args: tuple[Any, ...]) -> None:
        # Any thread (a server is started by a loop thread), but not a forked child's exec.
        if event not in SPAWN_EVENTS or self.nodeid is None or os.getpid() != self.pid:
            return
        what = f"{event} {args[0]!r}" if args else event
        message = (
            f"{self.nodeid} started a process ({what[:300]}) in the fast run ({FAST_VAR}=1), "
            "which runs only unit tests: mark the test `@pytest.mark.real` (or its module: "
            "`pytestmark = pytest.mark.real`)"
        )
        self.spawns.append(message)
        raise SpawnInFastRun(message)


_GUARD: _SpawnGuard | None = None
if os.environ.get(FAST_VAR) == "1":
    _GUARD = _SpawnGuard()
    sys.addaudithook(_GUARD.hook)  # for the life of the process: only in the fast run


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """Setup, call and teardown of a test not marked `real` are guarded (module- and
    session-scoped fixtures it sets up included)."""
    if _GUARD is not None and item.get_closest_marker("real") is None:
        _GUARD.nodeid = item.nodeid
    try:
        yield
    finally:
        if _GUARD is not None:
            _GUARD.nodeid = None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """A phase that tried to start a process fails, whatever became of `SpawnInFastRun`."""
    outcome = yield
    if _GUARD is None or not _GUARD.spawns:
        return
    report: pytest.TestReport = outcome.get_result()
    spawns, _GUARD.spawns = _GUARD.spawns, []
    report.outcome = "failed"
    report.longrepr = "\n".join([*spawns, "", str(report.longrepr or "")]).rstrip()
