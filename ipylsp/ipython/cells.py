"""Checking the code of each cell that runs (`IPyLSP.check_cells`): the IPython side.

`ran_cell` reads what IPython says about the cell that just ran (its source, execution count
and the front end's cell id); `CellHook` hands it to the service's `CellSession` with the
kernel's view (`namespace.kernel_view`). The first checks do not wait for servers to start:
while a server is still starting the check is cut at once and says so in a note, and the
server catches up at the next cell, whose check then includes this one's problems (under
this cell's `cell [n]`): nothing is lost, and no display is rewritten after the cell ended.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ipylsp.model.diagnostics import Report, UnknownReason

if TYPE_CHECKING:
    from ipylsp.service.cells import CellSession
    from ipylsp.service.service import Service

COLD_BUDGET = 0.05
"""Seconds a cell's check waits while its servers are still starting: the syntax tier's and
any already running server's answers, nothing that waits for a start."""


@dataclass(frozen=True, slots=True)
class RanCell:
    source: str
    count: int | None
    cell_id: str | None


def ran_cell(result: Any) -> RanCell | None:
    """The cell IPython just ran, or None when there is nothing of the user's to check
    (silent executions, history-less ones such as front-end introspection, empty cells)."""
    info = getattr(result, "info", None)
    source = getattr(info, "raw_cell", None)
    if not isinstance(source, str) or not source.strip():
        return None
    if getattr(info, "silent", False) or not getattr(info, "store_history", True):
        return None
    count = getattr(result, "execution_count", None)
    cell_id = getattr(info, "cell_id", None)
    return RanCell(
        source,
        count if isinstance(count, int) else None,
        cell_id if isinstance(cell_id, str) and cell_id else None,
    )


class CellHook:
    """The shell's cell session: seeded with the cells run before `%load_ext`, fed each
    cell with the live namespace."""

    def __init__(self, shell: Any, service: Callable[[], Service]) -> None:
        self._shell = shell
        self._service = service
        self._session: CellSession | None = None

    @property
    def session(self) -> CellSession:
        if self._session is None:
            from ipylsp.ipython.namespace import kernel_view

            session = self._service().cells
            session.view = lambda: kernel_view(self._shell.user_ns)
            session.seed(self._earlier_cells())
            self._session = session
        return self._session

    def check(
        self,
        cell: RanCell,
        progress: Callable[[str], None] | None = None,
        *,
        left: float | None = None,
    ) -> Report:
        """`left`: what the cell's budget has left (its writes were checked first); less than
        a whole budget makes the check brief (it proves nothing about a server)."""
        session = self.session
        try:
            starting = self._service().starting(session.path)
        except OSError:  # no directory of its own: the check itself says so, with the fix
            starting = False
        brief = starting or left is not None
        timeout = COLD_BUDGET if starting else left
        if timeout is not None:
            timeout = max(timeout, COLD_BUDGET)
        report = session.run(
            cell.source, count=cell.count, cell_id=cell.cell_id, timeout=timeout,
            progress=None if starting else progress, brief=brief,
        )
        if not starting or not _starting(report):
            return report
        # Said nowhere: the next cell's check includes this one's problems (a line saying
        # so under every first cell would be noise in a notebook that has none).
        files = tuple(replace(f, unknown=()) if f.cell is not None else f for f in report.files)
        return replace(report, files=tuple(f for f in files if f.cell is None or f.diagnostics
                                           or f.fixed))

    def _earlier_cells(self) -> list[tuple[int, str]]:
        """(count, source) of the cells run before this one, from IPython's history."""
        history = getattr(getattr(self._shell, "history_manager", None), "input_hist_raw", None)
        if not isinstance(history, list):
            return []
        return [(n, text) for n, text in enumerate(history[:-1]) if n and text.strip()]


def _starting(report: Report) -> tuple[str, ...]:
    """Servers a cut cell check did not hear from (timed out while starting)."""
    return tuple(dict.fromkeys(
        u.server_id for f in report.files if f.cell is not None for u in f.unknown
        if u.reason is UnknownReason.TIMED_OUT
    ))


def combined(reports: Sequence[Report]) -> Report:
    """One report for the cell's display: every part's files, notes and unknown lines."""
    if len(reports) == 1:
        return reports[0]
    root = next((r.root for r in reports if r.root is not None), None)
    return Report(
        files=tuple(f for r in reports for f in r.files),
        root=root,
        notes=tuple(n for r in reports for n in r.notes),
        unknown=tuple(u for r in reports for u in r.unknown),
    )
