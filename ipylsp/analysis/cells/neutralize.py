"""The kernel's reading of a cell made plain Python on the cell's own lines: what a server reads.

IPython decides what is code. The adapter reads each cell the way the kernel runs it (its
`transform_cell`: prompts and indentation stripped, cell magics, `%`, `!`, `?`, then for a
one-line cell the prefilters, automagic and aliases) and hands over a `Reading`: per line of
the cell, the kernel's text that begins there and the columns the kernel cut before it. This
module turns that into a checker's Python without moving a line, so positions come back to
the cell's own lines and columns (`column_offsets`):

- a line the kernel kept is kept (its prompt or common indentation cut: columns shift);
- a line the kernel rewrote into a call of its own (`get_ipython().run_line_magic(...)`,
  `.system(...)`, `.getoutput(...)`, help) becomes `pass` at its indentation, or
  `target = __ipylsp_any__()` when the call's value is assigned (`files = !ls`: the name is
  bound, its type unknown); `%time stmt` becomes `stmt` (still checked, still binding);
- any other rewrite (autocall, a custom transformer) keeps the kernel's Python;
- lines the kernel folded into the line above (backslash continuations of a magic) are blank;
- a cell magic: `%%time`, `%%timeit`, `%%prun`, `%%capture`, `%%debug` keep their body, read
  as the kernel reads it (`read`), and `%%capture out` binds `out`; any other cell magic
  (`%%bash`, `%%html`, `%%writefile`, ...) is foreign text and becomes blank lines;
- `from __future__` at a cell's top level is `pass` (IPython compiles it on its own).

A text the kernel compiles therefore parses here, and a text it rejects is rejected at the
same place. Pure: the reader is the adapter's (IPython may not be imported below it);
`plain_reading` reads a cell as plain Python where there is no IPython.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Protocol

ANY_CALL = "__ipylsp_any__()"
"""What a magic's or a shell escape's value becomes; the document's header defines it."""

PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "prun", "capture", "debug"})
"""Cell magics whose body is Python the kernel runs in the user namespace (or times)."""

_OPTION = re.compile(r"\s*--?[\w-]+(?:\s+\d+)?")
"""An option of a cell magic's head (`-n 10`, `--no-stdout`, `-q`)."""
_TIMED = frozenset({"time"})
"""Line magics whose argument is a statement run in the user namespace (`%time x = f()`)."""


@dataclass(frozen=True, slots=True)
class ReadLine:
    """One line of a cell as the kernel read it.

    `text`: the kernel's text that begins on this line ("" when the kernel folded the line
    into an earlier one); a column c of `text` is column c + `offset` of the cell's line.
    `written`: the cell's own text of the line (after the cut) when the kernel's differs
    from it (a rewrite, or a folded line); None when the kernel kept it."""

    text: str
    offset: int = 0
    written: str | None = None


@dataclass(frozen=True, slots=True)
class Reading:
    """A cell as the kernel reads it: one `ReadLine` per line of the cell."""

    lines: tuple[ReadLine, ...]


class Reader(Protocol):
    """How the kernel reads code: `count`, the execution count of a cell that ran (what the
    kernel ran then); None, code read as the kernel would read it now (a preflight, the body
    of a cell magic)."""

    def __call__(self, source: str, count: int | None = None, /) -> Reading: ...


def split_cell(source: str) -> list[str]:
    """A cell's lines (`\\r\\n`, `\\r`, `\\n`): the lines positions count."""
    return source.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def plain_reading(source: str, count: int | None = None, /) -> Reading:
    """The cell as plain Python (no IPython to read it): every line kept."""
    return Reading(tuple(ReadLine(line) for line in split_cell(source)))


@dataclass(frozen=True, slots=True)
class NeutralCell:
    """A cell as plain Python: same number of lines as the source.

    `column_offsets[i]`: characters removed at the start of line i (a prompt, the cell's
    indentation, `%time `; negative where text was put before, see `document.RAISE_GUARD`);
    a column c on that line of `text` is column c + offset in the cell."""

    text: str
    column_offsets: tuple[int, ...]
    foreign: bool = False
    """A whole cell of another language (`%%bash`, `%%html`, ...): nothing to check."""


def neutralize(reading: Reading, read: Reader = plain_reading) -> NeutralCell:
    """The kernel's reading as plain Python, line for line (see the module docstring);
    `read` reads the body of a cell magic the way the kernel will."""
    lines = reading.lines
    first = next((i for i, line in enumerate(lines) if line.text.strip()), None)
    if first is not None:
        magic = _ipython_call(lines[first].text)
        if magic is not None and magic.method == "run_cell_magic":
            return _cell_magic(lines, first, magic, read)
    texts: list[str] = []
    offsets: list[int] = []
    for line in lines:
        text, offset = _line(line)
        texts.append(text)
        offsets.append(offset)
    _future_first(texts)
    return NeutralCell("\n".join(texts), tuple(offsets))


@dataclass(frozen=True, slots=True)
class _Call:
    """`get_ipython().<method>(<literal args>)` at `start` (a column of the line)."""

    method: str
    args: tuple[object, ...]
    start: int
    assigned: bool
    """The call is the value of an assignment (`x = %sx ls`), not a statement."""


