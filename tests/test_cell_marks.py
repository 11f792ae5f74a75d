"""`CellMarks`: every cell's current problems by cell, each with the generation that last
changed them, and their JSON (schema ipylsp.marks/1). Pure: no kernel, no server."""

from __future__ import annotations

from ipylsp.analysis.cells.attribution import Kernel
from ipylsp.analysis.cells.document import CellHistory, make_cell
from ipylsp.analysis.cells.marks import SCHEMA, CellMarks, marks_json
from ipylsp.analysis.report.selection import FormatOptions
from ipylsp.model.diagnostics import Diagnostic, Position, Range, Severity


def at(line: int, column: int, end: int, severity: Severity = Severity.ERROR,
       code: str = "invalid-argument-type", server: str = "ty") -> Diagnostic:
    return Diagnostic(Range(Position(line, column), Position(line, end)), severity,
                      "problem", server, code, server)


def test_marks_by_cell_and_only_what_changed() -> None:
    define = make_cell("id:define", 1, "def f(x: int) -> int:\n    return x")
    call = make_cell("id:call", 2, "f('s')")
    document = CellHistory((define, call)).document()
    wrong = at(document.starts[1], 2, 5)  # the call's argument, in document lines

    marks = CellMarks()
    marks.update(document, [wrong], Kernel(), call)
    first = marks.generation
    assert {m.cell.key: m.diagnostics for m in marks.since(0)} == {
        "id:define": (), "id:call": (at(0, 2, 5),)}

    # the same answer again: nothing changed since
    marks.update(document, [wrong], Kernel(), call)
    assert marks.since(first) == []
    # fixed: only the call is listed, now without marks
    marks.update(document, [], Kernel(), call)
    assert [(m.cell.key, m.diagnostics) for m in marks.since(first)] == [("id:call", ())]


def test_an_incomplete_answer_updates_only_the_newest_cell() -> None:
    """A server that did not answer in time: the other cells keep the last complete marks."""
    one = make_cell("id:one", 1, "f('s')")
    two = make_cell("id:two", 2, "x = 1")
    document = CellHistory((one, two)).document()
    marks = CellMarks()
    marks.update(document, [at(document.starts[0], 2, 5)], Kernel(), two)
    marks.update(document, [], Kernel(), two, complete=False)
    assert {m.cell.key: m.diagnostics for m in marks.since(0)}["id:one"] == (at(0, 2, 5),)


def test_a_cell_left_out_of_the_document_keeps_its_marks_up_to_the_cap() -> None:
    broken = make_cell("id:broken", 1, "def (")
    marks = CellMarks(cap=2)
    marks.update(CellHistory((broken,)).document(), [], Kernel(), broken)
    for n in range(2, 5):
        cell = make_cell(f"id:c{n}", n, f"x{n} = {n}")
        marks.update(CellHistory((cell,)).document(), [], Kernel(), cell)
    assert sorted(m.cell.key for m in marks.since(0)) == ["id:c3", "id:c4"]


def test_json_filters_by_severity_and_merges_one_problem() -> None:
    cell = make_cell("id:c", 3, "print(totl)")
    name = Range(Position(0, 6), Position(0, 10))
    ty = Diagnostic(name, Severity.ERROR, "Name `totl` used when not defined", "ty",
                    "unresolved-reference", "ty")
    ruff = Diagnostic(name, Severity.ERROR, "Undefined name `totl`", "Ruff", "F821", "ruff")
    hint = at(0, 0, 5, Severity.HINT, "hint-code")
    marks = CellMarks()
    document = CellHistory((cell,)).document()
    shifted = [Diagnostic(Range(Position(d.range.start.line + document.starts[0],
                                         d.range.start.column),
                                Position(d.range.end.line + document.starts[0],
                                         d.range.end.column)),
                          d.severity, d.message, d.source, d.code, d.server_id)
               for d in (ty, ruff, hint)]
    marks.update(document, shifted, Kernel(), cell)
    payload = marks_json(marks.since(0), FormatOptions(), token=marks.token,
                         generation=marks.generation, complete=True)
    assert payload["schema"] == SCHEMA
    (entry,) = payload["cells"]  # type: ignore[misc]
    assert (entry["cell_id"], entry["count"], entry["source"]) == ("c", 3, "print(totl)")
    assert [(d["line"], d["column"], d["end_column"], d["code"], d.get("same_as"))
            for d in entry["diagnostics"]] == [(1, 7, 11, "unresolved-reference", None),
                                               (1, 7, 11, "F821", 0)]
    everything = marks_json(marks.since(0), FormatOptions(severity="all"), token="",
                            generation=0, complete=True)
    assert len(everything["cells"][0]["diagnostics"]) == 3  # type: ignore[index]
