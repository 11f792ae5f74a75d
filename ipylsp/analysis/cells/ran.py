"""What ran, ran: a cell's run as evidence against the diagnostics it disproved.

Owns `Ran` (what the kernel evaluated of one run of a cell: the text it compiled, where the
instructions that executed and the exceptions that were raised are, or, where nothing was
recorded, the line an exception left the cell from), `DEMOTABLE` (per server and code, the
diagnostics a run can disprove, and why), the judgement (`disproved`), and `Evidence` (the
runs that still speak for their cells). Pure: the kernel records a run
(`ipython/monitor.py`); this module may not import the adapters or the service.

A diagnostic is demoted, never dropped: an ERROR of a `DEMOTABLE` code becomes a WARNING
flagged `ran_without_error` when the run evaluated the very code it points at (the innermost
expression around its range, a whole statement for an import) and no exception was raised
there. How that is known:

- **instructions** (Python 3.12+, `sys.monitoring`): some instruction positioned inside that
  expression executed, and no exception was raised at one (a loop that failed once and worked
  later keeps the ERROR: the run confirmed it once);
- **statements** (before 3.12, where nothing is traced): the expression belongs to a top-level
  statement that ran to its end (every one before the statement an exception left the cell
  from) and is evaluated whenever that statement is, which excludes the bodies of `if`,
  `for`, `while`, `try`, `with` and `match`, function and lambda bodies, annotations, the
  operands after the first of `and`/`or` and of a comparison chain, the branches of `x if c
  else y`, the parts of a comprehension after its first iterable, and an `assert`'s message.

Where unsure, the ERROR stays: a line of the cell that is not, character for character, a
line of the text the kernel compiled (a magic, a rewritten line) proves nothing.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from itertools import pairwise

from ipylsp.analysis.cells.document import Cell
from ipylsp.model.diagnostics import Diagnostic, Range, Report, Severity


@dataclass(frozen=True, slots=True)
class Demotable:
    """Why a run disproves a code's claim; `only`: the code also makes claims a run cannot
    disprove (types of an assignment, arguments), so only messages matching this count."""

    why: str
    only: str | None = None


_UNDEFINED = Demotable("an undefined name: the run read it without NameError")
_POSSIBLY_UNBOUND = Demotable("a possibly unbound name: the run read it bound")
_IMPORT = Demotable("an unresolved module or missing member: the import ran")
_ATTRIBUTE = Demotable("a missing attribute: the run read it without AttributeError")
_OPTIONAL = Demotable("`None` in a union: the run used the value, and it was not None")
_OPERATOR = Demotable("an unsupported operator: the run applied it")
_CALLABLE = Demotable("not callable: the run called it")
_SUBSCRIPT = Demotable("not subscriptable: the run subscripted it")
_ITERABLE = Demotable("not iterable: the run iterated over it")
_READ = r"^(Cannot access attribute|\S+ is not a known attribute|\S+ is unknown import symbol)"
"""pyright's attribute code also says `Cannot assign to attribute ...` (an assignment's type:
no run disproves it)."""

DEMOTABLE: Mapping[tuple[str, str], Demotable] = {
    ("ty", "unresolved-reference"): _UNDEFINED,
    ("ty", "possibly-unresolved-reference"): _POSSIBLY_UNBOUND,
    ("ty", "unresolved-import"): _IMPORT,
    ("ty", "import-not-found"): _IMPORT,
    ("ty", "missing-module-member"): _IMPORT,
    ("ty", "possibly-missing-import"): _IMPORT,
    ("ty", "unresolved-attribute"): _ATTRIBUTE,
    ("ty", "missing-attribute"): _ATTRIBUTE,
    ("ty", "possibly-missing-attribute"): _ATTRIBUTE,
    ("ty", "missing-union-attribute"): _OPTIONAL,
    ("ty", "unsupported-operator"): _OPERATOR,
    ("ty", "call-non-callable"): _CALLABLE,
    ("ty", "not-callable"): _CALLABLE,
    ("ty", "non-subscriptable"): _SUBSCRIPT,
    ("ty", "not-subscriptable"): _SUBSCRIPT,
    ("ty", "not-iterable"): _ITERABLE,
    ("ruff", "F821"): _UNDEFINED,
    **{
        (server, code): why
        for server in ("pyright", "basedpyright")
        for code, why in (
            ("reportUndefinedVariable", _UNDEFINED),
            ("reportPossiblyUnbound", _POSSIBLY_UNBOUND),
            ("reportMissingImports", _IMPORT),
            ("reportAttributeAccessIssue", replace(_ATTRIBUTE, only=_READ)),
            ("reportFunctionMemberAccess", replace(_ATTRIBUTE, only=r"^Cannot access attribute")),
            ("reportOptionalMemberAccess", _OPTIONAL),
            ("reportOptionalSubscript", _OPTIONAL),
            ("reportOptionalCall", _OPTIONAL),
            ("reportOptionalOperand", _OPTIONAL),
            ("reportOptionalIterable", _OPTIONAL),
            ("reportOperatorIssue", _OPERATOR),
            ("reportCallIssue", replace(_CALLABLE, only=r"is not callable")),
            ("reportIndexIssue", replace(_SUBSCRIPT, only=r"method not defined on type")),
        )
    },
    ("pyrefly", "unknown-name"): _UNDEFINED,
    ("pyrefly", "missing-import"): _IMPORT,
    ("pyrefly", "missing-module-attribute"): _IMPORT,
    ("pyrefly", "missing-attribute"): _ATTRIBUTE,
    ("pyrefly", "unsupported-operation"): _OPERATOR,
    ("pyrefly", "not-callable"): _CALLABLE,
    ("pyrefly", "bad-index"): replace(_SUBSCRIPT, only=r"^Cannot index into"),
    ("pyrefly", "not-iterable"): _ITERABLE,
}
"""(server id, code) -> why a run that evaluated the code without raising disproves it.
Everything else stays what the server said: argument, assignment and return types, overrides
(`area("2", 3)` runs and returns "222": that is the bug the check exists for). docs/cells.md
quotes this table (`tests/test_ran.py` keeps them equal)."""


def demotable(d: Diagnostic) -> bool:
    if d.severity != Severity.ERROR or d.code is None:
        return False
    entry = DEMOTABLE.get((d.server_id, d.code))
    return entry is not None and (entry.only is None or bool(re.search(entry.only, d.message)))


def readme_table() -> str:
    """The table of `DEMOTABLE` that docs/cells.md quotes, one row per server and code."""
    rows = ["| server | code | why the run disproves it |", "| --- | --- | --- |"]
    for (server, code), entry in DEMOTABLE.items():
        only = f" (only a message matching `{entry.only}`)" if entry.only else ""
        rows.append(f"| {server} | `{code}` | {entry.why}{only} |")
    return "\n".join(rows)


Span = tuple[int, int, int, int]
"""(line, column, end line, end column): 0-based lines, UTF-8 byte columns (CPython's)."""
Position = tuple[int | None, int | None, int | None, int | None]
"""An instruction's place as `code.co_positions()` yields it: 1-based line, end line, column,
end column (UTF-8 bytes); parts are None where the compiler gave none."""


@dataclass(frozen=True, slots=True)
class Ran:
    """What the kernel evaluated of one run of a cell."""

    cell: str
    """The cell as written (what the check reads)."""
    source: str
    """The text the kernel compiled (IPython's transformed cell): the positions' coordinates."""
    executed: tuple[Position, ...] | None
    """Where instructions that executed are; None when nothing was recorded (statements)."""
    raised: tuple[Position, ...] = ()
    """Where an exception was raised in, or passed through, the cell's own code."""
    failed: int | None = None
    """The 0-based line an exception left the cell from (its top-level statement did not
    finish)."""


def disproved(d: Diagnostic, ran: Ran) -> bool:
    """Whether `d` (in the cell's own lines and columns) is a demotable claim `ran` evaluated
    without raising."""
    return _Reading(ran).disproved(d)


class _Reading:
    """One run read once for the diagnostics of its cell: the compiled text's tree, and the
    positions as spans."""

    def __init__(self, ran: Ran) -> None:
        self.ran = ran
        self.lines = ran.source.split("\n")
        self.tree = _tree(ran.source)
        self.executed = None if ran.executed is None else _spans(ran.executed)
        self.raised = _spans(ran.raised)

    def disproved(self, d: Diagnostic) -> bool:
        if not demotable(d):
            return False
        moved = _in_source(d.range, self.ran.cell, self.ran.source)
        return moved is not None and self.evaluated(*moved)

    def evaluated(self, start: tuple[int, int], end: tuple[int, int]) -> bool:
        """Whether the run evaluated, without raising there, the code at `start`-`end`
        (0-based lines and code-point columns of the compiled text)."""
        path = _target(self.tree, _bytes(self.lines, start), _bytes(self.lines, end))
        if not path:
            return False
        span = _span(path[-1][0])
        if self.executed is not None:
            return (any(_within(s, span) for s in self.executed)
                    and not any(_within(s, span) for s in self.raised))
        return self._finished(path[0][0]) and _unconditional(path)

    def _finished(self, statement: ast.AST) -> bool:
        failed = self.ran.failed
        if failed is None:
            return True
        failing = next((s for s in self.tree.body
                        if s.lineno - 1 <= failed <= (s.end_lineno or s.lineno) - 1), None)
        return failing is not None and _span(statement) < _span(failing)


def _spans(positions: Iterable[Position]) -> list[Span]:
    return [(p[0] - 1, p[2], p[1] - 1, p[3]) for p in positions
            if p[0] is not None and p[1] is not None and p[2] is not None and p[3] is not None]


def demoted(d: Diagnostic) -> Diagnostic:
    return replace(d, severity=Severity.WARNING, ran_without_error=True)


# -- which runs still speak for their cells ----------------------------------------------------


@dataclass(frozen=True, slots=True)
class Evidence:
    """The runs that speak for their cells, by cell key: a cell's run holds while no cell
    before it in the document changed (a later cell cannot change what an earlier one is;
    a re-run or replaced cell changes every cell after it)."""

    runs: Mapping[str, Ran] = field(default_factory=dict)

    def after(self, before: Sequence[Cell], cell: Cell, ran: Ran | None, cap: int = 32) -> Evidence:
        """`cell` ran (`ran`: what it evaluated; None: nothing recorded) after the history
        `before`: the runs of the cells from its old place on are dropped."""
        keys = [c.key for c in before]
        runs = dict(self.runs)
        if cell.key in keys:
            for key in keys[keys.index(cell.key):]:
                runs.pop(key, None)
        if ran is not None and ran.cell == cell.source:
            runs[cell.key] = ran
        return Evidence(dict(list(runs.items())[-cap:]))

    def apply(
        self,
        report: Report,
        cells: Iterable[Cell],
        before: tuple[Evidence, Iterable[Cell]] | None = None,
    ) -> Report:
        """The cells' entries (`cells`: the history checked) with what their runs disproved
        demoted: introduced and current problems by these runs; `fixed` ones, which are of the
        text before, by the runs that spoke for it (`before`: that evidence and that history),
        so what was shown as a warning is not "fixed" as an error."""
        old, old_cells = before if before is not None else (Evidence(), ())
        if not self.runs and not old.runs:
            return report
        by_count = {c.count: c for c in cells if c.count is not None}
        was = {c.key: c for c in old_cells}
        files = []
        for f in report.files:
            cell = by_count.get(f.cell) if f.cell else None
            if cell is not None:
                earlier = was.get(cell.key)
                f = replace(f, diagnostics=self.judged(cell, f.diagnostics),
                            current=self.judged(cell, f.current),
                            fixed=old.judged(earlier, f.fixed) if earlier else f.fixed)
            files.append(f)
        return replace(report, files=tuple(files))

    def judged(self, cell: Cell, diagnostics: Sequence[Diagnostic]) -> tuple[Diagnostic, ...]:
        """`cell`'s diagnostics (its own lines), with what its run disproved demoted."""
        ran = self.runs.get(cell.key)
        if ran is None or ran.cell != cell.source or not any(demotable(d) for d in diagnostics):
            return tuple(diagnostics)
        reading = _Reading(ran)
        return tuple(demoted(d) if reading.disproved(d) else d for d in diagnostics)


# -- the cell's lines in the compiled text -----------------------------------------------------


def _in_source(
    where: Range, cell: str, source: str
) -> tuple[tuple[int, int], tuple[int, int]] | None:
    """`where` (the cell's lines) in `source`, when the lines it spans are the same text
    there (shifted right by a prompt or the cell's common indentation); else None."""
    lines = _line_map(cell, source)
    first = lines.get(where.start.line)
    last = lines.get(where.end.line)
    if first is None or last is None:
        return None
    start = (first[0], where.start.column - first[1])
    end = (last[0], where.end.column - last[1])
    if start[1] < 0 or end[1] < 0:
        return None
    return start, end


@lru_cache(maxsize=64)
def _line_map(cell: str, source: str) -> dict[int, tuple[int, int]]:
    """cell line -> (source line, columns the kernel cut before it), for the cell's lines
    the kernel compiled as they are (its line ends with the compiled line: only a prompt or
    indentation cut). IPython drops leading blank lines and folds a magic's continuation
    lines, never adds any: the lines are matched in order, each source line at most as many
    lines down as the cell has more lines."""
    cell_lines = [line.rstrip() for line in cell.split("\n")]
    source_lines = [line.rstrip() for line in source.split("\n")]
    extra = max(0, len(cell.rstrip().split("\n")) - len(source.rstrip().split("\n")))
    out: dict[int, tuple[int, int]] = {}
    lowest = 0
    for j, compiled in enumerate(source_lines):
        if not compiled.strip():
            continue
        for i in range(max(lowest, j), min(len(cell_lines), j + extra + 1)):
            if cell_lines[i].endswith(compiled):
                out[i] = (j, len(cell_lines[i]) - len(compiled))
                lowest = i + 1
                break
    return out


# -- the code a range points at --------------------------------------------------------------


@lru_cache(maxsize=64)
def _tree(source: str) -> ast.Module:
    try:
        tree = compile(source, "<cell>", "exec", ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    except (SyntaxError, ValueError):
        return ast.Module(body=[], type_ignores=[])
    assert isinstance(tree, ast.Module)
    return tree


def _bytes(lines: Sequence[str], where: tuple[int, int]) -> tuple[int, int]:
    line, column = where
    text = lines[line] if 0 <= line < len(lines) else ""
    return line, len(text[:column].encode("utf-8", "surrogatepass"))


def _span(node: ast.AST) -> Span:
    line = int(getattr(node, "lineno", 1))
    end_line = getattr(node, "end_lineno", None)
    end_column = getattr(node, "end_col_offset", None)
    return (
        line - 1,
        int(getattr(node, "col_offset", 0)),
        (end_line if isinstance(end_line, int) else line) - 1,
        end_column if isinstance(end_column, int) else 0,
    )


def _within(inner: Span, outer: Span) -> bool:
    return outer[:2] <= inner[:2] and inner[2:] <= outer[2:]


Step = tuple[ast.AST, str, int]
"""A node on the way down, the field of its parent it is in, and its index there (0 alone)."""


def _target(tree: ast.Module, start: tuple[int, int], end: tuple[int, int]) -> list[Step]:
    """The steps from the top-level statement down to the innermost expression whose span
    holds `start`-`end` (for an import, down to its statement); empty outside statements."""
    path = list(_down(tree, (*start, *end)))
    for i, (node, _, _) in enumerate(path):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            return path[: i + 1]
    return path


def _down(node: ast.AST, span: Span) -> Iterator[Step]:
    """Steps into the child holding `span`, as deep as positioned nodes hold it."""
    for name, value in ast.iter_fields(node):
        children = value if isinstance(value, list) else [value]
        for index, child in enumerate(children):
            if not isinstance(child, ast.AST):
                continue
            if hasattr(child, "lineno"):
                if not _within(span, _span(child)):
                    continue
                yield child, name, index
                yield from _down(child, span)
                return
            deeper = list(_down(child, span))  # unpositioned (arguments, comprehension)
            if deeper:
                yield child, name, index
                yield from deeper
                return


def _unconditional(path: Sequence[Step]) -> bool:
    """Whether the last step is evaluated whenever the first (a top-level statement) is."""
    return not any(_conditional(parent, name, index)
                   for (parent, _, _), (_, name, index) in pairwise(path))


_BODIES = frozenset({"body", "orelse", "handlers", "finalbody", "cases"})


def _conditional(parent: ast.AST, name: str, index: int) -> bool:
    """Whether `parent`'s child in field `name` (at `index`) may go unevaluated when
    `parent` is evaluated."""
    if isinstance(parent, ast.ClassDef):
        return name == "type_params"
    if isinstance(parent, ast.stmt) and name in _BODIES:
        return True
    if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        return name not in ("decorator_list", "args")
    if isinstance(parent, ast.arguments):
        return name not in ("defaults", "kw_defaults")
    if isinstance(parent, (ast.For, ast.AsyncFor)):
        return name == "target"
    if isinstance(parent, ast.BoolOp):
        return index > 0
    if isinstance(parent, ast.Compare):
        return name == "comparators" and index > 0
    if isinstance(parent, ast.IfExp):
        return name != "test"
    if isinstance(parent, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
        return not (name == "generators" and index == 0)
    if isinstance(parent, ast.comprehension):
        return name != "iter"
    if isinstance(parent, ast.Assert):
        return name == "msg"
    if isinstance(parent, ast.AnnAssign):
        return name == "annotation"
    return False
