"""The one place that knows about position encodings on the wire.

LSP positions are (line, character) where "character" counts code units of the negotiated
encoding: UTF-16 by default, or UTF-8 / UTF-32 when both sides agree. Inside ipylsp a column is
a count of Unicode code points. Lines are split the LSP way: "\\n", "\\r\\n" and "\\r" all end a
line.
"""

from __future__ import annotations

import re
from typing import Literal

Encoding = Literal["utf-8", "utf-16", "utf-32"]

_LINE_END = re.compile(r"\r\n|\r|\n")
_WORD = re.compile(r"\w+")


def split_lines(text: str) -> list[str]:
    """Lines without their terminators; a trailing terminator yields a last empty line."""
    return _LINE_END.split(text)


def word_at(text: str, line: int, column: int) -> str:
    """The identifier at (line, column), touching its start or end; "" when there is none."""
    lines = split_lines(text)
    if line >= len(lines):
        return ""
    for match in _WORD.finditer(lines[line]):
        if match.start() <= column <= match.end():
            return match.group()
    return ""


def _units(ch: str, encoding: Encoding) -> int:
    cp = ord(ch)
    if encoding == "utf-32":
        return 1
    if encoding == "utf-16":
        return 2 if cp > 0xFFFF else 1
    if cp < 0x80:
        return 1
    if cp < 0x800:
        return 2
    if cp < 0x10000:
        return 3
    return 4


def wire_to_column(line_text: str, units: int, encoding: Encoding) -> int:
    """Code-point column for `units` code units into `line_text` (clamped to the line)."""
    if units <= 0:
        return 0
    if encoding == "utf-32" or line_text.isascii():
        return min(units, len(line_text))
    seen = 0
    for index, ch in enumerate(line_text):
        if seen >= units:
            return index
        seen += _units(ch, encoding)
        if seen > units:  # a position inside a surrogate pair / multibyte char: round down
            return index
    return len(line_text)


def column_to_wire(line_text: str, column: int, encoding: Encoding) -> int:
    """Code units of the first `column` code points of `line_text`."""
    head = line_text[: max(column, 0)]
    if encoding == "utf-32" or head.isascii():
        return len(head)
    if encoding == "utf-16":
        return len(head.encode("utf-16-le")) // 2
    return len(head.encode("utf-8", "surrogatepass"))


class LineIndex:
    """Lines of one document version, for converting many positions cheaply."""

    __slots__ = ("_lines",)

    def __init__(self, text: str) -> None:
        self._lines = split_lines(text)

    def __len__(self) -> int:
        return len(self._lines)

    def line(self, number: int) -> str:
        if 0 <= number < len(self._lines):
            return self._lines[number]
        return ""

    def to_column(self, line: int, units: int, encoding: Encoding) -> int:
        return wire_to_column(self.line(line), units, encoding)

    def to_wire(self, line: int, column: int, encoding: Encoding) -> int:
        return column_to_wire(self.line(line), column, encoding)


def choose_encoding(offered: object) -> Encoding:
    """The server picks from our list; anything unexpected means the default, UTF-16."""
    if offered == "utf-8":
        return "utf-8"
    if offered == "utf-32":
        return "utf-32"
    return "utf-16"
