"""The delta: only what a write introduced, remapped through a diff of before -> after."""

from __future__ import annotations

import random

import pytest

from ipylsp.analysis import textdiff
from ipylsp.analysis.delta import compute_delta, identity, normalize_message, remap_range
from ipylsp.model import positions
from ipylsp.model.diagnostics import Diagnostic, Range, Severity


def undefined(line: int, column: int, name: str = "foo", **kw: object) -> Diagnostic:
    """Pyright's undefined-variable error on `name` at (line, column)."""
    values: dict[str, object] = {
        "range": Range.of(line, column, line, column + len(name)),
        "severity": Severity.ERROR,
        "message": f'"{name}" is not defined',
        "source": "Pyright",
        "code": "reportUndefinedVariable",
        "server_id": "pyright",
    }
    values.update(kw)
    return Diagnostic(**values)  # type: ignore[arg-type]


def diag(
    line: int,
    column: int,
    end_column: int,
    message: str,
    *,
    end_line: int | None = None,
    code: str | None = None,
    severity: Severity = Severity.ERROR,
    server: str = "pyright",
) -> Diagnostic:
    return Diagnostic(
        Range.of(line, column, line if end_line is None else end_line, end_column),
        severity,
        message,
        source=server.capitalize(),
        code=code,
        server_id=server,
    )


# --- remapping ranges -----------------------------------------------------------------------


# Each row: before, after, a range in before, where it lands in after (None: it does not survive).
REMAPS = [
    pytest.param(
        "a = foo\nb = 1\n",
        "import os\nimport sys\na = foo\nb = 1\n",
        Range.of(0, 4, 0, 7),
        Range.of(2, 4, 2, 7),
        id="lines-inserted-above-move-the-range-down",
    ),
    pytest.param(
        "import os\nimport sys\n\na = foo\n",
        "a = foo\n",
        Range.of(3, 4, 3, 7),
        Range.of(0, 4, 0, 7),
        id="lines-deleted-above-move-the-range-up",
    ),
    pytest.param(
        "x = foo + bar\n",
        "x = 1 + foo + bar\n",
        Range.of(0, 4, 0, 7),
        Range.of(0, 8, 0, 11),
        id="same-line-edit-shifts-columns",
    ),
    pytest.param(
        "x = foo + bar\n",
        "x = 1 + foo + bar\n",
        Range.of(0, 10, 0, 13),
        Range.of(0, 14, 0, 17),
        id="same-line-edit-shifts-later-columns",
    ),
    pytest.param(
        "x = some_long_prefix + foo\n",
        "x = foo\n",
        Range.of(0, 23, 0, 26),
        Range.of(0, 4, 0, 7),
        id="deletion-on-the-line-shifts-columns-left",
    ),
    # Code points, not UTF-16 units: the emoji counts as one column.
    pytest.param(
        "s = foo\n",
        's = "😀名前" + foo\n',
        Range.of(0, 4, 0, 7),
        Range.of(0, 12, 0, 15),
        id="emoji-and-cjk-inserted-before-the-column",
    ),
    pytest.param(
        "x = foo(1)\n",
        "x = bar(1)\n",
        Range.of(0, 4, 0, 7),
        None,
        id="range-inside-replaced-text-does-not-survive",
    ),
    pytest.param(
        "x = foo(1)\n",
        "x = bar(1)\n",
        Range.of(0, 7, 0, 10),
        Range.of(0, 7, 0, 10),
        id="unchanged-parentheses-around-a-replaced-call-still-map",
    ),
    pytest.param(
        "print(foo(a, b))\n",
        "print(foo(a, c, d))\n",
        Range.of(0, 6, 0, 15),
        Range.of(0, 6, 0, 18),
        id="range-containing-an-edit-survives",
    ),
    pytest.param(
        "a = 1\nb = foo\nc = 2\n",
        "a = 1\nc = 2\n",
        Range.of(1, 4, 1, 7),
        None,
        id="range-on-a-deleted-line-does-not-survive",
    ),
    pytest.param(
        "x = foo\n",
        "x = (foo\n",
        Range.of(0, 4, 0, 7),
        Range.of(0, 5, 0, 8),
        id="insertion-at-the-range-start-stays-outside-the-range",
    ),
    pytest.param(
        "x = foo\n",
        "x = (foo\n",
        Range.of(0, 4, 0, 4),
        Range.of(0, 5, 0, 5),
        id="empty-range-at-the-gap-sticks-to-the-following-character",
    ),
    pytest.param(
        "x = foo\n",
        "x = foo()\n",
        Range.of(0, 4, 0, 7),
        Range.of(0, 4, 0, 7),
        id="insertion-at-the-range-end-stays-outside-the-range",
    ),
    pytest.param(
        "def f(\n    a,\n):\n    pass\n",
        "# header\ndef f(\n    a, b,\n):\n    pass\n",
        Range.of(0, 0, 2, 2),
        Range.of(1, 0, 3, 2),
        id="multi-line-range-maps-both-ends",
    ),
    pytest.param(
        "a = foo",
        "# c\na = foo",
        Range.of(0, 4, 0, 99),
        Range.of(1, 4, 1, 7),
        id="positions-past-the-end-are-clamped",
    ),
    pytest.param(
        "a = foo",
        "# c\na = foo",
        Range.of(5, 0, 5, 0),
        Range.of(1, 7, 1, 7),
        id="lines-past-the-end-are-clamped",
    ),
    pytest.param(
        "a = 1\nb = foo\n",
        "a = 1\r\nb = foo\r\n",
        Range.of(1, 4, 1, 7),
        Range.of(1, 4, 1, 7),
        id="crlf-versus-lf-changes-nothing",
    ),
    pytest.param(
        "x = foo\ny = bar\nz = 3\n",
        "if cond:\n    x = foo\n    y = bar\n    z = 3\n",
        Range.of(0, 4, 0, 7),
        Range.of(1, 8, 1, 11),
        id="reindented-block-keeps-its-ranges",
    ),
    pytest.param(
        "x = foo\ny = bar\nz = 3\n",
        "if cond:\n    x = foo\n    y = bar\n    z = 3\n",
        Range.of(1, 4, 1, 7),
        Range.of(2, 8, 2, 11),
        id="reindented-block-keeps-its-later-ranges",
    ),
]


