"""Positions: the one module that converts wire columns (UTF-16/UTF-8/UTF-32) to code points."""

from __future__ import annotations

import pytest

from ipylsp.model.positions import (
    Encoding,
    LineIndex,
    choose_encoding,
    column_to_wire,
    split_lines,
    wire_to_column,
)

EMOJI = "a😀b"  # U+1F600: 1 code point, 2 UTF-16 units, 4 UTF-8 bytes
MIXED = "aé名😀b"  # 1 + 2 + 3 + 4 + 1 UTF-8 bytes


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", [""]),
        ("a", ["a"]),
        ("a\n", ["a", ""]),
        ("a\nb", ["a", "b"]),
        ("a\r\nb", ["a", "b"]),
        ("a\rb", ["a", "b"]),
        ("a\r\n\r\nb", ["a", "", "b"]),
        ("a\r\rb", ["a", "", "b"]),
        ("a\n\rb", ["a", "", "b"]),
        ("\r\n", ["", ""]),
        ("a\x0cb\x85c\u2028d", ["a\x0cb\x85c\u2028d"]),  # not LSP line ends
    ],
)
def test_split_lines_uses_lsp_line_ends(text: str, expected: list[str]) -> None:
    assert split_lines(text) == expected


@pytest.mark.parametrize(
    ("line", "units", "encoding", "column"),
    [
        (EMOJI, 0, "utf-16", 0),
        (EMOJI, 1, "utf-16", 1),
        (EMOJI, 2, "utf-16", 1),  # inside the surrogate pair: rounds down
        (EMOJI, 3, "utf-16", 2),
        (EMOJI, 4, "utf-16", 3),
        (EMOJI, 99, "utf-16", 3),  # clamped to the line
        (EMOJI, -5, "utf-16", 0),
        (EMOJI, 1, "utf-8", 1),
        (EMOJI, 3, "utf-8", 1),  # inside the 4-byte sequence
        (EMOJI, 5, "utf-8", 2),
        (MIXED, 3, "utf-8", 2),
        (MIXED, 6, "utf-8", 3),
        (MIXED, 10, "utf-8", 4),
        (MIXED, 11, "utf-8", 5),
        (MIXED, 3, "utf-16", 3),  # a, é, 名 are one unit each; the emoji two
        (MIXED, 4, "utf-16", 3),
        (MIXED, 5, "utf-16", 4),
        (MIXED, 4, "utf-32", 4),
        ("plain ascii", 6, "utf-16", 6),
        ("plain ascii", 60, "utf-8", 11),
        ("", 3, "utf-16", 0),
    ],
)
def test_wire_to_column(line: str, units: int, encoding: Encoding, column: int) -> None:
    assert wire_to_column(line, units, encoding) == column


@pytest.mark.parametrize(
    ("line", "column", "encoding", "units"),
    [
        (EMOJI, 0, "utf-16", 0),
        (EMOJI, 1, "utf-16", 1),
        (EMOJI, 2, "utf-16", 3),
        (EMOJI, 3, "utf-16", 4),
        (EMOJI, 2, "utf-8", 5),
        (EMOJI, 2, "utf-32", 2),
        (MIXED, 4, "utf-8", 10),
        (MIXED, 5, "utf-16", 6),
        (EMOJI, 99, "utf-16", 4),  # past the end: the whole line
        (EMOJI, -1, "utf-16", 0),
    ],
)
def test_column_to_wire(line: str, column: int, encoding: Encoding, units: int) -> None:
    assert column_to_wire(line, column, encoding) == units


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16", "utf-32"])
@pytest.mark.parametrize(
    "line", [EMOJI, MIXED, "名前 = 'x'", "tab\there", "\U0001f469\u200d\U0001f4bb!"]
)
def test_round_trip_at_every_code_point(line: str, encoding: Encoding) -> None:
    for column in range(len(line) + 1):
        units = column_to_wire(line, column, encoding)
        assert wire_to_column(line, units, encoding) == column


def test_line_index_converts_per_line_and_tolerates_bad_lines() -> None:
    index = LineIndex("x = 1\r\ns = '😀' + y\n")
    assert len(index) == 3
    assert index.line(1) == "s = '😀' + y"
    assert index.line(3) == ""
    assert index.line(-1) == ""
    # "y" is code point 11 on line 1; in UTF-16 it is unit 12 (the emoji takes two).
    assert index.to_wire(1, 11, "utf-16") == 12
    assert index.to_column(1, 12, "utf-16") == 11
    assert index.to_wire(1, 11, "utf-8") == 14
    assert index.to_column(1, 14, "utf-8") == 11
    assert index.to_column(7, 4, "utf-16") == 0  # a line past the end has no columns


@pytest.mark.parametrize(
    ("offered", "chosen"),
    [
        ("utf-8", "utf-8"),
        ("utf-16", "utf-16"),
        ("utf-32", "utf-32"),
        ("UTF-8", "utf-16"),
        (None, "utf-16"),
        (["utf-8"], "utf-16"),
    ],
)
def test_choose_encoding_defaults_to_utf16(offered: object, chosen: str) -> None:
    assert choose_encoding(offered) == chosen
