"""Cost of the write watcher, against the same operations without it, in one run. Prints JSON.

    .venv/bin/python benchmarks/bench_watch.py [--files 10000] [--dirs 500] [--rounds 200]

Measured (medians; times in ms unless the key says us):

- ``audit_hook``: per-call cost of ``id()`` (an audit event that is not ours) and ``open()``
  (read; write outside the roots; write again to a path already recorded) in fresh processes,
  alternated: no hook, a no-op hook written in C (the floor of *any* audit hook), ours with no
  cell watched, ours during a watched cell.
- ``no_write_cell``: ``begin_cell()`` + ``end_cell()`` around nothing; and a real IPython
  ``run_cell("x = 1")`` with and without the watcher wired to pre/post_run_cell (alternated).
- ``kernel_write_cell_50_new_files``: a cell creating 50 files with ``open(..., "w")``.
- ``subprocess_cell``: a cell running ``subprocess.run(["true"])`` in a workspace of `--files`
  files over `--dirs` directories, for inotify and for the stat scan; alternated with the same
  cell unwatched. ``setup_ms`` is the one-time cost of the first watched child (inotify watches).
- ``subprocess_cell_writing``: the same cell writing one file (the detection path is exercised).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ipylsp.ipython import audit
from ipylsp.ipython.fswatch import max_user_watches, snapshot
from ipylsp.ipython.watch import ChildMode, Write, WriteWatcher


def make_workspace(top: Path, files: int, dirs: int) -> None:
    per_dir = max(files // dirs, 1)
    groups = max(int(dirs**0.5), 1)
    made = 0
    for d in range(dirs):
        directory = top / f"pkg{d % groups:02d}" / f"mod{d:04d}"
        directory.mkdir(parents=True, exist_ok=True)
        for i in range(per_dir):
            if made >= files:
                return
            (directory / f"f{i:03d}.py").write_text(f"x = {i}\n")
            made += 1


def per_call_us(op: Callable[[], object], n: int, repeats: int) -> float:
    """Median over `repeats` of the mean time of one call in a loop of `n` (microseconds)."""
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter_ns()
        for _ in range(n):
            op()
        samples.append((time.perf_counter_ns() - t0) / n / 1000)
    return statistics.median(samples)


def timed_ms(op: Callable[[], object]) -> float:
    t0 = time.perf_counter_ns()
    op()
    return (time.perf_counter_ns() - t0) / 1e6


def alternate(
    plain: Callable[[], object], watched: Callable[[], object], rounds: int
) -> dict[str, float]:
    """Medians of `plain` and `watched`, run alternately (drift hits both alike)."""
    a: list[float] = []
    b: list[float] = []
    for _ in range(rounds):
        a.append(timed_ms(plain))
        b.append(timed_ms(watched))
    without, with_ = statistics.median(a), statistics.median(b)
    return {
        "without_ms": round(without, 4),
        "with_ms": round(with_, 4),
        "extra_ms": round(with_ - without, 4),
        "ratio": round(with_ / without, 3) if without else float("nan"),
    }


PROBES = ("no_hook", "noop_c_hook", "hook_idle", "hook_in_cell")


def probe(mode: str, top: Path, n: int) -> dict[str, float]:
    """Per-call costs in this (fresh) process with the hook in state `mode` (microseconds)."""
    ws = top / "ws"
    inside = ws / "pkg00" / "mod0000" / "f000.py"
    outside = top / "scratch.txt"
    obj = object()
    if mode == "noop_c_hook":
        sys.addaudithook({}.get)  # type: ignore[arg-type]  # the floor: any audit hook at all, doing nothing, in C
    elif mode in ("hook_idle", "hook_in_cell"):
        watcher = WriteWatcher(lambda p: p.is_relative_to(ws), roots=lambda: [ws])
        audit.install()
        if mode == "hook_in_cell":
            watcher.begin_cell()
    i, o = str(inside), str(outside)
    out = {
        "id": per_call_us(lambda: id(obj), n * 10, 15),
        "open_read": per_call_us(lambda: open(i, "rb").close(), n, 15),
        "open_write_outside_roots": per_call_us(lambda: open(o, "wb").close(), n, 15),
        "open_write_in_roots_again": per_call_us(lambda: open(i, "ab").close(), n, 15),
    }
    return out


def audit_costs(top: Path, n: int, rounds: int) -> dict[str, Any]:
    samples: dict[str, dict[str, list[float]]] = {m: {} for m in PROBES}
    script = str(Path(__file__).resolve())
    for _ in range(rounds):
        for mode in PROBES:
            proc = subprocess.run(
                [
                    *(sys.executable, script, "--probe", mode, "--probe-dir", str(top)),
                    *("--open-calls", str(n)),
                ],
                capture_output=True,
                text=True,
                check=True,
            )
            for key, value in json.loads(proc.stdout).items():
                samples[mode].setdefault(key, []).append(value)
    table: dict[str, Any] = {}
    for key in samples["no_hook"]:
        row = {mode: round(statistics.median(samples[mode][key]), 4) for mode in PROBES}
        row["idle_extra"] = round(row["hook_idle"] - row["no_hook"], 4)
        row["in_cell_extra"] = round(row["hook_in_cell"] - row["no_hook"], 4)
        table[f"{key}_us"] = row
    return table


def run_true() -> None:
    subprocess.run(["true"], check=True)


def bench_children(ws: Path, mode: ChildMode, rounds: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """A cell running `true`, and one whose child writes a file, with and without watching."""
    w = WriteWatcher(lambda p: p.is_relative_to(ws), roots=lambda: [ws], child_mode=mode)
    end_times: list[float] = []

    def cell(body: Callable[[], None]) -> list[Write]:
        w.begin_cell()
        body()
        t0 = time.perf_counter_ns()
        writes = w.end_cell()
        end_times.append((time.perf_counter_ns() - t0) / 1e6)
        return writes

    def write_one() -> None:
        subprocess.run(["sh", "-c", "echo y > pkg01/mod0001/f000.py"], check=True)

    def watched_write_one() -> None:
        writes = cell(write_one)
        assert [x.path.name for x in writes] == ["f000.py"], writes

    reference = statistics.median(timed_ms(run_true) for _ in range(20))
    setup = timed_ms(lambda: cell(run_true)) - reference
    end_times.clear()
    quiet: dict[str, Any] = alternate(run_true, lambda: cell(run_true), rounds)
    quiet["end_cell_ms"] = round(statistics.median(end_times), 4)
    quiet["first_cell_setup_ms"] = round(setup, 2)
    quiet["mode"] = w.mode
    quiet["notes"] = list(w.notes)
    end_times.clear()
    writing: dict[str, Any] = alternate(write_one, watched_write_one, max(rounds // 2, 10))
    writing["end_cell_ms"] = round(statistics.median(end_times), 4)
    w.close()
    return quiet, writing


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--dirs", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--open-calls", type=int, default=5_000)
    parser.add_argument("--probe", choices=PROBES, help=argparse.SUPPRESS)
    parser.add_argument("--probe-dir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.probe:
        print(json.dumps(probe(args.probe, Path(args.probe_dir), args.open_calls)))
        return
    result: dict[str, Any] = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "max_user_watches": max_user_watches(),
        "workspace": {"files": args.files, "dirs": args.dirs},
    }
    with tempfile.TemporaryDirectory() as tmp:
        top = Path(tmp).resolve()
        ws = top / "ws"
        make_workspace(ws, args.files, args.dirs)
        home = os.getcwd()
        os.chdir(ws)
        gc.collect()

        # 1. The audit hook, per call: fresh processes (a hook cannot be removed), alternated.
        result["audit_hook"] = audit_costs(top, args.open_calls, rounds=5)

        def in_ws(p: Path) -> bool:
            return p.is_relative_to(ws)

        watcher = WriteWatcher(in_ws, roots=lambda: [ws], child_mode="inotify")

        # 2. A cell that writes nothing.
        def empty_cell() -> None:
            watcher.begin_cell()
            watcher.end_cell()

        watcher.prepare()  # worst case: inotify set up, begin_cell drains its queue
        begin_end_us = per_call_us(empty_cell, 200, 15)
        from IPython.core.interactiveshell import InteractiveShell
        from traitlets.config import Config

        config = Config()
        config.HistoryManager.hist_file = ":memory:"
        shell = InteractiveShell.instance(config=config)

        def pre(info: object) -> None:
            watcher.begin_cell()

        def post(res: object) -> None:
            watcher.end_cell()

        def plain_cell() -> None:
            shell.run_cell("x = 1", store_history=False)  # type: ignore[no-untyped-call]

        def watched_cell() -> None:
            shell.events.register("pre_run_cell", pre)
            shell.events.register("post_run_cell", post)
            try:
                shell.run_cell("x = 1", store_history=False)  # type: ignore[no-untyped-call]
            finally:
                shell.events.unregister("pre_run_cell", pre)
                shell.events.unregister("post_run_cell", post)

        def registered_plain() -> None:  # same register/unregister work, no watcher
            shell.events.register("pre_run_cell", _noop)
            shell.events.register("post_run_cell", _noop)
            try:
                shell.run_cell("x = 1", store_history=False)  # type: ignore[no-untyped-call]
            finally:
                shell.events.unregister("pre_run_cell", _noop)
                shell.events.unregister("post_run_cell", _noop)

        for _ in range(20):
            plain_cell()
            watched_cell()
        result["no_write_cell"] = {
            "begin_end_us": round(begin_end_us, 2),
            "ipython_run_cell": alternate(registered_plain, watched_cell, args.rounds),
        }

        # 3. A cell that writes 50 new files from the kernel (each first write reads "before").
        gen = ws / "gen"
        gen.mkdir()
        names = iter(range(10**9))

        def write_files() -> None:
            for _ in range(50):
                with open(gen / f"g{next(names)}.py", "w") as f:
                    f.write("x = 1\n")

        def watched_write_files() -> None:
            watcher.begin_cell()
            write_files()
            assert len(watcher.end_cell()) == 50

        result["kernel_write_cell_50_new_files"] = alternate(
            write_files, watched_write_files, max(args.rounds // 10, 10)
        )
        shutil.rmtree(gen)
        watcher.close()

        # 4. A cell that runs a shell command, in the big workspace.
        subprocess_cells: dict[str, Any] = {}
        writing_cells: dict[str, Any] = {}
        for mode in ("inotify", "scan"):
            subprocess_cells[mode], writing_cells[mode] = bench_children(ws, mode, args.rounds)
        t0 = time.perf_counter_ns()
        n_files = len(snapshot([str(ws)]))
        result["scan_walk_ms"] = round((time.perf_counter_ns() - t0) / 1e6, 2)
        result["scan_walk_files"] = n_files
        result["subprocess_cell"] = subprocess_cells
        result["subprocess_cell_writing"] = writing_cells
        os.chdir(home)

    no_write_extra = result["no_write_cell"]["begin_end_us"] / 1000
    result["targets"] = {
        "no_write_cell_extra_under_1ms": no_write_extra < 1.0,
        "subprocess_cell_extra_under_20ms": {
            mode: entry["extra_ms"] < 20.0 for mode, entry in subprocess_cells.items()
        },
    }
    print(json.dumps(result, indent=2))


def _noop(*args: object) -> None:
    return None


if __name__ == "__main__":
    main()
