"""What the editors ask the kernel: every cell's current problems, and a preflight.

The lab extension asks through a silent execute request (no history, no execution count, no
cell hooks) whose user expression calls `marks` or `preflight` here; the answer's MIME
bundle carries schema "ipylsp.marks/1" (`analysis.cells.marks`, docs/schema.md). Both are
answered by the kernel, which knows what ran, never by the Jupyter server's own service.

Nothing here starts a service or a session: before the first cell's check there is nothing
to mark. An answer never raises (a failure is said in the payload's `error`).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ipylsp.analysis.cells.marks import MIME_TYPE, SCHEMA, CellMark, marks_json
from ipylsp.analysis.report.selection import FormatOptions
from ipylsp.ipython.extension import CellChecks, current

if TYPE_CHECKING:
    from ipylsp.cells.session import CellSession

log = logging.getLogger(__name__)


class Marks:
    """An answer: its MIME bundle is what the user expression returns to the front end."""

    def __init__(self, payload: dict[str, Any]) -> None:
        self.payload = payload

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        cells = self.payload.get("cells", [])
        return {MIME_TYPE: self.payload, "text/plain": f"ipylsp marks: {len(cells)} cells"}


def _shell() -> Any:
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - the adapters run in IPython
        return None
    return get_ipython()


def _empty(why: str, token: str = "") -> Marks:
    """No marks: `why` says it ("not loaded": the kernel has no ipylsp to draw for)."""
    return Marks({"schema": SCHEMA, "token": token, "generation": 0, "complete": True,
                  "preflight": False, "cells": [], "state": why})


def _session() -> tuple[CellChecks, CellSession] | Marks:
    """The loaded extension and its cell session, or the empty answer saying why not."""
    shell = _shell()
    checks = None if shell is None else current(shell)
    if checks is None:
        return _empty("not loaded")
    session = checks.cells.started
    if session is None or not checks.settings.check_cells:
        return _empty("no cells checked")
    return checks, session


def _options(checks: CellChecks) -> FormatOptions:
    """The reports' severity filter (the service exists once a cell was checked)."""
    return FormatOptions.from_settings(checks.service.settings)


def marks(token: str = "", since: int = 0) -> Marks:
    """The cells whose marks changed after generation `since` of the state `token` (every
    cell when the token is another one's: a restarted kernel, a cleared session)."""
    found = _session()
    if isinstance(found, Marks):
        return found
    checks, session = found
    try:
        payload = session.marks_since(token, since, _options(checks))
        return Marks({**payload, "state": "ready"})
    except Exception as exc:  # never a traceback: the front end keeps what it drew
        log.exception("ipylsp: could not read the cells' marks")
        return Marks({**_empty("failed").payload, "error": str(exc)})


def preflight(cell_id: str, code: str) -> Marks:
    """The marks `code` would have if it ran now as the cell `cell_id` (in its place): the
    cell's problems, what it would introduce among them. Nothing is recorded as run."""
    found = _session()
    if isinstance(found, Marks):
        return found
    checks, session = found
    try:
        from ipylsp.analysis.cells.document import IDENTIFIED, make_cell

        report = session.preflight(code, cell_id=cell_id or None)
        entry = next((f for f in report.files if f.cell is not None and not f.elsewhere), None)
        cell = make_cell(f"{IDENTIFIED}{cell_id}" if cell_id else "", None, code)
        problems = () if entry is None else entry.current
        unknown = [u.server_id for f in report.files for u in f.unknown] + [
            u.server_id for u in report.unknown]
        payload = marks_json([CellMark(cell, problems, 0)], _options(checks),
                             token=session.marks_token, generation=0, complete=False,
                             preflight=True)
        return Marks({**payload, "state": "ready", "unknown": sorted(set(unknown))})
    except Exception as exc:
        log.exception("ipylsp: could not check the cell before running it")
        return Marks({**_empty("failed").payload, "preflight": True, "error": str(exc)})
