"""What ran, ran (`analysis.cells.ran`, `ipython.monitor`): cells run in an in-process IPython
shell with the monitor recording, then diagnostics as the servers word them are judged against
what the run evaluated. Every Python we claim runs these (the fast tests): 3.12+ records the
instructions that executed (`sys.monitoring`), 3.10 and 3.11 only which top-level statements
finished, so a few cases differ by path and say so.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ipylsp.analysis.cells.attribution import Kernel
from ipylsp.analysis.cells.document import CellHistory, make_cell
from ipylsp.analysis.cells.marks import CellMarks
from ipylsp.analysis.cells.ran import DEMOTABLE, Evidence, Ran, disproved, readme_table
from ipylsp.analysis.report import FormatOptions, format_text, to_json
from ipylsp.ipython import audit
from ipylsp.ipython.monitor import MONITORING, CellMonitor
from ipylsp.model.diagnostics import Diagnostic, FileReport, Range, Report, Severity

REPO = Path(__file__).resolve().parent.parent
PRECISE = sys.version_info >= (3, 12)
"""The instructions are recorded (else only finished top-level statements count)."""

FRAME = "class Frame:\n    iloc = [1, 2]\n\n\nframe = Frame()"


@pytest.fixture
def run() -> Iterator[Callable[[str], Ran | None]]:
    """Run a cell in a real InteractiveShell with the monitor between its hooks."""
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    shell = InteractiveShell.instance(config=config)
    monitor = CellMonitor(shell)
    got: list[Ran | None] = []

    def pre(info: object) -> None:
        monitor.begin()

    def post(result: object) -> None:
        got.append(monitor.end(result))

    shell.events.register("pre_run_cell", pre)
    shell.events.register("post_run_cell", post)

    def run_cell(source: str) -> Ran | None:
        shell.run_cell(source, store_history=True, silent=False)
        return got[-1]

    try:
        run_cell(FRAME)
        assert audit._active == ()  # the monitor's audit listener went with its cell
        yield run_cell
    finally:
        shell.events.unregister("pre_run_cell", pre)
        shell.events.unregister("post_run_cell", post)
        monitor.close()
        InteractiveShell.clear_instance()


def at(source: str, text: str, *, line: int | None = None, occurrence: int = 0,
       code: str = "missing-attribute", server: str = "ty",
       message: str = "Object of type `Frame` has no attribute `x`") -> Diagnostic:
    """An ERROR over `text`, found in the cell (on `line` when given)."""
    lines = source.split("\n")
    places = [(n, c) for n, line_text in enumerate(lines) if line is None or n == line
              for c in _finds(line_text, text)]
    n, column = places[occurrence]
    return Diagnostic(Range.of(n, column, n, column + len(text)), Severity.ERROR, message,
                      code=code, server_id=server)


def _finds(line: str, text: str) -> list[int]:
    out, start = [], line.find(text)
    while start >= 0:
        out.append(start)
        start = line.find(text, start + 1)
    return out


def judged(ran: Ran | None, d: Diagnostic) -> bool:
    assert ran is not None
    return disproved(d, ran)


def test_what_ran_without_raising_is_disproved_on_every_python(run: Callable) -> None:
    source = "first = frame.iloc[0]\nsecond = frame.iloc[1] + 1"
    ran = run(source)
    assert judged(ran, at(source, "frame.iloc", line=0, code="missing-union-attribute",
                          message="Attribute `iloc` is not defined on `None` in union"))
    assert judged(ran, at(source, "iloc", line=1, server="basedpyright",
                          code="reportOptionalMemberAccess",
                          message='"iloc" is not a known attribute of "None"'))
    assert judged(ran, at(source, "frame.iloc[1] + 1", code="unsupported-operator"))
    assert judged(ran, at(source, "frame", line=1, code="F821", server="ruff"))


def test_claims_about_types_stay_errors_even_where_the_code_ran(run: Callable) -> None:
    source = 'def area(w, h):\n    return w * h\n\n\nsize = area("2", 3)\nframe.iloc = "s"'
    ran = run(source)
    assert judged(ran, at(source, "area", line=4, code="F821", server="ruff"))  # it ran
    assert not judged(ran, at(source, '"2"', code="invalid-argument-type"))
    assert not judged(ran, at(source, '"2"', server="basedpyright", code="reportArgumentType"))
    # pyright's attribute code also covers an assignment's type: only reads are disproved
    assert not judged(ran, at(source, "iloc", line=5, server="pyright",
                              code="reportAttributeAccessIssue",
                              message='Cannot assign to attribute "iloc" for class "Frame"'))


def test_a_function_body_is_disproved_only_where_it_was_called(run: Callable) -> None:
    source = ("def never(v):\n    return v.nosuch\n\n\n"
              "def called(v):\n    return v.iloc\n\n\nvalue = called(frame)")
    ran = run(source)
    assert not judged(ran, at(source, "v.nosuch"))  # defined, never called: the full check
    # called by the cell: recorded on 3.12+; before, only top-level statements count
    assert judged(ran, at(source, "v.iloc")) is PRECISE


def test_lines_after_an_exception_keep_their_full_check(run: Callable) -> None:
    source = "a = frame.iloc\nb = frame.nosuch\nc = frame.iloc"
    ran = run(source)
    assert ran is not None and ran.failed == 1
    assert judged(ran, at(source, "frame.iloc", line=0))
    assert not judged(ran, at(source, "frame.nosuch"))  # it raised
    assert not judged(ran, at(source, "frame.iloc", line=2))  # never ran


def test_code_not_evaluated_keeps_its_full_check(run: Callable) -> None:
    source = (
        "if len(frame.iloc) > 5:\n    frame.nosuch\n"
        "ok = True or frame.nosuch\n"
        "maybe = frame.iloc if ok else frame.nosuch\n"
        "later = lambda: frame.nosuch\n"
        "none = [frame.nosuch for _ in range(0)]\n"
        "chained = 1 > 2 > frame.nosuch\n"
        "try:\n    frame.nosuch\nexcept AttributeError:\n    pass\n"
        "for v in [frame, None]:\n    try:\n        v.iloc\n    except AttributeError:\n"
        "        pass\n"
    )
    ran = run(source)
    assert judged(ran, at(source, "frame.iloc", line=0))  # the test ran
    for n in range(source.count("frame.nosuch")):
        assert not judged(ran, at(source, "frame.nosuch", occurrence=n)), n
    assert not judged(ran, at(source, "v.iloc"))  # it worked once and failed once: confirmed


def test_comprehensions_and_loop_bodies_count_where_instructions_are_recorded(
    run: Callable,
) -> None:
    source = "pairs = [frame.iloc for _ in range(2)]\nfor k in range(2):\n    frame.iloc"
    ran = run(source)
    assert judged(ran, at(source, "frame.iloc", line=0)) is PRECISE
    assert judged(ran, at(source, "frame.iloc", line=2)) is PRECISE


def test_the_kernels_reading_moves_lines_and_columns(run: Callable) -> None:
    prompt = ">>> got = frame.iloc\n>>> got"
    assert judged(run(prompt), at(prompt, "frame.iloc"))
    blank = "\n\n  moved = frame.iloc\n  moved"  # leading blank lines dropped, then dedented
    assert judged(run(blank), at(blank, "frame.iloc"))
    magic = "%time timed = frame.iloc"  # the kernel ran other text: nothing is disproved
    assert not judged(run(magic), at(magic, "frame.iloc"))


def test_a_cell_that_does_not_compile_records_nothing(run: Callable) -> None:
    assert run("x = (") is None


def test_the_monitor_records_instructions_only_where_it_can() -> None:
    assert MONITORING is PRECISE


# -- the report: warnings, marked, flagged, counted ------------------------------------------


def test_a_demoted_diagnostic_is_a_marked_warning_shown_with_warnings(run: Callable) -> None:
    source = "first = frame.iloc[0]\nfirst.nosuch"
    ran = run(source)
    cell = make_cell("id:a", 7, source)
    demoted = at(source, "frame.iloc", code="missing-union-attribute",
                 message="Attribute `iloc` is not defined on `None` in union `None | Frame`")
    kept = at(source, "first.nosuch", line=1, message="Object of type `int` has no attribute")
    entry = FileReport(Path("/d/cells.py"), "cell [7]", (demoted, kept), (demoted, kept), cell=7)
    report = Evidence().after((), cell, ran).apply(Report(files=(entry,)), [cell])
    shown, still = report.files[0].diagnostics
    assert (shown.severity, shown.ran_without_error) == (Severity.WARNING, True)
    assert still == kept  # it raised: the ERROR stays
    assert report.files[0].current == report.files[0].diagnostics
    warnings = FormatOptions(severity="warning")
    assert format_text(report, warnings).splitlines()[1:3] == [
        "ERROR [2:1] Object of type `int` has no attribute [missing-attribute] (ty)",
        "WARN [1:9] Attribute `iloc` is not defined on `None` in union `None | Frame` "
        "(ran without error) [missing-union-attribute] (ty)",
    ]
    errors = FormatOptions(severity="error")
    assert "ran without error" not in format_text(report, errors)
    data = to_json(report, errors)
    assert [d.get("ran_without_error") for d in data["files"][0]["diagnostics"]] == [None]
    assert data["summary"]["errors"] == 1 and data["summary"]["warnings"] == 1
    assert data["summary"]["ran_without_error"] == 1
    flagged = to_json(report, warnings)["files"][0]["diagnostics"]
    assert [d.get("ran_without_error") for d in flagged] == [None, True]


def test_what_was_shown_as_a_warning_is_never_fixed_as_an_error(run: Callable) -> None:
    old_source, new_source = "first = frame.iloc[0]", "first = 1"
    old, new = make_cell("id:f", 3, old_source), make_cell("id:f", 4, new_source)
    before = Evidence().after((), old, run(old_source))
    after = before.after((old,), new, run(new_source))
    union = at(old_source, "frame.iloc", code="missing-union-attribute",
               message="Attribute `iloc` is not defined on `None` in union")
    entry = FileReport(Path("/d/cells.py"), "cell [4]", fixed=(union,), cell=4)
    report = after.apply(Report(files=(entry,)), [new], (before, (old,)))
    (gone,) = report.files[0].fixed
    assert (gone.severity, gone.ran_without_error) == (Severity.WARNING, True)
    assert format_text(report, FormatOptions(severity="error")) == ""
    assert after.apply(Report(files=(entry,)), [new]).files[0].fixed == (union,)  # no before


def test_the_editors_marks_say_what_the_report_says(run: Callable) -> None:
    source = "first = frame.iloc[0]"
    cell = make_cell("id:m", 9, source)
    document = CellHistory().with_cell(cell).document()
    line = document.starts[0]
    union = Diagnostic(Range.of(line, 8, line, 18), Severity.ERROR, "`None` in union",
                       code="missing-union-attribute", server_id="ty")
    marks = CellMarks()
    marks.update(document, [union], Kernel(), cell,
                 evidence=Evidence().after((), cell, run(source)))
    (mark,) = marks.since(0)
    assert [(d.severity, d.ran_without_error) for d in mark.diagnostics] == [
        (Severity.WARNING, True)
    ]


def test_a_run_speaks_for_its_cell_until_a_cell_before_it_changes() -> None:
    a, b, c = (make_cell(f"id:{k}", n, f"{k} = 1") for n, k in enumerate("abc", 1))
    runs = {k.key: Ran(k.source, k.source, ()) for k in (a, b, c)}
    evidence = Evidence()
    history: tuple = ()
    for cell in (a, b, c):
        evidence = evidence.after(history, cell, runs[cell.key])
        history = (*history, cell)
    assert list(evidence.runs) == ["id:a", "id:b", "id:c"]
    rerun = make_cell("id:b", 4, "b = 2")
    evidence = evidence.after(history, rerun, Ran("b = 2", "b = 2", ()))
    assert list(evidence.runs) == ["id:a", "id:b"]  # c ran after the old b
    stale = evidence.after(history, make_cell("id:d", 5, "d = 1"), Ran("other", "other", ()))
    assert "id:d" not in stale.runs  # a run of other text speaks for nothing


def test_the_docs_quote_the_table_of_what_can_be_demoted() -> None:
    doc = (REPO / "docs" / "cells.md").read_text(encoding="utf-8")
    assert readme_table() in doc
    assert {server for server, _ in DEMOTABLE} == {"ty", "ruff", "pyright", "basedpyright",
                                                   "pyrefly"}
