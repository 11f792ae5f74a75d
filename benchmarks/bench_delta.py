"""Benchmark `ipylsp.analysis.delta.compute_delta` on a 10,000-line file with 500 diagnostics.

Run: `.venv/bin/python benchmarks/bench_delta.py [--repeat N]`. Prints one JSON object: per
scenario the median and p90 in milliseconds, the ratio of the median to the 20 ms budget, and
the ratio to a reference measured in the same run (a bare `difflib.SequenceMatcher` line diff
of the two texts, i.e. what remapping through a naive diff costs before doing anything else).

Scenarios (each checks its result, so a fast wrong answer fails loudly):

- `typical`: a cell rewrites a file: 5 lines inserted near the top, 2 lines deleted, 3 lines
  edited in place (columns shift), 3 new diagnostics;
- `scattered`: 50 edits spread over the whole file;
- `crlf`: the same file re-saved with CRLF line ends plus the typical edits;
- `reindent`: every line indented by 4 spaces (the whole file is one replaced block).
"""

from __future__ import annotations

import argparse
import difflib
import json
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ipylsp.analysis.delta import compute_delta
from ipylsp.model.diagnostics import Diagnostic, Range, Severity
from ipylsp.model.positions import split_lines

LINES = 10_000
DIAGNOSTICS = 500
BUDGET_MS = 20.0


def make_file() -> list[str]:
    lines: list[str] = []
    n = 0
    while len(lines) < LINES:
        lines += [
            f"def function_{n}(value_{n}: int, other: str = 'x') -> int:",
            f'    """Docstring for function {n}."""',
            f"    result = compute(value_{n}, other) + undefined_{n}",
            "    if result:",
            "        return result",
            "",
            "    return 0",
            "",
        ]
        n += 1
    return lines[:LINES]


def diagnostics_for(lines: list[str], tag_lines: set[int]) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    for number in sorted(tag_lines):
        text = lines[number]
        column = text.find("undefined_")
        if column < 0:
            continue
        name = text[column:].split()[0]
        out.append(
            Diagnostic(
                Range.of(number, column, number, column + len(name)),
                Severity.ERROR,
                f'"{name}" is not defined',
                source="Pyright",
                code="reportUndefinedVariable",
                server_id="pyright",
            )
        )
    return out


def baseline_case(lines: list[str]) -> tuple[list[int], list[Diagnostic]]:
    candidates = [i for i, t in enumerate(lines) if "undefined_" in t]
    step = max(1, len(candidates) // DIAGNOSTICS)
    chosen = candidates[::step][:DIAGNOSTICS]
    return chosen, diagnostics_for(lines, set(chosen))


Case = tuple[str, str, list[Diagnostic], list[Diagnostic], int]


def typical(lines: list[str], chosen: list[int], crlf: bool = False) -> Case:
    after = list(lines)
    # edit three lines in place: insert text before the error column
    edited = [chosen[100], chosen[250], chosen[400]]
    for number in edited:
        after[number] = after[number].replace("result = ", "result = 2 * 名前 + ", 1)
    del after[5000:5002]
    after[30:30] = [f"NEW_{k} = undefined_new_{k}" for k in range(5)]
    before_text = "\n".join(lines) + "\n"
    after_text = ("\r\n" if crlf else "\n").join(after) + ("\r\n" if crlf else "\n")
    # Where the chosen lines went: +5 below the insertion, -2 more below the deletion.
    deleted = {5000, 5001}
    current_lines = [n + 5 if n >= 30 else n for n in chosen if n not in deleted]
    current_lines = [n - 2 if n >= 5000 + 5 else n for n in current_lines]
    current = diagnostics_for(after, set(current_lines) | {30, 31, 32})
    baseline = diagnostics_for(lines, set(chosen))
    return before_text, after_text, baseline, current, 3


def scattered(lines: list[str], chosen: list[int]) -> Case:
    after = list(lines)
    # 50 edits: every 200 lines, an inserted comment line (positions shift progressively)
    for k in range(50):
        at = LINES - 1 - k * 200
        after.insert(at, f"# edit {k}")
    before_text = "\n".join(lines) + "\n"
    after_text = "\n".join(after) + "\n"
    current_lines = {i for i, t in enumerate(after) if "undefined_" in t}
    chosen_text = {lines[n] for n in chosen}
    current = diagnostics_for(after, {i for i in current_lines if after[i] in chosen_text})
    return before_text, after_text, diagnostics_for(lines, set(chosen)), current, 0


def reindent(lines: list[str], chosen: list[int]) -> Case:
    after = ["    " + t if t else t for t in lines]
    before_text = "\n".join(lines) + "\n"
    after_text = "\n".join(after) + "\n"
    return (
        before_text,
        after_text,
        diagnostics_for(lines, set(chosen)),
        diagnostics_for(after, set(chosen)),
        0,
    )


def measure(fn: Callable[[], object], repeat: int) -> list[float]:
    fn()  # warm up
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000.0)
    return times


def summarize(times: list[float]) -> dict[str, float]:
    ordered = sorted(times)
    p90 = ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]
    return {"median_ms": round(statistics.median(ordered), 3), "p90_ms": round(p90, 3)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()

    lines = make_file()
    chosen, _ = baseline_case(lines)
    cases = {
        "typical": typical(lines, chosen),
        "scattered": scattered(lines, chosen),
        "crlf": typical(lines, chosen, crlf=True),
        "reindent": reindent(lines, chosen),
    }
    results: dict[str, object] = {}
    ok = True
    for name, (before, after, baseline, current, expected_new) in cases.items():
        delta = compute_delta(before, after, baseline, current)
        correct = len(delta.introduced) == expected_new and len(delta.fixed) == (
            len(baseline) - (len(current) - expected_new)
        )
        ok = ok and correct

        def run(
            b: str = before,
            a: str = after,
            bl: list[Diagnostic] = baseline,
            cu: list[Diagnostic] = current,
        ) -> object:
            return compute_delta(b, a, bl, cu)

        def reference(b: str = before, a: str = after) -> object:
            return difflib.SequenceMatcher(None, split_lines(b), split_lines(a)).get_opcodes()

        stats = summarize(measure(run, args.repeat))
        ref = summarize(measure(reference, max(5, args.repeat // 3)))
        results[name] = {
            **stats,
            "ratio_to_budget": round(stats["median_ms"] / BUDGET_MS, 3),
            "reference_median_ms": ref["median_ms"],
            "ratio_to_reference": round(stats["median_ms"] / max(ref["median_ms"], 1e-6), 3),
            "baseline": len(baseline),
            "current": len(current),
            "introduced": len(delta.introduced),
            "fixed": len(delta.fixed),
            "correct": correct,
        }
    print(
        json.dumps(
            {
                "benchmark": "delta",
                "lines": LINES,
                "diagnostics": DIAGNOSTICS,
                "budget_ms": BUDGET_MS,
                "python": platform.python_version(),
                "repeat": args.repeat,
                "scenarios": results,
            },
            indent=2,
        )
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
