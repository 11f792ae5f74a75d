"""Kernels on the user's broker (issue 31): what sharing one pool of servers saves in memory,
what it costs a new kernel's first check and every cell check, and whether ten kernels
checking at once each get their own reports, every one, with nothing left behind.

Run: ``.venv/bin/python benchmarks/bench_kernels.py [--kernels 5] [--first-cell 7]
[--basedpyright 7] [--boundary 300] [--boundary-cells 30] [--stress-kernels 10]
[--stress-seconds 60] [--server-ext auto|on|off] [--only memory,first_cell,boundary,stress]``.
Prints one JSON object (also ``benchmarks/results/bench_kernels.json``); about 4 min on 2
cores with the defaults (245 s in the run the README quotes).

Every side is measured against **the broker off in the same run** (``IPYLSP_BROKER=0``:
today before issue 31, each kernel runs its own ty and ruff in-process). Kernels are real
ipykernels started by ``jupyter_client`` (this interpreter, a kernelspec of the run's own), each
driven over ZMQ by a blocking client that notes when each message arrives. Each part runs with
a private ``XDG_RUNTIME_DIR`` (a short 0700 directory in /tmp: its own broker), the real data
dir (``XDG_DATA_HOME``: the servers a user's kernel finds), a store file of the part's, a
private ``IPYTHONDIR`` and Jupyter runtime directory, and a marker variable of the part's that
every process it starts inherits (kernels, brokers, servers, watchdogs). At the end of each
part every kernel is shut down (killed, its process group too, on any failure), the broker
is stopped (``ipylsp broker stop``, SIGTERM for any other), and the processes still carrying
the part's marker are listed (``leftover_processes``, which must be ``[]``). The package's
bytecode is compiled first, as a wheel install leaves it. A broker serves its own build only:
on a tree others edit, run from a worktree of a commit, first on ``PYTHONPATH``::

    git worktree add --detach /private/dir/snap HEAD
    PYTHONPATH=/private/dir/snap .venv/bin/python /private/dir/snap/benchmarks/bench_kernels.py

``memory``
    (a) ``--kernels`` kernels in one git workspace, each ``%load_ext ipylsp``, one
    ``%%writefile`` of a file of its own with one ty error, and one cell whose code has an
    error (each report checked), plus ``ipylsp mcp --root WS`` (the official MCP SDK's stdio
    client, one ``lsp_check`` of a file with an error), plus, when the Jupyter server
    extension runs on the broker (``ipylsp/server/state.py`` uses ``broker.relay``; or
    ``--server-ext on``), a real ``jupyter server`` rooted at the workspace with one ``POST
    ipylsp/api/check``; (b) ``--kernels`` kernels in one plain directory (no git, no project
    marker, below the run's private directory), the same cells. Each with the broker on and
    off. Then, from /proc (5 samples 0.25 s apart, medians): over the whole tree of every
    process the part started (the broker and anything carrying the part's marker included),
    the ty and ruff processes (by ``comm``) and their roots (``/proc/PID/cwd``), each
    server's process tree's RSS and PSS, the broker interpreter's own, the kernels' own, the
    MCP process's and the Jupyter server's own, and ipylsp's watchdogs. ``added`` = what
    ipylsp adds beyond the kernels (and the MCP/Jupyter processes) themselves: servers +
    broker (on) against servers (off); watchdogs are given beside it. The issue's target:
    with the broker one ty and one ruff per root, and at most one pair + the broker's
    interpreter + 10 MB, i.e. the shared pair at most 10 MB above the median pair of the
    off side (``targets``).
``first_cell``
    A new kernel's first check: start it (untimed), ``%load_ext ipylsp`` (timed apart), then
    the timed cell ``%%writefile first_N.py`` of a one-line file with one ty error: from the
    ``execute_request`` sent to the last of its ``execute_reply`` and the report's display
    (the client's clock). With a warm broker (two other kernels made it start ty and ruff on
    the workspace and stay) against the broker off (ty and ruff start in the kernel);
    ``--first-cell`` kernels each, alternating which side goes first. Then the same with
    basedpyright alone (``%config IPyLSP.language_servers = {"python": ["basedpyright"]}``
    after ``%load_ext``) on requests 2.32.3's sdist (the cache ``bench_delta_accuracy`` fills,
    in this tree's or the main worktree's ``.cache``; skipped with a note when absent, never
    downloaded), a one-error file in ``src/requests/``; ``--basedpyright`` kernels each.
``boundary``
    What the broker adds to a cell's check, in this process, on one workspace. Each session
    checks one file of its own, written just before each check with a new one-error text
    (``before=`` the old one: one error new, one fixed, every time, as a cell's write is
    checked); ``--boundary`` rounds of each comparison (after 5 untimed), the cases in an
    order shuffled every round (the servers of one case, still busy, slow the next on 2
    cores: a fixed rotation would always put the same case after the same other).
    (A) a warm ``RelayedService`` (``broker.relay.attach``, as a kernel's) against a warm
    in-process ``Service`` with the same settings, each with and without a progress
    callback (the cell hook passes one): ``added_ms``, the target: at most 1 ms.
    (B) the relay against the broker's own call (``client.Broker.check_files``, what
    bench_broker's boundary times; another session of the same context), both on the
    broker's servers: what the relay adds (``relay_against_broker_call``). (C) the
    broker's own call against in-process, each on its own servers: what the socket and the
    broker add (``broker_call_against_service``). ``inside_broker_call_ms`` /
    ``outside_broker_call_ms``: each relayed check's time inside ``Broker.call`` (the socket
    and the broker's work) and around it (the relay's own, here); ``conversions_ms``: the
    relay's wire forms on each side. Also a relayed call answered at once
    (``pending_count``): the socket's floor; and one check's frames, measured on the socket
    (``frames.send``/``receive`` wrapped) and computed from the wire forms with
    ``json_text.dumps`` (request: ``encode_args`` of the files; answer: ``to_wire`` of the
    report). Then the user's view (``kernel_cell``): two warm kernels, broker on and off,
    ``--boundary-cells`` ``%%writefile`` cells each (a new error every time), alternating;
    and the check alone in those kernels (``kernel_check``): ``--boundary-cells`` cells
    each timing 10 checks in the kernel (no cell machinery; on the relay side no other
    service's loop in the process, unlike (A)), in ``--boundary-pairs`` pairs of kernels
    pooled (each pair on servers of its own: one ty instance answers faster than another by
    about as much as the boundary). Each in a workspace of its own.
``stress``
    ``--stress-kernels`` kernels on one broker, one thread each, for ``--stress-seconds``:
    in turn each writes a file of its own with an error (three per kernel, rewritten), one of
    three files every kernel writes (``shared_M.py``), a cell whose code has an error, its
    last own file fixed; every error carries a token naming the kernel and the step
    (``Literal["KdJbh"]``: kernel 3, step 17, in letters), so a report is traced to the
    write that made it. Every report a kernel got is kept and checked. ``mixed_up``: a
    report about a file the kernel had not written or another kernel's cells' document, or
    an error with another kernel's token, except in a shared file that this other kernel
    wrote during the cell (its cell overlapping this one: the disk's text when the check
    read it; ``raced_foreign_token``). ``stale_own_token``: the kernel's own older token
    shown as current in a file. ``lost``: an error write whose token is reported neither
    in its cell nor in a later cell of the kernel (``reported_later``), with no unknown
    (e.g. "timed out") said for it (``unknown_said``) and, for a shared file, no other
    kernel's write of it overlapping the cell (``overwritten_meanwhile``). Every cell must
    end within the check budget + a margin (``hung``, ``max_cell_ms``). Then the kernels
    end, the broker is stopped, and no ty, ruff or broker may remain (``no_server_left``).

The load average is recorded at the start and end of the run and of each part.
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import json
import os
import queue
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as c
import anyio
import zmq
from bench_broker import brokers_of, private_broker, spread, status
from jupyter_client import KernelManager
from jupyter_client.kernelspec import KernelSpecManager
from lsp_client import process_tree
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

import ipylsp
from ipylsp import json_text
from ipylsp.lsp.process import WATCHDOG
from ipylsp.lsp.procfs import TAG_VAR, carrying, parent, wait_exited
from ipylsp.model.checks import FileCheck
from ipylsp.model.settings import Settings

MIME = "application/vnd.ipylsp.diagnostics+json"
PART_VAR = "IPYLSP_BENCH_PART"  # IPYLSP_*: never part of a broker context's environment
IPYLSP = str(Path(sys.executable).parent / "ipylsp")
JUPYTER_SERVER = str(Path(sys.executable).parent / "jupyter-server")
BAD = 'x: int = "s"\n'
CELL_BAD = 'y: int = "s"'
EXPECT = re.compile(r"not assignable|invalid-assignment|reportAssignmentType")
TOKEN = re.compile(r'"K([a-j]+)J([a-j]+)"')
"""A write's token: the kernel's and the step's numbers in letters (``K3J17`` is ``KdJbh``).
In digits, two writes' errors would be one problem to the delta, which masks digit runs
(`analysis.delta`, round c): a rewrite would report nothing new."""


def token(kernel: int, step: int) -> str:
    return f"K{kernel:d}J{step:d}".translate(str.maketrans("0123456789", "abcdefghij"))


def untoken(letters: str) -> int:
    return int(letters.translate(str.maketrans("abcdefghij", "0123456789")))
TARGET_BOUNDARY_MS = 1.0
TARGET_EXTRA_MB = 10.0
BUDGET_S = 10.0  # Settings.wait_budget's default: a cell's check waits at most this
MARGIN_S = 20.0  # a cell that has not ended by budget + margin is hung
REQUESTS = "requests-2.32.3"
SECTIONS = ("memory", "first_cell", "boundary", "stress")


# -- kernels ------------------------------------------------------------------------------------


@dataclass
class CellRun:
    """One executed cell as the client saw it: times from the request sent (ms)."""

    code: str
    status: str = "?"
    reply_ms: float | None = None
    report_ms: float | None = None
    idle_ms: float | None = None
    started: float = 0.0  # perf_counter at the request
    ended: float = 0.0  # perf_counter at the later of the reply and idle
    reports: list[dict[str, Any]] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    error: str | None = None
    hung: bool = False

    @property
    def cell_ms(self) -> float | None:
        """The request to the last of the reply and the report (no report: the reply)."""
        if self.reply_ms is None:
            return None
        return max(self.reply_ms, self.report_ms or 0.0)

    def has_error_report(self) -> bool:
        return any(EXPECT.search(d.get("message", "") + " " + str(d.get("code")))
                   for r in self.reports for f in r.get("files", [])
                   for d in f.get("diagnostics", []))


class Kernel:
    """A real ipykernel (this interpreter) in `cwd` with `env`, driven by a blocking client."""

    def __init__(self, spec_dir: Path, cwd: Path, env: dict[str, str], label: str) -> None:
        self.cwd = cwd
        self.env = env
        self.label = label
        self.km = KernelManager(kernel_name="python3",
                                kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(spec_dir)]))
        self.kc: Any = None
        self.pid = 0
        self.start_ms: float | None = None

    def start(self) -> Kernel:
        began = time.perf_counter()
        self.km.start_kernel(cwd=str(self.cwd), env=self.env)
        self.pid = int(self.km.provisioner.pid)  # type: ignore[union-attr]
        self.connect()
        self.start_ms = c.ms(time.perf_counter() - began)
        return self

    def connect(self) -> None:
        """A client in the calling thread (ZMQ sockets stay in the thread that uses them)."""
        if self.kc is not None:
            self.kc.stop_channels()
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=120)

    def run(self, code: str, timeout: float = BUDGET_S + MARGIN_S) -> CellRun:
        """Execute `code`; every message of it until both the reply and the idle status came
        (or `timeout` passed: ``hung``)."""
        kc = self.kc
        cell = CellRun(code)
        poller = zmq.Poller()
        poller.register(kc.iopub_channel.socket, zmq.POLLIN)
        poller.register(kc.shell_channel.socket, zmq.POLLIN)
        cell.started = time.perf_counter()
        msg_id = kc.execute(code, store_history=True, allow_stdin=False)
        finals: dict[str, dict[str, Any]] = {}
        order: list[str] = []
        deadline = cell.started + timeout
        while cell.reply_ms is None or cell.idle_ms is None:
            left = deadline - time.perf_counter()
            if left <= 0:
                cell.hung = True
                break
            ready = dict(poller.poll(int(left * 1000) + 1))
            now = time.perf_counter()
            if kc.shell_channel.socket in ready:
                reply = kc.shell_channel.get_msg(timeout=0)
                if reply["parent_header"].get("msg_id") == msg_id:
                    cell.reply_ms = c.ms(now - cell.started)
                    cell.status = reply["content"].get("status", "?")
                    if cell.status == "error":
                        cell.error = f"{reply['content'].get('ename')}: " \
                                     f"{reply['content'].get('evalue')}"
            if kc.iopub_channel.socket in ready:
                msg = kc.iopub_channel.get_msg(timeout=0)
                if msg["parent_header"].get("msg_id") != msg_id:
                    continue
                kind, content = msg["msg_type"], msg["content"]
                if kind == "status" and content.get("execution_state") == "idle":
                    cell.idle_ms = c.ms(now - cell.started)
                elif kind in ("display_data", "update_display_data", "execute_result"):
                    data = content.get("data", {})
                    key = (content.get("transient") or {}).get("display_id") or f"{kind}{now}"
                    if MIME in data:
                        if key not in finals:
                            order.append(key)
                        finals[key] = data[MIME]
                        cell.report_ms = c.ms(now - cell.started)
                    if "text/plain" in data:
                        cell.texts.append(str(data["text/plain"]))
                elif kind == "stream":
                    cell.texts.append(str(content.get("text", "")))
                elif kind == "error":
                    cell.error = f"{content.get('ename')}: {content.get('evalue')}"
        cell.reports = [finals[key] for key in order]
        cell.ended = time.perf_counter()
        return cell

    def close(self) -> None:
        """Shut the kernel down (its ipylsp closes: its session in the broker ends, or its
        own servers stop); killed with its process group when it does not end."""
        with contextlib.suppress(Exception):
            if self.kc is not None:
                self.kc.stop_channels()
        try:
            if self.km.has_kernel:
                self.km.shutdown_kernel(now=False)
        except Exception:
            with contextlib.suppress(Exception):
                self.km.shutdown_kernel(now=True)
        if self.pid and c.alive(self.pid):
            with contextlib.suppress(OSError):
                os.killpg(self.pid, signal.SIGKILL)


def kernel_spec(base: Path) -> Path:
    """A kernelspec directory whose "python3" is this interpreter's ipykernel."""
    top = base / "kernels"
    (top / "python3").mkdir(parents=True, exist_ok=True)
    (top / "python3" / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (bench_kernels)", "language": "python"}))
    return top


@dataclass
class Part:
    """One part's places: its marker, kernelspec, and the kernels and processes it started
    (all stopped by `close`, whatever happened)."""

    iso: c.Isolation
    name: str
    marker: str = field(default_factory=lambda: uuid.uuid4().hex)
    kernels: list[Kernel] = field(default_factory=list)
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def spec(self) -> Path:
        return kernel_spec(self.iso.base)

    def env(self, broker: bool) -> dict[str, str]:
        base = self.iso.base
        env = {**os.environ, PART_VAR: self.marker, "IPYTHONDIR": str(base / "ipython"),
               "JUPYTER_RUNTIME_DIR": str(base / "jupyter-runtime"),
               "JUPYTER_CONFIG_DIR": str(base / "jupyter-config"),
               "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
        if broker:
            env.pop("IPYLSP_BROKER", None)
        else:
            env["IPYLSP_BROKER"] = "0"
        return env

    def kernel(self, cwd: Path, broker: bool, label: str) -> Kernel:
        made = Kernel(self.spec, cwd, self.env(broker), label)
        self.kernels.append(made)
        return made.start()

    def close_kernels(self, kernels: Sequence[Kernel] | None = None) -> None:
        chosen = list(self.kernels if kernels is None else kernels)
        threads = [threading.Thread(target=k.close) for k in chosen]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        for k in chosen:
            with contextlib.suppress(ValueError):
                self.kernels.remove(k)

    def close(self) -> None:
        self.close_kernels()
        for process in self.processes:
            with contextlib.suppress(OSError):
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(OSError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        self.processes.clear()

    def leftovers(self, settle: float = 5.0) -> list[dict[str, Any]]:
        """Live processes carrying this part's marker (this process and its watchdog left
        out), after up to `settle` s; then ended (SIGTERM, SIGKILL), by pid."""
        skip = {os.getpid()} | c._watchdog_pids()
        deadline = time.monotonic() + settle
        while True:
            found = [p for p in carrying(PART_VAR, self.marker) if p not in skip and c.alive(p)]
            if not found or time.monotonic() >= deadline:
                break
            time.sleep(0.05)
        rows = [{"pid": p, "comm": comm(p), "cmdline": c.cmdline(p)} for p in found]
        for pid in found:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGTERM)
        for pid in wait_exited(found, 5.0):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        return rows


@contextlib.contextmanager
def part(iso: c.Isolation, name: str, out: dict[str, Any]) -> Iterator[tuple[Part, Path]]:
    """A part: its broker's place (`bench_broker.private_broker`: status, memory, stop and
    logs into `out`), its kernels and processes stopped at the end whatever happened, and
    the processes left behind (`leftover_processes`)."""
    made = Part(iso, name)
    for sub in ("ipython", "jupyter-runtime", "jupyter-config"):
        (iso.base / sub).mkdir(exist_ok=True)
    try:
        with private_broker(iso, name, out) as runtime:
            try:
                yield made, runtime
            finally:
                made.close()
    finally:
        out["leftover_processes"] = made.leftovers()


# -- processes ----------------------------------------------------------------------------------


def comm(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as handle:
            return handle.read().strip()
    except OSError:
        return ""


def full_argv(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return [a.decode(errors="replace") for a in handle.read().split(b"\0")[:-1]]
    except OSError:
        return []


def proc_kb(pid: int, file: str, key: str) -> int:
    """A size in kB from ``/proc/PID/<file>`` (``status``'s ``VmRSS:``, ``smaps_rollup``'s
    ``Pss:``); 0 when the process is gone."""
    with contextlib.suppress(OSError, ValueError), open(f"/proc/{pid}/{file}") as handle:
        for line in handle:
            if line.startswith(key):
                return int(line.split()[1])
    return 0


def tree(pids: Sequence[int]) -> set[int]:
    """`pids` and their descendants, alive (`lsp_client.process_tree`)."""
    return {p for root in pids for p in process_tree(root) if c.alive(p)}


def mb(kb: float) -> float:
    return round(kb / 1024, 1)


def snapshot(roles: dict[int, str], marker: str) -> dict[str, Any]:
    """Every process below `roles` (pid -> kernel, mcp, jupyter_server) and every process
    carrying the part's `marker` (the broker, reparented helpers), classified: ty, ruff
    (``comm``), other servers (what a client spawned with ipylsp's server tag), brokers,
    watchdogs, the roles themselves; RSS and PSS in kB."""
    marked = {p for p in carrying(PART_VAR, marker) if p != os.getpid() and c.alive(p)}
    brokers = {p for p in marked if "ipylsp.broker" in c.cmdline(p)}
    ours = tree([*roles, *brokers]) | marked
    rows = []
    for pid in sorted(ours):
        argv = full_argv(pid)
        name = comm(pid)
        if pid in roles:
            kind = roles[pid]
        elif pid in brokers:
            kind = "broker"
        elif WATCHDOG in argv and argv[-1].startswith(f"{TAG_VAR}="):  # shell or Python
            kind = "watchdog"
        elif name in ("ty", "ruff"):
            kind = name
        else:
            kind = "other"
        rows.append({"pid": pid, "ppid": parent(pid), "kind": kind, "comm": name,
                     "rss_kb": proc_kb(pid, "status", "VmRSS:"),
                     "pss_kb": proc_kb(pid, "smaps_rollup", "Pss:")})
    by_pid = {r["pid"]: r for r in rows}
    # a server's own tree (basedpyright's node, anything a server spawned)
    for r in rows:
        if r["kind"] in ("ty", "ruff"):
            own = [by_pid[p] for p in tree([r["pid"]]) if p in by_pid]
            r["tree_rss_kb"] = sum(row["rss_kb"] for row in own)
            r["tree_pss_kb"] = sum(row["pss_kb"] for row in own)
            r["owner"] = by_pid.get(r["ppid"] or 0, {}).get("kind", "?")
            r["owner_pid"] = r["ppid"]
            with contextlib.suppress(OSError):
                r["root"] = os.readlink(f"/proc/{r['pid']}/cwd")
    return {"rows": rows}


def summarize(snaps: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians over samples of each kind's count, RSS and PSS (MB), and the last sample's
    servers (owner, root, tree RSS)."""
    kinds = ("ty", "ruff", "broker", "kernel", "mcp", "jupyter_server", "watchdog", "other")

    def total(snap: dict[str, Any], kind: str, key: str) -> int:
        tree_key = f"tree_{key}" if kind in ("ty", "ruff") else key
        return sum(r.get(tree_key, r[key]) for r in snap["rows"] if r["kind"] == kind)

    out: dict[str, Any] = {}
    for kind in kinds:
        counts = [sum(1 for r in s["rows"] if r["kind"] == kind) for s in snaps]
        out[kind] = {"count": max(counts), "count_min": min(counts),
                     "rss_mb": mb(c.median([total(s, kind, "rss_kb") for s in snaps]) or 0),
                     "pss_mb": mb(c.median([total(s, kind, "pss_kb") for s in snaps]) or 0)}
    last = snaps[-1]["rows"]
    out["servers"] = [{"server": r["kind"], "pid": r["pid"], "owner": r.get("owner"),
                       "owner_pid": r.get("owner_pid"), "root": r.get("root"),
                       "tree_rss_mb": mb(r["tree_rss_kb"]), "tree_pss_mb": mb(r["tree_pss_kb"])}
                      for r in last if r["kind"] in ("ty", "ruff")]
    out["kernels_rss_mb_each"] = [mb(r["rss_kb"]) for r in last if r["kind"] == "kernel"]
    out["other_processes"] = [{"pid": r["pid"], "comm": r["comm"], "cmdline": c.cmdline(r["pid"])}
                              for r in last if r["kind"] == "other"]
    for key in ("rss_mb", "pss_mb"):
        out[f"servers_{key}"] = round(out["ty"][key] + out["ruff"][key], 1)
    return out


def sample(roles: dict[int, str], marker: str, n: int = 5) -> dict[str, Any]:
    snaps = []
    for i in range(n):
        if i:
            time.sleep(0.25)
        snaps.append(snapshot(roles, marker))
    return summarize(snaps)


# -- reports ------------------------------------------------------------------------------------


def report_files(cell: CellRun) -> list[dict[str, Any]]:
    return [f for r in cell.reports for f in r.get("files", [])]


def check_reports(kernel: Kernel, cell: CellRun, path: str | None) -> dict[str, Any]:
    """Whether the cell's report has the planted error at `path` (a file's display path) and
    at the cell itself."""
    files = report_files(cell)
    found_file = path is None or any(
        f["path"] == path and any(EXPECT.search(d["message"] + " " + str(d.get("code")))
                                  for d in f["diagnostics"]) for f in files)
    found_cell = any(f["path"].startswith("cell [") for f in files)
    return {"file": found_file, "cell": found_cell, "cell_ms": cell.cell_ms,
            "error": cell.error, "hung": cell.hung}


# -- the MCP server and the Jupyter server -----------------------------------------------------


class McpProcess:
    """``ipylsp mcp --root ROOT`` spawned by the SDK's stdio client in a thread of its own,
    initialized and asked one ``lsp_check``, kept running until `close`."""

    def __init__(self, root: Path, file: str, env: dict[str, str], errlog: Path) -> None:
        self.params = StdioServerParameters(command=IPYLSP, args=["mcp", "--root", str(root)],
                                            env=env)
        self.file = file
        self.errlog = errlog
        self.root = root
        self.ready = threading.Event()
        self.stop = threading.Event()
        self.answer: dict[str, Any] = {}
        self.thread = threading.Thread(target=self._run, daemon=True)

    def start(self, timeout: float = 120) -> McpProcess:
        self.thread.start()
        if not self.ready.wait(timeout):
            raise RuntimeError("ipylsp mcp did not answer lsp_check in time")
        if "failed" in self.answer:
            raise RuntimeError(f"ipylsp mcp: {self.answer['failed']}")
        return self

    def _run(self) -> None:
        try:
            anyio.run(self._session)
        except Exception as exc:  # said to the caller through `answer`
            self.answer["failed"] = repr(exc)
        finally:
            self.ready.set()

    async def _session(self) -> None:
        with self.errlog.open("a") as err:
            async with (stdio_client(self.params, errlog=err) as (read, write),
                        ClientSession(read, write) as session):
                await session.initialize()
                start = time.perf_counter()
                result = await session.call_tool("lsp_check", {"path": self.file})
                shape = result.model_dump(by_alias=True, exclude_none=True, mode="json")
                text = "".join(b.get("text", "") for b in shape.get("content", []))
                self.answer = {"lsp_check_ms": c.ms(time.perf_counter() - start),
                               "error_reported": bool(EXPECT.search(text)),
                               "is_error": bool(shape.get("isError"))}
                self.ready.set()
                await anyio.to_thread.run_sync(self.stop.wait)

    @property
    def pid(self) -> int | None:
        for pid in tree([os.getpid()]):
            line = c.cmdline(pid)
            if parent(pid) == os.getpid() and " mcp --root " in line and str(self.root) in line:
                return pid
        return None

    def close(self) -> None:
        self.stop.set()
        self.thread.join(30)


def server_ext_on_broker() -> bool:
    """Whether the Jupyter server extension's service is the broker's (issue 31's second
    half, being done as this benchmark was written): `ServerState` uses `broker.relay`."""
    from ipylsp.server import state

    return "broker.relay" in Path(state.__file__).read_text()


def jupyter_server(made: Part, root: Path, broker: bool, out: dict[str, Any]) -> int:
    """A real ``jupyter server`` rooted at `root` with ipylsp's extension (its defaults:
    the kernels' settings), one ``POST ipylsp/api/check`` of app.py: its pid."""
    from bench_server_ext import TOKEN, errors_in, free_port, request, wait_ready

    port = free_port()
    config = made.iso.base / f"jupyter_server_config_{made.marker[:8]}.py"
    config.write_text("# ipylsp's defaults, as the kernels have them\n")
    command = [JUPYTER_SERVER, "--no-browser", f"--config={config}",
               f"--ServerApp.port={port}", "--ServerApp.ip=127.0.0.1",
               f"--ServerApp.root_dir={root}", f"--IdentityProvider.token={TOKEN}",
               "--ServerApp.allow_root=True", "--ServerApp.port_retries=0"]
    log = (made.iso.base / f"jupyter-server-{made.marker[:8]}.log").open("wb")
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log,
                               env=made.env(broker), start_new_session=True)
    made.processes.append(process)
    wait_ready(port, process)
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    start = time.perf_counter()
    code, body = request(conn, "POST", "/ipylsp/api/check", {"path": "app.py"})
    out["check_ms"] = c.ms(time.perf_counter() - start)
    out["check_status"] = code
    out["errors_reported"] = errors_in(body) if code == 200 else None
    conn.close()
    return process.pid


# -- 1. memory ----------------------------------------------------------------------------------


def load_and_write(k: Kernel, index: int, config: str | None = None) -> dict[str, Any]:
    """``%load_ext ipylsp`` (and `config`), a ``%%writefile`` of a file of the kernel's own
    with one ty error, a cell whose code has an error; whether each got its report."""
    k.run("%load_ext ipylsp")
    if config:
        k.run(config)
    wrote = k.run(f"%%writefile k{index}.py\n{BAD}")
    cell = k.run(CELL_BAD)
    return {"write": check_reports(k, wrote, f"k{index}.py"),
            "cell": check_reports(k, cell, None)}


def scenario(iso: c.Isolation, where: str, broker: bool, kernels: int, with_ext: bool
             ) -> dict[str, Any]:
    out: dict[str, Any] = {"where": where, "broker": broker}
    name = f"memory-{where}-{'on' if broker else 'off'}"
    with part(iso, name, out) as (made, _runtime):
        if where == "git":
            ws = iso.workspace({"app.py": BAD, "README.md": "bench\n"}, "mem")
        else:
            holder = Path(tempfile.mkdtemp(prefix="plain-", dir=iso.base))
            ws = holder / "notebooks"
            ws.mkdir()
        out["directory"] = str(ws)
        roles: dict[int, str] = {}
        checks = []
        for i in range(kernels):
            k = made.kernel(ws, broker, f"{where}-{i}")
            roles[k.pid] = "kernel"
            checks.append(load_and_write(k, i))
        out["kernel_reports"] = checks
        mcp = None
        try:
            if where == "git":
                mcp = McpProcess(ws, "app.py", made.env(broker),
                                 iso.base / f"mcp-{made.marker[:8]}.log").start()
                out["mcp"] = mcp.answer
                pid = mcp.pid
                if pid:
                    roles[pid] = "mcp"
                if with_ext:
                    out["jupyter_server"] = {}
                    roles[jupyter_server(made, ws, broker, out["jupyter_server"])] = \
                        "jupyter_server"
            time.sleep(1.0)  # what the checks set going settles (late answers, cells' docs)
            out["processes"] = sample(roles, made.marker)
        finally:
            if mcp is not None:
                mcp.close()
        out["brokers_running"] = len(brokers_of(_runtime)) if broker else 0
    out.pop("broker_logs", None)
    return out


def bench_memory(iso: c.Isolation, kernels: int, with_ext: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"kernels": kernels, "server_extension_included": with_ext}
    for where in ("git", "plain"):
        sides = {}
        for broker in (True, False):
            c.log(f"memory: {kernels} kernels, {where}, broker {'on' if broker else 'off'}")
            sides["on" if broker else "off"] = scenario(iso, where, broker, kernels,
                                                        with_ext and where == "git")
        out[where] = {**sides, "compare": compare(sides["on"]["processes"],
                                                  sides["off"]["processes"])}
    return out


def compare(on: dict[str, Any], off: dict[str, Any]) -> dict[str, Any]:
    """What ipylsp adds beyond the kernels (and the MCP and Jupyter processes) themselves:
    servers + broker (on) against servers (off); the issue's target."""

    def pairs(side: dict[str, Any]) -> dict[Any, float]:
        owners: dict[Any, float] = {}
        for s in side["servers"]:
            owners[s["owner_pid"]] = owners.get(s["owner_pid"], 0) + s["tree_rss_mb"]
        return owners

    off_pairs = list(pairs(off).values())
    pair = c.median(off_pairs)
    roots: dict[str, dict[str, int]] = {}
    for s in on["servers"]:
        roots.setdefault(str(s["root"]), {}).setdefault(s["server"], 0)
        roots[str(s["root"])][s["server"]] += 1
    added: dict[str, Any] = {}
    for key in ("rss_mb", "pss_mb"):
        added[key] = {
            "on_servers": on[f"servers_{key}"], "on_broker": on["broker"][key],
            "on_total": round(on[f"servers_{key}"] + on["broker"][key], 1),
            "off_servers": off[f"servers_{key}"],
            "saved": round(off[f"servers_{key}"] - on[f"servers_{key}"] - on["broker"][key], 1),
            "ratio_on_to_off": c.ratio(round(on[f"servers_{key}"] + on["broker"][key], 1),
                                       off[f"servers_{key}"]),
            "watchdogs_on": on["watchdog"][key], "watchdogs_off": off["watchdog"][key],
        }
    one_each = bool(roots) and all(v == {"ty": 1, "ruff": 1} for v in roots.values())
    limit = None if pair is None else round(pair + on["broker"]["rss_mb"] + TARGET_EXTRA_MB, 1)
    on_total = added["rss_mb"]["on_total"]
    return {
        "added": added,
        "servers_per_root_on": roots,
        "servers_off": {"ty": off["ty"]["count"], "ruff": off["ruff"]["count"]},
        "pair_off_median_rss_mb": pair, "pairs_off_rss_mb": off_pairs,
        "kernels_rss_mb": {"on": on["kernel"]["rss_mb"], "off": off["kernel"]["rss_mb"]},
        "targets": {
            "one_ty_one_ruff_per_root": one_each,
            "limit_rss_mb": limit, "on_rss_mb": on_total,
            "within_pair_broker_10mb": limit is not None and on_total <= limit,
            "note": "limit = the off side's median ty+ruff pair (per owner: a kernel, the MCP "
                    "process, the Jupyter server) + the broker's own RSS + 10 MB; on = the "
                    "shared servers + the broker",
        },
    }


# -- 2. first cell ------------------------------------------------------------------------------


def first_cells(made: Part, ws: Path, n: int, config: str | None, folder: str,
                tag: str) -> dict[str, Any]:
    """`n` new kernels per side (broker on: warm; off: cold in the kernel), alternating."""
    rows: dict[str, list[dict[str, Any]]] = {"broker": [], "off": []}
    for i in range(n):
        for side in (("broker", "off") if i % 2 == 0 else ("off", "broker")):
            k = made.kernel(ws, side == "broker", f"first-{tag}-{side}-{i}")
            name = f"{folder}first_{tag}_{side}_{i}.py"
            try:
                loaded = k.run("%load_ext ipylsp")
                if config:
                    k.run(config)
                cell = k.run(f"%%writefile {name}\n{BAD}")
                rows[side].append({
                    "kernel_start_ms": k.start_ms, "load_ext_ms": loaded.cell_ms,
                    "cell_ms": cell.cell_ms, "reply_ms": cell.reply_ms,
                    "report_ms": cell.report_ms, "reported": check_reports(k, cell, name)["file"],
                    "unknown": [u for r in cell.reports for u in r.get("unknown", [])]
                    + [u for f in report_files(cell) for u in f.get("unknown", [])],
                    "hung": cell.hung})
            finally:
                made.close_kernels([k])
                (ws / name).unlink(missing_ok=True)
        c.log(f"first_cell {tag}: {i + 1} of {n}")
    out: dict[str, Any] = {"ms": {side: {key: spread([r[key] for r in values])
                                         for key in ("cell_ms", "reply_ms", "report_ms",
                                                     "load_ext_ms", "kernel_start_ms")}
                                  for side, values in rows.items()}}
    med = {side: out["ms"][side]["cell_ms"]["median"] for side in rows}
    out["ratio_off_to_broker"] = c.ratio(med["off"], med["broker"])
    out["saved_ms"] = c.difference(med["off"], med["broker"])
    out["all_reported"] = {side: all(r["reported"] for r in values)
                           for side, values in rows.items()}
    out["runs"] = rows
    return out


def requests_sdist() -> Path | None:
    """requests 2.32.3's extracted sdist in bench_delta_accuracy's cache: this tree's, or the
    main worktree's (a benchmark run from a worktree); None when neither has it."""
    places = [c.REPO / ".cache" / "delta-accuracy" / REQUESTS]
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        common = subprocess.run(["git", "rev-parse", "--path-format=absolute",
                                 "--git-common-dir"], cwd=c.REPO, capture_output=True,
                                text=True, check=True).stdout.strip()
        places.append(Path(common).parent / ".cache" / "delta-accuracy" / REQUESTS)
    return next((p for p in places if (p / "src" / "requests").is_dir()), None)


def bench_first_cell(iso: c.Isolation, n: int, n_bp: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    ty: dict[str, Any] = {"servers": "ty + ruff (the defaults)"}
    with part(iso, "first_cell", ty) as (made, _runtime):
        ws = iso.workspace({"README.md": "bench\n"}, "first")
        warm = [made.kernel(ws, True, f"warm-{i}") for i in range(2)]
        ty["warmers"] = [load_and_write(k, 100 + i) for i, k in enumerate(warm)]
        ty.update(first_cells(made, ws, n, None, "", "ty"))
    ty.pop("broker_logs", None)
    out["ty_ruff"] = ty
    sdist = requests_sdist()
    from ipylsp.servers import executables, registry

    spec = registry.get("basedpyright")
    if n_bp <= 0:
        out["basedpyright"] = {"skipped": "--basedpyright 0"}
    elif sdist is None:
        out["basedpyright"] = {"skipped": f"{REQUESTS}'s sdist is not in bench_delta_accuracy's "
                                          "cache (.cache/delta-accuracy); not downloaded"}
    elif spec is None or executables.resolve(spec, iso.data_dir).command is None:
        out["basedpyright"] = {"skipped": "basedpyright is not installed"}
    else:
        bp: dict[str, Any] = {"tree": f"{REQUESTS} (PyPI sdist, {sdist})",
                              "servers": "basedpyright alone"}
        config = '%config IPyLSP.language_servers = {"python": ["basedpyright"]}'
        with part(iso, "first_cell_basedpyright", bp) as (made, _runtime):
            tree = iso.base / "requests"
            shutil.copytree(sdist, tree)
            subprocess.run(["git", "init", "-q", str(tree)], check=True, capture_output=True)
            warm = made.kernel(tree, True, "warm-bp")
            warm.run("%load_ext ipylsp")
            warm.run(config)
            first = warm.run(f"%%writefile src/requests/warm_bp.py\n{BAD}")
            bp["warmer_first_cell_ms"] = first.cell_ms
            bp["warmer_reported"] = first.has_error_report()
            bp.update(first_cells(made, tree, n_bp, config, "src/requests/", "bp"))
        bp.pop("broker_logs", None)
        out["basedpyright"] = bp
    return out


# -- 3. the boundary ----------------------------------------------------------------------------


@contextlib.contextmanager
def frame_sizes() -> Iterator[list[dict[str, Any]]]:
    """The frames this process's broker client sends and receives: their bytes (the 4-byte
    length included) as `frames.send` writes them (`json_text.dumps`, UTF-8)."""
    from ipylsp.broker import frames

    send, receive = frames.send, frames.receive
    seen: list[dict[str, Any]] = []

    def size(message: dict[str, Any]) -> int:
        return len(json_text.dumps(message).encode("utf-8", "surrogatepass")) + 4

    def sending(sock: Any, message: dict[str, Any], deadline: float | None = None) -> None:
        args = message.get("args") or {}
        seen.append({"direction": "sent", "call": message.get("call"),
                     "method": args.get("method") if isinstance(args, dict) else None,
                     "bytes": size(message)})
        send(sock, message, deadline)

    def receiving(sock: Any, deadline: float | None = None) -> dict[str, Any]:
        message = receive(sock, deadline)
        seen.append({"direction": "received", "keys": sorted(message), "bytes": size(message)})
        return message

    frames.send, frames.receive = sending, receiving  # type: ignore[assignment]
    try:
        yield seen
    finally:
        frames.send, frames.receive = send, receive  # type: ignore[assignment]


def wire_sizes(files: list[FileCheck], report: Any, timeout: float) -> dict[str, int]:
    """The request's and the answer's frames computed from the wire forms (`encode_args`,
    `to_wire`, `json_text.dumps`), as `RelayedService.check_files` and the broker make them."""
    from ipylsp.broker.relay import encode_args
    from ipylsp.model.wire import to_wire

    request = {"call": "service", "args": {"method": "check_files", "shared": False, "args":
               encode_args("check_files", {"files": tuple(files), "timeout": timeout,
                                           "cold": None})}, "progress": False}
    answer = {"ok": to_wire(report)}

    def size(message: dict[str, Any]) -> int:
        return len(json_text.dumps(message).encode("utf-8", "surrogatepass")) + 4

    return {"request_bytes": size(request), "answer_bytes": size(answer)}


def conversions(files: list[FileCheck], report: Any) -> dict[str, Any]:
    """What the relay's wire forms cost each side of one `check_files` (medians of 200, ms):
    the client's `encode_args` and its reading of the answer against `hints`, the broker's
    `decode_args` and `to_wire` of the report; `hints` alone (`typing.get_type_hints`)."""
    from ipylsp.broker.relay import decode_args, encode_args, hints
    from ipylsp.model.wire import from_wire, to_wire

    args = {"files": tuple(files), "timeout": 30.0, "cold": None}
    wire_args = encode_args("check_files", args)
    wire_report = to_wire(report)
    steps = {
        "hints": lambda: hints("check_files"),
        "client_encode_args": lambda: encode_args("check_files", args),
        "broker_decode_args": lambda: decode_args("check_files", wire_args),
        "broker_report_to_wire": lambda: to_wire(report),
        "client_read_answer": lambda: from_wire(hints("check_files")["return"], wire_report),
    }
    return {name: c.median(call_times(step, 200)) for name, step in steps.items()}


def call_times(step: Callable[[], object], n: int) -> list[float]:
    """`step()` called `n` times: each call's ms."""
    values = []
    for _ in range(n):
        start = time.perf_counter()
        step()
        values.append(c.ms(time.perf_counter() - start))
    return values


def bench_boundary(iso: c.Isolation, reps: int, cells: int, pairs: int) -> dict[str, Any]:
    from ipylsp.broker.client import Broker
    from ipylsp.broker.relay import RelayedService, attach
    from ipylsp.service import Service

    out: dict[str, Any] = {}
    with part(iso, "boundary", out) as (made, _runtime):
        ws = iso.workspace({"README.md": "bench\n"}, "boundary")
        settings = Settings(data_dir=iso.data_dir, directory=ws)
        relayed = attach(settings)
        assert isinstance(relayed, RelayedService), relayed
        service = Service(settings)
        raw = Broker.attach(settings, budget=30)  # the broker's own call, without the relay
        sessions: dict[str, Any] = {"service": service, "relayed": relayed, "broker": raw}
        files_of = {"service": ws / "service.py", "relayed": ws / "relayed.py",
                    "broker": ws / "broker.py"}
        texts = dict.fromkeys(files_of, "")
        times: dict[str, list[float]] = {}
        inside: dict[str, list[float]] = {}
        wrong: list[str] = []
        lines: list[str] = []
        calls: list[float] = []
        sent = Broker.call
        serial = iter(range(10**6))

        def timed_call(self: Broker, *args: Any, **kwargs: Any) -> Any:
            """`Broker.call` (the socket and the broker's work) timed, for `inside`."""
            start = time.perf_counter()
            try:
                return sent(self, *args, **kwargs)
            finally:
                calls.append(c.ms(time.perf_counter() - start))

        def check(case: str, timed: bool) -> None:
            """A new one-error text in the case's session's file, written just before its
            check (`before=` the old text): one error new, one fixed, every time."""
            session = case.removesuffix("_progress")
            target, before = files_of[session], texts[session]
            mark = token(7, next(serial))
            text = texts[session] = f'x: int = "{mark}"\n'
            target.write_text(text)
            files = [FileCheck(target, before=before)]
            progress = lines.append if case.endswith("progress") else None
            calls.clear()
            start = time.perf_counter()
            if session == "broker":
                report = raw.check_files(files, timeout=30.0)
            else:
                report = sessions[session].check_files(files, timeout=30.0, progress=progress)
            elapsed = c.ms(time.perf_counter() - start)
            messages = [d.message for f in report.files for d in f.diagnostics]
            if report.has_unknown or not any(f'"{mark}"' in m for m in messages):
                wrong.append(f"{case}: {messages} {report.has_unknown}")
            if timed:
                times.setdefault(case, []).append(elapsed)
                if calls:
                    inside.setdefault(case, []).append(calls[-1])

        def rounds(cases: list[str], n: int, seed: int) -> None:
            """`n` timed rounds (after 5 untimed) of `cases` in an order shuffled each round:
            each case after each other alike (the servers of the case before, still busy,
            cost the next one on 2 cores)."""
            shuffle = random.Random(seed)
            for i in range(-5, n):
                order = list(cases)
                shuffle.shuffle(order)
                for case in order:
                    check(case, i >= 0)

        Broker.call = timed_call  # type: ignore[method-assign]
        try:
            # A: the relay against in-process, each session one file on its own servers
            rounds(["service", "relayed", "service_progress", "relayed_progress"], reps, 31)
            # B: the relay against the broker's own call, both on the broker's servers
            times_a = {k: list(v) for k, v in times.items()}
            inside_a = {k: list(v) for k, v in inside.items()}
            times.clear()
            inside.clear()
            rounds(["relayed", "broker"], reps, 32)
            times_b, inside_b = dict(times), dict(inside)
            times.clear()
            inside.clear()
            # C: the broker's own call against in-process, each on its own servers
            rounds(["service", "broker"], reps, 33)
            times_c = dict(times)
            out["ms"] = {name: spread(values) for name, values in times_a.items()}
            out["inside_broker_call_ms"] = {name: spread(v) for name, v in inside_a.items()}
            out["outside_broker_call_ms"] = {
                name: c.median([a - b for a, b in zip(times_a[name], v, strict=True)])
                for name, v in inside_a.items()}
            out["wrong"] = wrong
            med = {name: out["ms"][name]["median"] for name in times_a}
            out["added_ms"] = {
                "check_files": c.difference(med["relayed"], med["service"]),
                "check_files_with_progress": c.difference(med["relayed_progress"],
                                                          med["service_progress"]),
            }
            out["ratio_relayed_to_service"] = {
                "check_files": c.ratio(med["relayed"], med["service"]),
                "check_files_with_progress": c.ratio(med["relayed_progress"],
                                                     med["service_progress"])}
            out["targets"] = {k: v is not None and v <= TARGET_BOUNDARY_MS
                              for k, v in out["added_ms"].items()}
            b_med = {name: c.median(v) for name, v in times_b.items()}
            out["relay_against_broker_call"] = {
                "ms": {name: spread(v) for name, v in times_b.items()},
                "inside_broker_call_ms": {name: spread(v) for name, v in inside_b.items()},
                "outside_broker_call_ms": {
                    name: c.median([a - b for a, b in zip(times_b[name], v, strict=True)])
                    for name, v in inside_b.items()},
                "relay_adds_ms": c.difference(b_med["relayed"], b_med["broker"]),
                "ratio": c.ratio(b_med["relayed"], b_med["broker"]),
                "note": "broker: client.Broker.check_files, the broker's own call (what "
                        "bench_broker's boundary times), in another session of the same "
                        "context; both on the broker's ty and ruff, alternating. The relay "
                        "reads the facade's wire forms against Service's signature "
                        "(relay.hints) on both sides (conversions_ms)"}
            c_med = {name: c.median(v) for name, v in times_c.items()}
            out["broker_call_against_service"] = {
                "ms": {name: spread(v) for name, v in times_c.items()},
                "broker_adds_ms": c.difference(c_med["broker"], c_med["service"]),
                "ratio": c.ratio(c_med["broker"], c_med["service"]),
                "note": "the broker's own check_files call (no relay) against the in-process "
                        "Service, each on its own ty and ruff, alternating: the socket and "
                        "the broker's side of a check"}
            out["progress_lines_seen"] = len(lines)
            # the socket's floor: a relayed call answered at once
            out["round_trip_pending_count_ms"] = spread(
                call_times(lambda: relayed.pending_count, 200))
            # the frames of one check, measured and computed
            sizes: dict[str, Any] = {}
            one, other = 'x: int = "a"\n', 'x: int = "b"\n'
            for label, text, old in (("new_file_one_error", one, ""),
                                     ("one_error_new_one_fixed", other, one)):
                target = ws / "sizes.py"
                target.write_text(text)
                files = [FileCheck(target, before=old)]
                with frame_sizes() as seen:
                    report = relayed.check_files(files, timeout=30.0)
                sizes[label] = {"measured": seen, "computed": wire_sizes(files, report, 30.0),
                                "diagnostics": sum(len(f.diagnostics) for f in report.files),
                                "fixed": sum(len(f.fixed) for f in report.files)}
            out["message_bytes"] = sizes
            out["conversions_ms"] = conversions(files, report)
        finally:
            Broker.call = sent  # type: ignore[method-assign]
            relayed.close()
            raw.close()
            service.close()
        # each in a workspace of its own: the broker's servers for it have open only what
        # the other side's have (its kernel's file and cells), not this section's other
        # sessions' files (a server with more documents open does more at each change)
        out["kernel_cell"] = kernel_cells(
            made, iso.workspace({"README.md": "bench\n"}, "kernel-cell"), cells)
        out["kernel_check"] = kernel_check_pairs(made, iso, cells, pairs)
        added = out["kernel_check"]["added_ms"]
        out.setdefault("targets", {})["kernel_check"] = (
            added is not None and added <= TARGET_BOUNDARY_MS)
    out.pop("broker_logs", None)
    return out


KERNEL_CHECKS = """
import json as _json, time as _time
from pathlib import Path as _Path
import ipylsp as _ipylsp
from ipylsp.model.checks import FileCheck as _FileCheck
_service, _times, _wrong = _ipylsp.get_service(), [], []
for _mark, _before in {marks!r}:
    _target = _Path({path!r})
    _target.write_text(f'x: int = "{{_mark}}"\\n')
    _start = _time.perf_counter()
    _report = _service.check_files([_FileCheck(_target.absolute(), before=_before)],
                                   timeout=30.0)
    _times.append((_time.perf_counter() - _start) * 1e3)
    if not any(f'"{{_mark}}"' in d.message for f in _report.files for d in f.diagnostics):
        _wrong.append(_mark)
print(_json.dumps({{"ms": _times, "wrong": _wrong}}))
"""
"""A kernel's timed checks of its own file, each a new error (`marks`: the error's letters
and the text before), as its cell hook makes them: `service.check_files` timed in the
kernel, on its service (the broker's relay, or its own in-process one)."""


def kernel_checks(made: Part, ws: Path, cells: int, per_cell: int = 10) -> dict[str, Any]:
    """The check alone, in a real kernel: two warm kernels in ``ws``, broker on and off,
    ``cells`` cells each (alternating, after 2 untimed), each timing ``per_cell`` checks of its own
    file in the kernel (`KERNEL_CHECKS`): no cell's machinery, no client's, and no other
    service's loop in the timed process (the in-process comparison of this section has the
    relay's client beside an in-process service's loop in one interpreter)."""
    kernels = {side: made.kernel(ws, side == "broker", f"checks-{side}")
               for side in ("broker", "off")}
    times: dict[str, list[float]] = {side: [] for side in kernels}
    wrong: list[str] = []
    before = dict.fromkeys(kernels, "")
    serial = iter(range(10**6))
    for k in kernels.values():
        k.run("%load_ext ipylsp")
    for i in range(-2, cells):
        for side in (("broker", "off") if i % 2 == 0 else ("off", "broker")):
            marks = []
            for _ in range(per_cell):
                mark = token(9, next(serial))
                marks.append((mark, before[side]))
                before[side] = f'x: int = "{mark}"\n'
            cell = kernels[side].run(KERNEL_CHECKS.format(
                marks=marks, path=str(ws / f"check_{side}.py")))
            said = next((t for t in reversed(cell.texts) if t.startswith("{")), None)
            if said is None:
                wrong.append(f"{side} {i}: {cell.texts[-2:]} {cell.error}")
                continue
            got = json.loads(said)
            wrong.extend(f"{side} {i}: {m}" for m in got["wrong"])
            if i >= 0:
                times[side].extend(got["ms"])
    made.close_kernels(list(kernels.values()))
    med = {side: c.median(values) for side, values in times.items()}
    return {"ms": {side: spread(values) for side, values in times.items()},
            "added_ms": c.difference(med["broker"], med["off"]),
            "ratio_broker_to_off": c.ratio(med["broker"], med["off"]), "wrong": wrong,
            "times": times}


def kernel_check_pairs(made: Part, iso: c.Isolation, cells: int, pairs: int
                       ) -> dict[str, Any]:
    """`kernel_checks` for ``pairs`` pairs of kernels, each pair in a workspace of its own, so
    on servers of its own on both sides (the broker's for that root; the off kernel's own):
    how fast one ty instance answers differs from another's by about as much as the boundary,
    which one pair cannot tell apart from it. ``added_ms``: the pooled samples' medians'
    difference; ``pairs``: each pair's own."""
    each = [kernel_checks(made, iso.workspace({"README.md": "bench\n"}, f"kernel-check-{n}"),
                          cells) for n in range(pairs)]
    pooled = {side: [t for one in each for t in one["times"][side]] for side in ("broker", "off")}
    med = {side: c.median(values) for side, values in pooled.items()}
    for one in each:
        one.pop("times")
    return {"ms": {side: spread(values) for side, values in pooled.items()},
            "added_ms": c.difference(med["broker"], med["off"]),
            "ratio_broker_to_off": c.ratio(med["broker"], med["off"]),
            "added_ms_by_pair": [one["added_ms"] for one in each],
            "wrong": [w for one in each for w in one["wrong"]], "pairs": each}


def kernel_cells(made: Part, ws: Path, n: int) -> dict[str, Any]:
    """The user's view: a ``%%writefile`` cell in a warm kernel on the broker and in one with
    the broker off (each its own file; the error's text changes every time)."""
    kernels = {side: made.kernel(ws, side == "broker", f"cells-{side}")
               for side in ("broker", "off")}
    times: dict[str, list[float]] = {side: [] for side in kernels}
    missed: list[str] = []
    for k in kernels.values():
        k.run("%load_ext ipylsp")
    for i in range(-3, n):
        for side in (("broker", "off") if i % 2 == 0 else ("off", "broker")):
            mark = token(0, i + 3)  # letters: each write's error is a new one (`TOKEN`)
            cell = kernels[side].run(f'%%writefile cell_{side}.py\nx: int = "{mark}"\n')
            if i >= 0:
                times[side].append(cell.cell_ms or 0.0)
                if not any(f'"{mark}"' in d["message"] for f in report_files(cell)
                           for d in f["diagnostics"]):
                    missed.append(f"{side} {i}: {cell.texts[-1:]}")
    made.close_kernels(list(kernels.values()))
    med = {side: c.median(values) for side, values in times.items()}
    return {"ms": {side: spread(values) for side, values in times.items()},
            "added_ms": c.difference(med["broker"], med["off"]),
            "ratio_broker_to_off": c.ratio(med["broker"], med["off"]), "missed": missed}


# -- 4. stress ----------------------------------------------------------------------------------


ACTIONS = ("own", "shared", "cell", "shared", "own_fix")


@dataclass
class Step:
    kernel: int
    step: int
    action: str
    path: str | None  # the display path written (None: a cell's code)
    token: str | None
    cell: CellRun


def drive(k: Kernel, index: int, deadline: float, steps: list[Step], stop: threading.Event
          ) -> None:
    """One kernel's cells until `deadline` (or a hung cell)."""
    k.connect()
    j = owns = 0
    while time.monotonic() < deadline and not stop.is_set():
        action = ACTIONS[(index + j) % len(ACTIONS)]
        mark: str | None = token(index, j)
        if action == "own":
            path, code = f"own_{index}_{owns % 3}.py", f'v: int = "{mark}"\n'
            owns += 1
        elif action == "own_fix":  # the last own file written, fixed
            path, code, mark = f"own_{index}_{(owns - 1) % 3}.py", "v: int = 0\n", None
        elif action == "shared":
            path, code = f"shared_{j % 3}.py", f'v: int = "{mark}"\n'
        else:
            path, code = None, f'c_{index}: int = "{mark}"'
        source = code if path is None else f"%%writefile {path}\n{code}"
        cell = k.run(source)
        steps.append(Step(index, j, action, path, mark, cell))
        if cell.hung:
            return
        j += 1


def bench_stress(iso: c.Isolation, kernels: int, seconds: float) -> dict[str, Any]:
    out: dict[str, Any] = {"kernels": kernels, "seconds": seconds,
                           "budget_s": BUDGET_S, "margin_s": MARGIN_S}
    with part(iso, "stress", out) as (made, runtime):
        ws = iso.workspace({"README.md": "bench\n"}, "stress")
        started = [made.kernel(ws, True, f"stress-{i}") for i in range(kernels)]
        for k in started:
            k.run("%load_ext ipylsp")
        out["warm_up"] = check_reports(started[0], started[0].run(f"%%writefile warm.py\n{BAD}"),
                                       "warm.py")
        for k in started:
            k.kc.stop_channels()
            k.kc = None
        logs: list[list[Step]] = [[] for _ in started]
        stop = threading.Event()
        failures: queue.Queue[str] = queue.Queue()
        deadline = time.monotonic() + seconds

        def run(i: int) -> None:
            try:
                drive(started[i], i, deadline, logs[i], stop)
            except Exception as exc:
                failures.put(f"kernel {i}: {exc!r}")

        threads = [threading.Thread(target=run, args=(i,)) for i in range(kernels)]
        began = time.monotonic()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(seconds + BUDGET_S + MARGIN_S + 30)
        stop.set()
        out["wall_s"] = round(time.monotonic() - began, 1)
        out["threads_alive"] = sum(t.is_alive() for t in threads)
        out["driver_failures"] = list(failures.queue)
        out["brokers_during"] = len(brokers_of(runtime))
        info = status(iso.base)
        out["broker_servers"] = [{k: s.get(k) for k in ("server", "state", "root", "pid")}
                                 for s in (info or {}).get("servers", [])]
        out["pids"] = [k.pid for k in started]
        made.close_kernels()
        out["verdict"] = verify(logs, {i: k.pid for i, k in enumerate(started)}, ws)
    out.pop("broker_logs", None)
    out["no_server_left"] = not any(row["comm"] in ("ty", "ruff") or
                                    "ipylsp.broker" in row["cmdline"]
                                    for row in out["leftover_processes"])
    return out


def verify(logs: list[list[Step]], pids: dict[int, int], ws: Path) -> dict[str, Any]:
    """Every report of every kernel against the writes (class doc of the part)."""
    steps = [s for log in logs for s in log]
    shared_writes: dict[str, list[Step]] = {}
    for s in steps:
        if s.action == "shared" and s.path:
            shared_writes.setdefault(s.path, []).append(s)
    by_token = {s.token: s for s in steps if s.token}
    mixed: list[dict[str, Any]] = []
    counts = {"cells": len(steps), "reports": 0, "error_writes": 0, "reported": 0,
              "reported_later": 0, "unknown_said": 0, "overwritten_meanwhile": 0, "lost": 0,
              "raced_foreign_token": 0, "stale_own_token": 0, "hung": 0, "cell_errors": 0,
              "cell_doc_unrecognized": 0, "earlier_cell_token_again": 0}
    lost: list[dict[str, Any]] = []
    late: list[dict[str, Any]] = []
    for s in steps:
        counts["hung"] += s.cell.hung
        counts["cell_errors"] += s.cell.error is not None
        counts["reports"] += len(s.cell.reports)
        own_cells = f".ipylsp-cells-{pids[s.kernel]}."
        for f in report_files(s.cell):
            label, absolute = f.get("path", ""), f.get("absolute_path", "")
            if label.startswith("cell ["):
                mine = own_cells in Path(absolute).name
                counts["cell_doc_unrecognized"] += ".ipylsp-cells-" not in absolute
                mine = mine or ".ipylsp-cells-" not in absolute
            else:
                mine = any(absolute == str(ws / t.path) for t in logs[s.kernel]
                           if t.path and t.step <= s.step)
            if not mine:
                mixed.append({"kernel": s.kernel, "step": s.step, "why": "a file the kernel "
                              "never wrote", "path": label, "absolute_path": absolute})
                continue
            for d in f.get("diagnostics", []):
                for match in TOKEN.finditer(d.get("message", "")):
                    token, other = match.group(0).strip('"'), untoken(match.group(1))
                    origin = by_token.get(token)
                    if other == s.kernel:
                        if origin is not None and origin.step != s.step:
                            if s.path is not None and origin.path == s.path:
                                counts["stale_own_token"] += 1
                            elif s.path is None and origin.path is None:
                                counts["earlier_cell_token_again"] += 1
                        continue
                    shared = s.path is not None and s.path.startswith("shared_") and \
                        label == s.path
                    if shared and origin is not None and origin.path == s.path and \
                            origin.cell.started <= s.cell.ended and \
                            origin.cell.ended >= s.cell.started:
                        counts["raced_foreign_token"] += 1
                        continue
                    mixed.append({"kernel": s.kernel, "step": s.step, "why": "another "
                                  "kernel's error", "token": token, "path": label,
                                  "message": d.get("message")})
    for s in steps:
        if s.token is None or s.cell.hung:
            continue
        counts["error_writes"] += 1
        want = s.path if s.path is not None else "cell ["

        def has(cell: CellRun, token: str = s.token or "", want: str = want) -> bool:
            return any(f.get("path", "").startswith(want) and
                       any(f'"{token}"' in d.get("message", "")
                           for d in f.get("diagnostics", []))
                       for f in report_files(cell))

        if has(s.cell):
            counts["reported"] += 1
            continue
        later = [t for t in logs[s.kernel] if t.step > s.step and has(t.cell)]
        if later:
            counts["reported_later"] += 1
            late.append({"kernel": s.kernel, "step": s.step, "action": s.action,
                         "path": s.path, "token": s.token, "texts": s.cell.texts[-2:],
                         "reported_at_step": later[0].step, "action_then": later[0].action,
                         "path_then": later[0].path, "texts_then": later[0].cell.texts[-2:]})
            continue
        said = [u for r in s.cell.reports for u in r.get("unknown", [])] + [
            u for f in report_files(s.cell) if f.get("path", "").startswith(want)
            for u in f.get("unknown", [])]
        if said:
            counts["unknown_said"] += 1
            continue
        if s.action == "shared" and any(
                t.kernel != s.kernel and t.cell.started <= s.cell.ended and
                t.cell.ended >= s.cell.started for t in shared_writes.get(s.path or "", [])):
            counts["overwritten_meanwhile"] += 1
            continue
        counts["lost"] += 1
        lost.append({"kernel": s.kernel, "step": s.step, "action": s.action, "path": s.path,
                     "token": s.token, "texts": s.cell.texts[-2:], "cell_ms": s.cell.cell_ms})
    cell_ms = [s.cell.cell_ms for s in steps if s.cell.cell_ms is not None]
    return {
        **counts, "mixed_up": mixed[:50], "mixed_up_count": len(mixed), "lost_rows": lost[:50],
        "reported_later_rows": late[:20],
        "max_cell_ms": max(cell_ms) if cell_ms else None,
        "cell_ms": spread(cell_ms),
        "cells_per_kernel": [len(log) for log in logs],
        "within_budget_and_margin": all(
            (s.cell.cell_ms or 0) <= (BUDGET_S + MARGIN_S) * 1000 and not s.cell.hung
            for s in steps),
        "by_action": {a: sum(1 for s in steps if s.action == a) for a in set(ACTIONS)},
        "cell_errors_seen": sorted({s.cell.error for s in steps if s.cell.error})[:10],
    }


# -- main ---------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--kernels", type=int, default=5, help="kernels per memory scenario")
    parser.add_argument("--first-cell", type=int, default=7, help="new kernels per side (ty)")
    parser.add_argument("--basedpyright", type=int, default=7,
                        help="new kernels per side (basedpyright on requests; 0: skip)")
    parser.add_argument("--boundary", type=int, default=300, help="rounds of the 5 checks")
    parser.add_argument("--boundary-cells", type=int, default=30, help="kernel cells per side")
    parser.add_argument("--boundary-pairs", type=int, default=3,
                        help="pairs of kernels (each on servers of its own) kernel_check pools")
    parser.add_argument("--stress-kernels", type=int, default=10)
    parser.add_argument("--stress-seconds", type=float, default=60.0)
    parser.add_argument("--server-ext", choices=("auto", "on", "off"), default="auto",
                        help="include a jupyter server in memory (auto: when it is on the broker)")
    parser.add_argument("--only", default=",".join(SECTIONS),
                        help=f"subset of {','.join(SECTIONS)}")
    args = parser.parse_args()
    only = set(args.only.split(","))
    package = Path(ipylsp.__file__).resolve().parent
    compileall.compile_dir(str(package), quiet=1)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=package, capture_output=True,
                            text=True, check=False).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "ipylsp"], cwd=package.parent,
                           capture_output=True, text=True, check=False).stdout.strip()
    on_broker = server_ext_on_broker()
    with_ext = args.server_ext == "on" or (args.server_ext == "auto" and on_broker)
    notes = []
    if not with_ext:
        notes.append("memory (a) has no jupyter server: ipylsp/server/state.py at this commit "
                     "does not use broker.relay (the server extension runs its own servers "
                     "in-process), so it is left out" if not on_broker else
                     "memory (a) has no jupyter server (--server-ext off)")
    elif not on_broker:
        notes.append("memory (a) includes a jupyter server whose extension is NOT on the "
                     "broker at this commit (--server-ext on): its servers are its own")
    result: dict[str, Any] = {
        "benchmark": "bench_kernels", "issue": 31, "machine": c.machine(),
        "commit": commit, "package": str(package),
        "package_modified_files": dirty.splitlines(), "args": vars(args),
        "server_extension_on_broker": on_broker, "notes": notes}
    with c.isolated_run("bench_kernels", result) as iso:
        assert iso.data_dir.name == "ipylsp", f"the data dir is not the default: {iso.data_dir}"
        if "memory" in only:
            result["memory"] = bench_memory(iso, args.kernels, with_ext)
        if "first_cell" in only:
            c.log(f"first_cell: {args.first_cell} + {args.basedpyright} kernels per side")
            result["first_cell"] = bench_first_cell(iso, args.first_cell, args.basedpyright)
        if "boundary" in only:
            c.log(f"boundary: {args.boundary} rounds, {args.boundary_cells} kernel cells")
            result["boundary"] = bench_boundary(iso, args.boundary, args.boundary_cells,
                                                args.boundary_pairs)
        if "stress" in only:
            c.log(f"stress: {args.stress_kernels} kernels for {args.stress_seconds} s")
            result["stress"] = bench_stress(iso, args.stress_kernels, args.stress_seconds)
        result["leftover_processes_by_part"] = leftovers_by_part(result)
    return c.exit_status(result) or (1 if any(result["leftover_processes_by_part"].values())
                                     else 0)


def leftovers_by_part(result: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = {}

    def walk(value: Any, where: str) -> None:
        if isinstance(value, dict):
            if "leftover_processes" in value:
                found[where] = value["leftover_processes"]
            for key, inner in value.items():
                walk(inner, f"{where}.{key}" if where else key)

    for key in SECTIONS:
        walk(result.get(key), key)
    return found


if __name__ == "__main__":
    sys.exit(main())
