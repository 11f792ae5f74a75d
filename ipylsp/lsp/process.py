"""Server processes: spawned in their own process group, never outliving the Python process.

Three mechanisms guarantee "no orphans":

- every server is a session/process-group leader, so stopping it kills the whole group and the
  descendants found in /proc that left it;
- every server gets a tag in its environment, `IPYLSP_SERVER_TAG=<owner>.<n>` (owner: this
  process's pid and start time), which its helpers inherit. A helper that started its own
  session and was reparented when its parent exited (gopls's `go list`, rust-analyzer's
  proc-macro server) is neither a descendant nor a group member any more; the tag still finds
  it (a scan of /proc/*/environ; its cost is in benchmarks/README.md, bench_orphans.py);
- one small watchdog process per Python process (its own session too, so a Jupyter interrupt or
  a `killpg` of the kernel's group does not reach it) holds the read end of a pipe. The kernel
  tells it which groups exist. When the kernel dies — even by SIGKILL — the pipe reaches EOF and
  the watchdog kills every group it was told about and every process carrying the owner's tag.

A server runs in its client's environment (`Environment.spawn_environ`: this process's own
variables, but the client's PATH, GOPATH, VIRTUAL_ENV...; this process's own without one). The
watchdog is this process's own helper, in its environment: a POSIX shell script where
`/bin/sh` and a `grep -z` are there (about 1 MB), else this process's interpreter (9 MB).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import itertools
import logging
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from ipylsp.lsp.procfs import (
    TAG_VAR,
    carrying,
    descendants,
    left_by,
    running,
    start_time,
    tagged,
    wait_exited,
)
from ipylsp.model.environment import Environment

__all__ = [  # the /proc readers are used beside the process API (tests, benchmarks)
    "TAG_VAR", "ServerProcess", "Watchdog", "carrying", "descendants", "kill_tree", "left_by",
    "running", "spawn", "start_time", "tagged", "wait_exited",
]

log = logging.getLogger(__name__)

STDERR_TAIL_BYTES = 16 * 1024
T = TypeVar("T")

_TAGS = itertools.count(1)  # process-wide: a replaced watchdog must not hand out a tag again

WATCHDOG = "ipylsp-watchdog"
"""In the watchdog's command line (its `$0`, or the Python one's first argument): what tells
it from a server."""

_WATCHDOG_SHELL = r"""
trap '' INT TERM HUP
needle=$1
groups=' '
while read -r op arg; do
    case $arg in ''|*[!0-9]*) continue ;; esac
    case $op in
        +) groups="$groups$arg " ;;
        -) case $groups in *" $arg "*) groups="${groups%% $arg *} ${groups#* $arg }" ;; esac ;;
    esac
done
pattern=^$(printf '%s' "$needle" | sed 's/[].[\\^$*]/\\&/g')
signal_all() {
    alive=1
    for group in $groups; do
        kill -s "$1" -- "-$group" 2>/dev/null && alive=0
    done
    for file in $(grep -lzs -- "$pattern" /proc/[0-9]*/environ); do
        pid=${file#/proc/}
        kill -s "$1" "${pid%/environ}" 2>/dev/null && alive=0
    done
    return $alive
}
if signal_all TERM; then
    tries=0
    while [ $tries -lt 25 ] && signal_all 0; do
        sleep 0.02
        tries=$((tries + 1))
    done
    signal_all KILL
fi
"""
"""The watchdog as a POSIX shell script: the same protocol and the same kills as the Python
one below, in about 1 MB instead of an interpreter's 9 (each kernel and each broker runs
one). Used where `/bin/sh` and a `grep` that reads NUL-separated records (`-z`) are there."""

_WATCHDOG_SOURCE = r"""
import os, signal, sys, time
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
signal.signal(signal.SIGHUP, signal.SIG_IGN)
needle = sys.argv[2].encode()
groups = set()
for line in sys.stdin.buffer:
    op, _, arg = line.strip().partition(b" ")
    try:
        pgid = int(arg)
    except ValueError:
        continue
    if op == b"+":
        groups.add(pgid)
    elif op == b"-":
        groups.discard(pgid)
def tagged():
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open("/proc/" + entry + "/environ", "rb") as handle:
                    names = handle.read().split(b"\0")
            except OSError:
                continue
            if any(name.startswith(needle) for name in names):
                found.append(int(entry))
    return found
def kill(sig):
    left = []
    for pgid in groups:
        try:
            os.killpg(pgid, sig)
            left.append(pgid)
        except OSError:
            pass
    for pid in tagged():
        try:
            os.kill(pid, sig)
            left.append(pid)
        except OSError:
            pass
    return left
if kill(signal.SIGTERM):
    deadline = time.monotonic() + 0.5
    while time.monotonic() < deadline and kill(0):
        time.sleep(0.02)
    kill(signal.SIGKILL)
