"""Two revisions of ipylsp, benchmarked alternately in one run: does a change keep the speed?

Each revision is checked out into a temporary git worktree; every round runs each named
benchmark once per revision (the order alternating between rounds), each with that worktree
first on PYTHONPATH (so the benchmark, ipylsp and the kernels it starts all use that revision's
code) and its own JSON written to a file of its own. Then, for every number the two
revisions' outputs share whose name says it is ipylsp's time (a key path holding "ipylsp",
"check_on", "added" or "cells", a median in ms), the medians over rounds of each
revision and their ratio (new / base). A ratio within `--tolerance` of 1 meets the target.

    .venv/bin/python benchmarks/bench_revisions.py BASE NEW \\
        --bench "bench_core.py --only warm --n 3 --loop 10" \\
        --bench "bench_cells.py --n 10 --first-runs 2" --rounds 3

BASE and NEW are git revisions (NEW may be `WORKTREE`: the files as they are now). The
reference of each benchmark (its raw client or a kernel without ipylsp) runs inside it as
always; this script only compares the revisions' own numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "results"
MARKS = ("ipylsp", "check_on", "added", "cells")


def worktree(revision: str, parent: Path, side: str) -> Path:
    """A checkout of `revision` under `parent` (`WORKTREE`: this working tree itself)."""
    if revision == "WORKTREE":
        return REPO
    target = parent / f"{side}-{revision.replace('/', '_')}"
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "-q", str(target),
                    revision], check=True)
    return target


def run(tree: Path, bench: str, out: Path) -> dict[str, Any]:
    """One benchmark of `tree`'s revision; its JSON (the last line of its stdout)."""
    script, *args = shlex.split(bench)
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(
        [sys.executable, str(tree / "benchmarks" / script), *args],
        cwd=tree, env=env, capture_output=True, text=True, check=False,
    )
    out.write_text(done.stdout)
    if done.returncode == 0:
        lines = done.stdout.splitlines()
        for start in reversed([n for n, line in enumerate(lines) if line.startswith("{")]):
            try:  # the last JSON object on stdout, printed on one line or indented
                result: dict[str, Any] = json.loads("\n".join(lines[start:]))
            except ValueError:
                continue
            return result
    raise SystemExit(f"{script} of {tree} failed ({done.returncode}): {done.stderr[-2000:]}")


def numbers(value: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, float]]:
    """(key path, number) for ipylsp's own times in a benchmark's JSON."""
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from numbers(inner, (*path, str(key)))
    elif isinstance(value, (int, float)) and not isinstance(value, bool) and path:
        name = "/".join(path)
        timed = path[-1].endswith("_ms") or "median_ms" in path  # {"median_ms": {"ipylsp": }}
        if timed and "median" in name and any(m in name for m in MARKS):
            yield name, float(value)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("base")
    parser.add_argument("new")
    parser.add_argument("--bench", action="append", required=True,
                        help="a benchmark script of benchmarks/ with its arguments (repeatable)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tolerance", type=float, default=0.05)
    parser.add_argument("--out", type=Path, default=RESULTS / "bench_revisions.json")
    args = parser.parse_args(argv)

    scratch = Path(tempfile.mkdtemp(prefix="ipylsp-revisions-"))
    trees: dict[str, Path] = {}
    seen: dict[str, dict[str, dict[str, list[float]]]] = {}
    try:
        for side in ("base", "new"):
            trees[side] = worktree(getattr(args, side), scratch, side)
        for round_ in range(args.rounds):
            order = ["base", "new"] if round_ % 2 == 0 else ["new", "base"]
            for bench in args.bench:
                for side in order:
                    print(f"round {round_ + 1}: {bench} on {side}", file=sys.stderr)
                    out = scratch / f"{side}-{round_}-{shlex.split(bench)[0]}.json"
                    for name, value in numbers(run(trees[side], bench, out)):
                        key = f"{shlex.split(bench)[0]}:{name}"
                        seen.setdefault(key, {}).setdefault(side, []).append(value)
    finally:
        for tree in trees.values():
            if tree != REPO:
                subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force",
                                str(tree)], check=False)
        shutil.rmtree(scratch, ignore_errors=True)

    compared = {}
    for key, sides in sorted(seen.items()):
        if len(sides.get("base", [])) != args.rounds or len(sides.get("new", [])) != args.rounds:
            continue  # a number only one revision reports
        base, new = statistics.median(sides["base"]), statistics.median(sides["new"])
        ratio = round(new / base, 3) if base else None
        compared[key] = {"base_median_ms": round(base, 3), "new_median_ms": round(new, 3),
                         "ratio": ratio,
                         "within": ratio is not None and abs(ratio - 1) <= args.tolerance}
    result = {"benchmark": "bench_revisions", "base": args.base, "new": args.new,
              "rounds": args.rounds, "tolerance": args.tolerance, "compared": compared}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
