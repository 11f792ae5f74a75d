"""The session's executed cells as one Python document, and the way back to (cell, line).

The document is a header (the kernel's stub prelude: names the cells use but never bind), then
every kept cell's neutralized text in execution order, one cell after another. A cell run
again replaces its earlier version in place (same key: the front end's cell id, else the same
source), so a changed signature is checked against the calls that follow it. A cell that does
not parse is reported, then left out of later documents (the kernel ran none of it) and a
cell of another language (`%%bash`) is kept as blank lines. The history is capped: the oldest
cells go first (the names they bound are in the kernel's namespace, so the prelude keeps them
known).
"""

from __future__ import annotations

import ast
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass, replace

from ipylsp.analysis.cells.neutralize import NeutralCell, Reader, neutralize, plain_reading

HEADER = (
    "from typing import Any as __ipylsp_Any__\n"
    "def __ipylsp_any__() -> __ipylsp_Any__: ...\n"
)
"""Always first: what `x = !ls` and `x = %magic` are rewritten to call."""


IDENTIFIED = "id:"
"""The key prefix of a cell the front end named (its cell id); other keys name a source."""


@dataclass(frozen=True, slots=True)
class Cell:
    """One executed cell: `count` is its execution count (`In [n]`), None for a preflight."""

    key: str
    count: int | None
    source: str
    neutral: NeutralCell
    parses: bool
    last_statement: int | None
    """The 0-based line where the cell's last statement starts (IPython displays its value)."""
    loads: frozenset[str] = frozenset()
    """Names the cell reads anywhere."""
    binds: frozenset[str] = frozenset()
    """Names the cell binds at module level (what the kernel's namespace got from it)."""
    guarded: tuple[tuple[int, int], ...] = ()
    """0-based line spans of `try` bodies whose handler catches NameError: a name missing
    there is what the cell handles (`try: input = raw_input` / `except: pass`)."""

    def guards(self, line: int) -> bool:
        return any(first <= line <= last for first, last in self.guarded)

    @property
    def label(self) -> str:
        return f"cell [{self.count}]" if self.count is not None else "cell [ ]"

    @property
    def cell_id(self) -> str | None:
        """The front end's id of the cell, when it sent one."""
        return self.key[len(IDENTIFIED):] if self.key.startswith(IDENTIFIED) else None


def make_cell(key: str, count: int | None, source: str, read: Reader = plain_reading) -> Cell:
    """`source` as cell `count`, read by `read` (the kernel's reader; plain Python without)."""
    neutral = neutralize(read(source, count), read)
    try:
        tree = ast.parse(neutral.text)
    except (SyntaxError, ValueError):
        return Cell(key, count, source, neutral, False, None)
    # the statement whose value IPython displays: the last one, when it is an expression
    last = tree.body[-1].lineno - 1 if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    neutral = _reachable_after(neutral, tree)
    names = _Names()
    names.visit(tree)
    return Cell(
        key, count, source, neutral, True, last, frozenset(names.loads), frozenset(names.binds),
        _name_error_guards(tree),
    )


@dataclass(frozen=True, slots=True)
class Place:
    """Where a document line is: in `cell` at `line` (0-based), columns shifted by `offset`."""

    cell: Cell
    line: int
    offset: int


@dataclass(frozen=True, slots=True)
class CellDocument:
    text: str
    cells: tuple[Cell, ...]
    starts: tuple[int, ...]
    """The document line where each cell begins."""
    header_lines: int

    def place(self, line: int) -> Place | None:
        """The cell line a document line belongs to; None in the header or past the end."""
        index = bisect_right(self.starts, line) - 1
        if index < 0:
            return None
        cell = self.cells[index]
        within = line - self.starts[index]
        offsets = cell.neutral.column_offsets
        if within >= len(offsets):
            return None
        return Place(cell, within, offsets[within])


