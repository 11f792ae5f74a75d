"""Reading /proc: descendants, process groups, environment tags, exits, whether a process is
still the one a file was named after (Linux; elsewhere the answers are empty and exits are
polled).

What process.py needs to find every process a server left, apart from how it kills them.
"""

from __future__ import annotations

import collections
import os
import select
import socket
import time
from collections.abc import Iterator, Mapping

TAG_VAR = "IPYLSP_SERVER_TAG"
"""The environment variable that marks a server and everything it starts (see process.py)."""


def descendants(pid: int) -> list[int]:
    """Every live descendant of `pid` (Linux /proc; empty elsewhere)."""
    children: dict[int, list[int]] = collections.defaultdict(list)
    for member, fields in _processes():
        children[int(fields[1])].append(member)
    return sorted(_below(children, pid))


def _processes() -> Iterator[tuple[int, list[bytes]]]:
    """(pid, stat fields after the command name) of every process (nothing without /proc)."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return
    for entry in entries:
        if entry.isdigit():
            fields = _stat_fields(int(entry))
            if fields is not None and len(fields) > 2:
                yield int(entry), fields


def _below(children: Mapping[int, list[int]], pid: int) -> set[int]:
    found: set[int] = set()
    stack = [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            found.add(child)
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


def parent(pid: int) -> int | None:
    """The parent of `pid`, or None when it is gone."""
    fields = _stat_fields(pid)
    try:
        return int(fields[1]) if fields is not None else None
    except (IndexError, ValueError):
        return None


def start_time(pid: int) -> int:
    """Start time of `pid` in clock ticks since boot (0 when unknown): a pid with its start
    time names one process, even after the pid is reused."""
    fields = _stat_fields(pid)
    try:
        return int(fields[19]) if fields is not None else 0
    except (IndexError, ValueError):
        return 0


HOST = socket.gethostname().replace("-", "_") or "host"
"""This machine's name, for files named after a process: a home shared by several machines
(NFS) holds other hosts' files too, whose pids mean nothing here."""


def alive(pid: int, started: int) -> bool:
    """The process `pid` that started at `started` (`start_time`) is still running: a pid
    reused by another process does not count."""
    return running(pid) and (started == 0 or start_time(pid) == started)


def tagged(tag: str) -> list[int]:
    """Live processes whose environment carries `TAG_VAR=tag`."""
    return carrying(TAG_VAR, tag)


def carrying(variable: str, value: str) -> list[int]:
    """Live processes whose environment holds `variable=value` (Linux /proc; empty elsewhere).

    Processes of other users cannot be read and are never ours; zombies show no environment.
    """
    needle = f"{variable}={value}".encode()
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    return [int(e) for e in entries if e.isdigit() and _environ_holds(int(e), needle)]


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


def left_by(pid: int, tag: str | None = None) -> list[int]:
    """Everything a server may have left, in one pass over /proc: its descendants, the members
    of its process group (orphaned children of the leader included) and, with `tag`, every
    process whose environment carries `TAG_VAR=tag`. `pid` itself is not in the list."""
    needle = f"{TAG_VAR}={tag}".encode() if tag else None
    children: dict[int, list[int]] = collections.defaultdict(list)
    found: set[int] = set()
    for member, fields in _processes():
        children[int(fields[1])].append(member)
        in_group = int(fields[2]) == pid
        if in_group or (needle is not None and _environ_holds(member, needle)):
            found.add(member)
    found |= _below(children, pid)
    found.discard(pid)
    return sorted(found)


def _environ_holds(pid: int, needle: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            environ = handle.read()
    except OSError:
        return False
    return needle in environ and needle in environ.split(b"\0")
