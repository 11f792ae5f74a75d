"""The marks: every cell's current problems, as the editors draw them under the code.

A report says what a cell introduced; an editor shows what is wrong in each cell now (an
unchanged re-run keeps its marks). `CellMarks` keeps, per cell, the problems the last check
found in it (in the cell's own lines and columns, noise left out as in the reports) and the
generation of the check that last changed them, so a front end asks only for what changed
since it last asked. `marks_json` is what it receives: schema "ipylsp.marks/1" (docs/schema.md).

Pure: no kernel, no server, no front end; the service feeds it, the IPython adapter answers
the front end with it.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from dataclasses import dataclass

from ipylsp.analysis.cells.attribution import Kernel, by_cell
from ipylsp.analysis.cells.document import Cell, CellDocument
from ipylsp.analysis.cells.ran import Evidence
from ipylsp.analysis.report.merge import merge
from ipylsp.analysis.report.schema import rows_json
from ipylsp.analysis.report.selection import FormatOptions
from ipylsp.model.diagnostics import Diagnostic

SCHEMA = "ipylsp.marks/1"
MIME_TYPE = "application/vnd.ipylsp.marks+json"


@dataclass(frozen=True, slots=True)
class CellMark:
    """A cell's current problems (cell coordinates) and the generation that set them."""

    cell: Cell
    diagnostics: tuple[Diagnostic, ...]
    generation: int


class CellMarks:
    """Every checked cell's current problems. A cell that no longer is in the document (it
    did not parse, or the history's cap dropped it) keeps its last marks: nothing re-checked
    it. Not thread-safe: the cell session holds its lock around every call."""

    def __init__(self, cap: int = 400) -> None:
        self.token = secrets.token_hex(8)
        """Tells this state from a restarted kernel's or a cleared session's."""
        self.generation = 0
        self._cap = cap
        self._cells: dict[str, CellMark] = {}

    def update(
        self,
        document: CellDocument,
        current: Iterable[Diagnostic],
        kernel: Kernel,
        newest: Cell,
        *,
        complete: bool = True,
        evidence: Evidence | None = None,
    ) -> None:
        """After a check of `document`: `current` is everything the servers said about it.
        Not `complete` (a server did not answer in time): only `newest` is updated, the other
        cells keep the marks of the last complete answer."""
        self.generation += 1
        found = by_cell(current, document, kernel, newest.key)
        cells = document.cells if complete else [c for c in document.cells if c.key == newest.key]
        for cell in cells:
            diagnostics = tuple(found.get(cell.key, (cell, []))[1])
            if evidence is not None:  # what the cell's run disproved: warnings, as reported
                diagnostics = evidence.judged(cell, diagnostics)
            old = self._cells.get(cell.key)
            if (old is None or old.diagnostics != diagnostics or old.cell.source != cell.source
                    or old.cell.count != cell.count):
                self._cells[cell.key] = CellMark(cell, diagnostics, self.generation)
        if len(self._cells) > self._cap:
            shown = {c.key for c in document.cells}
            gone = sorted((m.generation, k) for k, m in self._cells.items() if k not in shown)
            for _, key in gone[: len(self._cells) - self._cap]:
                del self._cells[key]

    def since(self, generation: int) -> list[CellMark]:
        """The cells whose marks changed after `generation` (every cell for 0)."""
        return [m for m in self._cells.values() if m.generation > generation]


def marks_json(
    marks: Iterable[CellMark],
    options: FormatOptions,
    *,
    token: str,
    generation: int,
    complete: bool,
    preflight: bool = False,
) -> dict[str, object]:
    """Schema "ipylsp.marks/1": per cell its id (or None), execution count, the source its
    marks are for, and its problems passing the severity filter, one problem per row as in
    the reports (`same_as`). `complete`: every cell is listed (a front end forgets others)."""
    return {
        "schema": SCHEMA,
        "token": token,
        "generation": generation,
        "complete": complete,
        "preflight": preflight,
        "cells": [
            {
                "cell_id": m.cell.cell_id,
                "count": m.cell.count,
                "source": m.cell.source,
                "diagnostics": rows_json(
                    merge(d for d in m.diagnostics if options.shows(d.severity))
                ),
            }
            for m in marks
        ],
    }
