#!/usr/bin/env python3
"""The cells sweep's numbers, in one run. Prints JSON.

    .venv/bin/python benchmarks/bench_sweep.py [--workers 2] [--only statsmodels]
        [--servers ty,ruff]

Runs the notebooks `tests/test_cells_sweep.py` runs (every notebook of
`tests/notebook_sources.py` and this repository's, less its `EXCLUDED`), the same way
(`tests/notebook_sweep.py`: a real kernel each, ipylsp with ty + ruff, every severity), and
counts what the reports said: ``cells``, ``cells_ran_clean``, ``cells_raised``, ``reports``
(every diagnostic located in a notebook's cell), ``errors``, ``demoted`` (shown as warnings
because the run disproved them; ``demoted_by_code`` per server and code), ``false_alarms``
(ERRORs of a kind a clean run disproves, on cells that ran clean, not in the test's `TRUE`;
target 0), ``errors_on_clean_cells`` (those and the checkers' other claims),
``true_reports_on_raised_cells`` (ERRORs on cells that raised: must not drop); ``wall_s`` the
sweep's time with ``workers`` kernels at a time, ``kernel_s`` the notebooks' times summed.
"""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
import time
from pathlib import Path

from _common import REPO, emit, log, machine

from tests.notebook_sources import FETCH
from tests.notebook_sweep import SERVERS, Sweep, count, false_alarms, notebooks
from tests.test_cells_sweep import EXCLUDED, TRUE, _true


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--only", default=None, help="notebooks whose id contains this")
    parser.add_argument("--servers", default=",".join(SERVERS), help="the Python servers")
    args = parser.parse_args()
    chosen, missing = notebooks(EXCLUDED, args.only)
    if missing:
        raise SystemExit(f"no notebooks of {missing}: run {FETCH}")
    log(f"{len(chosen)} notebooks, {args.workers} at a time")
    host = machine()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="sweep-") as tmp:
        sweep = Sweep(chosen, Path(tmp), workers=args.workers, servers=args.servers.split(","))
        runs = []
        for run in sweep.results():
            log(f"{run.notebook.id}: {run.seconds:.1f} s"
                + (f", could not run: {run.failure[:200]}" if run.failure else ""))
            runs.append(run)
        sweep.close()
    counts = count(runs, _true)
    alarms = [f"{r.notebook.id} code cell {cell.index}: {said}  <- {cell.line(said)[:80]!r}"
              for r in runs for cell, said in false_alarms(r, _true)]
    name = "bench_sweep" if sweep.servers == SERVERS else f"bench_sweep_{'_'.join(sweep.servers)}"
    emit(name, {
        "benchmark": "bench_sweep",
        "machine": host,
        "notebooks_excluded": len(EXCLUDED),
        "reports_listed_true": len(TRUE),
        "servers": sweep.servers,
        "could_not_run": [r.notebook.id for r in runs if r.failure],
        "sentinel_missing": {r.notebook.id: r.sentinel_missing(sweep.servers) for r in runs
                             if r.sentinel_missing(sweep.servers)},
        "workers": args.workers,
        "wall_s": round(time.monotonic() - started, 1),
        "kernel_s": counts.seconds,
        "counts": dataclasses.asdict(counts),
        "false_alarm_list": alarms,
        "repo": str(REPO),
    })


if __name__ == "__main__":
    main()
