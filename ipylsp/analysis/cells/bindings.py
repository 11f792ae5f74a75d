"""Who binds and who reads each name: a cell's statements and scopes, and a history's index.

`facts(text)`: a cell's top-level statements (the names each binds in the module and reads,
its text, whether it is a def or a class) and the global names the cell reads as it runs and
in its function and lambda bodies; computed once per text. `index(cells)`: for a history,
where each cell is, which cells bind each name and which cells' functions read it. A history
that is the last one with a cell appended (and its oldest dropped by the cap) shares that
one's index, extended by the new cell: a check's cost does not grow with the history; any
other change rebuilds it.

Pure: no server, no kernel.
"""

from __future__ import annotations

import ast
import functools
import symtable
import threading
from bisect import bisect_left
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from ipylsp.analysis.cells.document import Cell


@dataclass(frozen=True, slots=True)
class Statement:
    """A top-level statement: the names it binds in the module and reads anywhere, its text
    (its lines, decorators included), and whether it is a def or a class."""

    binds: frozenset[str]
    loads: frozenset[str]
    text: str
    definition: bool


@dataclass(frozen=True, slots=True)
class Facts:
    statements: tuple[Statement, ...]
    reads: tuple[frozenset[str], frozenset[str]]
    """(global names read as the cell runs, read in its function and lambda bodies)."""


NO_FACTS = Facts((), (frozenset(), frozenset()))
_COMPREHENSIONS = frozenset({"listcomp", "setcomp", "dictcomp", "genexpr"})
"""Scopes of their own that run at once (before Python 3.12 inlined most of them)."""


@functools.lru_cache(maxsize=8192)
def facts(text: str) -> Facts:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return NO_FACTS
    lines = text.split("\n")
    statements = []
    for node in tree.body:
        decorators = getattr(node, "decorator_list", None) or []
        first = min([node.lineno, *(d.lineno for d in decorators)]) - 1
        last = (node.end_lineno or node.lineno) - 1
        statements.append(Statement(
            frozenset(_module_binds(node)),
            frozenset(n.id for n in ast.walk(node)
                      if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)),
            "\n".join(lines[first : last + 1]),
            isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)),
        ))
    return Facts(tuple(statements), reads(text))


def cell_reads(cell: Cell) -> tuple[frozenset[str], frozenset[str]]:
    """`reads` of a cell's text; a cell with no function, lambda or class (most) reads every
    name it loads as it runs, without asking the symbol table."""
    text = cell.neutral.text
    if "def" in text or "lambda" in text or "class" in text:
        return facts(text).reads
    return cell.loads, frozenset()


@functools.lru_cache(maxsize=8192)
def reads(text: str) -> tuple[frozenset[str], frozenset[str]]:
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


# -- a history's index ----------------------------------------------------------------------------


@dataclass(slots=True)
class _Positions:
    """What indexes of one lineage of histories share: absolute positions (a cell keeps its
    position while the cap drops older ones), only ever appended to."""

    keys: dict[str, int] = field(default_factory=dict)
    binders: dict[str, list[int]] = field(default_factory=dict)
    readers: dict[str, list[int]] = field(default_factory=dict)
    """Cells whose function or lambda bodies read the name (when called, later)."""
    end: int = 0

    def add(self, cell: Cell) -> None:
        at = self.end
        self.keys[cell.key] = at
        for name in cell.binds:
            self.binders.setdefault(name, []).append(at)
        for name in cell_reads(cell)[1]:
            self.readers.setdefault(name, []).append(at)
        self.end += 1


@dataclass(frozen=True, slots=True)
class Index:
    """One history's index: its cells hold absolute positions `base` to `base + len - 1`."""

    cells: tuple[Cell, ...]
    base: int
    _shared: _Positions

    @property
    def end(self) -> int:
        return self.base + len(self.cells)

    @classmethod
    def of(cls, cells: tuple[Cell, ...]) -> Index:
        """Built from nothing (`index` extends a known one where it can)."""
        shared = _Positions()
        for cell in cells:
            shared.add(cell)
        return cls(cells, 0, shared)

    def cell(self, position: int) -> Cell:
        return self.cells[position - self.base]

    def position(self, key: str) -> int | None:
        at = self._shared.keys.get(key)
        if at is None or not self.base <= at < self.end or self.cell(at).key != key:
            return None
        return at

    def binders(self, name: str, before: int) -> Iterator[int]:
        """Positions of the cells binding `name` before `before`, nearest first."""
        return self._within(self._shared.binders.get(name, ()), before)

    def readers(self, name: str, before: int) -> Iterator[int]:
        """Positions of the cells whose functions read `name`, before `before`."""
        return self._within(self._shared.readers.get(name, ()), before)

    def _within(self, positions: Sequence[int], before: int) -> Iterator[int]:
        stop = bisect_left(positions, min(before, self.end))
        for at in range(stop - 1, -1, -1):
            if positions[at] < self.base:
                return
            yield positions[at]


_RECENT: list[Index] = []
"""The last indexes made, newest first (a check reads the history before and after a cell;
two sessions of one process keep their own lineages)."""
_LOCK = threading.Lock()


def index(cells: tuple[Cell, ...]) -> Index:
    """`cells`' index: a known one, the last one's extended by appended cells, or a new one."""
    with _LOCK:
        for known in _RECENT:
            if known.cells is cells or known.cells == cells:  # `==`: by identity, at C speed
                return known if known.cells is cells else Index(cells, known.base, known._shared)
        made = next((i for k in _RECENT if (i := _extended(k, cells)) is not None), None)
        if made is None:
            made = Index.of(cells)
        _RECENT.insert(0, made)
        del _RECENT[8:]
        return made


def _extended(known: Index, cells: tuple[Cell, ...]) -> Index | None:
    """`known` with cells appended (its oldest dropped by the cap), when nothing was appended
    to its lineage since; else None."""
    shared = known._shared
    if shared.end != known.end or not cells:
        return None
    dropped = next((i for i in range(min(len(known.cells), 4)) if known.cells[i] is cells[0]),
                   None)
    if dropped is None:
        return None
    kept = len(known.cells) - dropped
    if len(cells) < kept or cells[:kept] != known.cells[dropped:]:
        return None
    for cell in cells[kept:]:
        shared.add(cell)
    return Index(cells, known.base + dropped, shared)