@pytest.mark.parametrize(("before", "after", "old", "new"), REMAPS)
def test_remap_range(before: str, after: str, old: Range, new: Range | None) -> None:
    assert remap_range(before, after, old) == new


# --- the delta ------------------------------------------------------------------------------


def test_unchanged_text_and_diagnostics_introduce_nothing() -> None:
    text = "a = foo\nb = bar\n"
    baseline = [undefined(0, 4), undefined(1, 4, "bar")]
    delta = compute_delta(text, text, baseline, list(baseline))
    assert delta.introduced == ()
    assert delta.fixed == ()
    assert delta.persisting == tuple(baseline)


def test_lines_inserted_above_existing_errors_report_only_the_new_one() -> None:
    before = "a = foo\nb = bar\n"
    after = "import os\nc = baz\na = foo\nb = bar\n"
    baseline = [undefined(0, 4), undefined(1, 4, "bar")]
    new = undefined(1, 4, "baz")
    current = [undefined(2, 4), new, undefined(3, 4, "bar")]
    delta = compute_delta(before, after, baseline, current)
    assert delta.introduced == (new,)
    assert delta.fixed == ()
    assert delta.persisting == (current[0], current[2])


def test_lines_deleted_above_existing_errors_introduce_nothing() -> None:
    before = "import os\nimport sys\nx = 1\na = foo\n"
    after = "a = foo\n"
    delta = compute_delta(before, after, [undefined(3, 4)], [undefined(0, 4)])
    assert (delta.introduced, delta.fixed) == ((), ())


def test_same_line_edit_shifting_columns_introduces_nothing() -> None:
    before = "x = foo + bar\n"
    after = "x = 1 + foo + bar\n"
    baseline = [undefined(0, 4), undefined(0, 10, "bar")]
    current = [undefined(0, 8), undefined(0, 14, "bar")]
    delta = compute_delta(before, after, baseline, current)
    assert (delta.introduced, delta.fixed) == ((), ())


