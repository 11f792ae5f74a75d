#!/usr/bin/env python3
"""What the cell check (`IPyLSP.check_cells`) adds to a cell, in one run. Prints JSON.

    .venv/bin/python benchmarks/bench_cells.py [--histories 0,50,200,1000] [--n 30]
        [--raw-n 10] [--first-runs 5]
        [--servers ty,basedpyright] [--parts check,ran] [--ran-rounds 5] [--ran-repeats 9]

The issue's question: what a cell's check adds on warm ty + ruff and on basedpyright + ruff,
at 0, 50, 200 and (with `cell_history = 1000`) 1,000 executed cells of history (medians); the
first cell after `%load_ext` must not wait for a server to start. Every case is alternated with
its reference, medians of wall times:

- ``kernel``: real ipykernels (jupyter_client, cells timed from ``execute_request`` to
  ``idle``, `store_history=True` as a notebook sends them). Per server set (ty + ruff, the
  default; basedpyright + ruff) and history size (the sizes' kernels all alive at once,
  alternated cell by cell): a kernel runs that many generated cells (defs, classes, imports,
  loops, comprehensions, `%time`, `%%capture`, `!` and `x = !cmd` lines, `exec`-bound names,
  top-level `await`, a few cells that raise and a few type errors), then `%load_ext ipylsp`
  (the session is seeded with that history), then warm-up cells until a deliberate error is
  reported. Then `--n` new cells (each reads names of old cells: a function,
  a string and an `exec`-bound list, declared in the document's header), alternately with
  `check_cells` on and off (switched by a silent execution) and on a kernel without ipylsp:
  ``added_ms`` = on - off. Every "on" cell must be clean (no display): counted in ``displays``;
  ``document_lines`` is the size of the last document the servers checked.
- ``first_cell``: `--first-runs` fresh kernels per server set: cell 1 `%load_ext ipylsp` (+ the
  server set), cell 2 a small cell (the first cell checked), cell 3 another one; against a
  kernel without ipylsp running `pass` then the same two cells. The reference for "waiting for a
  server start" is ``server_start_ms``: a fresh `Service`'s first check of a one-line file
  (spawn, initialize, first diagnostics), measured in the same run.
- ``session``: `CellSession.run` directly on a warm `Service` (no kernel), the same generated
  history (run once in an in-process `InteractiveShell` for a real namespace), one session per
  history size, alternated; each run split three ways: ``cells_ms`` (ours, around the service:
  neutralize, the window and its declarations, locate), ``service_ms`` (the service's own share:
  batching, delta, report), ``wire_ms`` (first document notification to the last message read:
  the servers); ``document_lines`` of each checked document. ``rerun``: an old definition (the
  second cell, `f_1`) re-run in place with its signature alternately changed and back, between
  new cells: it brings back every later cell that reads it (a second pass for the text before).
- ``raw``: the servers alone (`lsp_client.py`, the raw client, one process per server and
  document): a new cell in the whole-history document (what every check sent before the window)
  against the same cell in the window's document.
- ``what_ran`` (`--parts ran`): the cost of knowing what ran, in-process (an InteractiveShell,
  no kernel, no server): every history cell run alternately with `ipython/monitor.py`'s
  `CellMonitor` between its hooks and without (``added_per_cell_median_ms``; `begin` and
  `end` alone), the same for a 1,255-line cell (``big_cell``), and the judgement
  (`Evidence.apply`) of one demotable ERROR on every line of a cell. ``monitoring``: whether
  this interpreter records instructions (3.12+) or only finished statements.
  ``settrace_instead``: the road not taken, `sys.settrace` with a function that traces no
  frame, around the same compute in this process (before 3.12 it costs every frame).
- ``compute`` (`--parts ran`): a top-level loop and a function the cell defines and calls,
  in a checked kernel (ipylsp loaded, the cell check on, servers warm) and in one without
  ipylsp, timed from outside (execute_request to reply), alternated; each cell at its big `n`
  and at n = 1, compute = big - small in each kernel (the check after the cell cancels);
  ``ratio_checked_plain``; the cell also times its loop itself (``inside_*``). Run it with
  `.venv-3.13/bin/python` for the 3.12+ path.

Nothing here is a test: no asserts on times.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
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
    """A new cell reading names of earlier cells (f_*, s_*, e_*), clean for every checker; with
    no such cells (an empty history), the same shape on its own names."""
    names = probe_names(tuple(history))
    if names is None:
        return (f"probe_{i} = [k * 2 + len('s{i}') for k in range({i % 7 + 1})]\n"
                f"probe_{i}.append(len(probe_{i}))\nprobe_{i}[-1]")
    f, s, e = names
    return (
        f"probe_{i} = [f_{f}(k) + len(s_{s}) for k in range({i % 7 + 1})]\n"
        f"probe_{i}.append(len(e_{e}))\nprobe_{i}[-1]"
    )


@functools.lru_cache(maxsize=16)
def probe_names(history: tuple[str, ...]) -> tuple[int, int, int] | None:
    """The last f_*, s_* and e_* the history binds (None when it binds none of one)."""
    marks = ("def f_{}(", "s_{} = json.dumps", 'exec("e_{} =')
    found = [max((j for j, s in enumerate(history) if mark.format(j) in s), default=None)
             for mark in marks]
    f, s, e = found
    return None if f is None or s is None or e is None else (f, s, e)


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


def load_cell(data_dir: Path, servers: Sequence[str], cap: int | None = None) -> str:
    # HOME is the benchmark's own (Isolation): the installed servers are in the real data dir.
    history = f"\n%config IPyLSP.cell_history = {cap}" if cap is not None else ""
    return (f"%load_ext ipylsp\n%config IPyLSP.data_dir = {str(data_dir)!r}\n"
            f"%config IPyLSP.language_servers = {{'python': {list(servers)!r}}}{history}")


def warm_up(kernel: Kernel, tries: int = 40) -> dict[str, Any]:
    """Cells until a deliberate error is reported (servers started and answering): while a
    server starts, a cell's check is brief and the next one catches up."""
    for i in range(tries):
        _, messages = kernel.cell(f'warm_{i}: int = "s"')
        if any("invalid-assignment" in t or "reportAssignmentType" in t
               for t in displays(messages)):
            return {"warm_up_cells": i + 1}
    raise RuntimeError("the cell check never reported the warm-up error")


