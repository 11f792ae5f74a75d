"""A batch of N written files (one error each) on warm servers: ipylsp vs the raw client.

Issue 9. Run: ``.venv/bin/python benchmarks/bench_batch.py [--sizes 10,100,1000] [--reps 5]
[--servers ty,ruff,basedpyright] [--in-flight 1,4,8,16,32]``. Prints one JSON object (also
written to ``benchmarks/results/bench_batch.json``).

Per server, one temporary git workspace, one warm server per side:

- ``ipylsp``: a warm ``Service`` (``language_servers={"python": (server,)}``, no file cap, a
  budget far above the batch's time), the N files written, then ``check_files`` of the N files
  (``before=""``, as a cell's new files), timed from the calling thread; every file must come
  back with its error and nothing unknown.
- ``sequential`` / ``concurrent``: the raw client (``lsp_client.RawClient``: spawn, initialize,
  server requests answered) kept warm on its own thread, then for each batch: ``didOpen`` +
  ``textDocument/diagnostic`` one file after the other, or every ``didOpen`` first and all
  pulls at once; timed from the first ``didOpen`` to the last answer; each file must have an
  answer with a diagnostic; the documents are closed afterwards (untimed). ``workspace``
  (servers that declare ``workspaceDiagnostics``): every ``didOpen``, then one
  ``workspace/diagnostic``.
- Fresh file names for every run (a batch is new files), sides interleaved, order swapped every
  run; medians. ``ratio_vs_best_raw`` = ipylsp median / the faster raw strategy's median.
- ``ty+ruff``: the target case "100 files on warm ty + ruff <= 1 s": both servers in one
  Service (no raw counterpart: the two servers answer in parallel).
- ``peak_rss_mb``: this process's peak RSS (VmHWM, reset through /proc/self/clear_refs before)
  during ipylsp's largest batch; it includes what the raw client and earlier runs left in this
  process. ``kernel_rss``: the clean figure, from a fresh Python process that starts a Service
  (ty + ruff, then basedpyright + ruff), checks one file, then 1,000 new files in one
  ``check_files``: its RSS before and its peak (what a kernel pays; servers not included).
- ``--in-flight K,...``: also time ipylsp's N=``--tune-size`` batch with ``runs.IN_FLIGHT``
  set to each K (the number of diagnostic requests in flight per server), medians.
- ``real_sources``: ipylsp alone on ``--real`` N real modules (pip's own ``.py`` files, copied
  into the workspace: real imports, real sizes), the time to answer every file; this is what
  ``IPyLSP.max_files_per_check`` is measured against (3 runs, median).
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as c
from lsp_client import LoopThread, RawClient, ResponseError, matcher

from ipylsp.model.settings import Settings
from ipylsp.servers import executables, python_env, registry, roots
from ipylsp.service.check import server_run as service_runs
from ipylsp.service.service import FileCheck, Service

TEXT = 'import os\nx: int = "s"\n'
"""One type error (ty, pyright) and one lint error (ruff: F401) per file."""
PYPROJECT = '[project]\nname = "bench"\nversion = "0"\n'


class RawSide:
    """The raw client on its own event-loop thread, warm after its first file's diagnostics."""

    def __init__(self, client: RawClient) -> None:
        self.client = client
        self.thread = LoopThread()

    def ready(self, path: Path, timeout: float = 120.0) -> bool:
        try:
            self.thread.run(self.client.start(timeout), timeout)
            self.thread.run(self.client.edit(path, TEXT, matcher("."), timeout), timeout)
        except (TimeoutError, asyncio.TimeoutError, ConnectionError, ResponseError):
            return False
        return True

    @property
    def workspace_diagnostics(self) -> bool:
        provider = self.client.capabilities.get("diagnosticProvider")
        return isinstance(provider, dict) and bool(provider.get("workspaceDiagnostics"))

    def batch(self, paths: list[Path], strategy: str, timeout: float = 600.0) -> tuple[float, int]:
        return self.thread.run(self._batch(paths, strategy), timeout)

    async def _answered(self, path: Path) -> bool:
        try:
            return bool(await self.client.pull_diagnostics(path))
        except ResponseError:
            return False

    async def _batch(self, paths: list[Path], strategy: str) -> tuple[float, int]:
        client = self.client
        start = time.perf_counter()
        if strategy == "sequential":
            answered = 0
            for path in paths:
                await client.open(path, TEXT)
                answered += await self._answered(path)
        else:
            for path in paths:
                await client.open(path, TEXT)
            if strategy == "concurrent":
                answered = sum(await asyncio.gather(*(self._answered(p) for p in paths)))
            else:  # workspace
                result = await client.request("workspace/diagnostic", {"previousResultIds": []})
                uris = {p.as_uri() for p in paths}
                items = (result or {}).get("items") or []
                answered = sum(1 for i in items if i.get("uri") in uris and i.get("items"))
        elapsed = time.perf_counter() - start
        for path in paths:
            await client.close(path)
        return elapsed, answered

    def finish(self) -> int | None:
        try:
            return self.thread.run(self.client.stop(), 60)
        finally:
            self.thread.close()


