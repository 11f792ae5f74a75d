"""The window: which cells a check's document holds, and what stands in for the others.

A server re-checks the whole document at every change, so a document of every cell that ran
makes a cell's check cost grow with the history. The document holds instead:

- the newest cell;
- the cells its code can break, however old (`affected`): on a re-run in place, the later
  cells that read a name whose binding changed (and, up to `TRANSITIVE`, those reading what
  they bind in turn); and any cell whose functions read a name it (re)binds;
- the last document's cells, while they are the end of the history and fit in
  `WINDOW_LINES` (new cells are appended to them, so a recent cell re-run, or a file write
  that breaks a recent cell, is compared with the text the servers last checked: one pass).

What the other cells bound, where the document's cells read it, is declared in the header
(`declarations`): a function or class by its own statement (its signature, and its body for
what a checker infers from it), found in the last cell that defined it; anything else by the
kernel's stub of its live value (`cells.session.KernelView.stubs`). The header is never
reported (`CellDocument.place`).

When the last document cannot grow into the new one (a re-run of a cell outside it, cells
brought back, the window full), the document is cut to the cells that must be checked, and
the text before the cell is the same cells over the history before it: the servers are asked
for its diagnostics first (a second pass), so the cells brought back report only what the
newest cell changed, never what moving the window changed. A new cell after a cut has
nothing before it: an empty text, nothing to ask.

Pure: no server, no kernel.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace

from ipylsp.analysis.cells import bindings
from ipylsp.analysis.cells.bindings import Index
from ipylsp.analysis.cells.document import IDENTIFIED, Cell, CellDocument, CellHistory

WINDOW_LINES = 30
"""Lines of cells the document may grow to by appending new cells (then it is cut). Within it a
recent cell re-run, or a file write that breaks a recent cell, is one pass; but every line is
re-checked at every cell, which costs little up to this and much more beyond it
(benchmarks/README.md, bench_cells.py)."""

TRANSITIVE = 40
"""At most this many cells brought back only because they read what an affected cell binds
(the direct readers of a changed name always are)."""

Stubs = Callable[[frozenset[str]], str]
"""Names -> header lines declaring them with the kernel's live types."""

EMPTY = CellDocument("", (), (), 0)
"""The text before a new cell after a cut: no cell, no header, nothing to ask a server."""


def documents(
    previous: CellHistory,
    after: CellHistory,
    newest: Cell,
    last: CellDocument | None,
    names: frozenset[str] = frozenset(),
    stubs: Stubs | None = None,
) -> tuple[CellDocument, CellDocument]:
    """(the document to check, the text before `newest` ran): `previous` is the history
    before it, `after` with it, `last` the document last checked, `names` the kernel's and
    `stubs` its declarations of them."""
    earlier = bindings.index(_with_key(previous, newest).cells)
    later = bindings.index(after.cells)
    at = earlier.position(newest.key)
    old = earlier.cell(at) if at is not None else None
    needed = {newest.key, *(c.key for c in affected(later, newest, old))}
    if last is not None and _grows(earlier, later, newest, old, last, needed):
        cells = _in_order(later, {c.key for c in last.cells} | {newest.key})
        return _document(later, cells, names, stubs), last
    before = _in_order(earlier, needed)
    return (
        _document(later, _in_order(later, needed), names, stubs),
        _document(earlier, before, names, stubs) if before else EMPTY,
    )


def _with_key(previous: CellHistory, newest: Cell) -> CellHistory:
    """`previous` with the cell `newest` replaces known by its key: a cell seeded by its
    source (run before `%load_ext`) run again with its id takes the id (`with_cell`)."""
    if (not newest.key.startswith(IDENTIFIED)
            or bindings.index(previous.cells).position(newest.key) is not None):
        return previous
    return CellHistory(tuple(
        replace(c, key=newest.key)
        if not c.key.startswith(IDENTIFIED) and c.source == newest.source else c
        for c in previous.cells
    ), previous.cap)


def _in_order(history: Index, keys: Iterable[str]) -> tuple[Cell, ...]:
    """The cells of `history` with these keys, in its order."""
    found = (history.position(k) for k in keys)
    return tuple(history.cell(at) for at in sorted(at for at in found if at is not None))


def _grows(
    previous: Index, after: Index, newest: Cell, old: Cell | None, last: CellDocument,
    needed: set[str],
) -> bool:
    """The last document is the text before: it holds every cell to check (the newest's
    earlier version too), and is either the same cells again (a re-run in place) or the end of
    the history, still within `WINDOW_LINES` with the newest cell appended."""
    shown = {c.key for c in last.cells}
    if not needed - {newest.key} <= shown or (old is not None and old.key not in shown):
        return False
    at = after.position(newest.key)
    if old is not None and at is not None and at < after.end - 1:
        return True  # in place: the same cells, nothing grows
    present = sorted(p for p in (previous.position(k) for k in shown) if p is not None)
    if present != list(range(previous.end - len(present), previous.end)):
        return False  # cells brought back earlier, or history since: not one window
    return sum(len(c.neutral.column_offsets) for c in _in_order(after, shown | {newest.key})
               ) <= WINDOW_LINES


def _document(
    history: Index, cells: tuple[Cell, ...], names: frozenset[str], stubs: Stubs | None
) -> CellDocument:
    return CellHistory(cells, cap=0).document(declarations(history, cells, names, stubs))


# -- what the cells left out bound ----------------------------------------------------------------


ANY_STUB = "{}: __ipylsp_Any__ = __ipylsp_any__()"
"""A name declared without a type: the kernel's stub of a value it cannot name the type of
(`ipython.namespace`), and a name past `DECLARED`."""

