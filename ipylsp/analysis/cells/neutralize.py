"""IPython syntax made plain Python without moving a line: what a server can read of a cell.

A cell may hold line magics (`%time x = 1`), shell escapes (`!ls`, `files = !ls`), help
(`obj?`, `??obj`) and cell magics (`%%bash`, `%%capture out`). Servers read Python, so each
such line becomes a statement of the same meaning for a checker, on the same line:

- `%time stmt` -> `stmt` (its columns shift left; `column_offsets` maps them back), so the
  timed statement is still checked and still binds its names;
- `x = !cmd`, `x = %magic` -> `x = __ipylsp_any__()` (the name is bound, its type unknown);
- any other magic, escape or help line -> `pass`, at its indentation (a block stays a block);
- `%%capture out` binds `out`; `%%time`, `%%timeit`, `%%prun`, `%%capture`, `%%debug` keep
  their Python body; any other cell magic (`%%bash`, `%%html`, `%%writefile`, ...) is foreign
  text and becomes blank lines.

Lines inside a string, a bracket or after a backslash continuation are never touched: a
small scanner (`logical_starts`) finds where logical lines begin, the way IPython's own
transformers only look at the start of a logical line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

ANY_CALL = "__ipylsp_any__()"
"""What a magic's or a shell escape's value becomes; the document's header defines it."""

PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "prun", "capture", "debug"})
"""Cell magics whose body is Python the kernel runs in the user namespace (or times)."""

_TIMED = re.compile(r"%(time)\s+(?!-)")
"""`%time stmt`: the statement is the cell's own code (options would make it `%time -x`)."""
_ASSIGNED_ESCAPE = re.compile(r"(?P<target>[A-Za-z_][\w.]*(?:\s*,\s*[A-Za-z_][\w.]*)*\s*=)\s*[%!]")
_CELL_MAGIC = re.compile(r"%%(?P<name>[\w.]+)(?P<args>.*)")
_OPTION = re.compile(r"\s*--?[\w-]+(?:\s+\d+)?")
"""An option of a cell magic's head (`-n 10`, `--no-stdout`, `-q`)."""
_FUTURE = re.compile(r"from\s+__future__\s+import\b")


@dataclass(frozen=True, slots=True)
class NeutralCell:
    """A cell as plain Python: same number of lines as the source.

    `column_offsets[i]`: characters removed at the start of line i (0 but for `%time stmt`;
    negative where text was put before, see `document.RAISE_GUARD`); a column c on that line
    of `text` is column c + offset in the cell."""

    text: str
    column_offsets: tuple[int, ...]
    foreign: bool = False
    """A whole cell of another language (`%%bash`, `%%html`, ...): nothing to check."""


def neutralize(source: str) -> NeutralCell:
    """The cell with IPython syntax replaced line for line (see the module docstring)."""
    lines = source.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    offsets = [0] * len(lines)
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is None:
        return NeutralCell("\n".join(lines), tuple(offsets))
    indent = lines[first][: len(lines[first]) - len(lines[first].lstrip())]
    if indent:  # IPython runs an all-indented cell dedented (its `leading_indent`)
        for i, line in enumerate(lines):
            if line.startswith(indent):
                lines[i], offsets[i] = line[len(indent):], len(indent)
    if lines[first].startswith("%%"):
        return _cell_magic(lines, first, offsets)
    starts = logical_starts(lines)
    out = list(lines)
    for i, line in enumerate(lines):
        if not starts[i]:
            continue
        replaced = _line(line)
        if replaced is not None:
            out[i], cut = replaced
            offsets[i] += cut
    return NeutralCell("\n".join(out), tuple(offsets))


def _cell_magic(lines: list[str], first: int, offsets: list[int]) -> NeutralCell:
    match = _CELL_MAGIC.match(lines[first].strip())
    name = match.group("name") if match else ""
    if name not in PYTHON_CELL_MAGICS:
        return NeutralCell("\n".join("" for _ in lines), tuple(offsets), foreign=True)
    body = lines[first + 1:]
    head, cut = "", 0
    if match is not None and name in ("capture", "timeit"):
        args = match.group("args")
        start = 0
        while (option := _OPTION.match(args, start)) is not None:
            start = option.end()
        rest = args[start:].strip()
        targets = [t for t in args.split() if not t.startswith("-")]
        if name == "capture" and len(targets) == 1 and targets[0].isidentifier():
            head = f"{targets[0]} = {ANY_CALL}"  # `%%capture [options] out [options]`
        elif name == "timeit" and rest:  # `%%timeit [options] setup statement`
            head, cut = rest, lines[first].index(rest, len("%%timeit"))
    inner = neutralize("\n".join(body))
    text = "\n".join([*([""] * first), head, inner.text])
    return NeutralCell(text, (*offsets[:first], offsets[first] + cut, *(
        a + b for a, b in zip(offsets[first + 1:], inner.column_offsets, strict=True))))


def _line(line: str) -> tuple[str, int] | None:
    """The replacement of one logical line's first physical line, or None to keep it."""
    stripped = line.lstrip()
    indent = line[: len(line) - len(stripped)]
    if not stripped or stripped.startswith("#"):
        return None
    if _FUTURE.match(stripped):  # first in the cell, not first in the document
        return indent + "pass", 0
    if stripped.startswith(("%", "!")):
        timed = _TIMED.match(stripped)
        if timed is not None and not stripped.startswith("%%"):
            cut = timed.end()
            return indent + stripped[cut:], cut
        return indent + "pass", 0
    assigned = _ASSIGNED_ESCAPE.match(stripped)
    if assigned is not None:
        return f"{indent}{assigned.group('target')} {ANY_CALL}", 0
    if _is_help(stripped):
        return indent + "pass", 0
    return None


def _is_help(stripped: str) -> bool:
    """`obj?`, `obj.attr??`, `?obj`, `*pat*?`: IPython's help syntax, never Python."""
    if stripped.startswith("?"):
        return True
    text = stripped.rstrip()
    return text.endswith("?") and not any(c in text for c in "#'\"")


def logical_starts(lines: list[str]) -> list[bool]:
    """For each physical line: does a logical line begin there (not inside a string, a
    bracket, or after a backslash)? A tolerant scanner: cells need not be valid Python."""
    starts: list[bool] = []
    depth = 0
    quote = ""  # the open string's delimiter: ' " ''' or """ ("" when none)
    continued = False
    for line in lines:
        starts.append(depth == 0 and not quote and not continued)
        continued = commented = False
        i, n = 0, len(line)
        while i < n:
            c = line[i]
            if quote:
                if c == "\\":
                    i += 2
                    continue
                if line.startswith(quote, i):
                    i += len(quote)
                    quote = ""
                    continue
                i += 1
                continue
            if c == "#":
                commented = True  # a backslash ending a comment continues nothing
                break
            if c in "'\"":
                triple = line[i : i + 3]
                quote = triple if triple in ("'''", '"""') else c
                i += len(quote)
                continue
            if c in "([{":
                depth += 1
            elif c in ")]}":
                depth = max(0, depth - 1)
            i += 1
        if quote in ("'", '"'):  # an unterminated one-line string ends with its line
            quote = ""
        continued = line.rstrip().endswith("\\") and not quote and not commented
    return starts
