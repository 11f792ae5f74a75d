"""Edits applied in memory and shown as unified diffs (analysis/edits.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ipylsp.model.diagnostics import Range
from ipylsp.model.edits import EditConflict, TextEdit, apply, preview, unified_diff

A = Path("/ws/a.py")


def edit(line: int, col: int, end_line: int, end_col: int, text: str, path: Path = A) -> TextEdit:
    return TextEdit(path, Range.of(line, col, end_line, end_col), text)


def test_edits_apply_against_the_original_text_in_any_order() -> None:
    text = "x = «é» + old\nold()\n"
    edits = [edit(1, 0, 1, 3, "new"), edit(0, 10, 0, 13, "new")]
    assert apply(text, edits) == "x = «é» + new\nnew()\n"


def test_an_insert_at_the_end_and_a_multi_line_replacement() -> None:
    assert apply("a\nb\nc", [edit(0, 1, 2, 0, "-"), edit(2, 1, 2, 1, "!")]) == "a-c!"
    assert apply("a\n", [edit(1, 0, 1, 0, "b\n")]) == "a\nb\n"


@pytest.mark.parametrize(
    "edits",
    [[edit(0, 0, 0, 3, "x"), edit(0, 2, 0, 4, "y")], [edit(5, 0, 5, 1, "x")],
     [edit(0, 9, 0, 9, "x")]],
)
def test_overlapping_or_outside_edits_are_refused(edits: list[TextEdit]) -> None:
    with pytest.raises(EditConflict):
        apply("abcd\n", edits)


def test_preview_is_a_diff_per_file_and_nothing_for_no_change() -> None:
    b = Path("/ws/b.py")
    texts = {A: "def f():\n    pass\n", b: "from a import f\nf()"}
    edits = [edit(0, 4, 0, 5, "g"), edit(0, 14, 0, 15, "g", b), edit(1, 0, 1, 1, "g", b)]
    assert preview(edits, texts, {A: "a.py", b: "b.py"}).splitlines() == [
        "--- a/a.py", "+++ b/a.py", "@@ -1,2 +1,2 @@", "-def f():", "+def g():", "     pass",
        "--- a/b.py", "+++ b/b.py", "@@ -1,2 +1,2 @@", "-from a import f", "-f()",
        "+from a import g", "+g()",
    ]
    assert unified_diff("a.py", "same\n", "same\n") == ""
