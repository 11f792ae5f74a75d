"""The inotify tracker: watches on every directory of the roots, through ctypes (Linux).

Its own module because it is most of the child-write machinery (the ctypes binding, the event
queue, keeping watches in step with renamed and new directories) and only one of the two
trackers; see the `ipylsp.ipython.fswatch` docstring for how it is used.
"""

from __future__ import annotations

import contextlib
import errno
import os
import struct
import sys
import time
from collections.abc import Collection

from ipylsp.ipython.fswatch.scan import mtime_changes, scandir, skip_dir
from ipylsp.ipython.fswatch.tracker import ChildChanges, TrackerUnavailable
from ipylsp.ipython.skip import SKIP_DIRS

IN_MODIFY = 0x00000002
IN_CLOSE_WRITE = 0x00000008
IN_MOVED_FROM = 0x00000040
IN_MOVED_TO = 0x00000080
IN_CREATE = 0x00000100
IN_DELETE = 0x00000200
IN_DELETE_SELF = 0x00000400
IN_MOVE_SELF = 0x00000800
IN_Q_OVERFLOW = 0x00004000
IN_IGNORED = 0x00008000
IN_ONLYDIR = 0x01000000
IN_DONT_FOLLOW = 0x02000000
IN_EXCL_UNLINK = 0x04000000
IN_ISDIR = 0x40000000
IN_NONBLOCK = os.O_NONBLOCK
IN_CLOEXEC = getattr(os, "O_CLOEXEC", 0o2000000)

WATCH_MASK = (
    IN_MODIFY
    | IN_CLOSE_WRITE
    | IN_MOVED_FROM
    | IN_MOVED_TO
    | IN_CREATE
    | IN_DELETE
    | IN_DELETE_SELF
    | IN_MOVE_SELF
    | IN_ONLYDIR
    | IN_DONT_FOLLOW
    | IN_EXCL_UNLINK
)
_TREE_EVENTS = IN_ISDIR | IN_Q_OVERFLOW | IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF
_FILE_CHANGE = IN_MODIFY | IN_CLOSE_WRITE | IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO
_HEADER = struct.Struct("iIII")
_READ_SIZE = 256 * 1024
_CLOCK_MARGIN_NS = 20_000_000


class _Libc:
    """inotify_init1/add_watch/rm_watch through ctypes (imported only when inotify is used)."""

    def __init__(self) -> None:
        if not sys.platform.startswith("linux"):
            raise TrackerUnavailable("inotify is Linux-only")
        import ctypes

        self.get_errno = ctypes.get_errno
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            self.init1 = libc.inotify_init1
            self.add_watch = libc.inotify_add_watch
            self.rm_watch = libc.inotify_rm_watch
        except (OSError, AttributeError) as exc:
            raise TrackerUnavailable(f"inotify is unavailable: {exc}") from exc
        self.init1.argtypes = [ctypes.c_int]
        self.init1.restype = ctypes.c_int
        self.add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        self.add_watch.restype = ctypes.c_int
        self.rm_watch.argtypes = [ctypes.c_int, ctypes.c_int]
        self.rm_watch.restype = ctypes.c_int


_libc: _Libc | None = None


def _get_libc() -> _Libc:
    global _libc
    if _libc is None:
        _libc = _Libc()
    return _libc


def max_user_watches() -> int | None:
    try:
        with open("/proc/sys/fs/inotify/max_user_watches", "rb") as f:
            return int(f.read())
    except (OSError, ValueError):
        return None


