"""What "no process left, ever" costs (issue 9 item 11).

Run: ``.venv/bin/python benchmarks/bench_orphans.py [--n 9] [--extra 1000]``. Prints one JSON
object (also written to ``benchmarks/results/bench_orphans.json``).

- ``scan``: finding a server's helpers by their environment tag reads /proc/*/environ
  (`procfs.carrying`). Reference in the same run: `procfs.descendants`, the /proc stat scan every
  stop already made. Measured with the machine's processes and with ``--extra`` more sleeping
  processes (each with a 2 KB environment, like a shell's), medians of 30 scans.
- ``stop_ruff``: stopping a warm ruff server. Reference: the raw client (`lsp_client.RawClient`
  `stop` on a server it spawned: shutdown + exit, the process reaped, its group killed);
  ipylsp: `LanguageClient.stop` (the same, then group, descendants and two tag scans). ``--n``
  runs each, alternating.
- ``close_fake``: `Service.close` with one fixture server that exits cleanly but leaves a
  helper in its own session (the helper must be dead when close returns), that ignores `exit`
  (the promise: at most 0.5 s), and that never answers `shutdown` (it gets `shutdown_grace`).
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as c
from lsp_client import RawClient

from ipylsp.lsp.client import LanguageClient
from ipylsp.lsp.procfs import carrying, descendants, running
from ipylsp.model.server_spec import InstallRecipe, ServerSpec
from ipylsp.model.settings import Settings
from ipylsp.servers import registry
from ipylsp.service.service import Service


def _scan_ms(function: Any, *args: Any, n: int = 30) -> float | None:
    times = []
    for _ in range(n):
        began = time.perf_counter()
        function(*args)
        times.append(c.ms(time.perf_counter() - began))
    return c.median(times)


def _processes() -> int:
    return sum(1 for entry in Path("/proc").iterdir() if entry.name.isdigit())


def scan(extra: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    sleepers: list[subprocess.Popen[bytes]] = []
    try:
        for label in ("machine", f"plus_{extra}"):
            if label != "machine":
                sleepers = [subprocess.Popen(["sleep", "300"], env={"PADDING": "x" * 2000})
                            for _ in range(extra)]
            count = _processes()
            tag_ms = _scan_ms(carrying, "IPYLSP_SERVER_TAG", "0.0.0")
            tree_ms = _scan_ms(descendants, 1)
            out[label] = {
                "processes": count,
                "tag_scan_ms": tag_ms,
                "tree_scan_ms": tree_ms,
                "tag_scan_us_per_process": round(1000 * (tag_ms or 0) / count, 2),
                "ratio_tag_to_tree": c.ratio(tag_ms, tree_ms),
            }
    finally:
        for sleeper in sleepers:
            sleeper.kill()
            sleeper.wait()
    return out


async def _raw_stop(root: Path, command: list[str]) -> float:
    """The raw client on a server it spawned: initialize, then time its stop."""
    client = RawClient(command, root)
    await client.start(30)
    began = time.perf_counter()
    await client.stop()
    return time.perf_counter() - began


async def _ipylsp_stop(root: Path, command: list[str]) -> float:
    spec = registry.get("ruff")
    assert spec is not None
    client = LanguageClient(spec, root, tuple(command))
    await client.start(30)
    began = time.perf_counter()
    await client.stop()
    return time.perf_counter() - began


def stop_ruff(iso: c.Isolation, n: int) -> dict[str, Any]:
    from ipylsp.servers import executables

    spec = registry.get("ruff")
    assert spec is not None
    command = executables.resolve(spec, iso.data_dir).command
    if command is None:
        return {"skipped": "ruff not installed"}
    root = iso.workspace({"a.py": "print(x)\n"}, "ruff")
    raw: list[float] = []
    ours: list[float] = []
    for run in range(n):
        order = (_raw_stop, _ipylsp_stop) if run % 2 == 0 else (_ipylsp_stop, _raw_stop)
        for stop in order:
            elapsed = asyncio.run(stop(root, list(command)))
            (raw if stop is _raw_stop else ours).append(c.ms(elapsed))
    return {
        "probe_median_ms": c.median(raw),
        "ipylsp_median_ms": c.median(ours),
        "ratio": c.ratio(c.median(ours), c.median(raw)),
        "overhead_ms": round((c.median(ours) or 0) - (c.median(raw) or 0), 3),
    }


def _close_ms(iso: c.Isolation, name: str, *flags: str) -> dict[str, Any]:
    root = iso.workspace({"a.sh": "ERROR:x\n"}, name)
    pidfile = iso.base / f"{name}.pid"
    spec = ServerSpec(
        id="fake", name="Fake", languages=("shellscript",),
        command=(sys.executable, str(c.FAKE_SERVER), "--lifetime-s", "60",
                 "--setsid-helper", str(pidfile), *flags),
        install=InstallRecipe("path"),
    )
    service = Service(Settings(language_servers={"shellscript": ("fake",)}, extra_specs=(spec,),
                               data_dir=iso.data_dir))
    service.check(root / "a.sh")
    began = time.perf_counter()
    service.close()
    elapsed = c.ms(time.perf_counter() - began)
    return {"close_ms": elapsed, "helper_dead_at_return": not running(int(pidfile.read_text()))}


def close_fake(iso: c.Isolation, n: int) -> dict[str, Any]:
    cases = {
        "clean_exit_with_helper": (),
        "ignores_exit": ("--ignore-exit", "--ignore-sigterm"),
        "no_shutdown_answer": ("--hang-on", "shutdown", "--ignore-exit"),
    }
    out: dict[str, Any] = {}
    for name, flags in cases.items():
        count = n if name != "no_shutdown_answer" else 3  # 2 s each
        runs = [_close_ms(iso, f"{name}{i}", *flags) for i in range(count)]
        out[name] = {
            "close_median_ms": c.median([r["close_ms"] for r in runs]),
            "close_max_ms": max(r["close_ms"] for r in runs),
            "helpers_dead_at_return": all(r["helper_dead_at_return"] for r in runs),
        }
    out["ignores_exit"]["meets_promise_500ms"] = out["ignores_exit"]["close_max_ms"] <= 500
    out["shutdown_grace_s"] = Settings().shutdown_grace
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=9)
    parser.add_argument("--extra", type=int, default=1000)
    args = parser.parse_args()
    result: dict[str, Any] = {"machine": c.machine()}
    with c.Isolation() as iso:
        c.log("scan")
        result["scan"] = scan(args.extra)
        c.log("stop_ruff")
        result["stop_ruff"] = stop_ruff(iso, args.n)
        c.log("close_fake")
        result["close_fake"] = close_fake(iso, args.n)
        result["leftover_processes"] = iso.leftovers()
    c.emit("bench_orphans", result)
    return 1 if result["leftover_processes"] else 0


if __name__ == "__main__":
    sys.exit(main())
