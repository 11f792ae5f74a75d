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
kernel's stub of its live value (`service.cells.KernelView.stubs`). The header is never
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

import ast
import functools
import symtable
import threading
from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from ipylsp.analysis.cells.document import IDENTIFIED, Cell, CellDocument, CellHistory

WINDOW_LINES = 30
"""Lines of cells the document may grow to by appending new cells (then it is cut). Measured
on 200 cells of history (bench_cells' session, alternated): basedpyright + ruff took 26.6 ms a
cell with no growth, 28.8 with 30 lines, 43.2 with 60; ty + ruff 2.4, 2.8 and 3.5."""

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
    previous = _with_key(previous, newest)
    old = next((c for c in previous.cells if c.key == newest.key), None)
    needed = {newest.key, *(c.key for c in affected(after.cells, newest, old))}
    if last is not None and _grows(previous, after, newest, old, last, needed):
        kept = {c.key for c in last.cells} | {newest.key}
        cells = tuple(c for c in after.cells if c.key in kept)
        return _document(after.cells, cells, names, stubs), last
    cells = tuple(c for c in after.cells if c.key in needed)
    before = tuple(c for c in previous.cells if c.key in needed)
    return (
        _document(after.cells, cells, names, stubs),
        _document(previous.cells, before, names, stubs) if before else EMPTY,
    )


def _with_key(previous: CellHistory, newest: Cell) -> CellHistory:
    """`previous` with the cell `newest` replaces known by its key: a cell seeded by its
    source (run before `%load_ext`) run again with its id takes the id (`with_cell`)."""
    if not newest.key.startswith(IDENTIFIED) or any(c.key == newest.key for c in previous.cells):
        return previous
    return CellHistory(tuple(
        replace(c, key=newest.key)
        if not c.key.startswith(IDENTIFIED) and c.source == newest.source else c
        for c in previous.cells
    ), previous.cap)


def _grows(
    previous: CellHistory,
    after: CellHistory,
    newest: Cell,
    old: Cell | None,
    last: CellDocument,
    needed: set[str],
) -> bool:
    """The last document is the text before: it holds every cell to check (the newest's
    earlier version too), and is either the same cells again (a re-run in place) or the end of
    the history, still within `WINDOW_LINES` with the newest cell appended."""
    shown = {c.key for c in last.cells}
    if not needed - {newest.key} <= shown or (old is not None and old.key not in shown):
        return False
    if old is not None and _position(after.cells, newest) < len(after.cells) - 1:
        return True  # in place: the same cells, nothing grows
    present = [c.key for c in previous.cells if c.key in shown]
    suffix = [c.key for c in previous.cells[len(previous.cells) - len(present):]]
    if present != suffix:
        return False  # cells brought back earlier, or history since: not one window
    return sum(len(c.neutral.column_offsets) for c in after.cells
               if c.key in shown or c.key == newest.key) <= WINDOW_LINES


def _document(
    history: Sequence[Cell], cells: tuple[Cell, ...], names: frozenset[str], stubs: Stubs | None
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
    history: Sequence[Cell],
    cells: Sequence[Cell],
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
    index = _index(history)
    position = index.position
    bound: set[str] = set()
    todo: list[tuple[str, tuple[int, int]]] = []
    for cell in cells:
        bound |= cell.binds
    for cell in cells:
        at = position.get(cell.key, len(history))
        todo.extend((n, (at, 0)) for n in cell.loads
                    if n not in bound and not n.startswith("__ipylsp"))
    seen = set(todo)
    found: dict[tuple[int, int], str] = {}
    untyped: set[str] = set()
    kernel: dict[str, tuple[int, int] | None] = {}

    def declare(where: tuple[int, int], name: str) -> None:
        if where in found:
            return
        if len(found) >= DECLARED:
            untyped.add(name)
            return
        statement = _facts(history[where[0]].neutral.text).statements[where[1]]
        found[where] = statement.text
        now, later = _reads(statement.text)
        for free in sorted(now | later):
            key = (free, where)
            if free not in bound and key not in seen and not free.startswith("__ipylsp"):
                seen.add(key)
                todo.append(key)

    while True:
        while todo:
            name, before = todo.pop()
            where = _binding(history, index, shown, name, before)
            if where is not None and (
                where in found or _facts(history[where[0]].neutral.text).statements[where[1]]
                .definition
            ):
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
    history: Sequence[Cell], index: _Index, shown: set[str], name: str, before: tuple[int, int]
) -> tuple[int, int] | None:
    """(cell, statement) of the statement that last bound `name` before the statement
    `before`, in a cell left out of the document; None when none did."""
    cell_at, statement_at = before
    if cell_at < len(history):  # statements of the same cell first
        statements = _facts(history[cell_at].neutral.text).statements
        for at in range(min(statement_at, len(statements)) - 1, -1, -1):
            if name in statements[at].binds:
                return cell_at, at
    binders = index.binders.get(name, ())
    for position in reversed(binders[: bisect_left(binders, cell_at)]):
        cell = history[position]
        if cell.key in shown:
            continue
        statements = _facts(cell.neutral.text).statements
        for at in range(len(statements) - 1, -1, -1):
            if name in statements[at].binds:
                return position, at
        return None
    return None


@dataclass(frozen=True, slots=True)
class _Index:
    """Where each cell of a history is, and the cells that bind each name (ascending)."""

    position: dict[str, int]
    binders: dict[str, list[int]]


_INDEXES: dict[int, tuple[Sequence[Cell], _Index]] = {}
"""The last histories' indexes by identity (the history is held, so its id stays its own):
one check reads the history before and after the cell, twice each."""


_INDEXES_LOCK = threading.Lock()


