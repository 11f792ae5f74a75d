#!/usr/bin/env python3
"""The persistent store's foundation (issue 14, in progress): what a put costs the caller
(the writer thread does the disk), what a lookup costs, and the file for 1,000 files.

    .venv/bin/python benchmarks/bench_store.py [--files 1000]

Not yet the issue's measure (a check's added cost with the store on vs off): the store is not
wired into the service. JSON on stdout.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as c

from ipylsp.analysis.model import Diagnostic, Position, Range, Severity
from ipylsp.analysis.store import Store


def diagnostics(n: int) -> tuple[Diagnostic, ...]:
    return tuple(
        Diagnostic(Range(Position(i, 4), Position(i, 12)), Severity.ERROR,
                   f"Object of type `Literal[{i}]` is not assignable to `str`", "ty",
                   "invalid-assignment", "ty")
        for i in range(n)
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=1000)
    args = parser.parse_args()
    ten = diagnostics(10)
    with tempfile.TemporaryDirectory() as top:
        store = Store(Path(top) / "store.sqlite3", max_bytes=0)
        put_us: list[float] = []
        texts = [f"text of file {n}\n" * 40 for n in range(args.files)]
        for n, text in enumerate(texts):
            for server in ("ty", "ruff"):
                t0 = time.perf_counter()
                store.put_diagnostics(f"/ws/pkg/module_{n}.py", text, server, ten)
                put_us.append((time.perf_counter() - t0) * 1e6)
        t0 = time.perf_counter()
        store.flush(120)
        drained_ms = c.ms(time.perf_counter() - t0)
        get_us: list[float] = []
        for n, text in enumerate(texts[:500]):
            t0 = time.perf_counter()
            hit = store.get_diagnostics(f"/ws/pkg/module_{n}.py", text, "ty")
            get_us.append((time.perf_counter() - t0) * 1e6)
            assert hit is not None and len(hit.diagnostics) == 10
        store.flush(120)
        info = store.info()
        size = sum(p.stat().st_size for p in Path(top).iterdir())
        store.close()
    c.emit("bench_store", {
        "benchmark": "bench_store",
        "machine": c.machine(),
        "files": args.files,
        "servers": 2,
        "diagnostics_per_answer": 10,
        "put_caller_median_us": round(c.median(put_us) or 0, 1),
        "writer_drain_after_puts_ms": drained_ms,
        "get_median_us": round(c.median(get_us) or 0, 1),
        "rows": info["rows"],
        "used_bytes": info["bytes"],
        "file_bytes_with_wal": size,
    })


if __name__ == "__main__":
    main()
