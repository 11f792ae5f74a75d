"""The stat-snapshot tracker, and walking the roots (which the inotify tracker shares).

Split from the inotify tracker: this is the portable fallback (stdlib only, no ctypes), and
its tree walk and `mtime_changes` are what the inotify tracker falls back on when it overflows.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Collection, Iterable

from ipylsp.ipython.fswatch.tracker import ChildChanges, TrackerUnavailable
from ipylsp.ipython.skip import SKIP_DIRS, VENV_MARKER

# -- walking -----------------------------------------------------------------------------------


def scandir(directory: str) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(directory) as it:
            return list(it)
    except OSError:
        return []


def skip_dir(entries: list[os.DirEntry[str]]) -> bool:
    return any(e.name == VENV_MARKER for e in entries)


# -- stat snapshot -----------------------------------------------------------------------------

Signature = tuple[int, int, int, int]  # mtime_ns, ctime_ns, size, inode


def snapshot(
    roots: Iterable[str], skip_dirs: Collection[str] = SKIP_DIRS, max_files: int = 200_000
) -> dict[str, Signature]:
    """(mtime_ns, ctime_ns, size, inode) of every regular file below the roots."""
    skip = frozenset(skip_dirs)
    out: dict[str, Signature] = {}
    for root in roots:
        stack = [root]
        while stack:
            directory = stack.pop()
            entries = scandir(directory)
            if directory != root and skip_dir(entries):
                continue
            for entry in entries:
                try:
                    if entry.is_dir(follow_symlinks=False):
                        if entry.name not in skip:
                            stack.append(entry.path)
                    elif entry.is_file(follow_symlinks=False):
                        st = entry.stat(follow_symlinks=False)
                        out[entry.path] = (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)
                except OSError:
                    continue
            if len(out) > max_files:
                raise TrackerUnavailable(f"more than {max_files} files to scan")
    return out


class ScanTracker:
    mode = "scan"
    failed: str | None = None

    def __init__(self, skip_dirs: Collection[str] = SKIP_DIRS, max_files: int = 200_000) -> None:
        self._skip = frozenset(skip_dirs)
        self._max_files = max_files
        self._roots: tuple[str, ...] = ()
        self._before: dict[str, Signature] | None = None

    def idle(self) -> None:
        self._before = None

    def arm(self, roots: tuple[str, ...]) -> None:
        if self._before is None:
            self._roots = roots
            self._before = snapshot(roots, self._skip, self._max_files)

    def touched(self, path: str) -> bool:
        if self._before is None:
            return False
        try:
            st = os.lstat(path)
        except OSError:
            return path in self._before
        now = (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)
        return self._before.get(path) != now

    def collect(self) -> ChildChanges:
        before, self._before = self._before, None
        changes = ChildChanges()
        if before is None:
            return changes
        after = snapshot(self._roots, self._skip, self._max_files)
        removed = {p: sig for p, sig in before.items() if p not in after}
        by_inode = {sig[3]: p for p, sig in removed.items()}
        for path, sig in after.items():
            old = before.get(path)
            if old == sig:
                continue
            change = changes.touch(path, created=old is None)
            source = by_inode.get(sig[3])
            if source is not None and removed[source][0] == sig[0]:  # same inode, same mtime
                change.moved_from = source
        for path in removed:
            changes.touch(path)
        return changes

    def close(self) -> None:
        self._before = None


def mtime_changes(roots: Iterable[str], since_ns: int, skip_dirs: Collection[str]) -> list[str]:
    """Files whose mtime or ctime is at or after `since_ns` (inotify overflow fallback)."""
    found = snapshot(roots, skip_dirs, max_files=sys.maxsize)
    return [p for p, sig in found.items() if sig[0] >= since_ns or sig[1] >= since_ns]