def kernel_cells(base: Path, ws: Path, data_dir: Path, servers: Sequence[str], longest: list[str],
                 sizes: Sequence[int], n: int) -> dict[str, Any]:
    """A checked kernel and a plain one per history size, all alive at once, the sizes and
    arms alternated cell by cell (so the load of the moment falls on every size alike)."""
    with kernels(base, ws, 2 * len(sizes)) as started:
        pairs = {size: (started[2 * k], started[2 * k + 1]) for k, size in enumerate(sizes)}
        out: dict[int, dict[str, Any]] = {}
        for size, (checked, plain) in pairs.items():
            cap = max(200, size)  # the default cell_history, or all of a longer history
            for source in longest[:size]:  # before %load_ext: the session is seeded with them
                checked.cell(source, errors=True)
                plain.cell(source, errors=True)
            t_load, _ = checked.cell(load_cell(data_dir, servers, cap))
            out[size] = {"servers": list(servers), "history_cells": size, "cell_history": cap,
                         "load_ext_ms": t_load, **warm_up(checked)}
        samples = {size: ([], [], []) for size in sizes}  # on, off, no ipylsp
        shown = dict.fromkeys(sizes, 0)
        for i in range(n):
            for size in sizes[i % len(sizes):] + sizes[: i % len(sizes)]:
                checked, plain = pairs[size]
                history = longest[:size]
                on, off, ref = samples[size]
                arms: list[tuple[Kernel, bool | None, list[float], str]] = [
                    (checked, True, on, new_cell(2 * i, history)),
                    (checked, False, off, new_cell(2 * i + 1, history)),
                    (plain, None, ref, new_cell(2 * i, history)),
                ]
                shift = i % 3
                for kernel, check, arm, source in arms[shift:] + arms[:shift]:
                    if check is not None:
                        kernel.cell(f"%config IPyLSP.check_cells = {check}", silent=True)
                    elapsed, messages = kernel.cell(source)
                    arm.append(elapsed)
                    shown[size] += bool(check) and bool(displays(messages))
        for size, (checked, _) in pairs.items():
            _, messages = checked.cell(SESSION_SIZES, silent=True)
            kept, lines = ("".join(m["content"].get("text", "") for m in messages
                                   if m["msg_type"] == "stream").split() or ["0", "0"])[:2]
            on, off, ref = samples[size]
            out[size].update({
                "session_history_cells": int(kept),
                "document_lines": int(lines),
                "check_on_median_ms": c.median(on),
                "check_off_median_ms": c.median(off),
                "no_ipylsp_median_ms": c.median(ref),
                "added_median_ms": round((c.median(on) or 0) - (c.median(off) or 0), 3),
                "ratio_on_off": c.ratio(c.median(on), c.median(off)),
                "n": n,
                "displays_in_checked_cells": shown[size],
            })
        return {str(size): out[size] for size in sizes}