def test_one_of_two_identical_errors_fixed_while_another_appears() -> None:
    before = "a = foo\nb = foo\n"
    after = "a = 1\nb = foo\nc = foo\n"
    baseline = [undefined(0, 4), undefined(1, 4)]
    current = [undefined(1, 4), undefined(2, 4)]
    delta = compute_delta(before, after, baseline, current)
    assert delta.introduced == (undefined(2, 4),)
    assert delta.fixed == (undefined(0, 4),)
    assert delta.persisting == (undefined(1, 4),)


def test_counts_matter_two_identical_errors_on_one_line_one_new() -> None:
    before = "x = foo + foo\n"
    after = "x = foo + foo + foo\n"
    baseline = [undefined(0, 4), undefined(0, 10)]
    current = [undefined(0, 4), undefined(0, 10), undefined(0, 16)]
    delta = compute_delta(before, after, baseline, current)
    assert delta.introduced == (undefined(0, 16),)
    assert delta.fixed == ()


def test_crlf_file_rewritten_with_lf_and_an_insertion() -> None:
    before = "a = 1\r\nb = foo\r\n"
    after = "a = 1\nz = bar\nb = foo\n"
    delta = compute_delta(
        before, after, [undefined(1, 4)], [undefined(1, 4, "bar"), undefined(2, 4)]
    )
    assert delta.introduced == (undefined(1, 4, "bar"),)
    assert delta.fixed == ()


def test_lone_cr_line_ends_count_as_lines() -> None:
    before = "a = 1\rb = foo\r"
    after = "# top\ra = 1\rb = foo\r"
    delta = compute_delta(before, after, [undefined(1, 4)], [undefined(2, 4)])
    assert (delta.introduced, delta.fixed) == ((), ())


def test_emoji_and_cjk_before_the_error_column() -> None:
    before = "名前 = foo\n"
    after = "名前 = '😀😀' + foo\n"
    # 名前 = '😀😀' + foo: "foo" starts at code point 12 (UTF-16 would say 14).
    assert remap_range(before, after, Range.of(0, 5, 0, 8)) == Range.of(0, 12, 0, 15)
    delta = compute_delta(before, after, [undefined(0, 5)], [undefined(0, 12)])
    assert (delta.introduced, delta.fixed) == ((), ())
    # On another line the same message is another problem.
    after2 = after + "y = foo\n"
    delta = compute_delta(before, after2, [undefined(0, 5)], [undefined(0, 12), undefined(1, 4)])
    assert delta.introduced == (undefined(1, 4),)


@pytest.mark.parametrize("before", [None, ""])
def test_new_file_introduces_everything(before: str | None) -> None:
    current = [undefined(0, 4), undefined(3, 0, "bar")]
    delta = compute_delta(before, "a = foo\n\n\nbar\n", [], current)
    assert delta.introduced == tuple(current)
    assert delta.fixed == ()


@pytest.mark.parametrize("after", [None, ""])
def test_deleted_file_fixes_everything(after: str | None) -> None:
    baseline = [undefined(0, 4), undefined(1, 4, "bar")]
    delta = compute_delta("a = foo\nb = bar\n", after, baseline, [])
    assert delta.introduced == ()
    assert delta.fixed == tuple(baseline)


def test_emptied_file_with_a_remaining_diagnostic() -> None:
    # A server may still say something about an empty file (a missing module docstring).
    baseline = [undefined(0, 4)]
    current = [diag(0, 0, 0, "Missing module docstring", code="D100", server="ruff")]
    delta = compute_delta("a = foo\n", "", baseline, current)
    assert delta.introduced == tuple(current)
    assert delta.fixed == tuple(baseline)


def test_rename_that_breaks_later_uses() -> None:
    before = 'def foo():\n    pass\n\nfoo()\nx: int = "s"\n'
    after = 'def bar():\n    pass\n\nfoo()\nx: int = "s"\n'
    old = diag(4, 9, 12, 'Type "str" is not assignable to "int"', code="reportAssignmentType")
    new = undefined(3, 0)
    moved_old = old  # line 4 is unchanged
    delta = compute_delta(before, after, [old], [new, moved_old])
    assert delta.introduced == (new,)
    assert delta.fixed == ()