class InotifyTracker:
    """Watches every (non-skipped) directory of the roots; see the `fswatch` docstring."""

    mode = "inotify"

    def __init__(self, skip_dirs: Collection[str] = SKIP_DIRS, max_dirs: int = 50_000) -> None:
        self._lib = _get_libc()
        fd = self._lib.init1(IN_NONBLOCK | IN_CLOEXEC)
        if fd < 0:
            err = self._lib.get_errno()
            raise TrackerUnavailable(f"inotify_init1 failed: {os.strerror(err)}")
        self._fd = fd
        self._skip = frozenset(skip_dirs)
        self._max_dirs = max_dirs
        self._wd_dir: dict[int, str] = {}
        self._dir_wd: dict[str, int] = {}
        self._roots: tuple[str, ...] = ()
        self._stale = False  # overflow or a root moved: rebuild before the next arm
        self._changes: ChildChanges | None = None  # set while armed
        self._armed_ns = 0
        self._overflowed = False  # events were lost while armed
        self.failed: str | None = None  # set when new directories could not all be watched

    # -- watches -------------------------------------------------------------------------------

    @property
    def watched_dirs(self) -> int:
        return len(self._dir_wd)

    def _add_watch(self, directory: str) -> int:
        wd: int = self._lib.add_watch(self._fd, os.fsencode(directory), WATCH_MASK)
        if wd < 0:
            err = self._lib.get_errno()
            if err == errno.ENOSPC:
                raise TrackerUnavailable(
                    "the inotify watch limit is reached (/proc/sys/fs/inotify/max_user_watches"
                    f" = {max_user_watches()})"
                )
            return -1  # vanished, not a directory, permission: nothing to watch
        old = self._wd_dir.get(wd)
        if old is not None and old != directory:
            self._dir_wd.pop(old, None)
        self._wd_dir[wd] = directory
        self._dir_wd[directory] = wd
        return wd

    def _add_tree(self, top: str, *, is_root: bool, files: list[str] | None) -> None:
        """Watch `top` and its non-skipped subdirectories; list their files into `files`."""
        stack = [top]
        while stack:
            directory = stack.pop()
            if len(self._dir_wd) >= self._max_dirs and directory not in self._dir_wd:
                raise TrackerUnavailable(f"more than {self._max_dirs} directories to watch")
            wd = self._add_watch(directory)  # before listing: nothing created after is missed
            if wd < 0:
                continue
            entries = scandir(directory)
            if not (is_root and directory == top) and skip_dir(entries):
                self._remove_watch(wd)
                continue
            for entry in entries:
                try:
                    if entry.is_dir(follow_symlinks=False):
                        if entry.name not in self._skip:
                            stack.append(entry.path)
                    elif files is not None and entry.is_file(follow_symlinks=False):
                        files.append(entry.path)
                except OSError:
                    continue

    def _remove_watch(self, wd: int) -> None:
        directory = self._wd_dir.pop(wd, None)
        if directory is not None:
            self._dir_wd.pop(directory, None)
        self._lib.rm_watch(self._fd, wd)

    def _forget_prefix(self, directory: str, *, rm: bool) -> None:
        prefix = directory + "/"
        for path, wd in list(self._dir_wd.items()):
            if path == directory or path.startswith(prefix):
                if rm:
                    self._remove_watch(wd)
                else:
                    self._dir_wd.pop(path, None)
                    self._wd_dir.pop(wd, None)

    def _rebuild(self, roots: tuple[str, ...]) -> None:
        for wd in list(self._wd_dir):
            self._remove_watch(wd)
        self._drain_raw()  # the IN_IGNORED of the removed watches
        self._roots = roots
        for root in roots:
            self._add_tree(root, is_root=True, files=None)
        self._stale = False

    def prepare(self, roots: tuple[str, ...]) -> None:
        if roots != self._roots or self._stale:
            self._rebuild(roots)

    # -- events --------------------------------------------------------------------------------

    def _drain_raw(self, files: bool = True) -> list[tuple[int, int, int, str]]:
        """Every queued event; with `files=False`, only those about the tree itself."""
        events: list[tuple[int, int, int, str]] = []
        unpack = _HEADER.unpack_from
        while True:
            try:
                buf = os.read(self._fd, _READ_SIZE)
            except BlockingIOError:
                return events
            except InterruptedError:
                continue
            offset = 0
            end = len(buf)
            while offset + 16 <= end:
                wd, mask, cookie, length = unpack(buf, offset)
                offset += 16 + length
                if files or mask & _TREE_EVENTS:
                    name = buf[offset - length : offset].rstrip(b"\0")
                    events.append((wd, mask, cookie, os.fsdecode(name)))

    def _process(self) -> None:
        """Read the queue; keep watches in step with the tree; record file changes if armed."""
        changes = self._changes
        events = self._drain_raw(files=changes is not None)
        if not events:
            return
        moved_dirs: dict[int, str] = {}  # cookie -> old directory path
        moved_files: dict[int, str | None] = {}  # cookie -> origin of the moved content
        for wd, mask, cookie, name in events:
            if mask & IN_Q_OVERFLOW:
                self._stale = True
                self._overflowed = self._overflowed or changes is not None
                continue
            if mask & IN_IGNORED:
                directory = self._wd_dir.pop(wd, None)
                if directory is not None:
                    self._dir_wd.pop(directory, None)
                continue
            directory = self._wd_dir.get(wd)
            if directory is None:
                continue
            if mask & (IN_DELETE_SELF | IN_MOVE_SELF):
                if directory in self._roots:
                    self._stale = True
                continue
            path = directory + "/" + name if name else directory
            if mask & IN_ISDIR:
                self._dir_event(path, mask, cookie, name, moved_dirs, changes)
                continue
            if changes is None or not mask & _FILE_CHANGE:
                continue
            if mask & IN_CREATE:
                changes.touch(path, created=True)
            elif mask & IN_MOVED_FROM:
                moved_files[cookie] = changes.origin(path)
                change = changes.touch(path)
                change.moved_from = None
            elif mask & IN_MOVED_TO:
                change = changes.touch(path)
                change.moved_from = moved_files.pop(cookie, None)
            else:
                changes.touch(path)
        for old in moved_dirs.values():  # moved out of the roots: stop watching
            self._forget_prefix(old, rm=True)

    def _dir_event(
        self,
        path: str,
        mask: int,
        cookie: int,
        name: str,
        moved_dirs: dict[int, str],
        changes: ChildChanges | None,
    ) -> None:
        if mask & IN_MOVED_FROM:
            moved_dirs[cookie] = path
            return
        if not mask & (IN_CREATE | IN_MOVED_TO) or name in self._skip:
            return
        old = moved_dirs.pop(cookie, None) if mask & IN_MOVED_TO else None
        if old is not None:
            self._forget_prefix(old, rm=False)  # same inodes: _add_tree re-maps their wds
        files: list[str] | None = [] if changes is not None else None
        try:
            self._add_tree(path, is_root=False, files=files)
        except TrackerUnavailable as exc:  # the watch limit, mid-way: the watcher falls back
            self.failed = str(exc)
            if changes is not None:
                changes.notes.append(f"{exc}: files in {path} may be missing")
        if changes is None or files is None:
            return
        for file_path in files:
            change = changes.touch(file_path, created=True)
            if old is not None:
                old_path = old + file_path[len(path) :]
                change.moved_from = changes.origin(old_path)
                changes.touch(old_path)

    # -- tracker protocol ----------------------------------------------------------------------

    def idle(self) -> None:
        self._changes = None
        self._process()

    def arm(self, roots: tuple[str, ...]) -> None:
        if self._changes is not None:  # a second child in the same cell
            self._process()
            return
        self._process()  # earlier events: tree only
        self.prepare(roots)
        self._armed_ns = time.time_ns()
        self._overflowed = False
        self._changes = ChildChanges()

    def touched(self, path: str) -> bool:
        if self._changes is None:
            return False
        self._process()
        return path in self._changes.paths

    def collect(self) -> ChildChanges:
        changes = self._changes
        if changes is None:
            return ChildChanges()
        try:
            self._process()
        finally:
            self._changes = None
        if self._overflowed:
            # Events were lost: fall back to modification times for this cell (the kernel's
            # coarse clock may lag time.time_ns() by a tick, hence the margin).
            since = self._armed_ns - _CLOCK_MARGIN_NS
            for path in mtime_changes(self._roots, since, self._skip):
                changes.touch(path)
            changes.notes.append(
                "the inotify queue overflowed: changed files were found by modification time,"
                " deleted files may be missing"
            )
        return changes

    def close(self) -> None:
        if self._fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = -1
            self._wd_dir.clear()
            self._dir_wd.clear()