SESSION_SIZES = (
    "from ipylsp.ipython.extension import current as __bench_current\n"
    "__bench_session = __bench_current(get_ipython()).cells.session\n"
    "print(len(__bench_session.history.cells), len(__bench_session.document.text.splitlines()))"
)
"""Run silently in the checked kernel: cells the session keeps, lines of its last document."""


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
    """The service, its time inside `check_files` noted (the rest of `run` is the session's),
    and the size of the cells' document it was asked about."""

    def __init__(self, service: Any, clock: c.WireClock) -> None:
        self.service = service
        self.clock = clock
        self.inside_ms = 0.0
        self.wire_ms: float | None = None
        self.lines = 0
        self.sent = ""

    def check_files(self, files: Any, *, timeout: float | None = None,
                    progress: Any = None, cold: float | None = None) -> Any:
        self.clock.reset()
        self.sent = files[0].content or ""
        self.lines = len(self.sent.splitlines())
        t0 = time.perf_counter()
        try:
            return self.service.check_files(files, timeout=timeout, progress=progress,
                                            cold=cold)
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


def session_cells(iso: c.Isolation, servers: Sequence[str], longest: list[str],
                  namespace: dict[str, Any], n: int, sizes: Sequence[int]) -> dict[str, Any]:
    from ipylsp.cells.session import CellSession
    from ipylsp.ipython.namespace import kernel_view
    from ipylsp.model.settings import Settings

    ws = iso.workspace({}, f"session-{servers[0]}")
    settings = Settings(language_servers={"python": tuple(servers)}, data_dir=iso.data_dir)
    view = kernel_view(namespace)
    out: dict[str, Any] = {"servers": list(servers)}
    with c.closing_service(settings) as service, c.wire_clock() as clock:
        sessions: dict[int, tuple[CellSession, TimedChecks]] = {}
        for size in sizes:
            checks = TimedChecks(service, clock)
            session = CellSession(checks, path=ws / f"history_{size}.py", cap=max(200, size))
            session.attach(session.read, lambda: view)
            session.seed(list(enumerate(longest[:size], start=1)))
            session.run("pass", count=size + 1, timeout=60)  # opens it, starts servers
            session.run("pass  # warm", count=size + 2, timeout=60)
            sessions[size] = (session, checks)
        samples: dict[int, dict[str, list[Any]]] = {
            s: {k: [] for k in ("run", "inside", "wire", "lines")} for s in sizes}
        for i in range(n):
            shift = i % len(sizes)
            for size in sizes[shift:] + sizes[:shift]:
                session, checks = sessions[size]
                t0 = time.perf_counter()
                report = session.run(new_cell(i, longest[:size]), count=size + 3 + i,
                                     timeout=60)
                arm = samples[size]
                arm["run"].append(c.ms(time.perf_counter() - t0))
                arm["inside"].append(checks.inside_ms)
                arm["wire"].append(checks.wire_ms)
                arm["lines"].append(checks.lines)
                if any(f.diagnostics for f in report.files):
                    out.setdefault("unexpected", []).append(
                        [size, [d.message for f in report.files for d in f.diagnostics]])
        for size in sizes:
            arm = samples[size]
            out[f"history_{size}"] = {
                "run_median_ms": c.median(arm["run"]),
                "cells_median_ms": c.median(
                    [t - s for t, s in zip(arm["run"], arm["inside"], strict=True)]),
                "service_median_ms": c.median([
                    s - w for s, w in zip(arm["inside"], arm["wire"], strict=True)
                    if w is not None
                ]),
                "wire_median_ms": c.median(arm["wire"]),
                "check_files_median_ms": c.median(arm["inside"]),
                "document_lines_median": c.median(arm["lines"]),
                "document_lines_max": max(arm["lines"]),
            }
        for size in sizes:
            if size >= 2:
                out[f"rerun_{size}"] = rerun(sessions[size][0], sessions[size][1], longest[:size],
                                             n)
        out["history_200_vs_0_ratio"] = c.ratio(out.get("history_200", {}).get("run_median_ms"),
                                                out.get("history_0", {}).get("run_median_ms"))
        out["n"] = n
    return out


