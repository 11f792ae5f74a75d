"""How long a Jupyter server takes to stop on SIGINT and on SIGTERM after MCP calls, with
ipylsp's extension and without it (issue 22, item 2).

Run: ``.venv/bin/python benchmarks/bench_stop.py [--n 5]``. Prints one JSON object (also
``benchmarks/results/bench_stop.json``).

Each round starts, for each scenario, signal and arm (in rotating order), a fresh ``jupyter
server`` (subprocess, token auth, stdin not a terminal: as JupyterHub starts a user's server) on
a git workspace holding ``app.py``, makes the scenario's calls, sends the signal and times it to
the process's exit (signal sent -> reaped, ``os.wait4``), and the CPU time the process used
meanwhile (its rusage at exit minus its /proc times before the signal: steadier than the wall
time on a loaded machine, where Python's own teardown of a process with JupyterLab loaded
takes most of a stop's wall time). Arms:

- ``ipylsp``: the extension enabled; an MCP session over HTTP (the SDK's client: initialize,
  tools/list, ``lsp_check`` of app.py, so ty and ruff start and answer, and a refused call);
- ``without``: the extension disabled (``ServerApp.jpserver_extensions``); one authenticated
  request to Jupyter's own ``api/status`` instead.

Scenarios: ``mcp`` (the calls above) and ``kernel`` (also a kernel, started over REST, that ran
a ``%%writefile`` of a broken file, after ``%load_ext ipylsp`` in the ``ipylsp`` arm, and still
runs at the stop: the server shuts it down). The signal is sent once jupyter-lsp has searched
for its language servers (`settled`). Each stop's exit code, and whether every process
below the server (ty, ruff, the kernel and its servers) was gone 10 s later, are checked.

Target: ≤ 1 s (the issue measured 60 s on SIGINT after one MCP call, before bfa53da).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as c

from ipylsp.lsp.procfs import descendants, running, wait_exited
from tests.hub import RemoteKernel, call, free_port, wait_answering
from tests.test_server_mcp_http import BROKEN, _session

TOKEN = "ipylsp-bench-token"
ARMS = ("ipylsp", "without")
SIGNALS = {"SIGINT": signal.SIGINT, "SIGTERM": signal.SIGTERM}


def start(root: Path, base: Path, data_dir: Path, enabled: bool) -> tuple[subprocess.Popen[bytes],
                                                                       int]:
    config = base / "jupyter_server_config.py"
    config.write_text(
        "c.IPyLSP.language_servers = {'python': ['ty', 'ruff']}\n"
        f"c.IPyLSP.data_dir = {str(data_dir)!r}\n"
    )
    port = free_port()
    command = [
        str(Path(sys.executable).parent / "jupyter-server"), "--no-browser",
        f"--config={config}", f"--ServerApp.port={port}", "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.root_dir={root}", f"--IdentityProvider.token={TOKEN}",
        "--ServerApp.allow_root=True", "--ServerApp.port_retries=0",
    ]
    if not enabled:
        command.append('--ServerApp.jpserver_extensions={"ipylsp.server": False}')
    with (base / "server.log").open("wb") as log:
        process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            env={**os.environ, "JUPYTER_CONFIG_DIR": str(base / "jupyter-config")},
        )
    url = f"http://127.0.0.1:{port}/api/status"
    wait_answering(process, lambda: call(url, token=TOKEN, timeout=5)[0] == 200,
                   f"jupyter server (log: {base / 'server.log'})")
    return process, port


def calls(port: int, arm: str, scenario: str) -> None:
    """The scenario's calls; a kernel (if any) is left running."""
    base = f"http://127.0.0.1:{port}/"
    if arm == "ipylsp":
        names, checked, refused = asyncio.run(
            _session(f"{base}ipylsp/mcp", {"Authorization": f"token {TOKEN}"})
        )
        assert "lsp_check" in names and not checked[0] and refused[0], (checked, refused)
    else:
        assert call(f"{base}api/status", token=TOKEN)[0] == 200
    if scenario == "kernel":
        kernel = RemoteKernel(base, TOKEN)
        if arm == "ipylsp":
            assert kernel.run("%load_ext ipylsp").error is None
        cell = kernel.run("%%writefile bad.py\n" + BROKEN)
        assert cell.error is None, cell.outputs
        if arm == "ipylsp":
            assert any("totl" in str(o.get("data")) for o in cell.outputs), cell.outputs
        kernel.ws.close()  # the kernel itself runs on


