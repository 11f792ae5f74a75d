"""Output sized for agents: the character budget of text/plain, its announcement, and the
order that decides what stays (errors first, written files before files elsewhere, natural
order), in text, HTML and JSON alike."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, cast

import pytest

from ipylsp.analysis.report import FormatOptions, format_html, format_text, select, to_json
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
MESSAGE = 'Type "Literal[\'s\']" is not assignable to declared type "int"'


def error(line: int = 0, message: str = MESSAGE, severity: Severity = Severity.ERROR,
          ) -> Diagnostic:
    return Diagnostic(Range.of(line, 9, line, 12), severity, message, "basedpyright",
                      "reportAssignmentType", "basedpyright")


def written(name: str, *diagnostics: Diagnostic, elsewhere: bool = False,
            fixed: tuple[Diagnostic, ...] = (), unknown: tuple[Unknown, ...] = ()) -> FileReport:
    return FileReport(ROOT / name, name, diagnostics=diagnostics, fixed=fixed, unknown=unknown,
                      servers=("basedpyright", "ruff"), elsewhere=elsewhere)


def block(name: str, *lines: str) -> str:
    return "\n".join([f'<diagnostics file="{name}">', *lines, "</diagnostics>"])


LINE = f"ERROR [1:10] {MESSAGE} [reportAssignmentType] (basedpyright)"


def gen_report(n: int) -> Report:
    """A cell that wrote gen_0.py ... gen_{n-1}.py, one error each, listed in a shuffled order."""
    files = [written(f"gen_{k}.py", error()) for k in range(n)]
    return Report(files=tuple(files[1::2] + files[::2]), root=ROOT)


def expected_gen(n: int, shown: int, hint: str = "%lsp pending") -> str:
    rest = n - shown
    tail = (f"... and {rest} more problems in {rest} other files "
            f"(gen_{shown}.py, gen_{shown + 1}.py, gen_{shown + 2}.py, ...)")
    return "\n".join([*(block(f"gen_{k}.py", LINE) for k in range(shown)),
                      f"{tail}: {hint}" if hint else tail])


def test_150_files_fit_the_budget_in_natural_order_and_announce_the_rest() -> None:
    report = gen_report(150)
    text = format_text(report)
    # The largest number of whole blocks that fits in 6,000 characters, no more, no less.
    shown = max(k for k in range(51) if len(expected_gen(150, k)) <= 6000)
    assert len(expected_gen(150, shown + 1)) > 6000
    assert text == expected_gen(150, shown)
    assert len(text) <= 6000
    assert shown == 37
    # HTML and JSON show the same selection.
    html = format_html(report)
    assert html.count('<div style="font-weight:bold">') == shown
    assert "... and 113 more problems in 113 other files (gen_37.py, gen_38.py" in html
    files = cast("list[dict[str, Any]]", to_json(report)["files"])
    assert [f["path"] for f in files[:3]] == ["gen_0.py", "gen_1.py", "gen_2.py"]
    assert [len(f["diagnostics"]) for f in files] == [1] * shown + [0] * (150 - shown)
    assert [f["omitted"] for f in files] == [0] * shown + [1] * (150 - shown)


def test_the_caller_chooses_the_hint_and_zero_means_no_budget() -> None:
    report = gen_report(60)
    cli = FormatOptions(more_hint="run `ipylsp check` on fewer files")
    shown = max(k for k in range(51) if len(expected_gen(60, k, cli.more_hint)) <= 6000)
    assert format_text(report, cli) == expected_gen(60, shown, cli.more_hint)
    no_hint = FormatOptions(more_hint="")
    assert format_text(report, no_hint).splitlines()[-1] == (
        f"... and {60 - shown} more problems in {60 - shown} other files "
        f"(gen_{shown}.py, gen_{shown + 1}.py, gen_{shown + 2}.py, ...)"
    )
    unlimited = FormatOptions(max_report_chars=0, max_per_report=0)
    assert format_text(report, unlimited) == "\n".join(
        block(f"gen_{k}.py", LINE) for k in range(60))


def test_budget_comes_from_settings_and_the_kernel_config() -> None:
    from ipylsp.config import IPyLSP
    from ipylsp.ipython.display import options_for

    options = FormatOptions.from_settings(Settings(max_report_chars=900))
    assert options.max_report_chars == 900
    assert len(format_text(gen_report(20), options)) <= 900
    config = IPyLSP(max_report_chars=700)
    assert config.to_settings().max_report_chars == 700
    assert options_for(config.to_settings()).max_report_chars == 700
    shown = Settings(severity="warning", show_clean=True)
    assert options_for(shown) == FormatOptions(severity="warning", show_clean=True)
    assert options_for(shown, "all") == FormatOptions(severity="all", show_clean=True)
    assert IPyLSP().max_report_chars == FormatOptions().max_report_chars == 6000


def test_blocks_are_never_cut_in_the_middle_at_any_budget() -> None:
    files = [
        written(f"m{k}.py", *(error(n, f"problem {n} in m{k}") for n in range(k + 1)),
                fixed=(error(40),), unknown=(Unknown("ruff", UnknownReason.CRASHED),) * (k % 2))
        for k in range(8)
    ]
    report = Report(files=tuple(files), root=ROOT, notes=("basedpyright started",))
    full = format_text(report, FormatOptions(max_report_chars=0)).splitlines()
    for budget in range(300, 2400, 23):
        text = format_text(report, FormatOptions(max_report_chars=budget))
        assert len(text) <= budget, budget
        lines = text.splitlines()
        opened = [i for i, line in enumerate(lines) if line.startswith("<diagnostics")]
        closed = [i for i, line in enumerate(lines) if line == "</diagnostics>"]
        assert len(opened) == len(closed), text
        assert all(a < b for a, b in zip(opened, closed, strict=True)), text
        assert all(b < a for a, b in zip(opened[1:], closed[:-1], strict=True)), text
        for a, b in zip(opened, closed, strict=True):  # shown + announced = all of the file
            k = int(lines[a].removeprefix('<diagnostics file="m').removesuffix('.py">'))
            rows = [line for line in lines[a + 1 : b] if line.startswith("ERROR")]
            more = [int(line.split()[2]) for line in lines[a + 1 : b] if line.startswith("...")]
            assert len(rows) + sum(more) == k + 1, text
        # Every line is a line of the full report or one of the lines counting what was cut.
        counting = re.compile(r"\.\.\. and \d+ more|fixed \d+ errors? in \d+ other files?|"
                              r"UNKNOWN \[ruff\] results incomplete for \d+ more files?")
        assert all(line in full or counting.match(line) for line in lines), text
        assert lines[-1] == "basedpyright started"


def test_unknown_and_notes_always_fit_and_unknown_files_are_counted() -> None:
    crashed = Unknown("ruff", UnknownReason.CRASHED, "with exit code 1")
    files = [written(f"u{k}.py", error(), unknown=(crashed,)) for k in range(30)]
    cut = Unknown("basedpyright", UnknownReason.TIMED_OUT,
                  "24 of 150 files not checked within 10.0 s", "the rest: %lsp pending")
    report = Report(files=tuple(files), root=ROOT, notes=("ruff restarted",), unknown=(cut,))
    lines = format_text(report, FormatOptions(max_report_chars=600)).splitlines()
    assert lines == [
        *block("u0.py", LINE,
               "UNKNOWN [ruff] crashed with exit code 1: results for this file are incomplete",
               ).splitlines(),
        "... and 29 more problems in 29 other files (u1.py, u2.py, u3.py, ...): %lsp pending",
        "UNKNOWN [ruff] results incomplete for 29 more files (u1.py, u2.py, u3.py, ...)",
        "UNKNOWN [basedpyright] 24 of 150 files not checked within 10.0 s; the rest: %lsp pending",
        "ruff restarted",
    ]
    # Even a budget too small for any block keeps the check-level lines and the notes.
    tiny = format_text(report, FormatOptions(max_report_chars=10)).splitlines()
    assert tiny[-2:] == [
        "UNKNOWN [basedpyright] 24 of 150 files not checked within 10.0 s; the rest: %lsp pending",
        "ruff restarted",
    ]
    assert tiny[0] == (
        "... and 30 more problems in 30 files (u0.py, u1.py, u2.py, ...): %lsp pending")
    data = to_json(report, FormatOptions(max_report_chars=10))
    assert data["summary"]["unknown"] == 31  # type: ignore[index]  # JSON keeps every unknown


def test_check_level_lines_and_notes_are_bounded() -> None:
    notes = tuple(f"note {k}" for k in range(25))
    unknown = tuple(Unknown(f"s{k}", UnknownReason.BROKEN, "x" * 900) for k in range(12))
    lines = format_text(Report(notes=notes, unknown=unknown)).splitlines()
    assert len(lines) == 20
    assert lines[0] == "UNKNOWN [s0] " + "x" * 299 + "…"
    assert lines[9] == "... and 3 more servers unknown"
    assert lines[10:] == [f"note {k}" for k in range(9)] + ["... and 16 more notes"]


def test_written_files_before_files_elsewhere_each_in_natural_order() -> None:
    report = Report(
        files=(
            written("a_caller.py", error(), elsewhere=True),
            written("gen_10.py", error()),
            written("b_caller.py", error(), elsewhere=True),
            written("gen_2.py", error()),
        ),
        root=ROOT,
    )
    opened = [line for line in format_text(report).splitlines() if line.startswith("<diag")]
    assert opened == [f'<diagnostics file="{n}">'
                      for n in ("gen_2.py", "gen_10.py", "a_caller.py", "b_caller.py")]
    assert [v.file.display_path for v in select(report)] == [
        "gen_2.py", "gen_10.py", "a_caller.py", "b_caller.py"]
    # A tight budget keeps what the cell wrote and drops the callers first.
    two = len(block("gen_2.py", LINE)) * 2 + 120
    text = format_text(report, FormatOptions(max_report_chars=two))
    assert text == "\n".join([
        block("gen_2.py", LINE), block("gen_10.py", LINE),
        "... and 2 more problems in 2 other files (a_caller.py, b_caller.py): %lsp pending",
    ])


def test_errors_first_across_files_then_warnings() -> None:
    warn = Severity.WARNING
    report = Report(
        files=(
            written("a.py", *(error(n, f"w{n}", warn) for n in range(5))),
            written("b.py", error(0, "e0"), error(1, "e1")),
        ),
        root=ROOT,
    )
    expected = "\n".join([
        block("a.py", "WARN [1:10] w0 [reportAssignmentType] (basedpyright)", "... and 4 more"),
        block("b.py", "ERROR [1:10] e0 [reportAssignmentType] (basedpyright)",
              "ERROR [2:10] e1 [reportAssignmentType] (basedpyright)"),
    ])
    # a.py comes first in the text, but b.py's errors are kept before any warning of a.py:
    # with room for exactly three lines, the two errors and one warning.
    options = FormatOptions(severity="warning", max_report_chars=len(expected))
    assert format_text(report, options) == expected
    fewer = FormatOptions(severity="warning", max_report_chars=len(expected) - 1)
    assert format_text(report, fewer) == "\n".join([
        block("b.py", "ERROR [1:10] e0 [reportAssignmentType] (basedpyright)",
              "ERROR [2:10] e1 [reportAssignmentType] (basedpyright)"),
        "... and 5 more problems in 1 other file (a.py): %lsp pending",
    ])


def test_fixed_lines_beyond_the_budget_become_one_line() -> None:
    files = [written(f"fix_{k}.py", fixed=(error(),)) for k in range(300)]
    text = format_text(Report(files=tuple(files), root=ROOT))
    lines = text.splitlines()
    assert len(text) <= 6000
    shown = len(lines) - 1
    assert lines[:-1] == [f"fixed 1 error in fix_{k}.py" for k in range(shown)]
    assert lines[-1] == f"fixed {300 - shown} errors in {300 - shown} other files"


@pytest.mark.parametrize("show_clean", [False, True])
def test_clean_files_cost_nothing_unless_asked(show_clean: bool) -> None:
    files = [written(f"c{k}.py") for k in range(400)] + [written("z.py", error())]
    text = format_text(Report(files=tuple(files), root=ROOT), FormatOptions(show_clean=show_clean))
    lines = text.splitlines()
    assert lines[:3] == block("z.py", LINE).splitlines()
    assert len(text) <= 6000
    if show_clean:
        assert lines[3] == "ipylsp: c0.py clean (basedpyright, ruff)"
        clean = sum(line.endswith("clean (basedpyright, ruff)") for line in lines)
        assert lines[-1] == f"ipylsp: {400 - clean} more files with nothing to report"
    else:
        assert len(lines) == 3