def rerun(session: Any, checks: TimedChecks, history: list[str], n: int) -> dict[str, Any]:
    """The second cell (`def f_1(a: int, b: int = 1)`) re-run in place (its id given: the
    seeded cell with its source takes it), alternately with a third parameter and as it was,
    each time after a new cell: every later cell reading `f_1` comes back, with a second pass
    for the text before. Also: how many cells and lines that document holds."""
    define = history[1]
    changed = define.replace("b: int = 1)", "b: int = 1, c: int = 0)")
    assert changed != define
    times: list[float] = []
    lines: list[int] = []
    cells: list[int] = []
    shown = 0
    count = 10_000
    session.run(define, count=count, cell_id="bench-define", timeout=60)  # takes the id, in place
    for i in range(n):
        count += 2
        session.run(new_cell(1000 + i, history), count=count, timeout=60)
        t0 = time.perf_counter()
        report = session.run(changed if i % 2 == 0 else define, count=count + 1,
                             cell_id="bench-define", timeout=60)
        times.append(c.ms(time.perf_counter() - t0))
        lines.append(checks.lines)
        cells.append(len(session.document.cells))
        shown += any(f.diagnostics for f in report.files)
    return {"rerun_median_ms": c.median(times), "document_lines_median": c.median(lines),
            "document_cells_median": c.median(cells), "reports_with_problems": shown, "n": n}


# -- the servers alone: the whole history against the window ---------------------------------------


class Recorder:
    """A `Checks` that answers nothing and keeps the cells' document each run sent."""

    def __init__(self) -> None:
        self.sent: list[str] = []

    def check_files(self, files: Any, *, timeout: float | None = None,
                    progress: Any = None, cold: float | None = None) -> Any:
        from ipylsp.model.diagnostics import Report

        self.sent.append(files[0].content or "")
        return Report()


def documents_sent(longest: list[str], namespace: dict[str, Any], size: int,
                   n: int) -> tuple[list[str], list[str]]:
    """For `n` new cells after `size` cells of history: (the whole-history documents, as every
    check sent them before the window; the window's documents, as `CellSession` sends them)."""
    from ipylsp.analysis.cells.document import unbound_loads
    from ipylsp.cells.session import CellSession
    from ipylsp.ipython.namespace import kernel_view

    view = kernel_view(namespace)
    stubs = view.stubs
    assert stubs is not None
    recorder = Recorder()
    session = CellSession(recorder, path=Path("unused.py"), cap=max(200, size))
    session.attach(session.read, lambda: view)
    session.seed(list(enumerate(longest[:size], start=1)))
    whole: list[str] = []
    for i in range(n):
        session.run(new_cell(i, longest[:size]), count=size + 1 + i)
        cells = session.history.cells
        wanted = frozenset(unbound_loads(cells) & view.kernel.names)
        whole.append(session.history.document(stubs(wanted) if wanted else "").text)
    return whole, recorder.sent