def one_stop(iso: c.Isolation, scenario: str, signame: str, arm: str, i: int) -> dict[str, Any]:
    base = iso.base / f"{scenario}-{signame}-{arm}-{i}"
    base.mkdir()
    root = iso.workspace({"app.py": BROKEN}, f"ws-{scenario}-{signame}-{arm}-{i}")
    process, port = start(root, base, iso.data_dir, arm == "ipylsp")
    try:
        calls(port, arm, scenario)
        settled(base / "server.log")
        below = descendants(process.pid)
        cpu_before = cpu_s(process.pid)
        began = time.perf_counter()
        process.send_signal(SIGNALS[signame])
        _, status, usage = os.wait4(process.pid, 0)
        took = time.perf_counter() - began
        process.returncode = os.waitstatus_to_exitcode(status)
    finally:
        if process.returncode is None:
            process.kill()
            process.wait()
    left = wait_exited(below, 10)
    cpu_after = usage.ru_utime + usage.ru_stime  # its whole life, and its reaped children's
    return {"ms": c.ms(took), "cpu_ms": c.ms(cpu_after - cpu_before),
            "exit": process.returncode, "below": len(below),
            "left": len([p for p in left if running(p)])}


def settled(log: Path, timeout: float = 60) -> None:
    """Until jupyter-lsp (JupyterLab's) has looked for its language servers, on a thread that
    the interpreter's exit waits for: a stop during that search pays for it, with ipylsp or
    without (seconds on a loaded machine), which is not what is measured here."""
    deadline = time.monotonic() + timeout
    while b"Skipped non-installed server" not in log.read_bytes():
        if time.monotonic() > deadline:
            raise SystemExit(f"jupyter-lsp did not finish its search in {timeout} s ({log})")
        time.sleep(0.05)  # a log line of another process: nothing to wait on instead


def cpu_s(pid: int) -> float:
    """CPU seconds `pid` and its reaped children used so far (user + system, /proc ticks)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    return sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=5)
    args = parser.parse_args()
    result: dict[str, Any] = {"machine": c.machine(), "n": args.n, "target_ms": 1000}
    runs: dict[str, dict[str, dict[str, list[dict[str, Any]]]]] = {
        scenario: {sig: {arm: [] for arm in ARMS} for sig in SIGNALS}
        for scenario in ("mcp", "kernel")
    }
    with c.Isolation() as iso:
        for i in range(args.n):
            for scenario, by_signal in runs.items():
                for signame, by_arm in by_signal.items():
                    order = ARMS if i % 2 == 0 else ARMS[::-1]
                    for arm in order:
                        stop = one_stop(iso, scenario, signame, arm, i)
                        c.log(f"{scenario} {signame} {arm}: {stop}")
                        by_arm[arm].append(stop)
        result["leftover_processes"] = iso.leftovers()
    medians: dict[str, Any] = {}
    for scenario, by_signal in runs.items():
        for signame, by_arm in by_signal.items():
            row = {arm: c.median([s["ms"] for s in stops]) for arm, stops in by_arm.items()}
            row["ipylsp_minus_without"] = c.difference(row["ipylsp"], row["without"])
            row["cpu_ms"] = {arm: c.median([s["cpu_ms"] for s in stops])
                             for arm, stops in by_arm.items()}
            row["max_ms"] = {arm: max(s["ms"] for s in stops) for arm, stops in by_arm.items()}
            row["exit_codes"] = {arm: sorted({s["exit"] for s in stops})
                                 for arm, stops in by_arm.items()}
            row["processes_left"] = {arm: sum(s["left"] for s in stops)
                                     for arm, stops in by_arm.items()}
            medians[f"{scenario}_{signame}"] = row
    result["stop_median_ms"] = medians
    result["met_target"] = all(
        row["ipylsp"] is not None and row["ipylsp"] <= 1000 for row in medians.values()
    )
    result["runs"] = runs
    c.emit("bench_stop", result)
    clean = not result["leftover_processes"] and all(
        not any(row["processes_left"].values()) for row in medians.values()
    )
    return 0 if clean else 1


if __name__ == "__main__":
    raise SystemExit(main())
