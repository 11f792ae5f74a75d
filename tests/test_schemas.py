"""One source per contract (issue 29): the report's JSON and the marks payload are described by
`ipylsp/schemas/*.schema.json`; the TypeScript types are generated from them, and what the
Python side writes is checked against them (here, and in every test through
`tests/contracts.py`)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import jsonschema
import pytest

from ipylsp.analysis.cells.document import make_cell
from ipylsp.analysis.cells.marks import SCHEMA as MARKS_SCHEMA
from ipylsp.analysis.cells.marks import CellMark, marks_json
from ipylsp.analysis.report import SCHEMA, FormatOptions, to_json
from ipylsp.model.diagnostics import (
    Cached,
    Diagnostic,
    FileReport,
    Position,
    Range,
    Report,
    Severity,
    Unknown,
    UnknownReason,
)
from ipylsp.model.status import ServerState, ServerStatus
from ipylsp.service.admin.server_table import StatusView
from tests.contracts import SCHEMAS, schema, validate_marks, validate_report, validate_status

ROOT = Path(__file__).resolve().parent.parent
LAB = ROOT / "labextension"


def error(line: int, *, cached: Cached | None = None, ran: bool = False) -> Diagnostic:
    severity = Severity.WARNING if ran else Severity.ERROR
    return Diagnostic(Range(Position(line, 0), Position(line, 4)), severity, "m", "c", "s", "ty",
                      cached=cached, ran_without_error=ran)


def test_the_schemas_name_what_the_code_writes() -> None:
    assert schema("diagnostics")["properties"]["schema"]["const"] == SCHEMA
    assert schema("marks")["properties"]["schema"]["const"] == MARKS_SCHEMA
    reasons = schema("diagnostics")["$defs"]["Unknown"]["properties"]["reason"]
    assert reasons["enum"] == [reason.value for reason in UnknownReason]
    assert reasons["x-detail-is-cause"] == [r.value for r in UnknownReason if r.has_cause]
    severities = schema("diagnostics")["$defs"]["Severity"]["enum"]
    assert severities == [severity.json_name for severity in Severity]
    states = schema("status")["$defs"]["ServerState"]["enum"]
    assert states == [state.value for state in ServerState]


def test_a_status_row_has_one_json_form_and_reads_back() -> None:
    """The status files, the status route and `lsp_status` carry the same row."""
    row = ServerStatus("ty", Path("/w"), ServerState.RUNNING, "indexing 4/9", 11, 7)
    view = StatusView((row,), ("ty", "ruff"), errors=2, own=1)
    validate_status(view.to_json())
    assert view.to_json()["servers"] == [row.to_json()] == [
        {"server": "ty", "state": "running", "detail": "indexing 4/9", "root": "/w",
         "pid": 11, "owner": 7}]
    assert ServerStatus.from_json(row.to_json()) == row
    assert ServerStatus.from_json({**row.to_json(), "owner": None}, owner=3) == ServerStatus(
        "ty", Path("/w"), ServerState.RUNNING, "indexing 4/9", 11, 3)
    assert ServerStatus.from_json({**row.to_json(), "state": "dreaming"}) is None
    assert ServerStatus.from_json({**row.to_json(), "pid": "11"}) is None
    with pytest.raises(jsonschema.ValidationError, match="'dreaming'"):
        validate_status({**view.to_json(), "servers": [{**row.to_json(), "state": "dreaming"}]})


def test_a_report_with_every_optional_field_is_valid_and_a_wrong_one_is_not() -> None:
    path = Path("/w/a.py")
    report = Report(
        files=(
            FileReport(path, "a.py", diagnostics=(error(0), error(1, cached=Cached(0.0, True)),
                                          error(2, ran=True)),
                       fixed=(error(3),), servers=("ty",),
                       unknown=(Unknown("ruff", UnknownReason.TIMED_OUT, "after 1 s"),)),
            FileReport(Path("/w/.cells.py"), "cell [4]", cell=4, cell_id="c-1"),
        ),
        root=Path("/w"), notes=("a note",),
        unknown=(Unknown("ty", UnknownReason.REFUSED, "(why)", "the fix"),),
    )
    payload = to_json(report, FormatOptions(severity="all"))  # validated by the wrapper too
    validate_report(payload)
    assert payload["summary"] == {"errors": 2, "warnings": 1, "fixed": 1, "unknown": 2,
                                  "shown": 3, "omitted": 0, "ran_without_error": 1}
    wrong = {**payload, "undocumented": 1}
    with pytest.raises(jsonschema.ValidationError, match="undocumented"):
        validate_report(wrong)


def test_a_marks_payload_is_valid_and_a_wrong_one_is_not() -> None:
    cell = make_cell("id-1", 3, "x: int = 's'")
    payload = {**marks_json([CellMark(cell, (error(0),), 1)], FormatOptions(), token="t",
                            generation=2, complete=True), "state": "ready"}
    validate_marks(payload)
    with pytest.raises(jsonschema.ValidationError, match="'line'"):
        validate_marks({**payload, "cells": [{**payload["cells"][0], "diagnostics": [  # type: ignore[index]
            {"severity": "error"}]}]})


@pytest.mark.real  # node
def test_the_typescript_types_are_what_the_schemas_generate() -> None:
    """The committed `labextension/src/generated/*.ts` are exactly what
    `labextension/scripts/schema-types.mjs` makes of the schemas (json-schema-to-typescript):
    a schema changed without `jlpm build:schema`, or a hand edit, fails here."""
    node = shutil.which("node")
    assert node is not None, "node is missing: scripts/bootstrap installs it"
    assert (LAB / "node_modules" / "json-schema-to-typescript").is_dir(), (
        "labextension/node_modules is missing: scripts/bootstrap builds the extension")
    assert sorted(p.name for p in SCHEMAS.glob("*.schema.json")) == [
        "diagnostics.schema.json", "marks.schema.json", "status.schema.json"]
    done = subprocess.run([node, "scripts/schema-types.mjs", "--check"], cwd=LAB,
                          capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stderr) == (0, "")
