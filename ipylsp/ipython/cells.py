"""Checking the code of each cell that runs (`IPyLSP.check_cells`): the IPython side.

`ran_cell` reads what IPython says about the cell that just ran (its source, execution count
and the front end's cell id); `CellHook` hands it to the kernel's `CellSession` (its own, one
per kernel, over the service) with the kernel's view (`namespace.kernel_view`) and the files
the cell wrote: one service call, one trip to the servers, one budget. The first checks do
not wait for servers to start: while a server is still starting (and the cell wrote nothing)
the check is cut at once, and the server catches up at the next cell, whose check then
includes this one's problems (under this cell's `cell [n]`): nothing is lost, and no display
is rewritten after the cell ended.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ipylsp.model.diagnostics import Report

if TYPE_CHECKING:
    from ipylsp.analysis.cells.ran import Ran
    from ipylsp.cells.session import CellSession
    from ipylsp.model.checks import FileCheck
    from ipylsp.service import Service

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
    """The shell's cell session, made over the service at the first check and held until
    `close`: seeded with the cells run before `%load_ext`, fed each cell with the live
    namespace."""

    def __init__(self, shell: Any, service: Callable[[], Service]) -> None:
        self._shell = shell
        self._service = service
        self._session: CellSession | None = None
        self.ran: Ran | None = None
        """What the cell that just ran evaluated (`monitor.CellMonitor`), for its check."""

    @property
    def session(self) -> CellSession:
        if self._session is None:
            from ipylsp.cells.session import CellSession
            from ipylsp.ipython.namespace import kernel_view
            from ipylsp.ipython.reading import kernel_reader

            session = CellSession.over(self._service())
            session.attach(kernel_reader(self._shell), lambda: kernel_view(self._shell.user_ns))
            session.seed(self._earlier_cells())
            self._session = session
        return self._session

    def check(
        self,
        cell: RanCell,
        progress: Callable[[str], None] | None = None,
        files: Sequence[FileCheck] = (),
    ) -> Report:
        """The cell's code and its writes (`files`), in one check under one budget; while the
        cells' servers are still starting (and the cell wrote nothing), cut at `COLD_BUDGET`
        (decided on the service's loop)."""
        return self.session.run(
            cell.source, count=cell.count, cell_id=cell.cell_id, files=files,
            progress=progress, cold=COLD_BUDGET, evaluated=self.ran,
        )

    @property
    def started(self) -> CellSession | None:
        """The session once a cell was checked (None before: nothing starts it here)."""
        return self._session

    def close(self) -> None:
        """The session closed (its own directory removed) and forgotten (`%unload_ext`)."""
        session, self._session = self._session, None
        if session is not None:
            session.close()

    def _earlier_cells(self) -> list[tuple[int, str]]:
        """(count, source) of the cells run before this one, from IPython's history."""
        history = getattr(getattr(self._shell, "history_manager", None), "input_hist_raw", None)
        if not isinstance(history, list):
            return []
        return [(n, text) for n, text in enumerate(history[:-1]) if n and text.strip()]