def test_error_in_replaced_text_is_reported_again() -> None:
    before = "x = foo(1)\n"
    after = "x = bar(1)\n"
    old = diag(0, 4, 7, "Expected expression")
    new = diag(0, 4, 7, "Expected expression")
    delta = compute_delta(before, after, [old], [new])
    assert delta.introduced == (new,)
    assert delta.fixed == (old,)


def test_server_reporting_a_different_range_on_the_same_line_matches() -> None:
    before = "x = call(foo, 1)\n"
    after = "# comment\nx = call(foo, 1)\n"
    old = diag(0, 4, 16, 'Argument missing for parameter "y"', code="reportCallIssue")
    new = diag(1, 4, 8, 'Argument missing for parameter "y"', code="reportCallIssue")
    delta = compute_delta(before, after, [old], [new])
    assert (delta.introduced, delta.fixed) == ((), ())


GO_BEFORE = 'package p\n\nvar a int = "old"\n\nvar b int = "old"\n'
GO_MESSAGE = 'cannot use "old" (untyped string constant) as int value in variable declaration'


def go_error(line: int, column: int, end: int) -> Diagnostic:
    return diag(line, column, end, GO_MESSAGE, code="IncompatibleAssign", server="gopls")


@pytest.mark.parametrize(
    ("after", "old", "new", "b_line"),
    [
        # issue 32's shape: moved down by a comment, one answer's range empty at column 1
        ('package p\n\n// c\nvar a int = "old"\n\nvar b int = "old"\n',
         go_error(2, 0, 0), go_error(3, 12, 17), 5),
        ('package p\n\n// c\nvar a int = "old"\n\nvar b int = "old"\n',
         go_error(2, 12, 17), go_error(3, 0, 0), 5),
        # a range covering the line from its start, the line's columns shifted
        ('package p\n\nvar pad = 0; var a int = "old"\n\nvar b int = "old"\n',
         go_error(2, 0, 17), go_error(2, 25, 30), 4),
    ],
    ids=["empty-before", "empty-after", "line-start-column-shift"],
)
def test_one_problem_whatever_its_range_on_the_line_the_diff_maps_to(
    after: str, old: Diagnostic, new: Diagnostic, b_line: int
) -> None:
    """A server that reports one problem with different ranges in two answers (a parse-only
    pass, a package still loading, another version): the same code and message on the line
    the diff maps to is the same problem (the same-line round), not new, not fixed; the other
    error, identical, keeps its exact range."""
    baseline = [old, go_error(4, 12, 17)]
    current = [new, go_error(b_line, 12, 17)]
    delta = compute_delta(GO_BEFORE, after, baseline, current)
    assert (delta.introduced, delta.fixed) == ((), ())


def test_the_same_message_on_another_line_is_another_problem() -> None:
    """The rule trusts the line: an empty range on a line the diff does not map there is a
    fixed problem, and the exact one a new problem."""
    after = 'package p\n\nvar a int = 1\n\nvar b int = "old"\nvar c int = "old"\n'
    old, new = go_error(2, 0, 0), go_error(5, 12, 17)
    delta = compute_delta(GO_BEFORE, after, [old, go_error(4, 12, 17)],
                          [go_error(4, 12, 17), new])
    assert (delta.introduced, delta.fixed) == ((new,), (old,))


def test_same_line_prefers_the_nearest_column() -> None:
    before = "x = foo + foo\n"
    after = "x = foo + foo  \n"
    baseline = [diag(0, 4, 7, "m"), diag(0, 10, 13, "m")]
    current = [diag(0, 4, 6, "m"), diag(0, 10, 12, "m"), diag(0, 10, 12, "m")]
    delta = compute_delta(before, after, baseline, current)
    assert delta.introduced == (current[2],)


