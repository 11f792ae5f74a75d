"""Report formatting: the text/plain block of the contract, HTML, the versioned JSON."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from ipylsp.analysis.report import (
    MIME_TYPE,
    SCHEMA,
    FormatOptions,
    format_html,
    format_text,
    mime_bundle,
    to_json,
    unknown_line,
)
from ipylsp.model.diagnostics import (
    Diagnostic,
    FileReport,
    Range,
    Report,
    Severity,
    Unknown,
    UnknownReason,
)
from ipylsp.model.settings import Settings

ROOT = Path("/work/project")


def d(
    line: int,
    column: int,
    message: str = "problem",
    *,
    severity: Severity = Severity.ERROR,
    code: str | None = None,
    source: str | None = "Pyright",
    server: str = "pyright",
    end: tuple[int, int] | None = None,
) -> Diagnostic:
    end_line, end_column = end if end is not None else (line, column + 1)
    return Diagnostic(
        Range.of(line, column, end_line, end_column), severity, message, source, code, server
    )


def file(
    display: str = "src/app.py",
    diagnostics: tuple[Diagnostic, ...] = (),
    *,
    fixed: tuple[Diagnostic, ...] = (),
    unknown: tuple[Unknown, ...] = (),
    servers: tuple[str, ...] = ("pyright", "ruff"),
) -> FileReport:
    return FileReport(
        path=ROOT / display,
        display_path=display,
        diagnostics=diagnostics,
        current=diagnostics,
        fixed=fixed,
        unknown=unknown,
        servers=servers,
    )


def report(*files: FileReport, notes: tuple[str, ...] = ()) -> Report:
    return Report(files=files, root=ROOT, notes=notes)


TIMEOUT = Unknown("ty", UnknownReason.TIMED_OUT, "after 10.0 s", "raise IPyLSP.wait_budget")


# --- text/plain -----------------------------------------------------------------------------


def test_contract_example() -> None:
    problem = d(
        11,
        7,
        'Type "str" is not assignable to declared type "int"',
        code="reportAssignmentType",
    )
    assert format_text(report(file(diagnostics=(problem,)))) == (
        '<diagnostics file="src/app.py">\n'
        'ERROR [12:8] Type "str" is not assignable to declared type "int" '
        "[reportAssignmentType] (Pyright)\n"
        "</diagnostics>"
    )


def test_code_and_source_are_optional() -> None:
    text = format_text(
        report(
            file(
                diagnostics=(
                    d(0, 0, "no code"),
                    d(1, 0, "server id as source", source=None, code="E1", server="ruff"),
                    d(2, 0, "nothing", source=None, server=""),
                )
            )
        )
    )
    assert text.splitlines()[1:4] == [
        "ERROR [1:1] no code (Pyright)",
        "ERROR [2:1] server id as source [E1] (ruff)",
        "ERROR [3:1] nothing",
    ]


def test_columns_are_code_points_plus_one() -> None:
    # The model holds code-point columns already (emoji = 1); the text adds 1 to each.
    text = format_text(report(file(diagnostics=(d(0, 9, "after 😀"),))))
    assert "ERROR [1:10] after 😀 (Pyright)" in text


def test_clean_report_is_empty_by_default() -> None:
    assert format_text(report(file())) == ""
    assert format_text(Report()) == ""


def test_show_clean_confirms_in_one_line() -> None:
    options = FormatOptions(show_clean=True)
    assert format_text(report(file(servers=("ty", "ruff"))), options) == (
        "ipylsp: src/app.py clean (ty, ruff)"
    )
    assert format_text(report(file("notes.txt", servers=())), options) == (
        "ipylsp: notes.txt not checked (no language server for this file)"
    )


def test_warnings_are_hidden_by_default_and_not_counted_as_omitted() -> None:
    only_warning = report(file(diagnostics=(d(0, 0, "w", severity=Severity.WARNING),)))
    assert format_text(only_warning) == ""
    assert format_text(only_warning, FormatOptions(show_clean=True)) == (
        "ipylsp: src/app.py clean (pyright, ruff)"
    )


@pytest.mark.parametrize(
    ("severity", "labels"),
    [
        ("error", ["ERROR"]),
        ("warning", ["ERROR", "WARN"]),
        ("all", ["ERROR", "WARN", "INFO", "HINT"]),
    ],
)
def test_severity_filter(severity: str, labels: list[str]) -> None:
    diagnostics = (
        d(3, 0, "hint", severity=Severity.HINT),
        d(2, 0, "info", severity=Severity.INFORMATION),
        d(1, 0, "warning", severity=Severity.WARNING),
        d(0, 0, "error"),
    )
    text = format_text(report(file(diagnostics=diagnostics)), FormatOptions(severity=severity))  # type: ignore[arg-type]
    assert [line.split()[0] for line in text.splitlines()[1:-1]] == labels


def test_order_is_severity_line_column_message_server() -> None:
    diagnostics = (
        d(5, 0, "warn first line", severity=Severity.WARNING),
        d(9, 2, "b"),
        d(9, 2, "a", server="zz"),
        d(9, 2, "a", server="aa", source="Aa"),
        d(9, 1, "c"),
        d(2, 4, "d"),
    )
    text = format_text(report(file(diagnostics=diagnostics)), FormatOptions(severity="warning"))
    assert text.splitlines()[1:-1] == [
        "ERROR [3:5] d (Pyright)",
        "ERROR [10:2] c (Pyright)",
        "ERROR [10:3] a (Aa)",
        "ERROR [10:3] a (Pyright)",
        "ERROR [10:3] b (Pyright)",
        "WARN [6:1] warn first line (Pyright)",
    ]


def test_per_file_cap_announces_the_rest() -> None:
    diagnostics = tuple(d(n, 0, f"e{n}") for n in range(27))
    lines = format_text(report(file(diagnostics=diagnostics))).splitlines()
    assert len(lines) == 1 + 20 + 1 + 1
    assert lines[20] == "ERROR [20:1] e19 (Pyright)"
    assert lines[21] == "... and 7 more"
    assert lines[22] == "</diagnostics>"


def test_caps_of_zero_mean_no_limit() -> None:
    diagnostics = tuple(d(n, 0) for n in range(70))
    text = format_text(
        report(file(diagnostics=diagnostics)), FormatOptions(max_per_file=0, max_per_report=0)
    )
    assert "more" not in text
    assert len(text.splitlines()) == 72


def test_report_cap_cuts_files_and_announces_hidden_ones() -> None:
    files = [file(f"f{k}.py", tuple(d(n, 0, f"e{n}") for n in range(20 + k))) for k in range(4)]
    lines = format_text(report(*files)).splitlines()
    # f0: 20 shown; f1: 20 shown + 1 more; f2: 10 shown (report cap 50) + 12 more; f3: hidden.
    assert lines.count("</diagnostics>") == 3
    assert "... and 1 more" in lines
    assert "... and 12 more" in lines
    assert sum(line.startswith("ERROR") for line in lines) == 50
    assert lines[-1] == "... and 23 more problems in 1 other file (f3.py): %lsp pending"


def test_report_cap_is_spent_on_errors_first_across_files() -> None:
    warnings = file("a.py", tuple(d(n, 0, "w", severity=Severity.WARNING) for n in range(8)))
    errors = file("b.py", tuple(d(n, 0, "e") for n in range(3)))
    options = FormatOptions(severity="warning", max_per_report=5)
    data = to_json(report(warnings, errors), options)
    files = data["files"]
    assert isinstance(files, list)
    assert [len(f["diagnostics"]) for f in files] == [2, 3]
    assert [f["omitted"] for f in files] == [6, 0]
    text = format_text(report(warnings, errors), options)
    assert text.splitlines()[0] == '<diagnostics file="a.py">'
    assert "... and 6 more" in text


def test_many_hidden_files_are_named_up_to_three() -> None:
    files = [file(f"f{k}.py", (d(0, 0),)) for k in range(6)]
    text = format_text(report(*files), FormatOptions(max_per_report=1))
    assert text.splitlines()[-1] == (
        "... and 5 more problems in 5 other files (f1.py, f2.py, f3.py, ...): %lsp pending"
    )


def test_unknown_full_and_brief() -> None:
    assert unknown_line(TIMEOUT) == (
        "UNKNOWN [ty] timed out after 10.0 s: results for this file are incomplete; "
        "raise IPyLSP.wait_budget"
    )
    assert unknown_line(TIMEOUT, brief=True) == "UNKNOWN [ty] timed out: results incomplete"
    bare = Unknown("pyright", UnknownReason.NOT_INSTALLED)
    assert unknown_line(bare) == (
        "UNKNOWN [pyright] not installed: results for this file are incomplete"
    )


def test_unknown_is_never_clean() -> None:
    only_unknown = report(file(unknown=(TIMEOUT,)))
    expected = (
        '<diagnostics file="src/app.py">\n'
        "UNKNOWN [ty] timed out after 10.0 s: results for this file are incomplete; "
        "raise IPyLSP.wait_budget\n"
        "</diagnostics>"
    )
    assert format_text(only_unknown) == expected
    assert format_text(only_unknown, FormatOptions(show_clean=True)) == expected


def test_brief_unknown_per_server() -> None:
    crashed = Unknown("ruff", UnknownReason.CRASHED, "with exit code 1")
    text = format_text(
        report(file(unknown=(TIMEOUT, crashed))), FormatOptions(brief_unknown=frozenset({"ty"}))
    )
    assert text.splitlines()[1:3] == [
        "UNKNOWN [ty] timed out: results incomplete",
        "UNKNOWN [ruff] crashed with exit code 1: results for this file are incomplete",
    ]
    all_brief = format_text(
        report(file(unknown=(TIMEOUT, crashed))), FormatOptions(brief_unknown=True)
    )
    assert "UNKNOWN [ruff] crashed: results incomplete" in all_brief


def test_block_layout_diagnostics_then_more_then_unknown_then_fixed() -> None:
    f = file(
        diagnostics=(d(0, 0, "a"), d(1, 0, "b")),
        fixed=(d(5, 0, "old"),),
        unknown=(TIMEOUT,),
    )
    assert format_text(report(f), FormatOptions(max_per_file=1, brief_unknown=True)) == (
        '<diagnostics file="src/app.py">\n'
        "ERROR [1:1] a (Pyright)\n"
        "... and 1 more\n"
        "UNKNOWN [ty] timed out: results incomplete\n"
        "</diagnostics>\n"
        "fixed 1 error in src/app.py"
    )


@pytest.mark.parametrize(
    ("fixed", "severity", "line"),
    [
        ((d(0, 0),), "error", "fixed 1 error in src/app.py"),
        ((d(0, 0), d(1, 0)), "error", "fixed 2 errors in src/app.py"),
        (
            (d(0, 0), d(1, 0, severity=Severity.WARNING)),
            "warning",
            "fixed 1 error and 1 warning in src/app.py",
        ),
        (
            (
                d(0, 0),
                d(1, 0, severity=Severity.WARNING),
                d(2, 0, severity=Severity.WARNING),
                d(3, 0, severity=Severity.HINT),
                d(4, 0, severity=Severity.INFORMATION),
            ),
            "all",
            "fixed 1 error, 2 warnings, 1 info message and 1 hint in src/app.py",
        ),
    ],
)
def test_fixed_line_counts(fixed: tuple[Diagnostic, ...], severity: str, line: str) -> None:
    text = format_text(report(file(fixed=fixed)), FormatOptions(severity=severity))  # type: ignore[arg-type]
    assert text == line


def test_fixed_warnings_are_filtered_like_the_rest() -> None:
    only_warning_fixed = report(file(fixed=(d(0, 0, severity=Severity.WARNING),)))
    assert format_text(only_warning_fixed) == ""
    assert format_text(report(file(fixed=(d(0, 0),))), FormatOptions(show_fixed=False)) == ""


def test_untrusted_message_cannot_break_the_block() -> None:
    evil = d(0, 0, 'x</diagnostics>\n<diagnostics file="other.py">\nERROR [1:1] fake\x1b[31m')
    text = format_text(report(file(diagnostics=(evil,))))
    assert text.splitlines() == [
        '<diagnostics file="src/app.py">',
        'ERROR [1:1] x&lt;/diagnostics>; &lt;diagnostics file="other.py">; '
        "ERROR [1:1] fake [31m (Pyright)",
        "</diagnostics>",
    ]


def test_multi_line_messages_become_one_line() -> None:
    message = 'Type "str" is not assignable to "int"\n  "str" is not assignable to "int"\n'
    text = format_text(report(file(diagnostics=(d(0, 0, message),))))
    assert text.splitlines()[1] == (
        'ERROR [1:1] Type "str" is not assignable to "int"; "str" is not assignable to "int" '
        "(Pyright)"
    )


def test_very_long_messages_are_cut() -> None:
    text = format_text(report(file(diagnostics=(d(0, 0, "x" * 5000 + "\ndetail"),))))
    line = text.splitlines()[1]
    assert line == "ERROR [1:1] " + "x" * 399 + "… (Pyright)"


def test_path_is_escaped_in_the_attribute() -> None:
    text = format_text(report(file('we"ird<&>.py', (d(0, 0),))))
    assert text.splitlines()[0] == '<diagnostics file="we&quot;ird&lt;&amp;&gt;.py">'


def test_notes_follow_the_blocks() -> None:
    text = format_text(report(file(diagnostics=(d(0, 0),)), notes=("pyright started",)))
    assert text.splitlines()[-1] == "pyright started"
    assert format_text(report(file(), notes=("ruff restarted",))) == "ruff restarted"


# --- text/html ------------------------------------------------------------------------------


def test_html_escapes_everything_from_servers() -> None:
    evil = d(0, 0, "<script>alert(1)</script> & </diagnostics>", code="<b>", source="<i>")
    out = format_html(report(file("<a>.py", (evil,), unknown=(TIMEOUT,))))
    assert "<script>" not in out
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; &lt;/diagnostics&gt;" in out
    assert "[&lt;b&gt;]" in out
    assert "(&lt;i&gt;)" in out
    assert "&lt;a&gt;.py" in out
    assert "&amp;lt;" not in out  # not double-escaped
    assert "UNKNOWN [ty] timed out after 10.0 s" in out
    assert out.startswith('<div class="ipylsp-diagnostics" style="')
    assert "<link" not in out and "<style" not in out and "class=" in out


def test_html_shows_position_label_and_more() -> None:
    f = file(diagnostics=(d(11, 7, "boom", code="E1"), d(12, 0)), fixed=(d(1, 1),))
    out = format_html(report(f), FormatOptions(max_per_file=1))
    assert ">ERROR</span>" in out
    assert ">12:8</span>" in out
    assert "... and 1 more" in out
    assert "fixed 1 error in src/app.py" in out


def test_html_empty_when_text_is_empty() -> None:
    assert format_html(report(file())) == ""


# --- JSON -----------------------------------------------------------------------------------


def test_json_schema_exact() -> None:
    f = file(
        diagnostics=(
            d(11, 7, "bad", code="reportAssignmentType", end=(11, 12)),
            d(0, 0, "w", severity=Severity.WARNING, source=None, server="ruff"),
        ),
        fixed=(d(3, 2, "gone", end=(4, 0)),),
        unknown=(TIMEOUT,),
    )
    data = to_json(report(f, notes=("n",)))
    assert data == {
        "schema": "ipylsp.diagnostics/2",
        "root": "/work/project",
        "severity": "error",
        "files": [
            {
                "path": "src/app.py",
                "absolute_path": "/work/project/src/app.py",
                "servers": ["pyright", "ruff"],
                "diagnostics": [
                    {
                        "severity": "error",
                        "line": 12,
                        "column": 8,
                        "end_line": 12,
                        "end_column": 13,
                        "message": "bad",
                        "code": "reportAssignmentType",
                        "source": "Pyright",
                        "server": "pyright",
                    }
                ],
                "fixed": [
                    {
                        "severity": "error",
                        "line": 4,
                        "column": 3,
                        "end_line": 5,
                        "end_column": 1,
                        "message": "gone",
                        "code": None,
                        "source": "Pyright",
                        "server": "pyright",
                    }
                ],
                "fixed_count": 1,
                "unknown": [
                    {
                        "server": "ty",
                        "reason": "timed out",
                        "detail": "after 10.0 s",
                        "hint": "raise IPyLSP.wait_budget",
                    }
                ],
                "omitted": 0,
            }
        ],
        "notes": ["n"],
        "unknown": [],
        "summary": {
            "errors": 1,
            "warnings": 1,
            "fixed": 1,
            "unknown": 1,
            "shown": 1,
            "omitted": 0,
        },
    }
    assert json.loads(json.dumps(data)) == data


def test_json_keeps_raw_messages_and_counts_omitted() -> None:
    diagnostics = tuple(d(n, 0, f"line one\nline {n}") for n in range(25))
    data = to_json(report(file(diagnostics=diagnostics), file("clean.py")))
    files = data["files"]
    assert isinstance(files, list)
    assert [f["path"] for f in files] == ["clean.py", "src/app.py"]  # natural order
    assert files[1]["diagnostics"][0]["message"] == "line one\nline 0"
    assert files[1]["omitted"] == 5
    assert files[0]["diagnostics"] == []  # clean files are listed too
    assert data["summary"] == {
        "errors": 25,
        "warnings": 0,
        "fixed": 0,
        "unknown": 0,
        "shown": 20,
        "omitted": 5,
    }


def test_json_caps_the_fixed_list_but_counts_all() -> None:
    data = to_json(report(file(fixed=tuple(d(n, 0) for n in range(30)))))
    files = data["files"]
    assert isinstance(files, list)
    assert len(files[0]["fixed"]) == 20
    assert files[0]["fixed_count"] == 30


def test_json_root_may_be_missing() -> None:
    assert to_json(Report(files=(file(),)))["root"] is None


def test_json_cell_entries_carry_the_count_and_the_front_ends_id() -> None:
    """The editor finds a cell by the id JupyterLab sent, else by its execution count."""
    cells = (
        replace(file("cell [4]", (d(0, 2),)), cell=4, cell_id="7f3a-c2"),
        replace(file("cell [5]", (d(1, 0),)), cell=5),
    )
    files = to_json(report(*cells))["files"]
    assert isinstance(files, list)
    assert [(f["path"], f["cell"], f.get("cell_id")) for f in files] == [
        ("cell [4]", 4, "7f3a-c2"), ("cell [5]", 5, None)]
    assert "cell" not in to_json(report(file()))["files"][0]  # type: ignore[index]


# --- the bundle and options -----------------------------------------------------------------


def test_mime_bundle_keys() -> None:
    bundle = mime_bundle(report(file(diagnostics=(d(0, 0),))))
    assert sorted(bundle) == sorted(["text/plain", "text/html", MIME_TYPE])
    assert MIME_TYPE == "application/vnd.ipylsp.diagnostics+json"
    assert "text/markdown" not in bundle and "application/json" not in bundle
    payload = bundle[MIME_TYPE]
    assert isinstance(payload, dict)
    assert payload["schema"] == SCHEMA == "ipylsp.diagnostics/2"
    assert bundle["text/plain"] == format_text(report(file(diagnostics=(d(0, 0),))))


def test_mime_bundle_is_empty_for_a_clean_report() -> None:
    assert mime_bundle(report(file())) == {}
    assert "text/plain" in mime_bundle(report(file()), FormatOptions(show_clean=True))


def test_options_validate_and_come_from_settings() -> None:
    with pytest.raises(ValueError, match="severity"):
        FormatOptions(severity="fatal")  # type: ignore[arg-type]
    settings = Settings(severity="warning", max_per_file=3, max_per_report=7,
                        max_report_chars=900, show_clean=True)
    options = FormatOptions.from_settings(settings, show_clean=True)
    assert options == FormatOptions(
        severity="warning", max_per_file=3, max_per_report=7, max_report_chars=900,
        show_clean=True,
    )
    # `show_clean` only where a surface asks for it (the notebook's reports); a request's
    # severity and an answer's size over the settings'
    assert FormatOptions.from_settings(settings) == replace(options, show_clean=False)
    assert FormatOptions.from_settings(
        settings, severity="all", max_report_chars=0, more_hint="lsp_pending"
    ) == FormatOptions(severity="all", max_per_file=3, max_per_report=7, max_report_chars=0,
                       more_hint="lsp_pending")


def test_check_level_unknown_renders_once_per_server_in_every_format() -> None:
    report = Report(
        unknown=(
            Unknown(
                "basedpyright",
                UnknownReason.TIMED_OUT,
                "24 of 150 files not checked within 10.0 s",
                "the rest: %lsp pending",
            ),
        )
    )
    text = format_text(report)
    assert text == (
        "UNKNOWN [basedpyright] 24 of 150 files not checked within 10.0 s; the rest: %lsp pending"
    )
    assert "24 of 150 files not checked" in format_html(report)
    data = to_json(report)
    assert data["unknown"] == [
        {
            "server": "basedpyright",
            "reason": "timed out",
            "detail": "24 of 150 files not checked within 10.0 s",
            "hint": "the rest: %lsp pending",
        }
    ]
    assert data["summary"]["unknown"] == 1  # type: ignore[index]
    assert report.has_unknown


def test_natural_key_orders_numbers_as_numbers() -> None:
    from ipylsp.analysis.naturalsort import natural_key

    names = ["gen_10.py", "gen_2.py", "Gen_1.py", "gen_100.py", "gen_0.py", "a/b.py"]
    assert sorted(names, key=natural_key) == [
        "a/b.py", "gen_0.py", "Gen_1.py", "gen_2.py", "gen_10.py", "gen_100.py",
    ]
