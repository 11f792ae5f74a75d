#!/usr/bin/env python3
"""What lsprotocol costs: import time, and the first feature request after it.

Each run is a fresh Python process (lsprotocol not yet imported) with a warm ty: it times
`import lsprotocol.types` alone in one process, and, in another, the first `Service.feature`
hover (which imports lsprotocol and builds its converter) against the second one (everything
imported). Medians over --runs processes; the difference is what lsprotocol adds to the first
feature request. `import ipylsp` and a check never import it (tests/test_lsp_features.py).

    .venv/bin/python benchmarks/bench_features.py [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from typing import Any

from _common import REPO, Isolation, emit, machine, median, ms

CHILD = r"""
import json, sys, time
from pathlib import Path
from ipylsp.service.service import Service
from ipylsp.lsp.requests.hover import HOVER
from ipylsp.model.settings import Settings
root = Path(sys.argv[1]); data_dir = Path(sys.argv[2])
main = root / "main.py"
with Service(Settings(language_servers={"python": ("ty",)}, data_dir=data_dir)) as service:
    service.check(main)  # warm: server started, file open
    times = []
    for _ in range(2):
        t0 = time.perf_counter()
        result = service.feature(HOVER, main, 2, 8)
        times.append(time.perf_counter() - t0)
        assert result.error == "" and "area" in result.text, result
print(json.dumps({"first": times[0], "second": times[1]}))
"""

IMPORT_ONLY = (
    "import time; t = time.perf_counter(); import lsprotocol.types;"
    "from lsprotocol.converters import get_converter; get_converter();"
    "print(time.perf_counter() - t)"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    iso = Isolation()
    try:
        root = iso.workspace({
            "lib.py": "def area(w: int, h: int) -> int:\n    return w * h\n",
            "main.py": "from lib import area\n\ntotal = area(2, 3)\n",
        })
        runs: list[dict[str, Any]] = []
        imports: list[float] = []
        for _ in range(args.runs):
            out = subprocess.run(
                [sys.executable, "-c", CHILD, str(root), str(iso.data_dir)],
                capture_output=True, text=True, check=True, cwd=REPO,
            )
            runs.append(json.loads(out.stdout))
            out = subprocess.run([sys.executable, "-c", IMPORT_ONLY],
                                 capture_output=True, text=True, check=True)
            imports.append(float(out.stdout))
        first = median([r["first"] for r in runs])
        second = median([r["second"] for r in runs])
        emit("bench_features", {
            "benchmark": "bench_features",
            "machine": machine(),
            "runs": args.runs,
            "server": "ty",
            "lsprotocol_import_and_converter_ms": ms(median(imports) or 0.0),
            "first_hover_ms": ms(first or 0.0),
            "second_hover_ms": ms(second or 0.0),
            "added_to_first_request_ms": ms((first or 0.0) - (second or 0.0)),
        })
        leftovers = iso.leftovers()
        if leftovers:
            raise SystemExit(f"processes left behind: {leftovers}")
    finally:
        iso.close()


if __name__ == "__main__":
    main()
