"""Server processes: spawned in their own process group, never outliving the Python process.

Two mechanisms guarantee "no orphans":

- every server is a session/process-group leader, so stopping it kills the whole group (and any
  descendants found in /proc that escaped it);
- one small watchdog process per Python process (its own session too, so a Jupyter interrupt or
  a `killpg` of the kernel's group does not reach it) holds the read end of a pipe. The kernel
  tells it which groups exist. When the kernel dies — even by SIGKILL — the pipe reaches EOF and
  the watchdog kills every group it was told about.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

log = logging.getLogger(__name__)

STDERR_TAIL_BYTES = 16 * 1024

_WATCHDOG_SOURCE = r"""
import os, signal, sys, time
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
signal.signal(signal.SIGHUP, signal.SIG_IGN)
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
def kill(sig):
    for pgid in groups:
        try:
            os.killpg(pgid, sig)
        except OSError:
            pass
if groups:
    kill(signal.SIGTERM)
    time.sleep(0.5)
    kill(signal.SIGKILL)
"""


class Watchdog:
    """Kills registered process groups when this Python process dies (see module docstring)."""

    _lock = threading.Lock()
    _instance: Watchdog | None = None

    def __init__(self) -> None:
        self._proc = subprocess.Popen(
            [sys.executable, "-S", "-c", _WATCHDOG_SOURCE],
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

    def watch(self, pgid: int) -> None:
        self._say(f"+ {pgid}")

    def forget(self, pgid: int) -> None:
        self._say(f"- {pgid}")


def descendants(pid: int) -> list[int]:
    """Every live descendant of `pid` (Linux /proc; empty elsewhere)."""
    children: dict[int, list[int]] = collections.defaultdict(list)
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
            ppid = int(stat[stat.rindex(b")") + 2 :].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children[ppid].append(int(entry))
    found: list[int] = []
    stack = [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def _stat_fields(pid: int) -> list[bytes] | None:
    """/proc/PID/stat after the command name: [state, ppid, pgrp, ...], or None if gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
        return stat[stat.rindex(b")") + 2 :].split()
    except (OSError, ValueError):
        return None


def running(pid: int) -> bool:
    """Alive and not a zombie (a killed process is dead once it is a zombie)."""
    fields = _stat_fields(pid)
    return fields is not None and fields[0] not in (b"Z", b"X")


def wait_exited(pids: list[int], timeout: float) -> list[int]:
    """Wait until every pid has exited (a zombie has); the ones still running at the timeout.

    Event-driven on Linux (a pidfd becomes readable when its process exits); elsewhere, or for
    pids that cannot be opened, /proc is polled.
    """
    deadline = time.monotonic() + timeout
    poller = select.poll() if hasattr(select, "poll") else None
    fds: dict[int, int] = {}
    polled: list[int] = []
    try:
        for pid in pids:
            try:
                fd = os.pidfd_open(pid)  # type: ignore[attr-defined,unused-ignore]
            except (AttributeError, OSError) as exc:
                if not isinstance(exc, ProcessLookupError) and running(pid):
                    polled.append(pid)
                continue
            fds[fd] = pid
            if poller is not None:
                poller.register(fd, select.POLLIN)
        while fds or polled:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            if fds and poller is not None:
                wait = remaining if not polled else min(remaining, 0.02)
                for fd, _ in poller.poll(wait * 1000):
                    poller.unregister(fd)
                    os.close(fd)
                    fds.pop(fd)
            else:
                time.sleep(min(remaining, 0.02))  # no pidfd here: poll /proc
            polled = [pid for pid in polled if running(pid)]
        return sorted([*polled, *(pid for pid in fds.values() if running(pid))])
    finally:
        for fd in fds:
            os.close(fd)


def group_members(pgid: int) -> list[int]:
    """Processes of a process group, the leader's orphaned children included (Linux /proc)."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    members = []
    for entry in entries:
        if entry.isdigit():
            fields = _stat_fields(int(entry))
            if fields is not None and len(fields) > 2 and fields[2] == str(pgid).encode():
                members.append(int(entry))
    return members


def kill_tree(pid: int, sig: int = signal.SIGKILL) -> list[int]:
    """Signal the process group led by `pid` and every descendant that left it; the targets."""
    targets = sorted({*descendants(pid), *group_members(pid)} - {pid})
    with contextlib.suppress(OSError):
        os.killpg(pid, sig)
    for target in targets:
        with contextlib.suppress(OSError):
            os.kill(target, sig)
    return targets


class ServerProcess:
    """A spawned server: its pipes, its stderr tail, and how to end it for sure."""

    def __init__(self, proc: asyncio.subprocess.Process, command: Sequence[str]) -> None:
        self.proc = proc
        self.command = tuple(command)
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
        """Kill the process tree; return once the server is reaped and the rest are dead."""
        others = kill_tree(self.pid, signal.SIGKILL)
        await self.wait(5.0)
        if others:  # SIGKILL is delivered asynchronously
            await asyncio.get_running_loop().run_in_executor(None, wait_exited, others, 2.0)
        Watchdog.get().forget(self.pid)
        transport = getattr(self.proc, "_transport", None)  # close pipes now, not at GC time
        if transport is not None:
            transport.close()
        if self._stderr_task is not None:
            self._stderr_task.cancel()


async def spawn(
    command: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    limit: int = 1024 * 1024,
) -> ServerProcess:
    """Start `command` in a new session, registered with the watchdog."""
    watchdog = Watchdog.get()
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
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
    return ServerProcess(proc, command)
