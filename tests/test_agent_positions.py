"""Positions by symbol and column (agent/positions.py): whole words, occurrences, and errors
that show the model the line it asked about."""

from __future__ import annotations

import pytest

from ipylsp.agent.errors import CODES, ToolError
from ipylsp.agent.positions import Spot, occurrences, resolve

TEXT = "def total(items):\n    subtotal = sum(items) + total_tax(items)\n    return «é» or total\n"


def test_a_symbol_is_found_as_a_whole_word() -> None:
    line = TEXT.splitlines()[1]
    assert occurrences(line, "total") == []  # not inside subtotal or total_tax
    assert occurrences(line, "items") == [19, 38]
    assert occurrences(line, "+") == [26]  # not an identifier: found anywhere


def test_line_and_symbol_with_occurrence_in_code_points() -> None:
    assert resolve(TEXT, 1, symbol="total") == Spot(0, 4)
    assert resolve(TEXT, 2, symbol="items", occurrence=2) == Spot(1, 38)
    assert resolve(TEXT, 3, symbol="total") == Spot(2, 18)  # after «é»: characters, not bytes


def test_line_and_column_are_one_based() -> None:
    assert resolve(TEXT, 2, column=5) == Spot(1, 4)
    assert resolve(TEXT, 1, column=18) == Spot(0, 17)  # the end of the line is a position


@pytest.mark.parametrize(
    ("kwargs", "code", "message"),
    [
        ({"line": 9, "symbol": "x"}, "invalid_argument",
         "line 9 is outside the file (it has 4 lines)"),
        ({"line": 2, "symbol": "total"}, "symbol_not_found",
         "'total' is not on line 2, which reads: 'subtotal = sum(items) + total_tax(items)'; "
         "pass a name that appears on that line"),
        ({"line": 2, "symbol": "items", "occurrence": 3}, "invalid_argument",
         "'items' appears 2 time(s) on line 2; occurrence must be 1 to 2"),
        ({"line": 2}, "missing_argument",
         "give `symbol` (a name on that line) or `column` (1-based)"),
        ({"line": 1, "column": 40}, "invalid_argument",
         "column 40 is outside line 1 (17 characters); prefer `symbol` with the name at that "
         "place"),
    ],
)
def test_errors_say_what_to_do_next(kwargs: dict[str, object], code: str, message: str) -> None:
    line = kwargs.pop("line")
    assert isinstance(line, int)
    with pytest.raises(ToolError) as caught:
        resolve(TEXT, line, **kwargs)  # type: ignore[arg-type]
    assert (caught.value.code, caught.value.message) == (code, message)
    assert caught.value.code in CODES
