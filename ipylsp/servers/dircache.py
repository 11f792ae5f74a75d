"""Answers that hold while the directories they were read from are unchanged.

`roots` (where is the marker? the worktree?) and `executables` (where is the executable?) both
answer by looking into directories, on every check. Creating or deleting a file changes its
directory's mtime, so an answer stored with the mtimes of the directories it looked at is
never stale, and a hit costs one ``stat`` per directory. Answers that involve a directory
modified in the last two seconds are not stored: mtimes have a coarse clock (the "racy git"
problem).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Hashable, Iterable
from typing import Generic, TypeVar

V = TypeVar("V")

RACY_NS = 2_000_000_000

_Snapshot = tuple[tuple[str, int], ...]


def mtime(directory: str) -> int:
    """The directory's mtime in ns, or -1 when it cannot be read (absent counts as a state)."""
    try:
        return os.stat(directory).st_mtime_ns
    except OSError:
        return -1


class DirCache(Generic[V]):
    """A bounded map key -> answer, each validated by the mtimes of its directories."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._entries: dict[Hashable, tuple[V, _Snapshot]] = {}
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> tuple[bool, V | None]:
        """(True, answer) while every directory it looked at is unchanged; else (False, None)."""
        entry = self._entries.get(key)
        if entry is None:
            return False, None
        value, snapshot = entry
        if any(mtime(directory) != seen for directory, seen in snapshot):
            return False, None
        return True, value

    def put(self, key: Hashable, value: V, directories: Iterable[str]) -> None:
        snapshot = tuple((d, mtime(d)) for d in dict.fromkeys(directories))
        if any(seen >= time.time_ns() - RACY_NS for _, seen in snapshot):
            return  # changed within the mtime clock's resolution: not safe to keep
        with self._lock:
            if len(self._entries) >= self._limit:
                self._entries.clear()
            self._entries[key] = (value, snapshot)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
