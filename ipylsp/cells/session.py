"""The notebook's executed cells, checked as one virtual document beside the files.

Not a second checker: a `CellSession` keeps the history (`analysis.cells.document`), builds
the document (the cells `analysis.cells.window` chooses, after a header declaring what the
others bound: its cost does not grow with the history), and asks `Service.check_files`
for it as a *virtual* `FileCheck` (in memory only: never read from or saved to disk, never
pending, never listed): text goes to the service, a `Report` comes back, and what the kernel
knows (`KernelView`, its `Reader`) stays on this side. The delta is the checker's own: the
text before the cell (the last document, or the same cells as they were) against the
document after it. What comes back is moved to cells (`analysis.cells.attribution`), and
every cell with a problem the cell introduced gets its own entry, `cell [n]`: the newest
first, then earlier cells it broke.

Which servers: every server that serves Python files, on the concatenated document. Ruff, ty
and the pyright family also accept LSP 3.17 notebook documents, but those carry cells as the
user wrote them: a server then sees neither the kernel's namespace (the prelude) nor the
magics neutralized the way the kernel ran them, so a notebook document would need the same
rewriting and a second delta path; one document keeps one path (docs/cells.md: which
document each Python server reads).
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
import warnings
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ipylsp.analysis.cells import window
from ipylsp.analysis.cells.attribution import UNUSED_IMPORT, Kernel, by_cell
from ipylsp.analysis.cells.document import (
    IDENTIFIED,
    Cell,
    CellDocument,
    CellHistory,
    make_cell,
)
from ipylsp.analysis.cells.marks import CellMarks, marks_json
from ipylsp.analysis.cells.neutralize import Reader, plain_reading
from ipylsp.analysis.cells.ran import Evidence, Ran
from ipylsp.analysis.report.selection import FormatOptions
from ipylsp.model.checks import FileCheck
from ipylsp.model.diagnostics import FileReport, Report, Unknown, UnknownReason
from ipylsp.model.settings import WORKSPACE_MARKERS
from ipylsp.private import NotPrivate

if TYPE_CHECKING:
    from ipylsp.service import Service


class Checks(Protocol):
    """The one method of the facade a session needs (`Service.check_files`)."""

    def check_files(
        self,
        files: Sequence[FileCheck],
        *,
        timeout: float | None = None,
        progress: Callable[[str], None] | None = None,
        cold: float | None = None,
    ) -> Report: ...


StubWriter = Callable[[frozenset[str]], str]
"""Names the cells read but never bind -> prelude lines declaring them (the kernel's types)."""


@dataclass(frozen=True, slots=True)
class KernelView:
    """What the kernel knows and no server does; the IPython adapter makes one per check."""

    kernel: Kernel = field(default_factory=Kernel)
    stubs: StubWriter | None = None


class CellSession:
    """One kernel's executed cells and their checks, held by the surface that has them (the
    IPython extension: one per kernel; the server extension and an agent's `Toolbox`: their
    own; `process_session` for the rest). Thread-safe: one check at a time."""

    def __init__(
        self,
        service: Checks,
        path: Path | None = None,
        cap: int = 200,
        markers: Iterable[str] = WORKSPACE_MARKERS,
        private_parent: Path | None = None,
    ) -> None:
        """`service`: who checks the document (`check_files`, nothing else); `path`: where
        the document says it lives (else `cells_place.default_path`, decided at the first
        check); `private_parent`: where a directory of its own is made outside a workspace
        (ipylsp's data dir). `over` makes one as the surfaces do."""
        self._service = service
        self._path = path
        self._markers = tuple(markers)
        self._private_parent = private_parent
        self._held: weakref.finalize[[], CellSession] | None = None
        """Releases this session's hold on the directory its document shares with the other
        kernels in its working directory outside a workspace (`cells_place.Hold`): at
        `close`, when the session is collected, or at the interpreter's exit, whichever comes
        first."""
        self._path_lock = threading.Lock()
        self.history = CellHistory(cap=cap)
        self._last: CellDocument | None = None
        """The document as last run: the next check's before text (its baseline known) and
        where what it fixed is located."""
        self.evidence = Evidence()
        """What the cells' runs disproved, while it still holds for their cells."""
        self._lock = threading.Lock()
        self._view: Callable[[], KernelView] = KernelView
        self.read: Reader = plain_reading
        """How the kernel reads a cell (IPython's transforms; `attach`); plain Python where
        no IPython reads it."""
        self._marks = CellMarks()
        """Every cell's current problems, for the editors (read under the lock)."""

    @classmethod
    def over(cls, service: Service) -> CellSession:
        """A session checked by `service`, as the surfaces make theirs: its document where
        the service's `cells_dir` says (`cells_place.document_in`; else decided at the first
        check), its history's cap, the workspace markers and the data dir from the service's
        settings."""
        from ipylsp.service import cells_place, data_dir

        settings = service.settings
        where = service.cells_dir
        return cls(service, None if where is None else cells_place.document_in(where),
                   cap=settings.cell_history, markers=settings.workspace_markers,
                   private_parent=data_dir(settings))

    @property
    def service(self) -> Checks:
        """Who checks the document."""
        return self._service

    def attach(self, read: Reader, view: Callable[[], KernelView] | None = None) -> None:
        """The kernel's side, given by the surface that has it: how a cell is read (IPython's
        transforms) and, with a kernel, what it holds (its namespace, read on the caller's
        thread at each check). Without `view`, nothing is bound (an agent's preflight)."""
        with self._lock:
            self.read = read
            if view is not None:
                self._view = view

    def marks_since(self, token: str, since: int, options: FormatOptions) -> dict[str, object]:
        """The editors' marks (schema ipylsp.marks/1) of the cells that changed after
        generation `since` of the state `token`: every cell when the token is another one's
        (a restarted kernel, a cleared session) or `since` is 0."""
        with self._lock:
            state = self._marks
            complete = token != state.token or since <= 0
            return marks_json(state.since(0 if complete else since), options,
                              token=state.token, generation=state.generation,
                              complete=complete)

    @property
    def marks_token(self) -> str:
        """The marks state's token: what a front end sends back to ask for changes."""
        return self._marks.token

    @property
    def cap(self) -> int:
        return self.history.cap

    @cap.setter
    def cap(self, value: int) -> None:
        with self._lock:
            self.history = CellHistory(self.history.cells, value)

    def seed(self, cells: list[tuple[int, str]]) -> None:
        """Cells that ran before the session existed (`%load_ext` after some work): kept as
        history, never reported."""
        with self._lock, _quietly():
            history = self.history
            for count, source in cells:
                history = history.with_cell(make_cell(_key(None, source), count, source,
                                                            self.read))
            self.history = history.kept()

    def run(
        self,
        source: str,
        *,
        count: int | None,
        cell_id: str | None = None,
        files: Sequence[FileCheck] = (),
        timeout: float | None = None,
        progress: Callable[[str], None] | None = None,
        cold: float | None = None,
        evaluated: Ran | None = None,
    ) -> Report:
        """`source` has just run as cell `count`: what it introduced, in cells, then what its
        writes (`files`) introduced, checked together: one trip to the servers under one
        budget. It stays in the history (unless it does not parse). `cold`: what to wait
        while the cells' servers start (`Service.check_files`). `evaluated`: what the run
        evaluated; the errors it disproved are warnings (`analysis.cells.ran`)."""
        with self._lock, _quietly():
            cell = make_cell(_key(cell_id, source), count, source, self.read)
            after = self.history.with_cell(cell)
            before = (self.evidence, self.history.cells)
            self.evidence = self.evidence.after(self.history.cells, cell, evaluated)
            report = self._check(after, cell, timeout, progress, ran=True, files=files,
                                 cold=cold)
            report = self.evidence.apply(report, after.cells, before)
            self.history = after.kept()
            return report

    def preflight(
        self, code: str, *, cell_id: str | None = None, timeout: float | None = None
    ) -> Report:
        """What `code` would introduce if it ran now: as the cell `cell_id` (in its place,
        replacing what that cell last ran), else as a new cell. Nothing changes: the
        history, the last document and the servers' known baseline stay as they were."""
        with self._lock, _quietly():
            cell = make_cell(_key(cell_id, code), None, code, self.read)
            after = self.history.with_cell(cell)
            return self._check(after, cell, timeout, None, ran=False)

    @property
    def path(self) -> Path:
        """Where the document says it lives (`cells_place.default_path`); raises `OSError`
        (`NotPrivate` when it is not ours) when no directory of its own can be made."""
        with self._path_lock:
            if self._path is None:
                from ipylsp.service import cells_place

                self._path, held = cells_place.default_path(self._markers,
                                                            self._private_parent)
                if held is not None:
                    self._held = weakref.finalize(self, held.release)
            return self._path

    @property
    def document(self) -> CellDocument | None:
        """The document the servers last checked for a cell that ran (`analysis.cells.window`
        chose its cells); None before the first."""
        return self._last

    def close(self) -> None:
        """Its hold on the directory shared outside a workspace (`cells_place.default_path`)
        is released: the directory stays for the other kernels there, until the sweep finds
        it unused."""
        if self._held is not None:
            self._held()
            self._held = None

    def clear(self) -> None:
        with self._lock:
            self.history = CellHistory(cap=self.history.cap)
            self._last = None  # the servers' known baseline is simply not reused
            self.evidence = Evidence()
            self._marks = CellMarks()

    def _mark(
        self, checked: Report, path: Path, document: CellDocument, kernel: Kernel, newest: Cell
    ) -> None:
        """A cell ran: the marks follow the document's current problems (only the newest
        cell's while a server has not answered yet)."""
        doc = next((f for f in checked.files if f.path == path and f.cell is None), None)
        if doc is not None:
            timed_out = any(u.reason is UnknownReason.TIMED_OUT for u in doc.unknown)
            self._marks.update(document, doc.current, kernel, newest, complete=not timed_out,
                              evidence=self.evidence)

    def _check(
        self,
        after: CellHistory,
        cell: Cell,
        timeout: float | None,
        progress: Callable[[str], None] | None,
        *,
        ran: bool,
        files: Sequence[FileCheck] = (),
        cold: float | None = None,
    ) -> Report:
        """`ran`: a cell that ran (kept as the last document); else a preflight, whose entry
        is shown even when it has nothing to say (it answers for the code)."""
        view = self._view()
        document, before = window.documents(
            self.history, after, cell, self._last, view.kernel.names, view.stubs
        )
        try:
            path = self.path
        except OSError as exc:  # NotPrivate, or a data dir that cannot be written
            reason = UnknownReason.REFUSED if isinstance(exc, NotPrivate) else UnknownReason.FAILED
            refused = Unknown("cells", reason, str(exc),
                              "set IPyLSP.data_dir to a directory only you can write to")
            if not files:
                return Report(unknown=(refused,))
            written = self._service.check_files(files, timeout=timeout, progress=progress)
            return replace(written, unknown=(refused, *written.unknown))
        checked = self._service.check_files(
            [FileCheck(path, before=before.text, content=document.text, virtual=True,
                       preflight=not ran), *files],
            timeout=timeout, progress=progress, cold=cold,
        )
        if ran:
            self._last = document
            self._mark(checked, path, document, view.kernel, cell)
        return _in_cells(checked, path, document, before, view.kernel, cell,
                         keep_clean=not ran)


def _key(cell_id: str | None, source: str) -> str:
    """The front end's cell id; else an earlier cell with the same source is the same cell
    (nbclient and the console send no id); else a new key."""
    if cell_id:
        return f"{IDENTIFIED}{cell_id}"
    digest = hashlib.blake2b(source.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()
    return f"src:{digest}"


_process_lock = threading.Lock()
_process: CellSession | None = None


def process_session() -> CellSession:
    """The session over the process-wide service (`get_service`), for the surfaces that hold
    none of their own and answer for this process: the Python API's `check_cell`, an agent's
    `lsp_check_cell` from a `Toolbox` made without a service. One at a time: a new
    process-wide service (`reset_service`) gets a new one, the old one closed."""
    global _process
    from ipylsp.service import get_service

    service = get_service()
    with _process_lock:
        old = current = _process
        if current is None or current.service is not service:
            current = _process = CellSession.over(service)
    if old is not None and old is not current:
        old.close()
    return current


def _in_cells(
    checked: Report,
    path: Path,
    after: CellDocument,
    before: CellDocument,
    kernel: Kernel,
    newest: Cell,
    keep_clean: bool,
) -> Report:
    """The virtual document's report as one entry per cell (newest first), then the files."""
    doc = next((f for f in checked.files if f.path == path and f.cell is None), None)
    if doc is None:
        return checked
    introduced = by_cell(doc.diagnostics, after, kernel, newest.key)
    fixed = by_cell(  # an unused import was never shown (quiet while newest): never "fixed"
        (d for d in doc.fixed if d.code not in UNUSED_IMPORT), before, kernel, newest.key
    )
    shown = {newest.key, *introduced, *fixed}
    current = by_cell(  # only for the cells shown: the document has every cell's problems
        (d for d in doc.current if (p := after.place(d.range.start.line)) and p.cell.key in shown),
        after, kernel, newest.key,
    )
    cells = {c.key: c for c in after.cells}
    order = [newest.key] + [c.key for c in after.cells if c.key != newest.key and c.key in shown]
    files: list[FileReport] = []
    for key in order:
        cell = cells.get(key)
        if cell is None:
            continue
        mine = introduced.get(key, (cell, []))[1]
        gone = fixed.get(key, (cell, []))[1]
        unknown: tuple[Unknown, ...] = doc.unknown if key == newest.key else ()
        if not (mine or gone or unknown or (keep_clean and key == newest.key)):
            continue
        files.append(FileReport(
            path=doc.path, display_path=cell.label, diagnostics=tuple(mine),
            current=tuple(current.get(key, (cell, []))[1]), fixed=tuple(gone),
            unknown=unknown, servers=doc.servers, elsewhere=key != newest.key,
            cell=cell.count if cell.count is not None else 0,  # 0: code not run yet
            cell_id=cell.cell_id,
        ))
    others = tuple(f for f in checked.files if f is not doc)
    return replace(checked, files=(*files, *others))


@contextlib.contextmanager
def _quietly() -> Iterator[None]:
    """A check parses the cells again and again (read, windowed, judged): a warning their text
    raises there (`'\\d'` in a string: a SyntaxWarning on Python 3.12+) is the kernel's to show,
    once, when it compiles the cell, never ours under the user's cell. For the check's time,
    a warning of those kinds from another thread is not shown either."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        warnings.simplefilter("ignore", DeprecationWarning)  # the same warning before 3.12
        yield