def raw_servers(iso: c.Isolation, servers: Sequence[str], longest: list[str],
                namespace: dict[str, Any], sizes: Sequence[int], n: int) -> dict[str, Any]:
    """Each server alone through the raw client, one process per (size, document kind), the
    same new cells alternated: change -> diagnostics, and the diagnostics' count."""
    from lsp_client import LoopThread

    from ipylsp.servers import executables, python_env, registry, roots

    out: dict[str, Any] = {}
    docs = {size: documents_sent(longest, namespace, size, n + 2) for size in sizes}
    for server in servers:
        spec = registry.get(server)
        assert spec is not None
        command = executables.resolve(spec, iso.data_dir).command
        assert command is not None, f"{server} is not installed"
        loop = LoopThread()
        clients: dict[tuple[int, str], tuple[Any, Path]] = {}
        try:
            for size in sizes:
                for kind in ("whole", "window"):
                    ws = iso.workspace({}, f"raw-{server}-{size}-{kind}")
                    path = ws / "cells.py"
                    root = roots.find_root(path, spec.root_markers, git_worktree=ws)
                    raw = c.reference_client(
                        command, root, python_env.for_server(spec, root, ceiling=ws))
                    loop.run(raw.start(60), 90)
                    clients[(size, kind)] = (raw, path)
            times: dict[tuple[int, str], list[float]] = {k: [] for k in clients}
            counts: dict[tuple[int, str], int] = {}
            keys = list(clients)
            for i in range(n + 2):  # the first two open and warm each document
                shift = i % len(keys)
                for size, kind in keys[shift:] + keys[:shift]:
                    raw, path = clients[(size, kind)]
                    text = docs[size][0 if kind == "whole" else 1][i]
                    seconds, _, diagnostics = loop.run(
                        raw.edit(path, text, lambda d: True, 120), 180)
                    if i >= 2:
                        times[(size, kind)].append(c.ms(seconds))
                    counts[(size, kind)] = len(diagnostics)
            out[server] = {
                str(size): {
                    "whole_median_ms": c.median(times[(size, "whole")]),
                    "window_median_ms": c.median(times[(size, "window")]),
                    "whole_lines": len(docs[size][0][-1].splitlines()),
                    "window_lines": len(docs[size][1][-1].splitlines()),
                    "whole_diagnostics": counts[(size, "whole")],
                    "window_diagnostics": counts[(size, "window")],
                }
                for size in sizes
            }
        finally:
            for raw, _ in clients.values():
                with contextlib.suppress(Exception):
                    loop.run(raw.stop(), 30)
            loop.close()
    return out


# -- what ran: the cost of knowing it ------------------------------------------------------------

_CLOCK = "import time as clock\n\nstarted = clock.perf_counter()\n"
_SAY = "\nprint(round((clock.perf_counter() - started) * 1000, 3))"
LOOP_CELL = _CLOCK + "total = 0\nfor i in range({n}):\n    total += i * i % 7" + _SAY
FUNCTION_CELL = (
    "def step(x: int) -> int:\n    return (x * 31 + 7) % 1009\n\n\n" + _CLOCK
    + "acc = 0\nfor i in range({n}):\n    acc = step(acc + i)" + _SAY
)
def big_cell(blocks: int = 250) -> str:
    """A long cell (5 lines a block: a comprehension, a branch each way), then a function it
    defines and calls 50 times through a generator: many code objects and instructions."""
    parts = [
        f"v_{i} = [k * {i} for k in range(5)]\nif v_{i}[1] > 3:\n"
        f"    w_{i} = {{'a': v_{i}[0], 'b': str(v_{i})}}\nelse:\n    w_{i} = None"
        for i in range(blocks)
    ]
    parts.append("def f(x):\n    return sum(v for v in range(x) if v % 3) + len(str(x))\n\n\n"
                 "tot = sum(f(j) for j in range(50))")
    return "\n".join(parts)


