"""A check's verdict on a command line: what it prints (the text block, or the JSON of schema
ipylsp.diagnostics/2), what it says on stderr, and its exit code: 0 clean, 1 problems shown,
2 when a file was not checked or a server gave no answer (never "clean").

One function for the CLI in-process and for the broker, which renders it for a thin client:
the same report prints the same way wherever it was made. Pure: a report in, text out.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from ipylsp.analysis.report.budget import select
from ipylsp.analysis.report.schema import to_json
from ipylsp.analysis.report.selection import FormatOptions
from ipylsp.analysis.report.text import format_text
from ipylsp.model.diagnostics import Report
from ipylsp.model.verdict import EXIT_CLEAN, EXIT_FAILURE, EXIT_PROBLEMS, Verdict


def rendered(report: Report, options: FormatOptions, *, as_json: bool) -> str:
    """The report as `--json` (schema ipylsp.diagnostics/2) or its text block ("": clean)."""
    if as_json:
        return json.dumps(to_json(report, options), indent=2, ensure_ascii=False)
    return format_text(report, options)


def shows_problems(report: Report, options: FormatOptions) -> bool:
    """Whether the report, so rendered, shows a problem (or says one was left out)."""
    return any(v.shown or v.omitted for v in select(report, options))


def verdict(report: Report, asked: Sequence[Path], options: FormatOptions, *, as_json: bool,
            command: str = "ipylsp check") -> Verdict:
    """`ipylsp check`'s output and exit code for `report`, made for the files `asked`."""
    stdout = rendered(report, options, as_json=as_json)
    unchecked = [f.display_path for f in report.files if not f.servers and not f.diagnostics]
    if unchecked:  # nothing could check these: that is not "clean"
        return Verdict(stdout, (f"{command}: no language server for {', '.join(unchecked)}",),
                       EXIT_FAILURE)
    reported = {f.path for f in report.files}
    if report.has_unknown or any(path not in reported for path in asked):
        return Verdict(stdout, (), EXIT_FAILURE)  # a file not checked (a FIFO): a note says why
    return Verdict(stdout, (), EXIT_PROBLEMS if shows_problems(report, options) else EXIT_CLEAN)