def write_batch(ws: Path, tag: str, n: int) -> list[Path]:
    paths = []
    for i in range(n):
        path = ws / f"b_{tag}" / f"gen_{i}.py"
        path.parent.mkdir(exist_ok=True)
        path.write_text(TEXT)
        paths.append(path)
    return paths


def ipylsp_batch(service: Service, paths: list[Path]) -> tuple[float, bool]:
    start = time.monotonic()
    report = service.check_files([FileCheck(p, before="") for p in paths])
    elapsed = time.monotonic() - start
    ok = not report.has_unknown and sum(1 for f in report.files if f.diagnostics) == len(paths)
    return elapsed, ok


def vm_hwm_kb() -> int:
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def reset_hwm() -> None:
    with open("/proc/self/clear_refs", "w") as handle:
        handle.write("5")


def service_for(iso: c.Isolation, servers: tuple[str, ...]) -> Service:
    return Service(Settings(language_servers={"python": servers}, data_dir=iso.data_dir,
                            max_files_per_check=0, wait_budget=600.0))


def bench_server(
    iso: c.Isolation,
    server: str,
    sizes: list[int],
    reps: int,
    tune: list[int],
    tune_size: int,
    real: int,
) -> dict[str, Any]:
    spec = registry.get(server)
    assert spec is not None
    resolution = executables.resolve(spec, iso.data_dir)
    if resolution.command is None:
        return {"missing": resolution.reason}
    ws = iso.workspace({"warm.py": TEXT, "pyproject.toml": PYPROJECT}, f"batch-{server}")
    root = roots.find_root(ws / "warm.py", spec.root_markers, git_worktree=ws)
    final = python_env.for_server(spec, root, ceiling=ws)
    side = RawSide(c.reference_client(resolution.command, root, final))
    out: dict[str, Any] = {"command": list(resolution.command)}
    with service_for(iso, (server,)) as service:
        try:
            if not side.ready(ws / "warm.py"):
                return {"error": "the raw client got no first diagnostics"}
            assert ipylsp_batch(service, [ws / "warm.py"])[1]
            strategies = ["sequential", "concurrent"]
            if side.workspace_diagnostics:
                strategies.append("workspace")
            out["raw_strategies"] = strategies
            for n in sizes:
                c.log(f"{server}: N={n}, {reps} runs per side")
                times: dict[str, list[float]] = {k: [] for k in ["ipylsp", *strategies]}
                wrong: dict[str, int] = dict.fromkeys(times, 0)
                rss_kb = 0
                for rep in range(reps):
                    order = ["ipylsp", *strategies]
                    if rep % 2:
                        order.reverse()
                    for side_name in order:
                        paths = write_batch(ws, f"{n}_{rep}_{side_name}", n)
                        if side_name == "ipylsp":
                            if n == max(sizes):
                                reset_hwm()
                            elapsed, ok = ipylsp_batch(service, paths)
                            if n == max(sizes):
                                rss_kb = max(rss_kb, vm_hwm_kb())
                        else:
                            elapsed, answered = side.batch(paths, side_name)
                            ok = answered == n
                        times[side_name].append(c.ms(elapsed))
                        wrong[side_name] += not ok
                medians = {k: c.median(v) for k, v in times.items()}
                raw = [medians[s] for s in strategies if medians[s] is not None]
                best = min(raw) if raw else None
                out[f"N={n}"] = {
                    "median_ms": medians,
                    "ratio_vs_best_raw": c.ratio(medians["ipylsp"], best),
                    "wrong_results": wrong,
                    "times_ms": times,
                    **({"peak_rss_mb": round(rss_kb / 1024, 1)} if rss_kb else {}),
                }
            if tune:
                out["in_flight"] = tune_in_flight(ws, service, server, tune, tune_size, reps)
            if real:
                out["real_sources"] = real_sources(ws, service, real)
        finally:
            out["probe_exit"] = side.finish()
    return out


def real_sources(ws: Path, service: Service, n: int, reps: int = 3) -> dict[str, Any]:
    import pip

    sources = sorted(Path(pip.__file__).parent.rglob("*.py"))[:n]
    times, unanswered = [], []
    for rep in range(reps):
        target = ws / f"real_{rep}"
        paths = []
        for source in sources:
            path = target / source.relative_to(Path(pip.__file__).parent.parent)
            path.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, path)
            paths.append(path)
        start = time.monotonic()
        report = service.check_files([FileCheck(p, before="") for p in paths])
        times.append(c.ms(time.monotonic() - start))
        unanswered.append(sum(1 for f in report.files if f.unknown) + len(report.unknown))
    median = c.median(times)
    return {"n": len(sources), "median_ms": median, "times_ms": times,
            "per_file_ms": round(median / len(sources), 2) if median else None,
            "unanswered": unanswered}


