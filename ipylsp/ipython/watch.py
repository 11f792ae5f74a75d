"""Which files a cell wrote, and their text before the cell wrote them.

    watcher = WriteWatcher(roots_filter=in_a_workspace, roots=workspace_roots)
    watcher.begin_cell()                 # pre_run_cell
    ...                                  # the cell runs (and may raise)
    for write in watcher.end_cell():     # post_run_cell (also after an exception)
        service.check(write.path, before=write.before if write.before_known else <unknown>)

Modules: `audit` (the one process-wide audit hook and the per-cell recorder of kernel writes),
`fswatch` (child-process writes: inotify or a stat snapshot), `skip` (what is ignored, how text
is read), this one (the facade that merges them into `Write` values). None imports IPython.

**Kernel writes** -- ``open(..., "w"|"a"|"x"|"+")``, ``Path.write_text/write_bytes``,
``%%writefile`` (``io.open``), ``os.open`` with write flags, ``os.rename/os.replace``,
``shutil.copy*/move/rmtree``, ``os.remove/unlink/truncate/link/symlink`` -- raise audit events
*before* they act, so the text before the cell's first write of each path is read right then
(``before_known=True``; a file that did not exist has ``before=None``). The atomic-write pattern
(write ``tmp``, ``os.replace(tmp, dest)``) reports ``dest`` only; a temporary file created and
gone within the cell is not reported.

**Child-process writes** -- ``!cmd``, ``%%bash``, ``%%sh``, ``subprocess.run``, ``os.system``,
``os.fork`` -- are invisible to an audit hook, which only says *that* the cell spawns a child
(``subprocess.Popen``, ``os.system``, ``os.posix_spawn``, ``os.fork``, ``os.forkpty``...). Only
then is a tracker armed, from inside the hook, before the child exists:

- inotify (default on Linux): a watch on every non-skipped directory of the roots, set up at the
  first child (or `prepare`) and kept across cells; collecting reads the queue, so a cell with
  children pays almost nothing after the one-time set-up.
- stat snapshot (fallback: not Linux, ``max_user_instances`` or the watch limit
  ``/proc/sys/fs/inotify/max_user_watches`` reached, over `max_watch_dirs` directories): a
  (mtime_ns, ctime_ns, size, inode) walk when armed and another at the end. Two walks of the
  workspace per cell with children cost more than a cell's budget for a large workspace, which
  is why it is only the fallback. Over `max_scan_files` files, child writes are not detected
  and `notes` says so.

What each costs: `benchmarks/bench_watch.py` (its numbers are in benchmarks/README.md).

A child's text before is unknown (``before_known=False``; the service takes its last known text
or git HEAD) except for files it created. Attributed to a cell: what changed between its first
spawn and its end, so a write by an unrelated process in that window is reported too, and a
background child that outlives its cell is not followed.

**Skipped**: paths the roots filter rejects; directories named in `SKIP_DIRS` (``.git``,
``node_modules``, ``.venv``, ``venv``, ``__pycache__``, caches, ``build``, ``dist``,
``target``...) below a root; directories holding ``pyvenv.cfg``; binary files (a NUL in the first
8 KiB); FIFOs, devices, directories. Text is UTF-8 with ``errors="replace"`` (as the service
reads it); files over `max_text_bytes` (``IPyLSP.max_file_mb``, the check's own limit) are
reported with an unknown before, and the check says in one line that it did not check them.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from ipylsp.ipython import audit
from ipylsp.ipython.audit import MAX_BEFORE_BYTES, CellRecorder
from ipylsp.ipython.skip import DEFAULT_MAX_TEXT_BYTES, SKIP_DIRS, FileState, PathRules, read_file

if TYPE_CHECKING:  # the trackers are imported with the first child a cell spawns
    from ipylsp.ipython.fswatch import ChildChanges, ChildTracker

WriteKind = Literal["kernel", "child"]
ChildMode = Literal["auto", "inotify", "scan", "off"]

__all__ = ["SKIP_DIRS", "ChildMode", "Write", "WriteKind", "WriteWatcher"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Write:
    """One file a cell wrote or deleted, as it stands when the cell ended.

    - `path`: absolute; its directory is resolved (symlinks, ``..``), its name is kept.
    - `kind`: ``"kernel"`` when code in the kernel process wrote it (seen by the audit hook),
      ``"child"`` when only a child process did.
    - `before`: the text before the cell's first write of the path; ``None`` when the file did
      not exist or when the text is unknown. `before_known` tells the two apart: it is ``False``
      for child-process writes to existing files, for binary or oversized files, and when a
      child may have written the path before the kernel's first write was seen.
    - `deleted`: the file no longer exists (removed, or renamed away).
    - `destination_of`: the path this file's content was renamed from (``os.replace``, ``mv``,
      ``shutil.move``), when that path existed before the cell; its own `Write` is reported
      with ``deleted=True``. ``None`` for the atomic-write pattern (a temporary file written in
      the cell and renamed over `path`): that is simply a write of `path`.
    """

    path: Path
    kind: WriteKind
    before: str | None = None
    before_known: bool = True
    deleted: bool = False
    destination_of: Path | None = None

    def __post_init__(self) -> None:
        if self.before is not None and not self.before_known:
            raise ValueError("a before text cannot be unknown")

    @property
    def created(self) -> bool:
        """The file did not exist before the cell and exists now."""
        return self.before_known and self.before is None and not self.deleted


class WriteWatcher:
    """Records the files each cell writes; see the module docstring.

    - `roots_filter(path) -> bool`: whether a path (absolute) belongs to a workspace; only those
      are reported.
    - `roots()`: the directories to scan for child-process writes, and below which the skipped
      directory names apply (default: the current working directory when the cell starts).
      Evaluated at every `begin_cell`; keep it cheap.
    - `child_mode`: ``"auto"`` (inotify, else a stat snapshot), ``"inotify"``, ``"scan"``, or
      ``"off"`` (child-process writes are not detected).
    - `ignored_threads`: idents of threads whose writes and spawns are not the cell's (the
      service's own loop thread, which spawns language servers). Register long-lived threads
      only: the ident of a finished thread can be reused.
    - `notes`: after `end_cell`, why that cell's result may be incomplete (watch limit reached,
      workspace too large to scan, inotify queue overflow). Never silent, never "clean".

    Writes made by any thread during a cell are recorded. One cell at a time.
    """

    def __init__(
        self,
        roots_filter: Callable[[Path], bool],
        *,
        roots: Callable[[], Iterable[str | os.PathLike[str]]] | None = None,
        child_mode: ChildMode = "auto",
        skip_dirs: Collection[str] = SKIP_DIRS,
        max_text_bytes: int | None = DEFAULT_MAX_TEXT_BYTES,
        max_before_bytes: int = MAX_BEFORE_BYTES,
        max_scan_files: int = 200_000,
        max_watch_dirs: int = 50_000,
    ) -> None:
        self.roots_filter = roots_filter
        self.roots = roots if roots is not None else _cwd
        self.child_mode: ChildMode = child_mode
        self.skip_dirs = frozenset(skip_dirs)
        self.max_text_bytes = max_text_bytes
        self.max_before_bytes = max_before_bytes
        self.max_scan_files = max_scan_files
        self.max_watch_dirs = max_watch_dirs
        self.ignored_threads: set[int] = set()
        self.notes: tuple[str, ...] = ()
        self.skipped: tuple[str, ...] = ()
        """The last cell's own writes below a skipped directory (never checked), sorted."""
        self.tracker: ChildTracker | None = None
        self._child_off: str | None = None  # why children are not tracked
        self._failed_roots: tuple[str, ...] | None = None  # roots a tracker gave up on
        self._cell: CellRecorder | None = None
        self._reset_tracking()

    # -- public API ----------------------------------------------------------------------------

    @property
    def watching(self) -> bool:
        """A cell is being recorded."""
        return self._cell is not None

    @property
    def mode(self) -> str:
        """How child-process writes are found: inotify, scan, off, or pending (no child yet)."""
        if self.tracker is not None:
            return self.tracker.mode
        return "off" if self._child_off is not None else "pending"

    def begin_cell(self) -> None:
        """Start recording (``pre_run_cell``). A cell already being recorded is discarded."""
        if self._cell is not None:
            self._stop(self._cell)
        # The roots (a getcwd and a walk up to the workspace) are the cell's first write's or
        # spawn's business: most cells do neither, and they run on every cell.
        roots = functools.cache(self._current_roots)
        notes: list[str] = []
        if self.tracker is not None:
            try:
                self.tracker.idle()  # inotify: keep watches in step with the tree
            except Exception as exc:
                notes.append(self._broken(exc))
            self._check_failed(_outermost(roots()))
        cell = CellRecorder(
            lambda: PathRules(roots(), self.skip_dirs),
            accepts=self.accepts,
            on_spawn=lambda: self._arm(roots()),
            child_touched=self._child_touched,
            ignored_threads=self.ignored_threads,
            max_text_bytes=self.max_text_bytes,
            max_before_bytes=self.max_before_bytes,
        )
        cell.notes.extend(notes)
        self._cell = cell
        audit.add_listener(cell)

    def end_cell(self) -> list[Write]:
        """Stop recording (``post_run_cell``); the cell's writes, sorted by path.

        Works whether or not the cell raised; returns [] when no cell was being recorded.
        """
        cell = self._cell
        if cell is None:
            return []
        self._cell = None
        self._stop(cell)
        child: ChildChanges | None = None
        if cell.spawned and self.tracker is not None:
            try:
                child = self.tracker.collect()
            except Exception as exc:
                cell.notes.append(self._broken(exc))
            else:
                cell.notes.extend(child.notes)
            note = self._check_failed(_outermost(cell.rules.roots))
            if note is not None:
                cell.notes.append(note)
        writes = self._merge(cell, child)
        self.notes = tuple(cell.notes)
        self.skipped = tuple(sorted(cell.skipped))
        return writes

    def prepare(self) -> str | None:
        """Set up child-write tracking now rather than at the first child; a note if it can't.

        With inotify this walks the roots and adds the watches (the one-time cost).
        """
        from ipylsp.ipython.fswatch import InotifyTracker, TrackerUnavailable

        roots = _outermost(self._current_roots())
        tracker = self._ensure_tracker(roots)
        if isinstance(tracker, InotifyTracker):
            try:
                tracker.prepare(roots)
            except TrackerUnavailable as exc:
                return self._fallback(str(exc), roots)
        return None if self._child_off is None else f"not detected: {self._child_off}"

    def close(self) -> None:
        """Stop any cell and release the inotify descriptor (the audit hook stays, inert)."""
        if self._cell is not None:
            self._stop(self._cell)
            self._cell = None
        self._reset_tracking()

    def accepts(self, path: str) -> bool:
        """The roots filter, never raising."""
        try:
            return bool(self.roots_filter(Path(path)))
        except Exception:
            return False

    # -- child trackers ------------------------------------------------------------------------

    def _reset_tracking(self) -> None:
        if self.tracker is not None:
            self.tracker.close()
            self.tracker = None
        self._child_off = "disabled" if self.child_mode == "off" else None
        self._failed_roots = None

    def _ensure_tracker(self, roots: tuple[str, ...]) -> ChildTracker | None:
        from ipylsp.ipython.fswatch import InotifyTracker, ScanTracker, TrackerUnavailable

        if self._failed_roots is not None and roots != self._failed_roots:
            self._reset_tracking()  # other roots now: the preferred tracker may work again
        if self.tracker is not None or self._child_off is not None:
            return self.tracker
        if self.child_mode in ("auto", "inotify"):
            try:
                self.tracker = InotifyTracker(self.skip_dirs, self.max_watch_dirs)
                return self.tracker
            except TrackerUnavailable as exc:
                if self.child_mode == "inotify":
                    self._child_off = str(exc)
                    self._failed_roots = roots
                    return None
        self.tracker = ScanTracker(self.skip_dirs, self.max_scan_files)
        return self.tracker

    def _fallback(self, reason: str, roots: tuple[str, ...]) -> str:
        """The tracker gave up on these roots: scan instead (auto mode), else stop."""
        from ipylsp.ipython.fswatch import InotifyTracker, ScanTracker

        was_inotify = isinstance(self.tracker, InotifyTracker)
        if self.tracker is not None:
            self.tracker.close()
            self.tracker = None
        self._failed_roots = roots
        if was_inotify and self.child_mode == "auto":
            self.tracker = ScanTracker(self.skip_dirs, self.max_scan_files)
            return f"{reason}; child-process writes are found by scanning instead"
        self._child_off = reason
        return f"{reason}; child-process writes are not detected"

    def _check_failed(self, roots: tuple[str, ...]) -> str | None:
        """The tracker said it cannot go on (inotify: the watch limit): fall back."""
        if self.tracker is None or self.tracker.failed is None:
            return None
        return self._fallback(self.tracker.failed, roots)

    def _broken(self, exc: Exception) -> str:
        reason = f"child write tracking failed: {exc!r}"
        if self.tracker is not None:
            self.tracker.close()
            self.tracker = None
        self._child_off = reason
        return reason

    def _arm(self, cell_roots: tuple[str, ...]) -> str | None:
        """The cell is about to spawn a child (called from the audit hook). A note, or None."""
        from ipylsp.ipython.fswatch import TrackerUnavailable

        roots = _outermost(cell_roots)
        tracker = self._ensure_tracker(roots)
        if tracker is None:
            return f"child-process writes are not detected: {self._child_off}"
        try:
            tracker.arm(roots)
            return None
        except TrackerUnavailable as exc:
            note = self._fallback(str(exc), roots)
        if self.tracker is not None:  # the scan, after inotify gave up
            try:
                self.tracker.arm(roots)
            except TrackerUnavailable as exc:
                note = self._fallback(str(exc), roots)
        return note

    def _child_touched(self, path: str) -> bool:
        return self.tracker is not None and self.tracker.touched(path)

    # -- internals -----------------------------------------------------------------------------

    def _stop(self, cell: CellRecorder) -> None:
        audit.remove_listener(cell)
        with cell.lock:  # waits for a hook call in progress on another thread
            cell.closed = True

    def _current_roots(self) -> tuple[str, ...]:
        try:
            given = list(self.roots())
        except Exception:
            given = []
        out: set[str] = set()
        for root in given:
            real = os.path.realpath(os.fspath(root))
            if os.path.isdir(real):
                out.add(real)
        return tuple(sorted(out))

    def _merge(self, cell: CellRecorder, child: ChildChanges | None) -> list[Write]:
        paths = set(cell.records)
        if child is not None:
            paths.update(child.paths)
        writes: list[Write] = []
        for path in sorted(paths):
            record = cell.records.get(path)
            if record is None:
                if child is None or not cell.admitted(path):
                    continue
                change = child.paths[path]
                kind: WriteKind = "child"
                before, known = None, change.created
                binary, origin = False, change.moved_from
            else:
                kind = "kernel"
                before, known = record.before, record.before_known
                binary, origin = record.binary, record.origin
                if origin is None and child is not None and path in child.paths:
                    origin = child.paths[path].moved_from
            state = read_file(path, self.max_text_bytes, want_text=False).state
            if state is FileState.MISSING:
                if (known and before is None) or binary:
                    continue  # created and removed in the cell (a temporary file), or binary
                deleted = True
            elif state in (FileState.TEXT, FileState.TOO_LARGE):
                deleted = False
            else:
                continue  # binary now, not a regular file, unreadable
            writes.append(
                Write(
                    path=Path(path),
                    kind=kind,
                    before=before,
                    before_known=known,
                    deleted=deleted,
                    destination_of=Path(origin) if origin and origin != path else None,
                )
            )
        return writes


def _cwd() -> list[str]:
    return [os.getcwd()]


def _outermost(roots: Iterable[str]) -> tuple[str, ...]:
    """Roots not inside another root (each directory is walked once)."""
    out: list[str] = []
    for root in sorted(roots, key=len):
        if not any(root == r or root.startswith(r.rstrip("/") + "/") for r in out):
            out.append(root)
    return tuple(sorted(out))