def test_numbers_in_messages_on_the_same_line_with_a_code() -> None:
    before = "x = 'a very long line'\n"
    after = "x = 'a very long line, longer'\n"
    old = diag(0, 0, 22, "Line too long (95 > 88)", code="E501", server="ruff")
    new = diag(0, 0, 30, "Line too long (103 > 88)", code="E501", server="ruff")
    delta = compute_delta(before, after, [old], [new])
    assert (delta.introduced, delta.fixed) == ((), ())
    # Without a code, a different number is a different problem.
    old_nc = diag(0, 0, 22, "Line too long (95 > 88)", server="ruff")
    new_nc = diag(0, 0, 30, "Line too long (103 > 88)", server="ruff")
    delta = compute_delta(before, after, [old_nc], [new_nc])
    assert delta.introduced == (new_nc,)
    assert delta.fixed == (old_nc,)


def test_line_references_in_messages_move_with_the_text() -> None:
    before = "def f():\n    pass\ndef f():\n    pass\n"
    after = "import os\n\n" + before
    old = diag(2, 4, 5, 'Function "f" is redeclared (obscures line 1)', code="reportRedeclaration")
    new = diag(4, 4, 5, 'Function "f" is redeclared (obscures line 3)', code="reportRedeclaration")
    delta = compute_delta(before, after, [old], [new])
    assert (delta.introduced, delta.fixed) == ((), ())


def test_message_whitespace_is_normalized() -> None:
    text = "a = foo\n"
    old = diag(0, 4, 7, "Type mismatch:\n  expected int")
    new = diag(0, 4, 7, "Type mismatch: expected   int")
    delta = compute_delta(text, text, [old], [new])
    assert (delta.introduced, delta.fixed) == ((), ())


@pytest.mark.parametrize(
    "changed",
    [
        {"severity": Severity.WARNING},
        {"code": "other"},
        {"server": "ty"},
        {"message": "something else", "code": None},
    ],
)
def test_identity_differences_are_new(changed: dict[str, object]) -> None:
    text = "a = foo\n"
    values: dict[str, object] = {"code": "c", "severity": Severity.ERROR, "server": "pyright"}
    message = str(changed.pop("message", "m"))
    values.update(changed)
    old = diag(0, 4, 7, "m", code=None if changed.get("code", "c") is None else "c")
    new = diag(0, 4, 7, message, **values)  # type: ignore[arg-type]
    delta = compute_delta(text, text, [old], [new])
    assert delta.introduced == (new,)
    assert delta.fixed == (old,)


# --- a reworded problem is the same problem ---------------------------------------------------

CYCLE = "reportImportCycles"


def cycle(line: int, *chain: str) -> Diagnostic:
    """basedpyright's import-cycle error on `import b`, naming `chain`."""
    message = "Cycle detected in import chain\n" + "\n".join(f"  /ws/{m}.py" for m in chain)
    return diag(line, 0, 8, message, code=CYCLE, server="basedpyright")


ASSIGN = "reportAssignmentType"


@pytest.mark.parametrize(
    ("before", "after", "old", "new"),
    [
        pytest.param("import b\n\nX = 1\n", "# a comment\nimport b\n\nX = 1\n",
                     cycle(0, "a", "b", "a"), cycle(1, "b", "c", "b"), id="another-chain"),
        pytest.param("import b\nimport os\nimport sys\n", "import os\nimport sys\nimport b\n",
                     cycle(0, "a", "b", "a"), cycle(2, "b", "c", "b"), id="its-line-moved"),
        pytest.param("x: int = f()  # first\n", "x: int = f()  # second\n",
                     diag(0, 9, 12, 'Type "str" is not assignable to "int"', code=ASSIGN),
                     diag(0, 9, 12, 'Type "bytes" is not assignable to "int"', code=ASSIGN),
                     id="its-line-edited-outside-its-range"),
    ],
)
def test_a_reworded_problem_is_the_same_problem(
    before: str, after: str, old: Diagnostic, new: Diagnostic
) -> None:
    delta = compute_delta(before, after, [old], [new])
    assert (delta.introduced, delta.fixed, delta.persisting) == ((), (), (new,))


