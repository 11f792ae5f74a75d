#!/usr/bin/env python3
"""What the cell check (`IPyLSP.check_cells`) adds to a cell, in one run. Prints JSON.

    .venv/bin/python benchmarks/bench_cells.py [--history 200] [--n 30] [--first-runs 5]
        [--servers ty,basedpyright]

The issue's question: "Time added to a cell by the cell check on warm ty and on basedpyright,
with 200 executed cells of history (median). The first cell after `%load_ext` must not wait for
a server to start." Every case is alternated with its reference, medians of wall times:

- ``kernel``: real ipykernels (jupyter_client, cells timed from ``execute_request`` to
  ``idle``, `store_history=True` as a notebook sends them). Per server set (ty + ruff, the
  default; basedpyright + ruff): a kernel runs `--history` generated cells (defs, classes,
  imports, loops, comprehensions, `%time`, `%%capture`, `!` and `x = !cmd` lines, `exec`-bound
  names, top-level `await`, a few cells that raise and a few type errors), then `%load_ext
  ipylsp` (the session is seeded with that history), then warm-up cells until a deliberate
  error is reported. Then `--n` new cells (each reads names of earlier cells), alternately with
  `check_cells` on and off (switched by a silent execution) and on a kernel without ipylsp:
  ``added_ms`` = on - off. Every "on" cell must be clean (no display): counted in ``displays``.
- ``first_cell``: `--first-runs` fresh kernels per server set: cell 1 `%load_ext ipylsp` (+ the
  server set), cell 2 a small cell (the first cell checked), cell 3 another one; against a
  kernel without ipylsp running `pass` then the same two cells. The reference for "waiting for a
  server start" is ``server_start_ms``: a fresh `Service`'s first check of a one-line file
  (spawn, initialize, first diagnostics), measured in the same run.
- ``session``: `CellSession.run` directly on a warm `Service` (no kernel), the same generated
  history (run once in an in-process `InteractiveShell` for a real namespace): 200 cells of
  history against an empty history (cleared before each cell), and split three ways:
  ``cells_ms`` (ours, around the service: neutralize, document, prelude, locate),
  ``service_ms`` (the service's own share: batching, delta, report), ``wire_ms`` (first
  document notification to the last message read: the servers).
- ``prelude``: the same 200-cell session with the kernel's stub prelude (names bound by `exec`
  that later cells read, declared with their live types) against the same kernel names with no
  prelude (the names are still never reported; the servers just see no declarations);
  ``stub_prelude_ms`` is `stub_prelude` alone and ``prelude_lines`` its size.

Nothing here is a test: no asserts on times.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import _common as c
import bench_ipython

SERVER_SETS = {"ty": ("ty", "ruff"), "basedpyright": ("basedpyright", "ruff")}


# -- the generated notebook -----------------------------------------------------------------------


def history_cells(n: int) -> list[str]:
    """`n` varied cells of a working session; every name a cell reads is bound before it."""
    cells: list[str] = []
    last_def = last_class = last_json = None
    for i in range(n):
        kind = i % 14
        if i % 50 == 25:
            cells.append(f"scores_{i} = [1, 2, 3]\nscores_{i}[10]")  # IndexError
        elif i % 50 == 49:
            cells.append(f'raise ValueError("stop here {i}")')
        elif i % 40 == 13:
            cells.append(f'wrong_{i}: int = "not an int"  # a type error that stays')
        elif kind == 0:
            cells.append(f"import math\nv_{i} = math.sqrt({i})")
        elif kind == 1:
            cells.append(
                f"def f_{i}(a: int, b: int = {i}) -> int:\n"
                f'    """Scale `a`."""\n    return a * b + {i}\n\n\nr_{i} = f_{i}(2)'
            )
            last_def = i
        elif kind == 2:
            cells.append(
                f"class C_{i}:\n    def __init__(self, n: int) -> None:\n        self.n = n\n\n"
                f"    def double(self) -> int:\n        return self.n * 2\n\n\n"
                f"c_{i} = C_{i}({i}).double()\nc_{i}"
            )
            last_class = i
        elif kind == 3:
            cells.append(
                f"total_{i} = 0\nfor k in range(10):\n    if k % 2:\n        total_{i} += k\n"
                f"total_{i}"
            )
        elif kind == 4:
            cells.append(f"%time t_{i} = sum(range({i}))")
        elif kind == 5:
            cells.append(f"files_{i} = !echo {i}\n!true\nlen(files_{i})")
        elif kind == 6:
            cells.append(
                f'import json\ndata_{i} = {{"k": [1, 2, 3], "n": {i}}}\n'
                f"s_{i} = json.dumps(data_{i})"
            )
            last_json = i
        elif kind == 7:
            cells.append(f'exec("e_{i} = [{i}, {i} + 1]")\nprint(e_{i}[0])')
        elif kind == 8:
            cells.append(f'%%capture out_{i}\nprint("hidden {i}")')
        elif kind == 9 and last_def is not None and last_class is not None:
            cells.append(
                f"mixed_{i} = [f_{last_def}(k) + C_{last_class}(k).double() for k in range(3)]\n"
                f"mixed_{i}"
            )
        elif kind == 10:
            cells.append(
                f"sq_{i} = sorted({{k: k * k for k in range(5)}}.items(), "
                f"key=lambda kv: -kv[1])\nsq_{i}[:2]"
            )
        elif kind == 11:
            cells.append(f"import asyncio\nawait asyncio.sleep(0)\ndone_{i} = True")
        elif kind == 12 and last_json is not None:
            cells.append(f"import json\nback_{i} = json.loads(s_{last_json})\nback_{i}['n']")
        else:
            cells.append(
                f"from pathlib import Path\nfrom collections import Counter\n"
                f"words_{i} = Counter('the cat and the hat {i}'.split())\n"
                f"words_{i}.most_common(1)"
            )
    return cells


def new_cell(i: int, history: Sequence[str]) -> str:
    """A new cell reading names of earlier cells (f_*, s_*, e_*), clean for every checker."""
    text = "\n".join(history)
    f = max(j for j in range(len(history)) if f"def f_{j}(" in text)
    s = max(j for j in range(len(history)) if f"s_{j} = json.dumps" in text)
    e = max(j for j in range(len(history)) if f'exec("e_{j} =' in text)
    return (
        f"probe_{i} = [f_{f}(k) + len(s_{s}) for k in range({i % 7 + 1})]\n"
        f"probe_{i}.append(len(e_{e}))\nprobe_{i}[-1]"
    )


FIRST_CELL = "import statistics\nmean_a = statistics.mean([1, 2, 3])\nmean_a"
SECOND_CELL = "mean_b = mean_a * 2\nmean_b"
STATES = "print(sorted({(s.server_id, s.state) for s in __import__('ipylsp').status()}))"


# -- kernels --------------------------------------------------------------------------------------


class Kernel(bench_ipython.Kernel):
    """bench_ipython's kernel; cells sent as a notebook sends them (store_history), errors
    allowed where asked."""

    def cell(self, code: str, *, silent: bool = False, errors: bool = False,
             history: bool = True, timeout: float = 120) -> tuple[float, list[dict[str, Any]]]:
        """(ms from execute_request to the reply after idle, the cell's iopub messages)."""
        messages: list[dict[str, Any]] = []
        t0 = time.perf_counter()
        reply = self.kc.execute_interactive(
            code, silent=silent, store_history=history and not silent, timeout=timeout,
            output_hook=messages.append,
        )
        elapsed = c.ms(time.perf_counter() - t0)
        if reply["content"]["status"] != "ok" and not errors:
            raise RuntimeError(f"{code!r} failed: {reply['content']}")
        return elapsed, messages


def displays(messages: list[dict[str, Any]]) -> list[str]:
    return [m["content"]["data"].get("text/plain", "") for m in messages
            if m["msg_type"] in ("display_data", "update_display_data")]


@contextlib.contextmanager
def kernels(base: Path, cwd: Path, count: int) -> Iterator[list[Kernel]]:
    specs = base / "kernels"
    if not (specs / "python3" / "kernel.json").exists():
        (specs / "python3").mkdir(parents=True)
        (specs / "python3" / "kernel.json").write_text(json.dumps({
            "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": "bench", "language": "python",
        }))
    env = {**os.environ, "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
    started: list[Kernel] = []
    try:
        for _ in range(count):
            started.append(Kernel(specs, cwd, env))
        yield started
    finally:
        for kernel in started:
            with contextlib.suppress(Exception):
                kernel.close()


def load_cell(data_dir: Path, servers: Sequence[str]) -> str:
    # HOME is the benchmark's own (Isolation): the installed servers are in the real data dir.
    return (f"%load_ext ipylsp\n%config IPyLSP.data_dir = {str(data_dir)!r}\n"
            f"%config IPyLSP.language_servers = {{'python': {list(servers)!r}}}")


def warm_up(kernel: Kernel, tries: int = 40) -> dict[str, Any]:
    """Cells until a deliberate error is reported (servers started and answering): while a
    server starts, a cell's check is brief and the next one catches up."""
    for i in range(tries):
        _, messages = kernel.cell(f'warm_{i}: int = "s"')
        if any("invalid-assignment" in t or "reportAssignmentType" in t
               for t in displays(messages)):
            return {"warm_up_cells": i + 1}
    raise RuntimeError("the cell check never reported the warm-up error")


def kernel_cells(base: Path, ws: Path, data_dir: Path, servers: Sequence[str], history: list[str],
                 n: int) -> dict[str, Any]:
    with kernels(base, ws, 2) as (checked, plain):
        for source in history:  # before %load_ext: the session is seeded with them
            checked.cell(source, errors=True)
            plain.cell(source, errors=True)
        t_load, _ = checked.cell(load_cell(data_dir, servers))
        warm = warm_up(checked)
        on: list[float] = []
        off: list[float] = []
        ref: list[float] = []
        shown = 0
        for i in range(n):
            arms: list[tuple[Kernel, bool | None, list[float], str]] = [
                (checked, True, on, new_cell(2 * i, history)),
                (checked, False, off, new_cell(2 * i + 1, history)),
                (plain, None, ref, new_cell(2 * i, history)),
            ]
            shift = i % 3
            for kernel, check, samples, source in arms[shift:] + arms[:shift]:
                if check is not None:
                    kernel.cell(f"%config IPyLSP.check_cells = {check}", silent=True)
                elapsed, messages = kernel.cell(source)
                samples.append(elapsed)
                shown += bool(check) and bool(displays(messages))
        return {
            "servers": list(servers),
            "history_cells": len(history),
            "load_ext_ms": t_load,
            **warm,
            "check_on_median_ms": c.median(on),
            "check_off_median_ms": c.median(off),
            "no_ipylsp_median_ms": c.median(ref),
            "added_median_ms": round((c.median(on) or 0) - (c.median(off) or 0), 3),
            "ratio_on_off": c.ratio(c.median(on), c.median(off)),
            "n": n,
            "displays_in_checked_cells": shown,
        }


def first_cells(base: Path, ws: Path, data_dir: Path, servers: Sequence[str],
                runs: int) -> dict[str, Any]:
    load: list[float] = []
    first: list[float] = []
    second: list[float] = []
    plain_first: list[float] = []
    plain_second: list[float] = []
    off_first: list[float] = []
    states: list[str] = []
    shown: list[str] = []
    for _ in range(runs):
        with kernels(base, ws, 3) as (checked, off, plain):
            load.append(checked.cell(load_cell(data_dir, servers))[0])
            off.cell(load_cell(data_dir, servers) + "\n%config IPyLSP.check_cells = False")
            plain.cell("pass")
            elapsed, messages = checked.cell(FIRST_CELL)
            first.append(elapsed)
            shown.extend(displays(messages))
            # right after the first cell: were its servers still starting? (not a checked cell)
            _, messages = checked.cell(STATES, history=False)
            states.append("".join(m["content"].get("text", "") for m in messages
                                  if m["msg_type"] == "stream").strip())
            off_first.append(off.cell(FIRST_CELL)[0])
            plain_first.append(plain.cell(FIRST_CELL)[0])
            elapsed, messages = checked.cell(SECOND_CELL)
            second.append(elapsed)
            shown.extend(displays(messages))
            plain_second.append(plain.cell(SECOND_CELL)[0])
    return {
        "servers": list(servers),
        "runs": runs,
        "load_ext_median_ms": c.median(load),
        "first_cell_median_ms": c.median(first),
        "first_cell_no_ipylsp_median_ms": c.median(plain_first),
        "first_cell_check_cells_off_median_ms": c.median(off_first),
        "first_cell_added_median_ms": round(
            (c.median(first) or 0) - (c.median(plain_first) or 0), 3),
        "second_cell_median_ms": c.median(second),
        "second_cell_no_ipylsp_median_ms": c.median(plain_second),
        "first_cell_max_ms": max(first) if first else None,
        "server_states_after_first_cell": sorted(set(states)),
        "displays_of_first_two_cells": sorted(set(shown)),
    }


def server_start(iso: c.Isolation, servers: Sequence[str], runs: int) -> dict[str, Any]:
    """A fresh Service's first check of a one-line file: what waiting for a start costs."""
    from ipylsp.model.settings import Settings
    from ipylsp.service.service import FileCheck

    samples: list[float] = []
    for i in range(runs):
        ws = iso.workspace({}, f"start-{i}")
        settings = Settings(language_servers={"python": tuple(servers)}, data_dir=iso.data_dir)
        with c.closing_service(settings) as service:
            t0 = time.perf_counter()
            service.check_files([FileCheck(ws / "one.py", before="", content="x: int = 1\n")],
                                timeout=60)
            samples.append(c.ms(time.perf_counter() - t0))
    return {"servers": list(servers), "server_start_median_ms": c.median(samples), "runs": runs}


# -- the session, without a kernel ----------------------------------------------------------------


class TimedChecks:
    """The service, its time inside `check_files` noted (the rest of `run` is the session's)."""

    def __init__(self, service: Any, clock: c.WireClock) -> None:
        self.service = service
        self.clock = clock
        self.inside_ms = 0.0
        self.wire_ms: float | None = None

    def check_files(self, files: Any, *, timeout: float | None = None,
                    progress: Any = None, brief: bool = False) -> Any:
        self.clock.reset()
        t0 = time.perf_counter()
        try:
            return self.service.check_files(files, timeout=timeout, progress=progress,
                                            brief=brief)
        finally:
            self.inside_ms = c.ms(time.perf_counter() - t0)
            self.wire_ms = self.clock.wire_ms()


def shell_namespace(history: list[str], cwd: Path) -> dict[str, Any]:
    """The history run in an in-process InteractiveShell: a real namespace for the prelude."""
    from IPython.core.interactiveshell import InteractiveShell

    saved = os.getcwd()
    os.chdir(cwd)
    try:
        from traitlets.config import Config

        config = Config()
        config.HistoryManager.hist_file = ":memory:"
        shell = InteractiveShell.instance(config=config)
        with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink), \
                contextlib.redirect_stderr(sink):
            for source in history:
                shell.run_cell(source, store_history=True)
        return dict(shell.user_ns)
    finally:
        os.chdir(saved)


def session_cells(iso: c.Isolation, servers: Sequence[str], history: list[str],
                  namespace: dict[str, Any], n: int) -> dict[str, Any]:
    from ipylsp.ipython.namespace import kernel_view
    from ipylsp.model.settings import Settings
    from ipylsp.service.cells import CellSession, KernelView, unbound_loads

    ws = iso.workspace({}, f"session-{servers[0]}")
    settings = Settings(language_servers={"python": tuple(servers)}, data_dir=iso.data_dir)
    view = kernel_view(namespace)
    no_prelude = KernelView(view.kernel, None)
    out: dict[str, Any] = {"servers": list(servers)}
    with c.closing_service(settings) as service, c.wire_clock() as clock:
        arms = {
            "history_200": (TimedChecks(service, clock), ws / "full.py", view, True),
            "history_0": (TimedChecks(service, clock), ws / "empty.py", view, False),
            "history_200_no_prelude": (TimedChecks(service, clock), ws / "bare.py", no_prelude,
                                       True),
        }
        sessions = {}
        for name, (checks, path, v, keep) in arms.items():
            session = CellSession(checks, path=path, cap=200)
            session.view = lambda v=v: v
            if keep:
                session.seed(list(enumerate(history, start=1)))
            session.run("pass", count=len(history) + 1, timeout=60)  # opens it, starts servers
            session.run("pass  # warm", count=len(history) + 2, timeout=60)
            sessions[name] = session
        total: dict[str, list[float]] = {k: [] for k in arms}
        inside: dict[str, list[float]] = {k: [] for k in arms}
        wire: dict[str, list[float | None]] = {k: [] for k in arms}
        names = list(arms)
        for i in range(n):
            source = new_cell(i, history)
            shift = i % len(names)
            for name in names[shift:] + names[:shift]:
                session, checks = sessions[name], arms[name][0]
                if not arms[name][3]:
                    session.clear()
                t0 = time.perf_counter()
                report = session.run(source, count=len(history) + 3 + i, timeout=60)
                total[name].append(c.ms(time.perf_counter() - t0))
                inside[name].append(checks.inside_ms)
                wire[name].append(checks.wire_ms)
                if any(f.diagnostics for f in report.files):
                    out.setdefault("unexpected", []).append(
                        [name, source, [d.message for f in report.files for d in f.diagnostics]])
        for name in names:
            run_ms = c.median(total[name])
            in_ms = c.median(inside[name])
            out[name] = {
                "run_median_ms": run_ms,
                "cells_median_ms": c.median(
                    [t - s for t, s in zip(total[name], inside[name], strict=True)]),
                "service_median_ms": c.median([
                    s - w for s, w in zip(inside[name], wire[name], strict=True) if w is not None
                ]),
                "wire_median_ms": c.median(wire[name]),
                "check_files_median_ms": in_ms,
            }
        history_doc = sessions["history_200"].history
        wanted = frozenset(unbound_loads(history_doc.cells) & view.kernel.names)
        stubs = view.stubs
        assert stubs is not None
        prelude = stubs(wanted)
        t: list[float] = []
        for _ in range(50):
            t0 = time.perf_counter()
            stubs(wanted)
            t.append(c.ms(time.perf_counter() - t0))
        out["prelude"] = {
            "prelude_lines": prelude.count("\n"),
            "stub_prelude_median_ms": c.median(t),
            "with_prelude_run_median_ms": out["history_200"]["run_median_ms"],
            "without_prelude_run_median_ms": out["history_200_no_prelude"]["run_median_ms"],
            "added_median_ms": round(out["history_200"]["run_median_ms"]
                                     - out["history_200_no_prelude"]["run_median_ms"], 3),
            "document_lines": len(history_doc.document("").text.split("\n")),
        }
        out["history_200_vs_0_ratio"] = c.ratio(out["history_200"]["run_median_ms"],
                                                out["history_0"]["run_median_ms"])
        out["n"] = n
    return out


# -- main -----------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--history", type=int, default=200)
    parser.add_argument("--n", type=int, default=30)
    parser.add_argument("--first-runs", type=int, default=5)
    parser.add_argument("--servers", default="ty,basedpyright")
    args = parser.parse_args()
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # as a wheel install: ipylsp compiled once
    import compileall

    compileall.compile_dir(str(c.REPO / "ipylsp"), quiet=1)
    history = history_cells(args.history)
    chosen = [s.strip() for s in args.servers.split(",") if s.strip()]
    iso = c.Isolation()
    result: dict[str, Any] = {"benchmark": "bench_cells", "machine": c.machine(),
                              "history_cells": len(history)}
    try:
        ws = iso.workspace({"README.md": "bench\n"}, "kernels")
        c.log("in-process namespace of the history")
        namespace = shell_namespace(history, iso.workspace({}, "shell"))
        for name in chosen:
            servers = SERVER_SETS[name]
            c.log(f"{name}: server start reference")
            result.setdefault("server_start", {})[name] = server_start(iso, servers, 3)
            c.log(f"{name}: CellSession.run, 200 vs 0 history, prelude on/off")
            result.setdefault("session", {})[name] = session_cells(
                iso, servers, history, namespace, args.n)
            c.log(f"{name}: kernels, {len(history)} cells of history, check on/off")
            result.setdefault("kernel", {})[name] = kernel_cells(
                iso.base, ws, iso.data_dir, servers, history, args.n)
            c.log(f"{name}: first cell after %load_ext, {args.first_runs} fresh kernels")
            first = first_cells(iso.base, ws, iso.data_dir, servers, args.first_runs)
            start = result["server_start"][name]["server_start_median_ms"]
            first["server_start_median_ms"] = start
            result.setdefault("first_cell", {})[name] = first
        leftovers = iso.leftovers()
        result["leftover_processes"] = leftovers
        c.emit("bench_cells", result)
        if leftovers:
            raise SystemExit(f"processes left behind: {leftovers}")
    finally:
        iso.close()


if __name__ == "__main__":
    main()
