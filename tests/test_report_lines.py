"""One problem, one line (duplicates of several servers merged, near misses kept apart), and
message text sized for models. The messages are the real ones of ty 0.0.x, ruff, basedpyright
and pyrefly on the same file (the last test checks ty + ruff live)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import pytest

from ipylsp.analysis.report import FormatOptions, format_html, format_text, message_text, to_json
from ipylsp.analysis.report.merge import merge, quoted_names, same_problem
from ipylsp.model.diagnostics import Diagnostic, FileReport, Range, Report, Severity
from ipylsp.model.settings import Settings
from ipylsp.service.service import Service
from tests.real_servers import DATA_DIR, require, workspace, write

ROOT = Path("/work/project")
TOTL = Range.of(4, 6, 4, 10)
NOSUCHMOD = Range.of(0, 7, 0, 16)
LIST = Range.of(1, 19, 1, 23)


def diag(
    rng: Range, message: str, code: str | None, server: str, source: str,
    severity: Severity = Severity.ERROR,
) -> Diagnostic:
    return Diagnostic(rng, severity, message, source, code, server)


TY_TOTL = diag(TOTL, "Name `totl` used when not defined", "unresolved-reference", "ty", "ty")
RUFF_TOTL = diag(TOTL, "Undefined name `totl`", "F821", "ruff", "Ruff")
BP_TOTL = diag(TOTL, '"totl" is not defined', "reportUndefinedVariable", "basedpyright",
               "basedpyright")
PYREFLY_TOTL = diag(TOTL, "Could not find name `totl`\n  Did you mean `total`?", "unknown-name",
                    "pyrefly", "Pyrefly")
W = Severity.WARNING
RUFF_LIST = diag(LIST, "`typing.List` imported but unused\n\nhelp: Remove unused import: "
                 "`typing.List`", "F401", "ruff", "Ruff", W)
BP_LIST = diag(LIST, 'Import "List" is not accessed', "reportUnusedImport", "basedpyright",
               "basedpyright", W)
TY_NOSUCHMOD = diag(
    NOSUCHMOD,
    "Cannot resolve imported module `nosuchmod`\n\ninfo: Searched in the following paths during"
    " module resolution:\ninfo:   1. /tmp/wp3probe (first-party code)\ninfo:   2. vendored://"
    "stdlib (stdlib typeshed stubs vendored by ty)\ninfo:   3. /work/main/.venv/lib/python3.11/"
    "site-packages (site-packages)",
    "import-not-found", "ty", "ty",
)
BP_NOSUCHMOD_UNUSED = diag(NOSUCHMOD, 'Import "nosuchmod" is not accessed', "reportUnusedImport",
                           "basedpyright", "basedpyright", W)


def text_of(*diagnostics: Diagnostic, severity: str = "error") -> list[str]:
    f = FileReport(ROOT / "app.py", "app.py", diagnostics=diagnostics, servers=("a", "b"))
    options = FormatOptions(severity=severity)  # type: ignore[arg-type]
    return format_text(Report(files=(f,), root=ROOT), options).splitlines()[1:-1]


# --- one problem, one line ------------------------------------------------------------------


def test_ty_and_ruff_undefined_name_is_one_line_crediting_both() -> None:
    assert text_of(RUFF_TOTL, TY_TOTL) == [
        "ERROR [5:7] Name `totl` used when not defined [unresolved-reference, F821] (ty, Ruff)"
    ]


def test_basedpyright_and_ruff_and_pyrefly_undefined_name_is_one_line() -> None:
    assert text_of(RUFF_TOTL, BP_TOTL) == [
        'ERROR [5:7] "totl" is not defined [reportUndefinedVariable, F821] (basedpyright, Ruff)'
    ]
    assert text_of(TY_TOTL, PYREFLY_TOTL, RUFF_TOTL) == [
        "ERROR [5:7] Could not find name `totl`; Did you mean `total`? "
        "[unknown-name, unresolved-reference, F821] (Pyrefly, ty, Ruff)"
    ]


def test_unused_import_of_a_dotted_name_merges_on_its_last_part() -> None:
    assert quoted_names(RUFF_LIST.message) == {"typing.List", "List"}
    assert text_of(RUFF_LIST, BP_LIST, severity="warning") == [
        'WARN [2:20] Import "List" is not accessed [reportUnusedImport, F401] (basedpyright, Ruff)'
    ]


def test_near_misses_stay_two_lines() -> None:
    # Same range and name, different problems (an unresolved and an unused import).
    assert not same_problem(TY_NOSUCHMOD, BP_NOSUCHMOD_UNUSED)
    assert len(text_of(TY_NOSUCHMOD, BP_NOSUCHMOD_UNUSED, severity="warning")) == 2
    # Same range and kind, different names.
    other_name = diag(TOTL, "Undefined name `totals`", "F821", "ruff", "Ruff")
    assert text_of(TY_TOTL, other_name) == [
        "ERROR [5:7] Name `totl` used when not defined [unresolved-reference] (ty)",
        "ERROR [5:7] Undefined name `totals` [F821] (Ruff)",
    ]
    # Same kind and name, another range (the name used twice on a line).
    later = diag(Range.of(4, 12, 4, 16), "Undefined name `totl`", "F821", "ruff", "Ruff")
    assert len(text_of(TY_TOTL, later)) == 2
    # One server saying it twice is not two servers agreeing.
    assert len(text_of(TY_TOTL, TY_TOTL)) == 2
    # No code, or a code outside the table: never merged.
    uncoded = diag(TOTL, "Undefined name `totl`", None, "ruff", "Ruff")
    assert len(text_of(TY_TOTL, uncoded)) == 2


def test_a_row_takes_at_most_one_diagnostic_per_server() -> None:
    second_ruff = diag(TOTL, "Undefined name `totl`", "F821", "ruff", "Ruff2")
    rows = merge([TY_TOTL, RUFF_TOTL, second_ruff])
    assert [[d.source for d in row] for row in rows] == [["ty", "Ruff"], ["Ruff2"]]


def test_json_keeps_both_diagnostics_and_says_which_repeats_which() -> None:
    f = FileReport(ROOT / "app.py", "app.py", diagnostics=(RUFF_TOTL, TY_TOTL))
    data = to_json(Report(files=(f,), root=ROOT))
    diagnostics = cast("list[dict[str, Any]]", cast("list[dict[str, Any]]", data["files"])[0][
        "diagnostics"])
    assert [(x["server"], x["message"], x.get("same_as")) for x in diagnostics] == [
        ("ty", "Name `totl` used when not defined", None),
        ("ruff", "Undefined name `totl`", 0),
    ]
    assert data["summary"] == {"errors": 2, "warnings": 0, "fixed": 0, "unknown": 0,
                               "shown": 2, "omitted": 0}
    assert "[unresolved-reference, F821]</span> <span style=\"color:#808080\">(ty, Ruff)" in (
        format_html(Report(files=(f,), root=ROOT)))


def test_caps_count_problems_not_diagnostics() -> None:
    pairs = [
        d
        for n in range(25)
        for d in (
            diag(Range.of(n, 0, n, 4), f"Undefined name `n{n}`", "F821", "ruff", "Ruff"),
            diag(Range.of(n, 0, n, 4), f"Name `n{n}` used when not defined",
                 "unresolved-reference", "ty", "ty"),
        )
    ]
    lines = text_of(*pairs)
    assert len(lines) == 21
    assert lines[-1] == "... and 5 more"


# --- message text for models ----------------------------------------------------------------


def test_pyright_detail_is_kept_under_200_characters() -> None:
    message = 'Type "Literal[\'s\']" is not assignable to declared type "int"\n' \
        '\u00a0\u00a0"Literal[\'s\']" is not assignable to "int"'
    assert message_text(message) == (
        'Type "Literal[\'s\']" is not assignable to declared type "int"; '
        '"Literal[\'s\']" is not assignable to "int"'
    )


def test_continuation_lines_stop_before_200_characters_and_say_so() -> None:
    text = message_text(TY_NOSUCHMOD.message)
    assert text == (
        "Cannot resolve imported module `nosuchmod`; info: Searched in the following paths "
        "during module resolution: info: 1. /tmp/wp3probe (first-party code); …"
    )
    assert len(text) <= 200
    assert message_text(RUFF_LIST.message) == (
        "`typing.List` imported but unused; help: Remove unused import: `typing.List`"
    )


def test_a_long_first_line_is_cut_and_nothing_follows() -> None:
    assert message_text("y" * 450 + "\ndetail") == "y" * 399 + "…"
    assert message_text("\n\n") == ""


def test_the_json_keeps_the_whole_message() -> None:
    f = FileReport(ROOT / "a.py", "a.py", diagnostics=(TY_NOSUCHMOD,))
    data = json.loads(json.dumps(to_json(Report(files=(f,), root=ROOT))))
    assert data["files"][0]["diagnostics"][0]["message"] == TY_NOSUCHMOD.message
    assert text_of(TY_NOSUCHMOD)[0].endswith("(first-party code); … [import-not-found] (ty)")


# --- live: ty and ruff on one undefined name --------------------------------------------------


@pytest.mark.real
def test_real_ty_and_ruff_report_one_line_for_one_undefined_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require("ty")
    require("ruff")
    root = workspace(tmp_path, monkeypatch)
    path = write(root, "app.py", "total = 1\nprint(totl)\n")
    settings = Settings(data_dir=DATA_DIR, language_servers={"python": ("ty", "ruff")},
                        wait_budget=60.0)
    with Service(settings) as service:
        report = service.check(path)
    assert format_text(report) == (
        '<diagnostics file="app.py">\n'
        "ERROR [2:7] Name `totl` used when not defined [unresolved-reference, F821] (ty, Ruff)\n"
        "</diagnostics>"
    )
    diagnostics = cast("list[dict[str, Any]]", cast("list[dict[str, Any]]", to_json(report)[
        "files"])[0]["diagnostics"])
    assert [x["server"] for x in diagnostics] == ["ty", "ruff"]
