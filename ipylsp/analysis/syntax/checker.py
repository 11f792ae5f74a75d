"""What a syntax checker is (`Checker`: a text in, its parse errors out) and what every one
shares: the source and server id, the cap, positions, diagnostics.

Its own module so that the per-format checkers (`python`, `data`) and the dispatch in the
package share these without importing each other.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ipylsp.model.diagnostics import Diagnostic, Range, Severity

SOURCE = "ipylsp-syntax"
SERVER_ID = "syntax"
MAX_DIAGNOSTICS = 100
"""At most this many diagnostics per file (JSON Lines can have one per line)."""

Checker = Callable[[str], tuple[Diagnostic, ...]]

_LINE_END = re.compile(r"\r\n|\r|\n")
BOM = "\ufeff"


def offset_to_position(text: str, offset: int) -> tuple[int, int]:
    """0-based (line, code-point column) of character `offset` in `text`, LSP line ends.

    An offset between the CR and LF of a CRLF is the end of its line; offsets are clamped.
    """
    offset = min(max(offset, 0), len(text))
    line = 0
    line_start = 0
    for match in _LINE_END.finditer(text, 0, offset):
        if match.group() == "\r" and match.end() == offset and text[offset : offset + 1] == "\n":
            return line, match.start() - line_start  # inside a CRLF: the end of this line
        line += 1
        line_start = match.end()
    return line, offset - line_start


def make_diagnostic(
    line: int,
    column: int,
    end_line: int,
    end_column: int,
    message: str,
    *,
    code: str | None = None,
    severity: Severity = Severity.ERROR,
) -> Diagnostic:
    return Diagnostic(
        range=Range.of(line, column, end_line, end_column),
        severity=severity,
        message=message,
        source=SOURCE,
        code=code,
        server_id=SERVER_ID,
    )


def point(lines: list[str], line: int, column: int, message: str, **kw: Any) -> Diagnostic:
    """A one-character range at (line, column) clamped to the text (empty at a line's end)."""
    line = min(max(line, 0), len(lines) - 1)
    text = lines[line]
    column = min(max(column, 0), len(text))
    end = column + 1 if column < len(text) else column
    return make_diagnostic(line, column, line, end, message, **kw)