@dataclass(frozen=True, slots=True)
class CellHistory:
    """The kept cells, oldest first; values: `with_cell` returns a new history."""

    cells: tuple[Cell, ...] = ()
    cap: int = 200

    def with_cell(self, cell: Cell) -> CellHistory:
        """`cell` run now. A cell the front end identifies (`id:` key) replaces its earlier
        version in place: a changed definition is checked against the cells after it. A cell
        known only by its source (no id: the console, nbclient, papermill) is the same code
        run again, now: the older copy goes and it comes last (`total = 0` run again after
        `total = 'label'` binds an int, whatever came between)."""
        cells = list(self.cells)
        if cell.key.startswith(IDENTIFIED) and all(c.key != cell.key for c in cells):
            # a cell known by its source (run before `%load_ext`) now run with its id
            cells = [replace(c, key=cell.key) if not c.key.startswith(IDENTIFIED)
                     and c.source == cell.source else c for c in cells]
        for i, old in enumerate(cells):
            if old.key == cell.key:
                if cell.key.startswith(IDENTIFIED):
                    cells[i] = cell
                    break
                del cells[i]
                cells.append(cell)
                break
        else:
            cells.append(cell)
        return CellHistory(_capped(cells, self.cap), self.cap)

    def kept(self) -> CellHistory:
        """Without the cells that do not parse (they ran nothing)."""
        return CellHistory(tuple(c for c in self.cells if c.parses), self.cap)

    def document(self, prelude: str = "") -> CellDocument:
        header = HEADER + prelude
        if header and not header.endswith("\n"):
            header += "\n"
        header_lines = header.count("\n")
        parts = [header]
        starts: list[int] = []
        line = header_lines
        for cell in self.cells:
            text = cell.neutral.text
            starts.append(line)
            parts.append(text + "\n")
            line += text.count("\n") + 1
        return CellDocument("".join(parts), self.cells, tuple(starts), header_lines)


def _capped(cells: list[Cell], cap: int) -> tuple[Cell, ...]:
    if cap > 0 and len(cells) > cap:
        cells = cells[len(cells) - cap :]
    return tuple(cells)


def _module_flow(node: ast.AST) -> Iterator[ast.AST]:
    """The statements the cell runs itself: everything but function and class bodies."""
    for child in ast.iter_child_nodes(node):
        yield child
        if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                                  ast.Lambda)):
            yield from _module_flow(child)


_CATCHES_NAME_ERROR = frozenset({"NameError"})
"""Not `Exception`: `try: len(dataa)` / `except Exception as e: print(e)` hides a typo the
user wants to hear about; a bare `except:` or `except NameError` says the name may be missing."""


def _name_error_guards(tree: ast.Module) -> tuple[tuple[int, int], ...]:
    spans = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and node.body and any(
            _catches_name_error(h.type) for h in node.handlers
        ):
            last = node.body[-1]
            spans.append((node.body[0].lineno - 1, (last.end_lineno or last.lineno) - 1))
    return tuple(spans)


def _catches_name_error(kind: ast.expr | None) -> bool:
    if kind is None:  # a bare `except:`
        return True
    kinds = kind.elts if isinstance(kind, ast.Tuple) else [kind]
    return any(isinstance(k, ast.Name) and k.id in _CATCHES_NAME_ERROR for k in kinds)


RAISE_GUARD = "if __ipylsp_any__(): "
"""Put before a `raise` in a cell's own flow (not in a function or class): the kernel goes on
with the next cell, so the document must too (a checker does not look at code after an
unconditional raise, e.g. `with out: raise ValueError()`)."""


def _reachable_after(neutral: NeutralCell, tree: ast.Module) -> NeutralCell:
    lines = neutral.text.split("\n")
    raises = [
        node.lineno - 1 for node in _module_flow(tree) if isinstance(node, ast.Raise)
        and not lines[node.lineno - 1][: node.col_offset].strip()  # the line's first statement
    ]
    if not raises:
        return neutral
    offsets = list(neutral.column_offsets)
    for line in raises:
        indent = len(lines[line]) - len(lines[line].lstrip())
        lines[line] = lines[line][:indent] + RAISE_GUARD + lines[line][indent:]
        offsets[line] -= len(RAISE_GUARD)
    return replace(neutral, text="\n".join(lines), column_offsets=tuple(offsets))


def unbound_loads(cells: tuple[Cell, ...]) -> set[str]:
    """Names the cells read but never bind at module level: where the prelude may help."""
    loads: set[str] = set()
    binds: set[str] = set()
    for cell in cells:
        loads |= cell.loads
        binds |= cell.binds
    return loads - binds


class _Names(ast.NodeVisitor):
    """Loads anywhere; stores only at module level (not in function or class bodies)."""

    def __init__(self) -> None:
        self.loads: set[str] = set()
        self.binds: set[str] = set()
        self._depth = 0

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load):
            self.loads.add(node.id)
        elif self._depth == 0:
            self.binds.add(node.id)

    def _scope(self, node: ast.AST, name: str | None) -> None:
        if name is not None and self._depth == 0:
            self.binds.add(name)
        self._depth += 1
        self.generic_visit(node)
        self._depth -= 1

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._scope(node, node.name)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._scope(node, node.name)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._scope(node, node.name)

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self._scope(node, None)

    def visit_Import(self, node: ast.Import) -> None:
        if self._depth == 0:
            self.binds.update((a.asname or a.name).split(".")[0] for a in node.names)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if self._depth == 0:
            self.binds.update(a.asname or a.name for a in node.names if a.name != "*")
