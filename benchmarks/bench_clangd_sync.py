"""clangd with and without `--sync` (the catalogue runs it with): what it costs, what it gets right.

Run: ``.venv/bin/python benchmarks/bench_clangd_sync.py [--n 3] [--binaries clangd,clangd-19]``.
Prints one JSON object (also written to ``benchmarks/results/bench_clangd_sync.json``).

Per clangd binary, the catalogue's command with ``--sync`` and without it, interleaved (which
goes first alternates), each run on a fresh workspace with a fresh `Service`:

- ``batch_s``: one check of 12 new C++ files, each including ``<vector>``, ``<string>``,
  ``<map>``, ``<iostream>`` and ``lib.h`` (12 first preambles);
- ``header_s``: ``lib.h``'s signature changes (and back, alternately) and is checked: the 10
  callers checked last are re-diagnosed as other files (the cap); the median of ``--writes``;
- ``callers_reported``: how many callers each header write reported broken (or fixed): 10 is
  right. clangd 19 without ``--sync`` answers a caller's new version from its stale preamble
  first, and ipylsp takes a version's push as its answer: fewer.

Medians over ``n`` runs; ``sync_over_async``: the ratios of the medians (the time ``--sync``
costs: clangd then parses one file at a time, where it would use its worker threads).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as c

from ipylsp.model.server_spec import ServerOverride
from ipylsp.model.settings import Settings
from ipylsp.servers import registry
from ipylsp.service.service import FileCheck, Service

FILES = 12
HEADERS = "#include <vector>\n#include <string>\n#include <map>\n#include <iostream>\n"
BEFORE, AFTER = "int api(int a);\n", "int api(int a, int b);\n"


def caller(i: int) -> str:
    return (
        f'{HEADERS}#include "lib.h"\n'
        f"int use_{i}() {{ std::map<std::string, std::vector<int>> m; std::cout << m.size();"
        f" return api({i}); }}\n"
    )


def one_run(iso: c.Isolation, command: tuple[str, ...], writes: int) -> dict[str, Any]:
    files = {f"f{i}.cpp": caller(i) for i in range(FILES)}
    root = iso.workspace({"compile_flags.txt": "-xc++\n", "lib.h": BEFORE, **files})
    settings = Settings(
        language_servers={"cpp": ("clangd",), "c": ("clangd",), "python": ("ty",)},
        wait_budget=300.0, data_dir=iso.data_dir,
        servers={"clangd": ServerOverride(command=command)},
    )
    lib = root / "lib.h"
    with Service(settings) as service:
        started = time.monotonic()
        report = service.check_files([FileCheck(root / name) for name in files])
        batch = time.monotonic() - started
        assert not report.has_unknown and not report.has_problems, report
        assert not service.check(lib).has_problems
        times, reported = [], []
        for k in range(writes):
            lib.write_text(AFTER if k % 2 == 0 else BEFORE)
            started = time.monotonic()
            report = service.check(lib)
            times.append(time.monotonic() - started)
            reported.append(sum(1 for f in report.files if f.elsewhere))
    return {"batch_s": batch, "header_s": statistics.median(times), "reported": reported}


def bench(iso: c.Isolation, binary: str, n: int, writes: int) -> dict[str, Any]:
    found = shutil.which(binary)
    spec = registry.get("clangd")
    if found is None or spec is None:
        return {"missing": f"{binary} is not on PATH"}
    synced = (found, *spec.command[1:])
    plain = tuple(arg for arg in synced if arg != "--sync")
    assert synced != plain, "the catalogue's clangd command has no --sync"
    runs: dict[str, list[dict[str, Any]]] = {"sync": [], "async": []}
    for i in range(n):
        order = ["sync", "async"] if i % 2 == 0 else ["async", "sync"]
        for mode in order:
            c.log(f"{binary} {mode} run {i + 1}/{n}")
            runs[mode].append(one_run(iso, synced if mode == "sync" else plain, writes))
    out: dict[str, Any] = {"command": list(synced)}
    for mode, results in runs.items():
        out[mode] = {
            "batch_s": c.median([r["batch_s"] for r in results]),
            "header_s": c.median([r["header_s"] for r in results]),
            "callers_reported": [r["reported"] for r in results],
        }
    out["sync_over_async"] = {
        key: c.ratio(out["sync"][key], out["async"][key]) for key in ("batch_s", "header_s")
    }
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=3, help="runs per binary and mode")
    parser.add_argument("--writes", type=int, default=4, help="header writes per run")
    parser.add_argument("--binaries", default="clangd,clangd-19")
    args = parser.parse_args()
    result: dict[str, Any] = {"benchmark": "bench_clangd_sync", "machine": c.machine()}
    with c.isolated_run("bench_clangd_sync", result) as iso:
        result["binaries"] = {
            b: bench(iso, b, args.n, args.writes) for b in args.binaries.split(",") if b
        }
    return c.exit_status(result)


if __name__ == "__main__":
    sys.exit(main())