COMPUTE = {"top_level_loop": (LOOP_CELL, 3_000_000), "function_called": (FUNCTION_CELL, 1_500_000)}
"""Cells whose compute the monitor sees (the cell's own code objects), and their big `n`."""


def knowing_what_ran(history: list[str], cwd: Path, rounds: int) -> dict[str, Any]:
    """In-process (an InteractiveShell, no kernel, no server): each history cell run alternately
    with the monitor between its hooks and without; the added time of the whole cell (begin,
    the run with its instruction events, end: the `Ran` the check gets) and of `begin` and
    `end` alone; then the judgement (`Evidence.apply`) of one demotable ERROR per cell line
    (the first one apart: it compiles the patterns)."""
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    from ipylsp.analysis.cells.document import make_cell
    from ipylsp.analysis.cells.ran import Evidence
    from ipylsp.ipython.monitor import MONITORING, CellMonitor
    from ipylsp.model.diagnostics import Diagnostic, FileReport, Range, Report, Severity

    saved = os.getcwd()
    os.chdir(cwd)
    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    shell = InteractiveShell.instance(config=config)
    monitor = CellMonitor(shell)
    on = {"armed": False}
    spans: dict[str, list[float]] = {"begin": [], "end": []}
    got: list[Any] = []

    def pre(info: object) -> None:
        if on["armed"]:
            t0 = time.perf_counter()
            monitor.begin()
            spans["begin"].append(c.ms(time.perf_counter() - t0))

    def post(result: object) -> None:
        if on["armed"]:
            t0 = time.perf_counter()
            got.append((result, monitor.end(result)))
            spans["end"].append(c.ms(time.perf_counter() - t0))

    shell.events.register("pre_run_cell", pre)
    shell.events.register("post_run_cell", post)
    with_monitor: list[float] = []
    without: list[float] = []
    big = big_cell()
    big_times: dict[bool, list[float]] = {True: [], False: []}
    big_end: list[float] = []
    ends: list[float] = []
    try:
        with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink), \
                contextlib.redirect_stderr(sink):
            for source in history:  # a namespace in which every cell runs
                shell.run_cell(source, store_history=True)
            for r in range(rounds):
                for i, source in enumerate(history):
                    for armed in ((True, False) if (i + r) % 2 else (False, True)):
                        on["armed"] = armed
                        t0 = time.perf_counter()
                        shell.run_cell(source, store_history=True)
                        (with_monitor if armed else without).append(
                            c.ms(time.perf_counter() - t0))
            ends = list(spans["end"])
            for r in range(2 * rounds):
                for armed in ((True, False) if r % 2 else (False, True)):
                    on["armed"] = armed
                    t0 = time.perf_counter()
                    shell.run_cell(big, store_history=True)
                    big_times[armed].append(c.ms(time.perf_counter() - t0))
                    if armed:
                        big_end.append(spans["end"][-1])
        judged: list[float] = []
        demoted = 0
        for result, ran in got[: len(history)]:
            source = result.info.raw_cell
            if ran is None:
                continue
            cell = make_cell("id:bench", result.execution_count, source)
            lines = source.split("\n")
            errors = tuple(
                Diagnostic(Range.of(n, 0, n, len(text)), Severity.ERROR, "bench",
                           code="missing-attribute", server_id="ty")
                for n, text in enumerate(lines) if text.strip()
            )
            report = Report(files=(FileReport(cwd / "cells.py", "cell", errors, cell=cell.count),))
            t0 = time.perf_counter()
            out = Evidence().after((), cell, ran).apply(report, [cell])
            judged.append(c.ms(time.perf_counter() - t0))
            demoted += sum(d.ran_without_error for d in out.files[0].diagnostics)
    finally:
        shell.events.unregister("pre_run_cell", pre)
        shell.events.unregister("post_run_cell", post)
        monitor.close()
        InteractiveShell.clear_instance()
        os.chdir(saved)
    return {
        "monitoring": MONITORING,
        "cells": len(history),
        "rounds": rounds,
        "cell_with_monitor_median_ms": c.median(with_monitor),
        "cell_without_median_ms": c.median(without),
        "added_per_cell_median_ms": c.difference(c.median(with_monitor), c.median(without)),
        "begin_median_ms": c.median(spans["begin"]),
        "end_median_ms": c.median(ends),
        "end_max_ms": max(ends, default=None),
        "judge_first_cell_ms": judged[0] if judged else None,
        "judge_cell_median_ms": c.median(judged[1:]),
        "judge_cell_max_ms": max(judged[1:], default=None),
        "judged_lines_demoted": demoted,
        "big_cell": {
            "lines": big.count("\n") + 1,
            "with_monitor_median_ms": c.median(big_times[True]),
            "without_median_ms": c.median(big_times[False]),
            "added_median_ms": c.difference(c.median(big_times[True]),
                                            c.median(big_times[False])),
            "end_median_ms": c.median(big_end),
            "runs": 2 * rounds,
        },
    }


