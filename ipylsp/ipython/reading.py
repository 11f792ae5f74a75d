"""How the kernel reads a cell: IPython's own transforms, and where each line came from.

The kernel runs a cell as `shell.transform_cell(raw)`: its input transformer manager's
cleanup transforms (leading blank lines, leading indentation, `>>>`/`...` and
`In [1]:`/`...:` prompts), its line transforms (a cell magic becomes one
`run_cell_magic` call), its token transformers (`a = %x`, `a = !x`, `%x`, `!x`, `obj?`, one
at a time), then, for a one-line result, the prefilters (automagic, aliases, autocall: they
depend on the namespace) and `input_transformers_post`. `kernel_reader(shell)` makes the
analysis's `Reading` from the kernel's own text: for a cell that ran, the text the kernel
stored as it ran it (`history_manager.input_hist_parsed`, so the prefilters saw the
namespace of that moment); for code not run, `shell.transform_cell` now. The way back to the
cell's lines comes from running the same manager's steps one at a time and following each
line through each step: a line kept, cut at its start (a prompt, indentation: its columns
shift), rewritten in place, or folded into the line above. No IPython syntax is recognised
here: only IPython's own transforms decide.

`static_reader()` reads with a fresh `TransformerManager` (no shell, no namespace): what a
kernel would make of code where none runs (an agent's preflight over MCP).

Owns the reading of cells; may not check, display or keep anything.
"""

from __future__ import annotations

import difflib
import functools
from dataclasses import dataclass
from typing import Any

from ipylsp.analysis.cells.neutralize import (
    Reader,
    Reading,
    ReadLine,
    plain_reading,
    split_cell,
)

_STEPS_LIMIT = 500
"""As IPython's own `TRANSFORM_LOOP_LIMIT`: a token transformer that never settles."""


@dataclass(frozen=True, slots=True)
class _Origin:
    """Where a line of the kernel's text comes from: the cell's `line`, after `offset`
    characters cut at its start; `written`: the cell's text when the kernel rewrote it."""

    line: int
    offset: int
    written: str | None = None


class _Unmapped(Exception):
    """A step made lines out of nothing (a custom transformer): no way back to the cell."""


def kernel_reader(shell: Any) -> Reader:
    """The live shell's reader (see the module docstring)."""

    def read(source: str, count: int | None = None, /) -> Reading:
        manager = shell.input_transformer_manager
        ran = _ran_text(shell, source, count)
        try:
            text = ran if ran is not None else shell.transform_cell(source)
        except Exception:  # the kernel itself fails on it before running (a SyntaxError)
            return plain_reading(source)
        return read_with(manager, source, text)

    return read


@functools.cache
def static_reader() -> Reader:
    """A reader with IPython's default transforms and no namespace (no kernel runs)."""
    from IPython.core.inputtransformer2 import TransformerManager

    manager = TransformerManager()  # type: ignore[no-untyped-call]

    def read(source: str, count: int | None = None, /) -> Reading:
        try:
            text = manager.transform_cell(source)
        except Exception:
            return plain_reading(source)
        return read_with(manager, source, text)

    return read


def read_with(manager: Any, source: str, kernel_text: str, *, stepwise: bool = False
              ) -> Reading:
    """`kernel_text` (what the kernel runs for `source`) placed on the cell's lines, found by
    following `manager`'s steps. The token transformers' rewrites are found in one diff
    (each retokenizes the whole cell: following them one at a time costs as much again as
    the kernel's own transform), or, when that diff is ambiguous or with `stepwise`, one
    transformer at a time."""
    cell = split_cell(source)
    text = kernel_text.replace("\r\n", "\n").replace("\r", "\n")
    if not text.endswith("\n"):
        text += "\n"  # the history keeps it without
    if text.rstrip("\n") == "\n".join(cell).rstrip("\n"):
        return plain_reading(source)  # plain Python: the kernel ran the cell as written
    final = text.splitlines(keepends=True)
    try:
        lines, origins, folded = _cleaned(manager, cell)
        try:  # the token transformers' rewrites, found in one diff
            if stepwise:
                raise _Unmapped
            placed = _matched(lines, final, origins, dict(folded))
        except _Unmapped:  # ambiguous: follow the transformers one step at a time
            lines, origins = _token_steps(manager, lines, origins, folded)
            placed = _follow(lines, final, origins, folded), folded
        (lines, origins), folded = placed
        return _placed(cell, lines, origins, folded)
    except Exception:  # _Unmapped, or a transformer of the shell's configuration raised
        return plain_reading(source)


def _cleaned(manager: Any, cell: list[str]
             ) -> tuple[list[str], list[_Origin], dict[int, _Origin]]:
    """The manager's cleanup and line transforms (prompts, indentation, a cell magic) run one
    at a time, as `transform_cell` runs them: the lines, their origins, and the cell's lines
    folded away (by line)."""
    source = "\n".join(cell)
    if not source.endswith("\n"):
        source += "\n"
    lines = source.splitlines(keepends=True)
    origins = _chunk_origins(lines)
    folded: dict[int, _Origin] = {}
    for transform in [*manager.cleanup_transforms, *manager.line_transforms]:
        lines, origins = _follow(lines, transform(lines), origins, folded)
    return lines, origins, folded


def _token_steps(manager: Any, lines: list[str], origins: list[_Origin],
                 folded: dict[int, _Origin]) -> tuple[list[str], list[_Origin]]:
    """The token transformers one at a time (each retokenizes the cell: the slow way)."""
    for _ in range(_STEPS_LIMIT):
        changed, after = manager.do_one_token_transform(lines)
        if not changed:
            break
        lines, origins = _follow(lines, after, origins, folded)
    return lines, origins


