"""Positions that models get right: a 1-based `line` plus a `symbol` on it (and which
`occurrence`), or a 1-based `line` and `column` in characters.

Models miscount columns, so a lookup by name must not depend on one: the symbol is found on
the line as a whole word (an identifier is not matched inside a longer one), and a symbol
that is not there is an error that shows the line, so the model can correct itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ipylsp.agent.errors import ToolError
from ipylsp.model.positions import split_lines

MAX_LINE_SHOWN = 160


@dataclass(frozen=True, slots=True)
class Spot:
    """A resolved position: 0-based line and code-point column."""

    line: int
    column: int


def _shown(line_text: str) -> str:
    text = line_text.strip()
    return text if len(text) <= MAX_LINE_SHOWN else text[: MAX_LINE_SHOWN - 1] + "…"


def occurrences(line_text: str, symbol: str) -> list[int]:
    """Columns where `symbol` stands on the line as a whole word (or anywhere, for a symbol
    that is not an identifier, such as an operator)."""
    if not symbol:
        return []
    word = re.escape(symbol)
    before = r"(?<![\w$])" if re.match(r"[\w$]", symbol) else ""
    after = r"(?![\w$])" if re.search(r"[\w$]$", symbol) else ""
    return [m.start() for m in re.finditer(before + word + after, line_text)]


def resolve(
    text: str,
    line: int,
    *,
    column: int | None = None,
    symbol: str | None = None,
    occurrence: int = 1,
) -> Spot:
    """The 0-based spot for 1-based `line` with `column` or `symbol` (`occurrence`-th)."""
    lines = split_lines(text)
    if not 1 <= line <= len(lines):
        raise ToolError(
            "invalid_argument", f"line {line} is outside the file (it has {len(lines)} lines)"
        )
    line_text = lines[line - 1]
    if symbol is not None:
        found = occurrences(line_text, symbol)
        if not found:
            raise ToolError(
                "symbol_not_found",
                f"{symbol!r} is not on line {line}, which reads: "
                f"{_shown(line_text)!r}; pass a name that appears on that line",
            )
        if not 1 <= occurrence <= len(found):
            raise ToolError(
                "invalid_argument",
                f"{symbol!r} appears {len(found)} time(s) on line {line}; "
                f"occurrence must be 1 to {len(found)}",
            )
        return Spot(line - 1, found[occurrence - 1])
    if column is None:
        raise ToolError(
            "missing_argument", "give `symbol` (a name on that line) or `column` (1-based)"
        )
    if not 1 <= column <= len(line_text) + 1:
        raise ToolError(
            "invalid_argument",
            f"column {column} is outside line {line} ({len(line_text)} characters); "
            f"prefer `symbol` with the name at that place",
        )
    return Spot(line - 1, column - 1)