def _loop(n: int) -> int:
    total = 0
    for i in range(n):
        total += i * i % 7
    return total


def _step(x: int) -> int:
    return (x * 31 + 7) % 1009


def _calls(n: int) -> int:
    acc = 0
    for i in range(n):
        acc = _step(acc + i)
    return acc


def tracing_instead(rounds: int) -> dict[str, Any]:
    """What the road not taken costs: `sys.settrace` with a global function that returns None
    for every frame (no line is traced), around the same compute in this process, alternated
    with none: the ratio is what every cell's compute would pay for knowing what ran by
    tracing (before 3.12 the interpreter leaves its specialized instructions while a trace
    function is set)."""
    def ignore(frame: Any, event: str, arg: Any) -> None:
        return None

    out: dict[str, Any] = {"python": f"{sys.version_info[0]}.{sys.version_info[1]}"}
    for name, work, n in (("top_level_loop", _loop, 1_000_000), ("function_called", _calls,
                                                                   500_000)):
        samples: dict[bool, list[float]] = {True: [], False: []}
        for r in range(rounds):
            for traced in ((True, False) if r % 2 else (False, True)):
                if traced:
                    sys.settrace(ignore)
                t0 = time.perf_counter()
                try:
                    work(n)
                finally:
                    sys.settrace(None)
                samples[traced].append(c.ms(time.perf_counter() - t0))
        out[name] = {"settrace_median_ms": c.median(samples[True]),
                     "none_median_ms": c.median(samples[False]),
                     "ratio": c.ratio(c.median(samples[True]), c.median(samples[False]))}
    return out


def compute_in_kernels(base: Path, ws: Path, data_dir: Path, servers: Sequence[str],
                       repeats: int) -> dict[str, Any]:
    """A checked kernel (ipylsp, check_cells on, servers warm) against one without ipylsp,
    timed from outside (execute_request to reply, alternated): each compute cell at its big
    `n` and at n = 1, so the compute is big - small in each kernel (the check after the cell,
    the same in both, cancels); the cell also says what its loop took, timed inside."""
    out: dict[str, Any] = {"servers": list(servers), "repeats": repeats}
    with kernels(base, ws, 2) as (checked, plain):
        checked.cell(load_cell(data_dir, servers))
        out.update(warm_up(checked))
        version = checked.cell("import sys; print(sys.version_info[:2])")[1]
        out["python"] = "".join(m["content"].get("text", "") for m in version
                                if m["msg_type"] == "stream").strip()
        for name, (template, n) in COMPUTE.items():
            samples: dict[tuple[str, str], list[float]] = {}
            inside: dict[str, list[float]] = {"checked": [], "plain": []}
            shown = 0
            for r in range(repeats):
                arms = [(k, label, size) for k, label in ((checked, "checked"), (plain, "plain"))
                        for size in ("big", "small")]
                for kernel, label, size in arms[r % 4:] + arms[: r % 4]:
                    elapsed, messages = kernel.cell(template.format(n=n if size == "big" else 1))
                    samples.setdefault((label, size), []).append(elapsed)
                    shown += label == "checked" and bool(displays(messages))
                    if size == "big":
                        inside[label].append(float("".join(
                            m["content"].get("text", "") for m in messages
                            if m["msg_type"] == "stream")))
            compute = {label: c.difference(c.median(samples[(label, "big")]),
                                           c.median(samples[(label, "small")]))
                       for label in ("checked", "plain")}
            out[name] = {
                "n": n,
                "checked_big_median_ms": c.median(samples[("checked", "big")]),
                "checked_small_median_ms": c.median(samples[("checked", "small")]),
                "plain_big_median_ms": c.median(samples[("plain", "big")]),
                "plain_small_median_ms": c.median(samples[("plain", "small")]),
                "compute_checked_ms": compute["checked"],
                "compute_plain_ms": compute["plain"],
                "ratio_checked_plain": c.ratio(compute["checked"], compute["plain"]),
                "inside_checked_median_ms": c.median(inside["checked"]),
                "inside_plain_median_ms": c.median(inside["plain"]),
                "inside_ratio_checked_plain": c.ratio(c.median(inside["checked"]),
                                                      c.median(inside["plain"])),
                "displays_in_checked_cells": shown,
            }
    return out


