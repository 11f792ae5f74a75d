"""The one process-wide audit hook that sees the kernel's own file writes and child spawns
(and the code objects it `exec`s, for `monitor`).

Audit hooks cannot be removed (PEP 578), and this one runs on *every* audit event of the
process: each ``open()`` (imports included), ``id()``, ``compile``, ``sys._getframe``... So it is
installed once, lazily (the first `WriteWatcher.begin_cell`), and its body is one global
truthiness test while no cell is being watched. Listeners are added for the duration of a cell.

Events (checked against CPython 3.11, see tests/test_watch.py):

- ``open`` ``(path, mode, flags)``: raised by ``io.FileIO`` (so ``open``, ``io.open``,
  ``Path.write_text/write_bytes``, IPython's ``%%writefile``) and by ``os.open`` (mode None).
  ``flags`` are the OS flags in both cases, so one mask test covers "w", "a", "x", "+" and
  ``os.open`` with O_WRONLY/O_RDWR/O_CREAT/O_TRUNC/O_APPEND. It fires **before** the file is
  opened, hence before O_TRUNC empties it: the text before the write can still be read.
- ``os.rename`` ``(src, dst, src_dir_fd, dst_dir_fd)``: ``os.rename`` *and* ``os.replace``.
- ``os.remove`` ``(path, dir_fd)``: ``os.remove``, ``os.unlink``, ``Path.unlink``, and
  ``shutil.rmtree`` (which unlinks relative to a directory fd).
- ``os.truncate`` ``(path, length)``, ``os.link``, ``os.symlink``.
- ``shutil.copyfile`` ``(src, dst)``: raised by ``copyfile``/``copy``/``copy2``/``copytree``
  before the ``open(dst, "wb")`` that follows it.
- Child processes: ``subprocess.Popen`` (also asyncio subprocesses, ``%%bash``), ``os.system``,
  ``os.posix_spawn``, ``os.fork``, ``os.forkpty`` (pexpect/ptyprocess: IPython's ``!cmd``),
  ``os.exec``, ``os.spawn``, ``pty.spawn``, ``os.startfile``. Not seen: multiprocessing's
  "spawn"/"forkserver" start methods (``_posixsubprocess.fork_exec`` raises no event) and
  processes started from C code.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

from ipylsp.ipython.skip import DEFAULT_MAX_TEXT_BYTES, FileState, PathRules, read_file

Listener = Callable[[str, tuple[Any, ...]], None]

WRITE_EVENTS: frozenset[str] = frozenset(
    {
        "open",
        "os.rename",
        "os.remove",
        "os.truncate",
        "os.link",
        "os.symlink",
        "shutil.copyfile",
    }
)
SPAWN_EVENTS: frozenset[str] = frozenset(
    {
        "subprocess.Popen",
        "os.system",
        "os.posix_spawn",
        "os.fork",
        "os.forkpty",
        "os.exec",
        "os.spawn",
        "pty.spawn",
        "os.startfile",
    }
)
CODE_EVENTS: frozenset[str] = frozenset({"exec"})
"""``exec`` ``(code_object,)``: ``exec()`` and ``eval()`` of code; IPython runs a cell's top-level
statements that way, one code object each (`monitor`: what the cell's own code evaluated)."""
EVENTS: frozenset[str] = WRITE_EVENTS | SPAWN_EVENTS | CODE_EVENTS

OPEN_WRITE_FLAGS: int = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND

MAX_BEFORE_BYTES = 64 * 1024 * 1024  # texts read per cell; past it, befores are unknown
MAX_DIR_RENAME_FILES = 10_000

_active: tuple[Listener, ...] = ()
_installed = False
_install_lock = threading.Lock()
_local = threading.local()  # `busy`: this thread is inside a listener


def _hook(
    event: str,
    args: tuple[Any, ...],
    _events: frozenset[str] = EVENTS,
    _mask: int = OPEN_WRITE_FLAGS,
) -> None:
    # Hot path: runs for every audit event in the process. Keep it to a global load and a test
    # while no cell is watched; a set lookup and an int test for read-only opens during a cell.
    if _active and event in _events:
        if event == "open":
            try:
                if not args[2] & _mask:
                    return
            except Exception:  # someone's own sys.audit("open", ...): not ours, never raise
                return
        for listener in _active:
            listener(event, args)


def _clear_in_child() -> None:
    # A forked child (multiprocessing "fork", os.fork) must not record into the parent's cell,
    # nor wait on a lock some other parent thread held at fork time.
    global _active, _install_lock
    _active = ()
    _install_lock = threading.Lock()


def install() -> None:
    """Install the hook (idempotent; it stays for the life of the process)."""
    global _installed
    if _installed:
        return
    with _install_lock:
        if _installed:
            return
        sys.addaudithook(_hook)
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=_clear_in_child)
        _installed = True


