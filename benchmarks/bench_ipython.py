"""What the IPython extension costs a notebook, with and without it, in one run. Prints JSON.

    .venv/bin/python benchmarks/bench_ipython.py [--cells 200] [--kernel-cells 100]
        [--files 10000] [--dirs 500] [--writes 30] [--out benchmarks/results/bench_ipython.json]

Three questions (issue 5, "Measured"), medians, every case alternated with its reference so that
drift hits both alike:

- ``no_write_cell``: a cell that writes nothing (``x = 1``). Budget: < 1 ms extra at the median.
  In-process: ``InteractiveShell.run_cell`` timed around the call, blocks of cells with the
  extension loaded and unloaded in turn (the first cell of each block, which starts the
  service's loop thread, is left out and reported as ``first_cell_*``). Through a real kernel:
  two ipykernels side by side, one with ``%load_ext ipylsp``, cells sent to each in turn,
  timed from ``execute_request`` to the ``idle`` status on the client.
- ``shell_cell_10k``: a cell running a shell command (``!true`` and
  ``_ = subprocess.run(["true"])``) with the kernel's cwd in a git workspace of `--files` files over
  `--dirs` directories. Budget: < 20 ms extra to find its writes. Same two ways. The one-time
  setup (inotify watches at the first child) is ``setup_ms``.
- ``writefile_report``: a ``%%writefile`` cell on a warm ty (``language_servers = {"python":
  ["ty"]}``), alternating a text with two errors and its fix, so every cell gets a report.
  ``after_cell_ms`` is measured in the kernel, from IPython's ``post_execute`` event (the cell's
  code has finished) to the header time of the report's ``display_data`` message: the time the
  user waits for the report after the cell is done. ``roundtrip_ms`` is the whole cell seen from
  the client, against the same cell in the kernel without the extension. The reference is the
  raw LSP client (``benchmarks/lsp_client.py``) on the same ty: ``didChange`` of the fixed text
  to the diagnostics that reflect it (``clear_ms``), and the ratio.

Nothing here is a test: it prints numbers and says whether each budget was met.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import queue
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
RAW_CLIENT = REPO / "benchmarks" / "lsp_client.py"
RESULTS = REPO / "benchmarks" / "results"

BROKEN = 'def area(width: float) -> float:\n    return width * heigth\n\n\nx: int = "s"\n'
FIXED = "def area(width: float) -> float:\n    return width * width\n\n\nx: int = 1\n"


def median(values: list[float]) -> float | None:
    return round(statistics.median(values), 3) if values else None


def quantile(values: list[float], q: float) -> float | None:
    if len(values) < 2:
        return None
    return round(statistics.quantiles(values, n=100)[int(q * 100) - 1], 3)


def summary(with_ext: list[float], without: list[float]) -> dict[str, Any]:
    a, b = median(with_ext), median(without)
    return {
        "with_median_ms": a,
        "without_median_ms": b,
        "extra_median_ms": None if a is None or b is None else round(a - b, 3),
        "with_p90_ms": quantile(with_ext, 0.9),
        "without_p90_ms": quantile(without, 0.9),
        "n": min(len(with_ext), len(without)),
    }


def git_workspace(top: Path, files: int = 0, dirs: int = 1) -> Path:
    top.mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=top, check=True)
    per_dir = max(files // max(dirs, 1), 1)
    groups = max(int(dirs**0.5), 1)
    made = 0
    for d in range(dirs if files else 0):
        directory = top / f"pkg{d % groups:02d}" / f"mod{d:04d}"
        directory.mkdir(parents=True, exist_ok=True)
        for i in range(per_dir):
            if made >= files:
                break
            (directory / f"f{i:03d}.py").write_text(f"x = {i}\n")
            made += 1
    return top.resolve()


# -- in-process: InteractiveShell.run_cell ---------------------------------------------------------


def in_process(ws_small: Path, ws_big: Path, cells: int) -> dict[str, Any]:
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    block = 25

    def timed(source: str) -> float:
        t0 = time.perf_counter_ns()
        shell.run_cell(source, store_history=False)
        return (time.perf_counter_ns() - t0) / 1e6

    def arms(source: str, cwd: Path) -> dict[str, Any]:
        os.chdir(cwd)
        with_ext: list[float] = []
        without: list[float] = []
        first: list[float] = []
        for _ in range(max(cells // block, 1)):
            for loaded in (True, False):
                if loaded:
                    shell.run_cell("%load_ext ipylsp", store_history=False)
                    first.append(timed(source))
                    with_ext.extend(timed(source) for _ in range(block))
                    shell.run_cell("%unload_ext ipylsp", store_history=False)
                else:
                    timed(source)
                    without.extend(timed(source) for _ in range(block))
        return {**summary(with_ext, without), "first_cell_with_median_ms": median(first)}

    timed("pass")  # imports, caches
    out: dict[str, Any] = {"no_write_cell": arms("x = 1", ws_small)}
    out["shell_cell_10k"] = {
        "!true": arms("!true", ws_big),
        "subprocess.run": arms("import subprocess\n_ = subprocess.run(['true'])", ws_big),
    }
    # the one-time setup of child-write tracking, and the mode it ended up in
    from ipylsp.ipython.watch import WriteWatcher

    os.chdir(ws_big)
    watcher = WriteWatcher(lambda p: True)
    t0 = time.perf_counter_ns()
    note = watcher.prepare()
    out["shell_cell_10k"]["setup_ms"] = round((time.perf_counter_ns() - t0) / 1e6, 3)
    out["shell_cell_10k"]["mode"] = watcher.mode
    out["shell_cell_10k"]["note"] = note
    watcher.close()
    return out


# -- real kernels ---------------------------------------------------------------------------------


class Kernel:
    """One ipykernel of this Python, driven with a blocking client; cells timed end to end."""

    def __init__(self, specs: Path, cwd: Path, env: dict[str, str]) -> None:
        from jupyter_client.kernelspec import KernelSpecManager
        from jupyter_client.manager import KernelManager

        self.km = KernelManager(
            kernel_name="python3", kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(specs)])
        )
        self.km.start_kernel(cwd=str(cwd), env=env, stderr=subprocess.DEVNULL)
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=60)

    def run(self, code: str, timeout: float = 60) -> tuple[float, list[dict[str, Any]]]:
        """(seconds from execute_request to idle, iopub messages of the cell)."""
        t0 = time.perf_counter()
        msg_id = self.kc.execute(code, store_history=False)
        messages = []
        while True:
            try:
                msg = self.kc.get_iopub_msg(timeout=timeout)
            except queue.Empty:
                raise TimeoutError(f"no idle within {timeout} s for {code!r}") from None
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                elapsed = time.perf_counter() - t0
                break
            messages.append(msg)
        reply = self.kc.get_shell_msg(timeout=timeout)
        if reply["content"]["status"] != "ok":
            raise RuntimeError(f"{code!r} failed: {reply['content']}")
        return elapsed, messages

    def stdout(self, code: str) -> str:
        _, messages = self.run(code)
        return "".join(m["content"]["text"] for m in messages if m["msg_type"] == "stream")

    def close(self) -> None:
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=False)


@contextlib.contextmanager
def kernels(top: Path, cwd: Path) -> Iterator[tuple[Kernel, Kernel]]:
    specs = top / "kernels"
    (specs / "python3").mkdir(parents=True)
    (specs / "python3" / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "bench",
        "language": "python",
    }))
    env = {**os.environ, "IPYTHONDIR": str(top / "ipython"), "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
    started: list[Kernel] = []
    try:
        started.append(Kernel(specs, cwd, env))
        started.append(Kernel(specs, cwd, env))
        yield started[0], started[1]
    finally:
        for kernel in started:
            with contextlib.suppress(Exception):
                kernel.close()


def alternate(with_ext: Kernel, without: Kernel, code: str, n: int) -> dict[str, Any]:
    a: list[float] = []
    b: list[float] = []
    with_ext.run(code)
    without.run(code)
    for i in range(n):
        order = ((with_ext, a), (without, b)) if i % 2 else ((without, b), (with_ext, a))
        for kernel, samples in order:
            samples.append(kernel.run(code)[0] * 1000)
    return summary(a, b)


def through_kernels(top: Path, ws_small: Path, ws_big: Path, n: int, writes: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with kernels(top, ws_big) as (ext, plain):
        ext.run("%load_ext ipylsp")
        ext.run('%config IPyLSP.language_servers = {"python": ["ty"]}')
        out["no_write_cell"] = alternate(ext, plain, "x = 1", n)
        out["shell_cell_10k"] = {
            "!true": alternate(ext, plain, "!true", n),
            "subprocess.run": alternate(
                ext, plain, "import subprocess; _ = subprocess.run(['true'])", n
            ),
        }
        out["writefile_report"] = writefile_report(ext, plain, ws_small / "app.py", writes)
    return out


def writefile_report(ext: Kernel, plain: Kernel, path: Path, writes: int) -> dict[str, Any]:
    marks = (
        "import time as _t\n"
        "_ipylsp_bench_marks = []\n"
        "get_ipython().events.register('post_execute', "
        "lambda: _ipylsp_bench_marks.append(_t.time()))"
    )
    ext.run(marks)
    after: list[float] = []
    trip_ext: list[float] = []
    trip_plain: list[float] = []
    reports: list[str] = []
    for i in range(writes + 2):  # two warm-up writes: the first starts ty
        text = BROKEN if i % 2 == 0 else FIXED
        elapsed_plain, _ = plain.run(f"%%writefile {path.with_name('plain_' + path.name)}\n{text}")
        elapsed, messages = ext.run(f"%%writefile {path}\n{text}")
        mark = float(ext.stdout("print(repr(_ipylsp_bench_marks[-1]))"))
        displays = [m for m in messages if m["msg_type"] == "display_data"]
        if len(displays) != 1:
            raise RuntimeError(f"expected one report, got {[m['content'] for m in displays]}")
        date = displays[0]["header"]["date"]
        sent = date.timestamp() if isinstance(date, datetime) else datetime.fromisoformat(
            str(date)).timestamp()
        if i >= 2:
            after.append((sent - mark) * 1000)
            trip_ext.append(elapsed * 1000)
            trip_plain.append(elapsed_plain * 1000)
        reports.append(displays[0]["content"]["data"]["text/plain"])
    return {
        "after_cell_median_ms": median(after),
        "after_cell_p90_ms": quantile(after, 0.9),
        "roundtrip": summary(trip_ext, trip_plain),
        "n": len(after),
        "reports": sorted(set(reports)),
    }


# -- the raw reference ----------------------------------------------------------------------------


def raw_ty(ws: Path) -> dict[str, Any]:
    """The raw client on ty: didOpen(broken) -> diagnostics, didChange(fixed) -> cleared."""
    ty = shutil.which("ty", path=os.path.dirname(sys.executable)) or shutil.which("ty")
    if ty is None:
        return {"error": "ty not found"}
    (ws / "raw.py").write_text(BROKEN)
    (ws / "raw_fixed.py").write_text(FIXED)
    runs = []
    for _ in range(5):
        proc = subprocess.run(
            [sys.executable, str(RAW_CLIENT), "--root", str(ws), "--file", "raw.py",
             "--expect", "heigth", "--fixed", str(ws / "raw_fixed.py"), "--", ty, "server"],
            capture_output=True, text=True, timeout=120,
        )
        try:
            runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        except (ValueError, IndexError):
            return {"error": (proc.stderr or proc.stdout)[-500:]}
    clear = [float(r["clear_ms"]) for r in runs if r.get("clear_ms") is not None]
    diag = [float(r["diag_ms"]) for r in runs if r.get("diag_ms") is not None]
    return {"clear_median_ms": median(clear), "diag_median_ms": median(diag), "runs": len(runs)}


# -- main -----------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cells", type=int, default=200, help="in-process cells per arm")
    parser.add_argument("--kernel-cells", type=int, default=100, help="kernel cells per arm")
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--dirs", type=int, default=500)
    parser.add_argument("--writes", type=int, default=30)
    parser.add_argument("--out", type=Path, default=RESULTS / "bench_ipython.json")
    args = parser.parse_args(argv)

    from ipylsp.private import scratch_dir

    # below no directory another user can write to: ipylsp roots no server under a shared /tmp
    top = scratch_dir("ipylsp-bench-ipython-", Path(__file__).resolve().parent.parent / ".cache")
    cwd = os.getcwd()
    try:
        ws_small = git_workspace(top / "small")
        ws_big = git_workspace(top / "big", args.files, args.dirs)
        result: dict[str, Any] = {
            "benchmark": "bench_ipython",
            "machine": {
                "python": platform.python_version(),
                "platform": platform.platform(),
                "cpus": os.cpu_count(),
            },
            "workspace_files": args.files,
            "workspace_dirs": args.dirs,
            "in_process": in_process(ws_small, ws_big, args.cells),
        }
        os.chdir(cwd)
        result["kernel"] = through_kernels(top, ws_small, ws_big, args.kernel_cells, args.writes)
        result["reference_probe_ty"] = raw_ty(ws_small)
        report_ms = result["kernel"]["writefile_report"]["after_cell_median_ms"]
        clear_ms = result["reference_probe_ty"].get("clear_median_ms")
        if report_ms is not None and clear_ms:
            result["writefile_report_vs_probe_ratio"] = round(report_ms / clear_ms, 2)
        ip, kr = result["in_process"], result["kernel"]
        result["budgets"] = {
            "no_write_cell_extra_under_1ms": {
                "in_process": ip["no_write_cell"]["extra_median_ms"] < 1.0,
                "kernel": kr["no_write_cell"]["extra_median_ms"] < 1.0,
            },
            "shell_cell_10k_extra_under_20ms": {
                f"{where}:{case}": src["shell_cell_10k"][case]["extra_median_ms"] < 20.0
                for where, src in (("in_process", ip), ("kernel", kr))
                for case in ("!true", "subprocess.run")
            },
        }
    finally:
        os.chdir(cwd)
        shutil.rmtree(top, ignore_errors=True)
    text = json.dumps(result, indent=2)
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
