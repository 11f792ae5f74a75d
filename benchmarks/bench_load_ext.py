#!/usr/bin/env python3
"""What `%load_ext ipylsp` adds to a small notebook that writes nothing. Prints JSON.

    .venv/bin/python benchmarks/bench_load_ext.py [--runs 10]

Each run executes the same six-cell notebook (imports, arithmetic, a print, a small loop) on a
fresh ipykernel through nbclient, with `%load_ext ipylsp` as its first cell or with `pass`
there instead, alternating so that drift hits both alike. Wall time from starting the kernel to
the last cell's end, and the cells alone (kernel start excluded). Target: <= 1.05x. ipylsp's
bytecode is compiled first, as a wheel install does (this machine sets PYTHONDONTWRITEBYTECODE).
"""

from __future__ import annotations

import argparse
import compileall
import os
import time
from pathlib import Path

import nbformat
from _common import REPO, Isolation, emit, machine, median, ms
from nbclient import NotebookClient

CELLS = [
    "import json, math, statistics",
    "values = [math.sqrt(i) for i in range(1000)]",
    "print(round(statistics.mean(values), 3))",
    "data = json.dumps({'n': len(values)})",
    "total = 0\nfor v in values:\n    total += v\ntotal",
]


def run_once(first: str, workspace: Path) -> tuple[float, float]:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src) for src in [first, *CELLS]]
    client = NotebookClient(nb, timeout=60, kernel_name="python3",
                            resources={"metadata": {"path": str(workspace)}})
    t0 = time.perf_counter()
    with client.setup_kernel():
        t1 = time.perf_counter()
        for index, cell in enumerate(nb.cells):
            client.execute_cell(cell, index)
        t2 = time.perf_counter()
    return t2 - t0, t2 - t1


def main() -> None:
    # As installed from a wheel: ipylsp's bytecode compiled once (this machine sets
    # PYTHONDONTWRITEBYTECODE, which would make every kernel compile ipylsp from source).
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    compileall.compile_dir(str(REPO / "ipylsp"), quiet=1)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    iso = Isolation()
    try:
        ws = iso.workspace({"README.md": "bench\n"})
        arms: dict[str, list[tuple[float, float]]] = {"with": [], "without": []}
        run_once("pass", ws)  # warm the disk cache
        for _ in range(args.runs):
            arms["without"].append(run_once("pass", ws))
            arms["with"].append(run_once("%load_ext ipylsp", ws))
        result = {}
        for name, runs in arms.items():
            result[f"{name}_total_ms"] = ms(median([r[0] for r in runs]) or 0.0)
            result[f"{name}_cells_ms"] = ms(median([r[1] for r in runs]) or 0.0)
        # The kernel's start does not depend on the first cell, but varies by tens of ms from
        # one kernel to the next: the start of all runs pooled, plus each arm's cells, is the
        # steadier estimate of the same ratio.
        start = median([r[0] - r[1] for runs in arms.values() for r in runs]) or 0.0
        result["start_pooled_ms"] = ms(start)
        with_ms, without_ms = result["with_cells_ms"], result["without_cells_ms"]
        pooled = (start * 1000 + with_ms) / (start * 1000 + without_ms)
        result["ratio_total_pooled_start"] = round(pooled, 3)
        emit("bench_load_ext", {
            "benchmark": "bench_load_ext",
            "machine": machine(),
            "runs": args.runs,
            **result,
            "ratio_total": round(result["with_total_ms"] / result["without_total_ms"], 3),
            "ratio_cells": round(result["with_cells_ms"] / result["without_cells_ms"], 3),
            "target_ratio_total": 1.05,
        })
        leftovers = iso.leftovers()
        if leftovers:
            raise SystemExit(f"processes left behind: {leftovers}")
    finally:
        iso.close()


if __name__ == "__main__":
    main()