def installed() -> bool:
    return _installed


def add_listener(listener: Listener) -> None:
    global _active
    install()
    with _install_lock:
        if listener not in _active:
            _active = (*_active, listener)


def remove_listener(listener: Listener) -> None:
    global _active
    with _install_lock:
        _active = tuple(x for x in _active if x is not listener)


# -- what the hook records for one cell -------------------------------------------------------


@dataclass(slots=True)
class Record:
    """What the audit hook learnt about one path during a cell."""

    before: str | None
    before_known: bool
    existed: bool | None  # when the cell started (None: unknown)
    binary: bool = False
    origin: str | None = None  # where the current content was renamed from


def _busy() -> bool:
    return getattr(_local, "busy", False) is True


class CellRecorder:
    """The audit listener of one cell: the kernel's writes, and whether it spawned a child.

    - `rules` and `accepts(path)`: which canonical paths count (others are ignored at once).
      `rules` may be a function that makes them: it is called at the cell's first write or
      spawn, so a cell that writes nothing never computes its workspace roots.
    - `on_spawn()`: called (from the hook, before the child exists) at each spawn; the first
      note it returns is kept in `notes`.
    - `child_touched(path)`: whether a child of this cell changed `path` already; then the
      text on disk is not the text before the cell.
    - `ignored_threads`: idents of threads whose events are not the cell's.
    """

    def __init__(
        self,
        rules: PathRules | Callable[[], PathRules],
        *,
        accepts: Callable[[str], bool],
        on_spawn: Callable[[], str | None],
        child_touched: Callable[[str], bool],
        ignored_threads: Collection[int] = (),
        max_text_bytes: int | None = DEFAULT_MAX_TEXT_BYTES,
        max_before_bytes: int = MAX_BEFORE_BYTES,
    ) -> None:
        self._rules = rules
        self.accepts = accepts
        self.on_spawn = on_spawn
        self.child_touched = child_touched
        self.ignored_threads = ignored_threads
        self.max_text_bytes = max_text_bytes
        self.lock = threading.Lock()
        self.records: dict[str, Record] = {}
        self.ignored: set[str] = set()
        self.skipped: set[str] = set()
        """Paths the cell wrote below a skipped directory (`SKIP_DIRS`, a venv) of a watched
        root: not checked, which the extension says once per directory. (Writes under no
        root, a library's cache in the home directory, are nobody's source: silent.)"""
        self.spawned = False
        self.closed = False
        self.notes: list[str] = []
        self.budget = max_before_bytes
        self._parents: dict[str, str] = {}  # directory -> realpath
        self._absolute: dict[str, str] = {}  # absolute path as given -> canonical

    @property
    def rules(self) -> PathRules:
        if not isinstance(self._rules, PathRules):
            self._rules = self._rules()
        return self._rules

    # -- audit listener ------------------------------------------------------------------------

    def __call__(self, event: str, args: tuple[Any, ...]) -> None:
        if _busy() or threading.get_ident() in self.ignored_threads:
            return
        _local.busy = True  # our own reads raise "open" events too
        try:
            with self.lock:
                if not self.closed:
                    self._handle(event, args)
        except Exception as exc:  # never break the user's open()/subprocess
            if len(self.notes) < 5:
                self.notes.append(f"write watcher error on {event}: {exc!r}")
        finally:
            _local.busy = False

    def _handle(self, event: str, args: tuple[Any, ...]) -> None:
        if event in SPAWN_EVENTS:
            self._spawn()
        elif event == "open":
            path = self._canonical(args[0])
            if path is not None:
                self._capture(path, truncate=bool(args[2] & os.O_TRUNC))
        elif event == "os.rename":
            self._rename(self._canonical(args[0], args[2]), self._canonical(args[1], args[3]))
        elif event == "os.remove":
            path = self._canonical(args[0], args[1])
            if path is not None:
                self._capture(path)
        elif event == "os.truncate":
            path = self._canonical(args[0])
            if path is not None:
                self._capture(path, truncate=True)
        elif event in ("os.link", "shutil.copyfile"):
            path = self._canonical(args[1], args[3] if event == "os.link" else None)
            if path is not None:
                self._capture(path, truncate=True)
        elif event == "os.symlink":
            self._forget_paths()
            path = self._canonical(args[1], args[2])
            if path is not None:
                self._capture(path, truncate=True)

    # -- paths ---------------------------------------------------------------------------------

    def _canonical(self, obj: object, dir_fd: object = None) -> str | None:
        """Absolute path with a resolved directory, or None (an fd, a bad value)."""
        if type(obj) is str:
            known = self._absolute.get(obj)
            if known is not None:
                return known
        if isinstance(obj, int):
            return None
        try:
            raw = os.fspath(obj)  # type: ignore[call-overload]
        except TypeError:
            return None
        text = os.fsdecode(raw)
        if not text:
            return None
        absolute = os.path.isabs(text)
        if not absolute:  # relative to the cwd (or a directory fd) of this moment
            if isinstance(dir_fd, int) and dir_fd >= 0:
                try:
                    base = os.readlink(f"/proc/self/fd/{dir_fd}")
                except OSError:
                    return None
            else:
                base = os.getcwd()
            text = os.path.join(base, text)
        parent, name = os.path.split(os.path.normpath(text))
        if not name:
            return None
        real = self._parents.get(parent)
        if real is None:
            real = self._parents[parent] = os.path.realpath(parent)
        path = os.path.join(real, name)
        if absolute and type(obj) is str:
            self._absolute[obj] = path
        return path

    def _forget_paths(self) -> None:
        """A directory or symlink moved: cached resolutions may be wrong now."""
        self._parents.clear()
        self._absolute.clear()

    def admitted(self, path: str) -> bool:
        if path in self.ignored:
            return False
        if self.rules.skipped(path):
            if self.rules.root_of(path) is not None:  # in a watched tree, not ~/.cache
                self.skipped.add(path)
            self.ignored.add(path)
            return False
        if not self.accepts(path):
            self.ignored.add(path)
            return False
        return True

    # -- kernel writes -------------------------------------------------------------------------

    def _capture(self, path: str, *, truncate: bool = False, read: bool = True) -> Record | None:
        """Record `path` with its text before this cell's first write of it."""
        record = self.records.get(path)
        if record is not None:
            if truncate:
                record.origin = None  # new content: no longer what was renamed here
            return record
        if not self.admitted(path):
            return None
        if self.spawned and self.child_touched(path):
            # A child of this cell may have written it first: the text now is not the before.
            record = Record(None, False, None)
        elif not read:  # known only when missing (a directory rename's new paths)
            exists = os.path.lexists(path)
            record = Record(None, not exists, exists)
        else:
            record = self._read_before(path)
            if record is None:
                self.ignored.add(path)
                return None
        self.records[path] = record
        return record

    def _read_before(self, path: str) -> Record | None:
        limit = self.max_text_bytes
        current = read_file(path, self.budget if limit is None else min(limit, self.budget))
        state = current.state
        if state is FileState.MISSING:
            return Record(None, True, False)
        if state is FileState.TEXT:
            self.budget -= current.size
            return Record(current.text, True, True)
        if state is FileState.NOT_FILE:
            return None  # a directory (O_TMPFILE), FIFO, device: not a document
        return Record(None, False, True, binary=state is FileState.BINARY)

    def _origin(self, path: str) -> str | None:
        record = self.records.get(path)
        if record is None:
            return None
        if record.origin is not None:
            return record.origin
        return None if record.existed is False else path

    def _rename(self, src: str | None, dst: str | None) -> None:
        if src is not None and os.path.isdir(src):
            self._forget_paths()
            if dst is not None and not os.path.islink(src):
                self._rename_dir(src, dst)
            return
        origin = None
        if src is not None and self._capture(src) is not None:
            origin = self._origin(src)
            self.records[src].origin = None
        if dst is not None:
            record = self._capture(dst)
            if record is not None:
                record.origin = origin

    def _rename_dir(self, src: str, dst: str) -> None:
        count = 0
        for directory, dirs, files in os.walk(src):
            dirs[:] = [d for d in dirs if d not in self.rules.skip_dirs]
            for name in files:
                count += 1
                if count > MAX_DIR_RENAME_FILES:
                    self.notes.append(f"{src}: more than {MAX_DIR_RENAME_FILES} files renamed")
                    return
                old = os.path.join(directory, name)
                new = dst + old[len(src) :]
                origin = None
                if self._capture(old, read=False) is not None:
                    origin = self._origin(old)
                    self.records[old].origin = None
                record = self._capture(new, read=False)
                if record is not None:
                    record.origin = origin

    # -- children ------------------------------------------------------------------------------

    def _spawn(self) -> None:
        first = not self.spawned
        self.spawned = True
        note = self.on_spawn()
        if note is not None and first:
            self.notes.append(note)