def _matched(before: list[str], after: list[str], origins: list[_Origin],
             folded: dict[int, _Origin]
             ) -> tuple[tuple[list[str], list[_Origin]], dict[int, _Origin]]:
    """The origins of the kernel's final lines from the cleaned ones in one line diff: each
    token transformer (and a prefilter) rewrites one logical line into one line, on its
    first physical line, folding the backslash-continued lines after it. Anything else
    (a rewrite spanning brackets, lines made out of nothing, a diff that pairs lines
    another way) raises `_Unmapped`."""
    moved: list[_Origin] = []
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            moved.extend(origins[i1:i2])
            continue
        if j2 - j1 == i2 - i1:  # line for line
            moved.extend(_moved(origins[i], before[i], after[j1 + i - i1])
                         for i in range(i1, i2))
            continue
        starts = [i for i in range(i1, i2) if i == i1 or not before[i - 1].endswith("\\\n")]
        if len(starts) != j2 - j1:  # lines removed or made, not folded into a rewrite
            raise _Unmapped
        for j, i in zip(range(j1, j2), starts, strict=True):
            moved.append(_moved(origins[i], before[i], after[j]))
        for i in set(range(i1, i2)) - set(starts):
            folded[origins[i].line] = _Origin(origins[i].line, origins[i].offset,
                                              _written(origins[i], before[i]))
    return (after, moved), folded


def _chunk_origins(chunks: list[str]) -> list[_Origin]:
    """Where each of IPython's lines (`str.splitlines`, which also splits at form feeds and
    other separators) starts in the cell's lines."""
    origins = []
    line = column = 0
    for chunk in chunks:
        origins.append(_Origin(line, column))
        if chunk.endswith("\n"):
            line, column = line + 1, 0
        else:
            column += len(chunk)
    return origins


def _follow(before: list[str], after: list[str], origins: list[_Origin],
            folded: dict[int, _Origin]) -> tuple[list[str], list[_Origin]]:
    """The origins of `after`, one step from `before`: the lines both share at the start and
    at the end are the same lines; between them, line for line, a line is kept, cut at its
    start or rewritten; fewer lines than before are the first ones of the changed run (a
    magic continued over lines becomes one call on its first line), the rest folded."""
    if after == before:
        return after, origins
    n, m = len(before), len(after)
    head = 0
    while head < min(n, m) and before[head] == after[head]:
        head += 1
    tail = 0
    while tail < min(n, m) - head and before[n - 1 - tail] == after[m - 1 - tail]:
        tail += 1
    old, new = before[head:n - tail], after[head:m - tail]
    if len(new) > len(old):
        raise _Unmapped
    moved = [_moved(origins[head + i], old[i], now) for i, now in enumerate(new)]
    for i in range(len(new), len(old)):
        origin = origins[head + i]
        folded[origin.line] = _Origin(origin.line, origin.offset,
                                      _written(origin, old[i]))
    return after, [*origins[:head], *moved, *origins[n - tail:]]


def _moved(origin: _Origin, was: str, now: str) -> _Origin:
    if now == was:
        return origin
    if was.endswith(now):  # a prompt or indentation cut at the start
        return _Origin(origin.line, origin.offset + len(was) - len(now), origin.written)
    return _Origin(origin.line, origin.offset, _written(origin, was))


def _written(origin: _Origin, was: str) -> str:
    return origin.written if origin.written is not None else was.rstrip("\n")


def _placed(cell: list[str], lines: list[str], origins: list[_Origin],
            folded: dict[int, _Origin]) -> Reading:
    """The kernel's lines on the cell's lines; a line split by IPython but not by the cell
    (a form feed) is joined again on its first part's line."""
    texts: dict[int, tuple[str, _Origin]] = {}
    pending = ""
    first: _Origin | None = None
    for line, origin in zip(lines, origins, strict=True):
        first = first or origin
        pending += line
        if line.endswith("\n"):
            _place(texts, pending.removesuffix("\n"), first)
            pending, first = "", None
    if first is not None:
        _place(texts, pending, first)
    out = []
    for index, own in enumerate(cell):
        if index in texts:
            text, origin = texts[index]
            out.append(ReadLine(text, origin.offset, origin.written))
        elif index in folded:
            gone = folded[index]
            out.append(ReadLine("", gone.offset, gone.written or ""))
        else:  # the cell's last, empty line (IPython adds the newline that ends it)
            out.append(ReadLine("", 0, None if not own.strip() else own))
    return Reading(tuple(out))


def _place(texts: dict[int, tuple[str, _Origin]], text: str, origin: _Origin) -> None:
    if origin.line in texts:
        raise _Unmapped
    texts[origin.line] = (text, origin)


def _ran_text(shell: Any, source: str, count: int | None) -> str | None:
    """The text the kernel stored for cell `count` as it ran it (after every transform),
    when its history holds that cell; else None."""
    if count is None:
        return None
    history = getattr(shell, "history_manager", None)
    raw = getattr(history, "input_hist_raw", None)
    parsed = getattr(history, "input_hist_parsed", None)
    if not isinstance(raw, list) or not isinstance(parsed, list) or len(raw) != len(parsed):
        return None
    wanted = source.rstrip("\n")
    candidates = [count] if 0 <= count < len(raw) else []
    candidates += range(len(raw) - 1, max(len(raw) - 4, 0) - 1, -1)  # `exit` is not stored
    for index in candidates:
        if raw[index] == wanted and isinstance(parsed[index], str):
            return str(parsed[index])
    return None