def _index(history: Sequence[Cell]) -> _Index:
    with _INDEXES_LOCK:
        known = _INDEXES.get(id(history))
    if known is not None and known[0] is history:
        return known[1]
    binders: dict[str, list[int]] = {}
    for at, cell in enumerate(history):
        for name in cell.binds:
            binders.setdefault(name, []).append(at)
    index = _Index({c.key: i for i, c in enumerate(history)}, binders)
    with _INDEXES_LOCK:
        if len(_INDEXES) >= 4:
            del _INDEXES[next(iter(_INDEXES))]
        _INDEXES[id(history)] = (history, index)
    return index


# -- the cells a change can break ------------------------------------------------------------------


def affected(cells: Sequence[Cell], newest: Cell, old: Cell | None) -> list[Cell]:
    """The cells other than `newest` whose check its code can change: `cells` is the history
    with it (in place of `old`, its earlier version, when it is a re-run)."""
    if not newest.parses:
        return []
    position = _position(cells, newest)
    in_place = old is not None and position < len(cells) - 1
    changed = _changed(old, newest) if in_place and old is not None else set(newest.binds)
    if old is not None:
        changed |= old.binds - newest.binds
    if not changed:
        return []
    out: list[Cell] = []
    live = set(changed)
    hops = 0
    for cell in cells[position + 1 :]:
        now, later = _facts(cell.neutral.text).reads
        direct = bool((now | later) & changed)
        if direct or (now & live and hops < TRANSITIVE):
            out.append(cell)
            hops += not direct
            live |= cell.binds
        else:
            live -= cell.binds
    out.extend(c for c in cells[:position] if _facts(c.neutral.text).reads[1] & changed)
    return out


def _position(cells: Sequence[Cell], cell: Cell) -> int:
    return next(i for i, c in enumerate(cells) if c.key == cell.key)


def _changed(old: Cell, new: Cell) -> set[str]:
    """The names whose binding a re-run changed: bound by statements that differ, or that
    read a name changed earlier in the cell."""
    before, now = _bindings(old), _bindings(new)
    changed = {n for n in before.keys() | now.keys() if before.get(n) != now.get(n)}
    for statement in _facts(new.neutral.text).statements:
        if statement.loads & changed:
            changed |= statement.binds
    return changed


def _bindings(cell: Cell) -> dict[str, tuple[str, ...]]:
    out: dict[str, tuple[str, ...]] = {}
    for statement in _facts(cell.neutral.text).statements:
        for name in statement.binds:
            out[name] = (*out.get(name, ()), statement.text)
    return out


# -- facts of one cell's text, computed once -----------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Statement:
    """A top-level statement: the names it binds at module level and reads anywhere, its
    text (its lines, decorators included), and whether it is a def or a class."""

    binds: frozenset[str]
    loads: frozenset[str]
    text: str
    definition: bool


@dataclass(frozen=True, slots=True)
class _Facts:
    statements: tuple[_Statement, ...]
    reads: tuple[frozenset[str], frozenset[str]]
    """(global names read as the cell runs, read in its function and lambda bodies)."""


_NO_FACTS = _Facts((), (frozenset(), frozenset()))
_COMPREHENSIONS = frozenset({"listcomp", "setcomp", "dictcomp", "genexpr"})
"""Scopes of their own that run at once (before Python 3.12 inlined most of them)."""


@functools.lru_cache(maxsize=8192)
def _facts(text: str) -> _Facts:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return _NO_FACTS
    lines = text.split("\n")
    statements = []
    for node in tree.body:
        decorators = getattr(node, "decorator_list", None) or []
        first = min([node.lineno, *(d.lineno for d in decorators)]) - 1
        last = (node.end_lineno or node.lineno) - 1
        statements.append(_Statement(
            frozenset(_module_binds(node)),
            frozenset(n.id for n in ast.walk(node)
                      if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)),
            "\n".join(lines[first : last + 1]),
            isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)),
        ))
    return _Facts(tuple(statements), _reads(text))


@functools.lru_cache(maxsize=8192)
def _reads(text: str) -> tuple[frozenset[str], frozenset[str]]:
    """(global names `text` reads as it runs, those its function and lambda bodies read)."""
    try:
        table = symtable.symtable(text, "<cell>", "exec")
    except (SyntaxError, ValueError):  # `nonlocal` at the top, say: every name, both ways
        try:
            names = frozenset(n.id for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Name))
        except (SyntaxError, ValueError):
            names = frozenset()
        return names, names
    now = {s.get_name() for s in table.get_symbols() if s.is_referenced()}
    later: set[str] = set()
    tables = [(child, False) for child in table.get_children()]
    while tables:
        scope, deferred = tables.pop()
        deferred = deferred or (
            scope.get_type() == "function" and scope.get_name() not in _COMPREHENSIONS
        )
        (later if deferred else now).update(
            s.get_name() for s in scope.get_symbols() if s.is_referenced() and s.is_global()
        )
        tables.extend((child, deferred) for child in scope.get_children())
    return frozenset(now), frozenset(later)


def _module_binds(node: ast.stmt) -> set[str]:
    """Names a top-level statement binds in the module (not in function or class bodies)."""
    out: set[str] = set()
    todo: list[ast.AST] = [node]
    while todo:
        item = todo.pop()
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(item.name)
            continue
        if isinstance(item, ast.Lambda):
            continue
        if isinstance(item, ast.Name) and not isinstance(item.ctx, ast.Load):
            out.add(item.id)
        elif isinstance(item, ast.Import):
            out.update((a.asname or a.name).split(".")[0] for a in item.names)
        elif isinstance(item, ast.ImportFrom):
            out.update(a.asname or a.name for a in item.names if a.name != "*")
        todo.extend(ast.iter_child_nodes(item))
    return out