"""


_SHELL: list[bool] = []


def _shell_usable() -> bool:
    """Whether the shell watchdog can do all the Python one does: `/bin/sh`, and a `grep`
    that takes `-z` (GNU's, BusyBox's; asked once: it exits 1 for no match, 2 for an
    option it does not know)."""
    if not _SHELL:
        try:
            probe = subprocess.run(["grep", "-lzs", "--", "x", os.devnull],
                                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, timeout=5, check=False)
            _SHELL.append(os.access("/bin/sh", os.X_OK) and probe.returncode == 1)
        except (OSError, subprocess.SubprocessError):
            _SHELL.append(False)
    return _SHELL[0]


class Watchdog:
    """Kills registered process groups when this Python process dies (see module docstring)."""

    _lock = threading.Lock()
    _instance: Watchdog | None = None

    def __init__(self) -> None:
        self.owner = f"{os.getpid()}.{start_time(os.getpid())}"
        needle = f"{TAG_VAR}={self.owner}."
        self._proc = subprocess.Popen(
            ["/bin/sh", "-c", _WATCHDOG_SHELL, WATCHDOG, needle] if _shell_usable()
            else [sys.executable, "-S", "-c", _WATCHDOG_SOURCE, WATCHDOG, needle],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
        )
        self._pid_owner = os.getpid()

    @classmethod
    def get(cls) -> Watchdog:
        with cls._lock:
            if cls._instance is None or not cls._instance.alive:
                cls._instance = cls()
            return cls._instance

    @property
    def alive(self) -> bool:
        return self._pid_owner == os.getpid() and self._proc.poll() is None

    @property
    def pid(self) -> int:
        return self._proc.pid

    def _say(self, line: str) -> None:
        stdin = self._proc.stdin
        if stdin is None:
            return
        with self._lock, contextlib.suppress(OSError, ValueError):
            stdin.write(line.encode() + b"\n")
            stdin.flush()

    def new_tag(self) -> str:
        """A tag for one more server of this process (the watchdog kills all of them)."""
        return f"{self.owner}.{next(_TAGS)}"

    def watch(self, pgid: int) -> None:
        self._say(f"+ {pgid}")

    def forget(self, pgid: int) -> None:
        self._say(f"- {pgid}")


def kill_tree(pid: int, sig: int = signal.SIGKILL, tag: str | None = None) -> list[int]:
    """Signal the process group led by `pid`, every descendant that left it and every process
    carrying `tag` (helpers that were reparented); the targets other than `pid`."""
    targets = [target for target in left_by(pid, tag) if target != os.getpid()]
    with contextlib.suppress(OSError):
        os.killpg(pid, sig)
    for target in targets:
        with contextlib.suppress(OSError):
            os.kill(target, sig)
    return targets


class ServerProcess:
    """A spawned server: its pipes, its stderr tail, and how to end it for sure."""

    def __init__(
        self, proc: asyncio.subprocess.Process, command: Sequence[str], tag: str | None = None
    ) -> None:
        self.proc = proc
        self.command = tuple(command)
        self.tag = tag
        self._stderr_tail: collections.deque[bytes] = collections.deque()
        self._stderr_size = 0
        self._stderr_task: asyncio.Task[None] | None = None
        if proc.stderr is not None:
            self._stderr_task = asyncio.get_running_loop().create_task(self._drain_stderr())

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def returncode(self) -> int | None:
        return self.proc.returncode

    async def _drain_stderr(self) -> None:
        """Read stderr continuously: a full stderr pipe would wedge the server."""
        assert self.proc.stderr is not None
        with contextlib.suppress(Exception):
            while chunk := await self.proc.stderr.read(65536):
                self._stderr_tail.append(chunk)
                self._stderr_size += len(chunk)
                while self._stderr_size > STDERR_TAIL_BYTES and len(self._stderr_tail) > 1:
                    self._stderr_size -= len(self._stderr_tail.popleft())

    def stderr_tail(self, max_chars: int = 2000) -> str:
        text = b"".join(self._stderr_tail).decode("utf-8", "replace").strip()
        return text[-max_chars:]

    async def wait(self, timeout: float) -> bool:
        """True when the process exited within `timeout`."""
        try:
            await asyncio.wait_for(self.proc.wait(), timeout)
        except asyncio.TimeoutError:
            return False
        return True

    async def kill(self) -> None:
        """Kill the server, its group, its descendants and every process carrying its tag (also
        after a clean exit: helpers outlive it); return once the server is reaped and the rest
        are dead."""
        was_running = self.returncode is None
        others = await _off_loop(kill_tree, self.pid, signal.SIGKILL, self.tag)
        await self.wait(5.0)
        if others:  # SIGKILL is delivered asynchronously
            await _off_loop(wait_exited, others, 2.0)
        if self.tag and (was_running or others):  # one may have forked while the scan ran
            late = await _off_loop(tagged, self.tag)
            for pid in late:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            if late:
                await _off_loop(wait_exited, late, 2.0)
        Watchdog.get().forget(self.pid)
        transport = getattr(self.proc, "_transport", None)  # close pipes now, not at GC time
        if transport is not None:
            transport.close()
        if self._stderr_task is not None:
            self._stderr_task.cancel()


async def _off_loop(function: Callable[..., T], *args: Any) -> T:
    """`function(*args)` on a worker thread (it reads /proc or waits); inline when the executor
    refuses work (interpreter shutdown: servers are still stopped at exit)."""
    try:
        return await asyncio.get_running_loop().run_in_executor(None, function, *args)
    except RuntimeError:
        return function(*args)


async def spawn(
    command: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    environment: Environment | None = None,
    limit: int = 1024 * 1024,
) -> ServerProcess:
    """Start `command` in a new session, tagged (see module docstring), registered with the
    watchdog; in `environment`'s variables (the client's; None: this process's), then `env`
    (the server's own, from its spec) over them."""
    watchdog = Watchdog.get()
    tag = watchdog.new_tag()
    full_env = dict(os.environ) if environment is None else environment.spawn_environ()
    if env:
        full_env.update(env)
    full_env[TAG_VAR] = tag
    proc = await asyncio.create_subprocess_exec(
        *command,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=str(cwd),
        env=full_env,
        start_new_session=True,
        limit=limit,
    )
    watchdog.watch(proc.pid)
    return ServerProcess(proc, command, tag)