@pytest.mark.parametrize(
    ("after", "new"),
    [
        pytest.param("# a comment\nimport b\n\nX = 1\n",
                     diag(1, 0, 8, "Import cycle", code="reportOther", server="basedpyright"),
                     id="another-code-same-place"),
        pytest.param("# a comment\nimport b\n\nX = 1\n",
                     diag(1, 0, 8, "Import cycle", server="basedpyright"), id="no-code"),
        pytest.param("# a comment\nimport b\n\nX = 1\n",
                     diag(1, 0, 8, "Import cycle", code=CYCLE, server="pyright"),
                     id="another-server"),
        pytest.param("# a comment\nimport b\n\nX = 1\n", cycle(3, "b", "a", "b"),
                     id="another-place"),
        pytest.param("# a comment\nimport c\n\nX = 1\n", cycle(1, "c", "a", "c"),
                     id="its-own-text-replaced"),
    ],
)
def test_near_misses_of_a_reworded_message_stay_distinct(after: str, new: Diagnostic) -> None:
    before = "import b\n\nX = 1\n"
    old = cycle(0, "a", "b", "a") if new.code or new.server_id != "basedpyright" else diag(
        0, 0, 8, "Cycle detected", server="basedpyright"
    )
    delta = compute_delta(before, after, [old], [new])
    assert (delta.introduced, delta.fixed) == ((new,), (old,))


# clangd folds each note and its position into the message (relatedInformation off).
INCOMPLETE = "Incomplete definition of type 'struct Foo'\n\nbuf.c:{}: note: forward declaration"
FORWARD = "Forward declaration of 'struct Foo'\n\nbuf.c:{}: error: incomplete definition"


def clang(line: int, column: int, end: int, message: str, code: str | None = None) -> Diagnostic:
    return Diagnostic(Range.of(line, column, line, end), Severity.ERROR, message, source="clang",
                      code=code, server_id="clangd")


def test_a_moved_line_carries_its_problems_whatever_positions_their_messages_quote() -> None:
    before = "struct Foo;\nint use(struct Foo *f) {\n  int r = 0;\n  r += f->x;\n  return r;\n}\n"
    after = "struct Foo;\nint use(struct Foo *f) {\n  r += f->x;\n  int r = 0;\n  return r;\n}\n"
    baseline = [clang(3, 8, 10, INCOMPLETE.format("1:8"), "typecheck_incomplete_tag"),
                clang(0, 7, 10, FORWARD.format("4:9"))]
    current = [clang(2, 8, 10, INCOMPLETE.format("1:8"), "typecheck_incomplete_tag"),
               clang(0, 7, 10, FORWARD.format("3:9"))]
    delta = compute_delta(before, after, baseline, current)
    assert (delta.introduced, delta.fixed) == ((), ())
    # lines inserted above everything move both quoted positions
    shifted = "// one\n// two\n" + before
    current = [clang(5, 8, 10, INCOMPLETE.format("3:8"), "typecheck_incomplete_tag"),
               clang(2, 7, 10, FORWARD.format("6:9"))]
    delta = compute_delta(before, shifted, baseline, current)
    assert (delta.introduced, delta.fixed) == ((), ())


def test_moved_function_keeps_its_errors() -> None:
    before = "def a():\n    return foo\n\ndef b():\n    return 1\n\ndef c():\n    return 2\n"
    after = "def b():\n    return 1\n\ndef c():\n    return 2\n\ndef a():\n    return foo\n"
    delta = compute_delta(before, after, [undefined(1, 11)], [undefined(7, 11)])
    assert (delta.introduced, delta.fixed) == ((), ())


def test_moved_line_at_a_different_relative_column_is_new() -> None:
    before = "x = foo\ny = 1\nz = 2\nw = 3\n"
    after = "y = 1\nz = 2\nw = 3\nx = foo\n"
    delta = compute_delta(before, after, [undefined(0, 4)], [diag(3, 0, 1, '"foo" is not defined')])
    assert len(delta.introduced) == 1
    assert len(delta.fixed) == 1


