"""Benchmark `ipylsp.analysis.report.mime_bundle` (the display of one cell) on big reports.

Run: `.venv/bin/python benchmarks/bench_report.py [--repeat N]`. Prints one JSON object: per
scenario the median and p90 in milliseconds, the sizes of text/plain, text/html and the JSON
(json.dumps characters), and the ratio of the median to a reference measured in the same run
(one f-string per diagnostic, joined: the least any text rendering of the report costs).

Scenarios: a cell that wrote N files with one basedpyright error each (N = 10, 150, 1000),
and one file with 500 errors, half of them reported twice (ty + ruff undefined names, merged).
Each checks its result: the text stays within the 6,000-character budget.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ipylsp.analysis.report import MIME_TYPE, FormatOptions, mime_bundle
from ipylsp.model.diagnostics import Diagnostic, FileReport, Range, Report, Severity

ROOT = Path("/bench")
MESSAGE = 'Type "Literal[\'s\']" is not assignable to declared type "int"\n  "Literal[\'s\']" ' \
    'is not assignable to "int"'


def batch(n: int) -> Report:
    files = [
        FileReport(ROOT / f"gen_{k}.py", f"gen_{k}.py", servers=("basedpyright", "ruff"),
                   diagnostics=(Diagnostic(Range.of(0, 9, 0, 12), Severity.ERROR, MESSAGE,
                                           "basedpyright", "reportAssignmentType",
                                           "basedpyright"),))
        for k in range(n)
    ]
    return Report(files=tuple(reversed(files)), root=ROOT)


def duplicates() -> Report:
    diagnostics: list[Diagnostic] = []
    for line in range(250):
        r = Range.of(line, 0, line, 4)
        diagnostics.append(Diagnostic(r, Severity.ERROR, f"Name `n{line}` used when not defined",
                                      "ty", "unresolved-reference", "ty"))
        diagnostics.append(Diagnostic(r, Severity.ERROR, f"Undefined name `n{line}`", "Ruff",
                                      "F821", "ruff"))
    return Report(files=(FileReport(ROOT / "app.py", "app.py", tuple(diagnostics)),), root=ROOT)


def reference(report: Report) -> str:
    return "\n".join(
        f"{d.severity.label} [{d.range.start.line + 1}:{d.range.start.column + 1}] {d.message}"
        for f in report.files for d in f.diagnostics
    )


def timed(fn: Callable[[], object], repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=21)
    args = parser.parse_args()
    scenarios = {f"batch_{n}": batch(n) for n in (10, 150, 1000)}
    scenarios["duplicates_500"] = duplicates()
    options = FormatOptions()
    out: dict[str, object] = {"python": platform.python_version(), "repeat": args.repeat}
    for name, report in scenarios.items():
        bundle = mime_bundle(report, options)
        text = bundle["text/plain"]
        assert isinstance(text, str) and 0 < len(text) <= options.max_report_chars, name
        ours = timed(lambda r=report: mime_bundle(r, options), args.repeat)
        base = timed(lambda r=report: reference(r), args.repeat)
        median = statistics.median(ours)
        out[name] = {
            "median_ms": round(median, 3),
            "p90_ms": round(statistics.quantiles(ours, n=10)[-1], 3),
            "reference_median_ms": round(statistics.median(base), 3),
            "ratio_to_reference": round(median / max(statistics.median(base), 1e-6), 1),
            "text_chars": len(text),
            "html_chars": len(str(bundle["text/html"])),
            "json_chars": len(json.dumps(bundle[MIME_TYPE])),
        }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