def tune_in_flight(
    ws: Path, service: Service, server: str, values: list[int], n: int, reps: int
) -> dict[str, Any]:
    saved = service_runs.IN_FLIGHT.get(server)
    times: dict[int, list[float]] = {k: [] for k in values}
    try:
        for rep in range(reps):
            for k in values if rep % 2 == 0 else list(reversed(values)):
                service_runs.IN_FLIGHT[server] = k
                elapsed, ok = ipylsp_batch(service, write_batch(ws, f"tune_{k}_{rep}", n))
                times[k].append(c.ms(elapsed) if ok else float("nan"))
    finally:
        if saved is None:
            service_runs.IN_FLIGHT.pop(server, None)
        else:
            service_runs.IN_FLIGHT[server] = saved
    return {"n": n, "median_ms": {str(k): c.median(v) for k, v in times.items()},
            "current": saved or service_runs.DEFAULT_IN_FLIGHT}


RSS_CHILD = """
import sys, time
from pathlib import Path
from ipylsp.service.service import Service, FileCheck
from ipylsp.model.settings import Settings
def kb(field):
    for line in open("/proc/self/status"):
        if line.startswith(field):
            return int(line.split()[1])
root, data, servers = Path(sys.argv[1]), Path(sys.argv[2]), tuple(sys.argv[3].split(","))
with Service(Settings(language_servers={"python": servers}, data_dir=data,
                      max_files_per_check=0, wait_budget=600)) as service:
    service.check(root / "warm.py")
    paths = []
    for i in range(1000):
        path = root / "rss" / f"gen_{i}.py"
        path.parent.mkdir(exist_ok=True)
        path.write_text(sys.argv[4])
        paths.append(path)
    open("/proc/self/clear_refs", "w").write("5")
    before = kb("VmRSS:")
    start = time.monotonic()
    report = service.check_files([FileCheck(p, before="") for p in paths])
    print(before, kb("VmHWM:"), time.monotonic() - start, int(report.has_unknown))
"""


def kernel_rss(iso: c.Isolation, servers: tuple[str, ...]) -> dict[str, Any]:
    ws = iso.workspace({"warm.py": TEXT, "pyproject.toml": PYPROJECT}, "rss-" + "-".join(servers))
    done = subprocess.run(
        [sys.executable, "-c", RSS_CHILD, str(ws), str(iso.data_dir), ",".join(servers), TEXT],
        capture_output=True, text=True, timeout=600, check=False, cwd=c.REPO,
    )
    try:
        before, peak, seconds, unknown = done.stdout.split()
    except ValueError:
        return {"error": done.stderr[-500:]}
    return {
        "rss_before_mb": round(int(before) / 1024, 1),
        "peak_rss_mb": round(int(peak) / 1024, 1),
        "check_ms": c.ms(float(seconds)),
        "unknown": bool(int(unknown)),
    }


def bench_pair(iso: c.Isolation, servers: tuple[str, ...], n: int, reps: int) -> dict[str, Any]:
    ws = iso.workspace({"warm.py": TEXT, "pyproject.toml": PYPROJECT}, "batch-" + "-".join(servers))
    times, wrong = [], 0
    with service_for(iso, servers) as service:
        assert ipylsp_batch(service, [ws / "warm.py"])[1]
        for rep in range(reps):
            elapsed, ok = ipylsp_batch(service, write_batch(ws, f"pair_{rep}", n))
            times.append(c.ms(elapsed))
            wrong += not ok
    median = c.median(times)
    return {"n": n, "median_ms": median, "target_ms": 1000,
            "meets_target": median is not None and median <= 1000, "wrong_results": wrong,
            "times_ms": times}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10,100,1000")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--servers", default="ty,ruff,basedpyright")
    parser.add_argument("--in-flight", default="", help="K values to time, e.g. 1,4,8,16,32")
    parser.add_argument("--tune-size", type=int, default=300)
    parser.add_argument("--real", type=int, default=200, help="real modules (0: skip)")
    args = parser.parse_args()
    sizes = [int(x) for x in args.sizes.split(",") if x]
    tune = [int(x) for x in args.in_flight.split(",") if x]
    result: dict[str, Any] = {"benchmark": "bench_batch", "machine": c.machine(),
                              "in_flight": dict(service_runs.IN_FLIGHT)}
    with c.isolated_run("bench_batch", result) as iso:
        result["servers"] = {
            s: bench_server(iso, s, sizes, args.reps, tune, args.tune_size, args.real)
            for s in args.servers.split(",") if s
        }
        if "ty" in args.servers and "ruff" in args.servers:
            c.log("ty+ruff: N=100")
            result["ty+ruff"] = bench_pair(iso, ("ty", "ruff"), 100, args.reps)
        c.log("kernel RSS: 1,000 files in a fresh process")
        result["kernel_rss"] = {
            "+".join(pair): kernel_rss(iso, pair)
            for pair in (("ty", "ruff"), ("basedpyright", "ruff"))
        }
    return c.exit_status(result)


if __name__ == "__main__":
    sys.exit(main())