def test_fixed_errors_are_reported_in_before_coordinates() -> None:
    before = "a = foo\nb = bar\n"
    after = "a = 1\nb = bar\n"
    baseline = [undefined(0, 4), undefined(1, 4, "bar")]
    delta = compute_delta(before, after, baseline, [undefined(1, 4, "bar")])
    assert delta.fixed == (undefined(0, 4),)
    assert delta.introduced == ()


def test_introduced_keep_the_order_given() -> None:
    before = "a = 1\n"
    after = "a = 1\nb = z\nc = y\n"
    current = [undefined(2, 4, "y"), undefined(1, 4, "z")]
    delta = compute_delta(before, after, [diag(0, 0, 1, "other")], current)
    assert delta.introduced == tuple(current)


def test_normalize_message_and_identity() -> None:
    assert normalize_message("  a\n\tb  ") == "a b"
    assert normalize_message("declared on line 12, column 3") == "declared on line #, column #"
    assert normalize_message("Line too long (95 > 88)") == "Line too long (95 > 88)"
    assert normalize_message("x\n\nbufferutil.c:101:45: note: y") == "x bufferutil.c:#:#: note: y"
    assert normalize_message("see /a/b.hpp:7 and a.py:3:") == "see /a/b.hpp:# and a.py:#:"
    assert normalize_message("at 12:30, ratio 1.5:3") == "at 12:30, ratio 1.5:3"
    assert identity(undefined(0, 0)) == (
        1,
        "reportUndefinedVariable",
        "pyright",
        "Pyright",
        '"foo" is not defined',
    )


# --- the line diff underneath ---------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    ["", "a", "a\n", "a\r\nb", "a\rb\r\nc\nd", "\r\r\n\n", "x\r\n\r", "é\r\n😀", "a\x85b\u2028c"],
)
def test_fast_split_lines_equals_positions_split_lines(text: str) -> None:
    assert textdiff.split_lines(text) == positions.split_lines(text)


def _check_blocks(a: list[str], b: list[str]) -> list[tuple[int, int, int]]:
    blocks = textdiff.line_blocks(a, b)
    last_a = last_b = 0
    for i, j, size in blocks:
        assert size > 0
        assert i >= last_a and j >= last_b
        assert a[i : i + size] == b[j : j + size]
        last_a, last_b = i + size, j + size
    return blocks


def test_line_blocks_are_valid_equal_runs_on_random_edits() -> None:
    rng = random.Random(20240611)
    vocabulary = [f"line {n}" for n in range(40)] + ["", "", "    return None", "}"]
    for _ in range(300):
        a = [rng.choice(vocabulary) for _ in range(rng.randint(0, 60))]
        b = list(a)
        for _ in range(rng.randint(0, 6)):
            op = rng.random()
            at = rng.randint(0, len(b))
            if op < 0.4:
                b[at:at] = [rng.choice(vocabulary) for _ in range(rng.randint(1, 4))]
            elif op < 0.8 and b:
                del b[at : at + rng.randint(1, 4)]
            elif b:
                b[min(at, len(b) - 1)] = rng.choice(vocabulary)
        blocks = _check_blocks(a, b)
        if a == b:
            assert blocks == ([(0, 0, len(a))] if a else [])


def test_line_blocks_keep_unique_lines_across_a_move() -> None:
    a = ["head", "one", "two", "three", "middle", "tail"]
    b = ["head", "middle", "one", "two", "three", "tail"]
    blocks = _check_blocks(a, b)
    kept = sum(size for _, _, size in blocks)
    assert kept == 5  # "head", three moved lines, "tail" (the longest chain)


def test_column_map_bias_at_an_insertion() -> None:
    columns = textdiff.ColumnMap("ab", "aXb")
    assert columns.column(1) == 2  # a start sticks to "b"
    assert columns.column(1, end=True) == 1  # an end sticks to "a"
    assert columns.column(0) == 0
    assert columns.column(2, end=True) == 3
    deleted = textdiff.ColumnMap("aXYb", "ab")
    assert deleted.column(2) is None  # inside the deleted "XY"
    assert deleted.keeps_any(1, 3) is False
    assert deleted.keeps_any(0, 2) is True
