"""From the cell document's diagnostics back to cells, without what cells make noise of.

A diagnostic is moved to its cell's coordinates (`CellDocument.place`) and dropped when it is
in the header (the prelude is ours), or when it is noise for cells:

- a name the kernel's namespace holds is never undefined (`exec`, `%run`, `globals()[...]`,
  star imports, a cell that failed halfway all bind names no server can see), nor one used
  in a `try` body whose handler catches NameError (the cell handles it);
- a module the kernel holds is never unresolved, nor a member its module holds missing, and
  an import under a handler of its ImportError is the cell's business (`imports`);
- import order (I001), imports not at the top (E402: every cell after the first), useless
  semicolons (E703: `plt.plot();` hides the value), redefinitions across cells (F811, pyright's
  obscured declarations), top-level `await` (IPython runs it);
- an unused import in the newest cell (F401: the next cell may use it);
- an unused expression on a cell's last statement (its value is the cell's output).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from ipylsp.analysis.cells import imports
from ipylsp.analysis.cells.document import Cell, CellDocument
from ipylsp.model.diagnostics import Diagnostic, Position, Range

UNDEFINED_NAME = frozenset({
    "unresolved-reference", "possibly-unresolved-reference",  # ty
    "F821", "F405",  # ruff (F405: maybe from a star import)
    "reportUndefinedVariable", "reportPossiblyUnbound", "reportUnboundVariable",  # pyright
})
NEVER_IN_CELLS = frozenset({"I001", "E402", "E703", "F811", "reportRedeclaration", "PIE790"})
UNUSED_IMPORT = frozenset({"F401", "reportUnusedImport"})
UNUSED_EXPRESSION = frozenset({"B018", "reportUnusedExpression", "reportUnusedCallResult"})
_TOP_LEVEL_ASYNC = re.compile(
    r"(?i)\b(await|async|asynchronous)\b.*\b(outside|only within|within an async)\b"
)
"""`await`, `async with`, `async for` and async comprehensions outside a function: IPython
runs them (autoawait). ty, ruff (F704, PLE1142) and pyright each say so in their words."""
_NAME = re.compile(r"[A-Za-z_][\w.]*")


@dataclass(frozen=True, slots=True)
class Kernel:
    """What the kernel knows: names bound (namespace and builtins), modules imported, and
    whether a dotted name is a module or a module's member it holds (`imports.Holds`)."""

    names: frozenset[str] = frozenset()
    modules: frozenset[str] = frozenset()
    holds: imports.Holds = imports.holds_nothing

    def has(self, dotted: str) -> bool:
        """A module imported, or a module's member the kernel holds."""
        return dotted in self.modules or self.holds(dotted)


def by_cell(
    diagnostics: Iterable[Diagnostic],
    document: CellDocument,
    kernel: Kernel,
    newest: str | None,
) -> dict[str, tuple[Cell, list[Diagnostic]]]:
    """The diagnostics that are not noise, per cell key, in cell coordinates."""
    lines = document.text.split("\n")
    out: dict[str, tuple[Cell, list[Diagnostic]]] = {}
    for d in diagnostics:
        start = d.range.start
        place = document.place(start.line)
        if place is None:
            continue
        if _quiet(d, _text_at(lines, d.range), place.cell, place.line, kernel, newest):
            continue
        end = document.place(d.range.end.line)
        same = end is not None and end.cell.key == place.cell.key
        moved = _moved(d, start.line - place.line, place.offset,
                       end.offset if end is not None and same else None)
        out.setdefault(place.cell.key, (place.cell, []))[1].append(moved)
    return out


def _quiet(
    d: Diagnostic, text: str, cell: Cell, line: int, kernel: Kernel, newest: str | None
) -> bool:
    code = d.code or ""
    if code in NEVER_IN_CELLS:
        return True
    if code in UNDEFINED_NAME:
        name = _NAME.match(text)
        return (name is None or name.group(0).split(".")[0] in kernel.names
                or cell.guards(line))
    if imports.disproved(d, text, cell.neutral.text, line, kernel):
        return True
    if code in UNUSED_IMPORT:
        return cell.key == newest
    if code in UNUSED_EXPRESSION:
        return cell.last_statement is not None and line >= cell.last_statement
    return _TOP_LEVEL_ASYNC.search(d.message) is not None


def _text_at(lines: Sequence[str], where: Range) -> str:
    """The document text a diagnostic points at (its first line's part)."""
    if where.start.line >= len(lines):
        return ""
    line = lines[where.start.line]
    end = where.end.column if where.end.line == where.start.line else len(line)
    return line[where.start.column : max(end, where.start.column + 1)].strip()


def _moved(
    d: Diagnostic, first_line: int, offset: int, end_offset: int | None
) -> Diagnostic:
    """`d` in its cell's lines (each end with its own line's column offset); an end in
    another cell (`end_offset` None) is clamped to the start."""
    start = Position(d.range.start.line - first_line, max(0, d.range.start.column + offset))
    end_line = d.range.end.line - first_line
    if end_offset is None or end_line < start.line:
        end = Position(start.line, start.column)
    else:
        column = max(0, d.range.end.column + end_offset)
        end = Position(end_line, max(start.column, column) if end_line == start.line else column)
    return replace(d, range=Range(start, end))