DECLARED = 200
"""At most this many statements declare what the cells left out bound; names past it are
declared `Any` (a long chain of `x = f(x)` with no kernel to say what `x` holds)."""


def declarations(
    history: Index,
    cells: tuple[Cell, ...],
    names: frozenset[str] = frozenset(),
    stubs: Stubs | None = None,
) -> str:
    """The header lines declaring what `cells` read that the cells of `history` left out of
    them bound (and what those declarations read in turn):

    - a function or class by its statement in the last cell that bound it;
    - with a kernel (`stubs`): another name by the kernel's stub of its live value, or by
      its binding statement when the stub cannot name its type (an instance of a class a
      cell defined); a name the kernel does not hold is not declared (the cell that bound it
      failed: it is undefined);
    - without a kernel (a check outside IPython): by its binding statement.
    """
    shown = {c.key for c in cells}
    bound: set[str] = set()
    todo: list[tuple[str, tuple[int, int]]] = []
    for cell in cells:
        bound |= cell.binds
    for cell in cells:
        at = history.position(cell.key)
        todo.extend((n, (history.end if at is None else at, 0)) for n in cell.loads
                    if n not in bound and not n.startswith("__ipylsp"))
    seen = set(todo)
    found: dict[tuple[int, int], str] = {}
    untyped: set[str] = set()
    kernel: dict[str, tuple[int, int] | None] = {}

    def statement(where: tuple[int, int]) -> bindings.Statement:
        return bindings.facts(history.cell(where[0]).neutral.text).statements[where[1]]

    def declare(where: tuple[int, int], name: str) -> None:
        if where in found:
            return
        if len(found) >= DECLARED:
            untyped.add(name)
            return
        text = found[where] = statement(where).text
        now, later = bindings.reads(text)
        for free in sorted(now | later):
            key = (free, where)
            if free not in bound and key not in seen and not free.startswith("__ipylsp"):
                seen.add(key)
                todo.append(key)

    while True:
        while todo:
            name, before = todo.pop()
            where = _binding(history, shown, name, before)
            if where is not None and (where in found or statement(where).definition):
                declare(where, name)
            elif name not in kernel:
                kernel[name] = where
        if stubs is None:
            moved = [n for n, where in kernel.items() if where is not None]
        else:
            held = frozenset(n for n in kernel if n in names)
            lines = set(stubs(held).splitlines()) if held else set()
            moved = [n for n in held if kernel[n] is not None and ANY_STUB.format(n) in lines]
        if not moved:
            break
        for name in moved:
            where = kernel.pop(name)
            if where is not None:
                declare(where, name)
    held = frozenset(n for n in kernel if n in names and n not in untyped)
    prelude = stubs(held) if stubs is not None and held else ""
    if prelude and not prelude.endswith("\n"):
        prelude += "\n"
    return (prelude + "".join(ANY_STUB.format(n) + "\n" for n in sorted(untyped))
            + "".join(found[k] + "\n" for k in sorted(found)))


def _binding(
    history: Index, shown: set[str], name: str, before: tuple[int, int]
) -> tuple[int, int] | None:
    """(cell, statement) of the statement that last bound `name` before the statement
    `before`, in a cell left out of the document; None when none did."""
    cell_at, statement_at = before
    if statement_at and history.base <= cell_at < history.end:  # the same cell's first
        statements = bindings.facts(history.cell(cell_at).neutral.text).statements
        for at in range(min(statement_at, len(statements)) - 1, -1, -1):
            if name in statements[at].binds:
                return cell_at, at
    for position in history.binders(name, cell_at):
        cell = history.cell(position)
        if cell.key in shown:
            continue
        statements = bindings.facts(cell.neutral.text).statements
        for at in range(len(statements) - 1, -1, -1):
            if name in statements[at].binds:
                return position, at
        return None
    return None


# -- the cells a change can break ------------------------------------------------------------------


def affected(history: Index, newest: Cell, old: Cell | None) -> list[Cell]:
    """The cells other than `newest` whose check its code can change: `history` is the
    history with it (in place of `old`, its earlier version, when it is a re-run)."""
    position = history.position(newest.key)
    if not newest.parses or position is None:
        return []
    in_place = old is not None and position < history.end - 1
    changed = _changed(old, newest) if in_place and old is not None else set(newest.binds)
    if old is not None:
        changed |= old.binds - newest.binds
    if not changed:
        return []
    out: list[Cell] = []
    live = set(changed)
    hops = 0
    for cell in history.cells[position - history.base + 1 :]:
        now, later = bindings.cell_reads(cell)
        direct = bool((now | later) & changed)
        if direct or (now & live and hops < TRANSITIVE):
            out.append(cell)
            hops += not direct
            live |= cell.binds
        else:
            live -= cell.binds
    readers = {at for name in changed for at in history.readers(name, position)}
    out.extend(history.cell(at) for at in sorted(readers))
    return out


def _changed(old: Cell, new: Cell) -> set[str]:
    """The names whose binding a re-run changed: bound by statements that differ, or that
    read a name changed earlier in the cell."""
    before, now = _bindings(old), _bindings(new)
    changed = {n for n in before.keys() | now.keys() if before.get(n) != now.get(n)}
    for statement in bindings.facts(new.neutral.text).statements:
        if statement.loads & changed:
            changed |= statement.binds
    return changed


def _bindings(cell: Cell) -> dict[str, tuple[str, ...]]:
    out: dict[str, tuple[str, ...]] = {}
    for statement in bindings.facts(cell.neutral.text).statements:
        for name in statement.binds:
            out[name] = (*out.get(name, ()), statement.text)
    return out