def _ipython_call(text: str) -> _Call | None:
    """The kernel's own call a rewritten line is made of, or None (other Python)."""
    stripped = text.lstrip()
    if "get_ipython()" not in stripped:
        return None
    try:
        tree = ast.parse(stripped)
    except (SyntaxError, ValueError):
        return None
    if len(tree.body) != 1:
        return None
    statement = tree.body[0]
    if isinstance(statement, ast.Expr):
        value, assigned = statement.value, False
    elif isinstance(statement, (ast.Assign, ast.AnnAssign)) and statement.value is not None:
        value, assigned = statement.value, True
    else:
        return None
    if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
            and isinstance(value.func.value, ast.Call)
            and isinstance(value.func.value.func, ast.Name)
            and value.func.value.func.id == "get_ipython"):
        return None
    try:
        args = tuple(ast.literal_eval(a) for a in value.args)
    except ValueError:
        return None
    start = _column(stripped, value.col_offset)
    return _Call(value.func.attr, args, len(text) - len(stripped) + start, assigned)


def _line(line: ReadLine) -> tuple[str, int]:
    """The neutral text of one line and its column offset."""
    if line.written is None or not line.text.strip():
        return line.text, line.offset
    call = _ipython_call(line.text)
    if call is None:  # the kernel's Python (autocall, a custom transformer): as it runs
        return line.text, line.offset
    if call.assigned:
        return line.text[: call.start] + ANY_CALL, line.offset
    indent = line.text[: len(line.text) - len(line.text.lstrip())]
    timed = _timed(call, line.written)
    if timed is not None:
        statement, column = timed
        return indent + statement, line.offset + column - len(indent)
    return indent + "pass", line.offset


def _timed(call: _Call, written: str) -> tuple[str, int] | None:
    """`%time stmt`: the statement and its column in the written line, when it is Python
    on that line (no options, not continued over lines)."""
    if call.method != "run_line_magic" or len(call.args) != 2 or call.args[0] not in _TIMED:
        return None
    statement = call.args[1]
    if not isinstance(statement, str) or not statement.strip() or statement.startswith("-"):
        return None
    mine = written.rstrip()
    if not mine.endswith(statement) or not _parses(statement):
        return None
    return statement, len(mine) - len(statement)


def _parses(text: str) -> bool:
    try:
        ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    return True


def _cell_magic(lines: tuple[ReadLine, ...], first: int, call: _Call, read: Reader
                ) -> NeutralCell:
    offsets = [line.offset for line in lines]
    name, head_args, body = (*call.args, "", "", "")[:3]
    if name not in PYTHON_CELL_MAGICS or not isinstance(body, str):
        return NeutralCell("\n".join("" for _ in lines), tuple(offsets), foreign=True)
    written = lines[first].written or ""
    head, cut = "", 0
    args = head_args if isinstance(head_args, str) else ""
    if name in ("capture", "timeit"):
        options = 0
        while (option := _OPTION.match(args, options)) is not None:
            options = option.end()
        rest = args[options:].strip()
        targets = [t for t in args.split() if not t.startswith("-")]
        if name == "capture" and len(targets) == 1 and targets[0].isidentifier():
            head = f"{targets[0]} = {ANY_CALL}"  # `%%capture [options] out [options]`
        elif name == "timeit" and rest and written.find(rest, len("%%timeit")) >= 0:
            head, cut = rest, written.index(rest, len("%%timeit"))  # `%%timeit [opts] setup`
    inner = neutralize(read(body), read)
    below = len(lines) - first - 1
    inner_lines = inner.text.split("\n")[:below]
    inner_offsets = list(inner.column_offsets[:below])
    inner_lines += [""] * (below - len(inner_lines))
    inner_offsets += [0] * (below - len(inner_offsets))
    text = "\n".join([*([""] * first), head, *inner_lines])
    return NeutralCell(text, (*offsets[:first], offsets[first] + cut, *(
        a + b for a, b in zip(offsets[first + 1:], inner_offsets, strict=True))))


def _future_first(texts: list[str]) -> None:
    """`from __future__ import ...` at the cell's top level is `pass`: IPython compiles each
    top-level statement of a cell on its own, so the kernel runs it anywhere there (in a
    function it is a SyntaxError, and stays); in the document it is not first."""
    if not any("__future__" in text for text in texts):
        return
    try:
        tree = ast.parse("\n".join(texts))
    except (SyntaxError, ValueError):
        return
    for statement in tree.body:
        if not (isinstance(statement, ast.ImportFrom) and statement.module == "__future__"):
            continue
        first, last = statement.lineno - 1, (statement.end_lineno or statement.lineno) - 1
        line = texts[first]
        start = _column(line, statement.col_offset)
        end = len(line)
        if last == first and statement.end_col_offset is not None:
            end = _column(line, statement.end_col_offset)  # `...; x = 1` keeps `x = 1`
        texts[first] = line[:start] + "pass" + line[end:]
        for i in range(first + 1, last + 1):
            texts[i] = ""


def _column(line: str, utf8: int) -> int:
    """A code-point column from an ast column (UTF-8 bytes)."""
    return len(line.encode("utf-8")[:utf8].decode("utf-8", "replace"))