# -- main -----------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--history", type=int, default=200)
    parser.add_argument("--histories", default="0,50,200,1000",
                        help="cells of history the check's cost is measured at")
    parser.add_argument("--n", type=int, default=30)
    parser.add_argument("--raw-n", type=int, default=10,
                        help="new cells per document in the servers-alone part")
    parser.add_argument("--first-runs", type=int, default=5)
    parser.add_argument("--servers", default="ty,basedpyright")
    parser.add_argument("--parts", default="check,ran",
                        help="check: the check's cost (session, kernel, first cell); ran: "
                             "knowing what ran (in-process) and compute in kernels")
    parser.add_argument("--ran-rounds", type=int, default=5)
    parser.add_argument("--ran-repeats", type=int, default=9)
    args = parser.parse_args()
    parts = {p.strip() for p in args.parts.split(",")}
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # as a wheel install: ipylsp compiled once
    import compileall

    compileall.compile_dir(str(c.REPO / "ipylsp"), quiet=1)
    history = history_cells(args.history)
    sizes = [int(h) for h in args.histories.split(",") if h.strip()]
    longest = history_cells(max(sizes))
    chosen = [s.strip() for s in args.servers.split(",") if s.strip()]
    iso = c.Isolation()
    result: dict[str, Any] = {"benchmark": "bench_cells", "machine": c.machine(),
                              "history_cells": len(history)}
    try:
        ws = iso.workspace({"README.md": "bench\n"}, "kernels")
        if "ran" in parts:
            c.log("what ran: knowing it, in-process, every history cell")
            result["what_ran"] = knowing_what_ran(history, iso.workspace({}, "ran"),
                                                  args.ran_rounds)
            result["what_ran"]["settrace_instead"] = tracing_instead(2 * args.ran_rounds + 1)
            c.log("what ran: compute in a checked kernel and in one without ipylsp")
            result["compute"] = compute_in_kernels(iso.base, ws, iso.data_dir,
                                                   SERVER_SETS[chosen[0]], args.ran_repeats)
        if "check" not in parts:
            chosen = []
        else:
            c.log("in-process namespace of the history")
            namespace = shell_namespace(longest, iso.workspace({}, "shell"))
        for name in chosen:
            servers = SERVER_SETS[name]
            c.log(f"{name}: server start reference")
            result.setdefault("server_start", {})[name] = server_start(iso, servers, 3)
            c.log(f"{name}: CellSession.run at {sizes} cells of history")
            result.setdefault("session", {})[name] = session_cells(
                iso, servers, longest, namespace, args.n, sizes)
            c.log(f"{name}: kernels at {sizes} cells of history, check on/off, alternated")
            result.setdefault("kernel", {})[name] = kernel_cells(
                iso.base, ws, iso.data_dir, servers, longest, sizes, args.n)
            c.log(f"{name}: the servers alone, whole history against the window")
            result.setdefault("raw", {})[name] = raw_servers(
                iso, servers, longest, namespace, sizes, args.raw_n)
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
