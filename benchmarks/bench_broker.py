"""What the broker (issue 30) gives `ipylsp check` and `ipylsp mcp`, against today and the floor.

Run: ``.venv/bin/python benchmarks/bench_broker.py [--n 20] [--cold 10] [--mcp 7]
[--basedpyright 3] [--boundary 50] [--only cli,mcp,basedpyright,boundary]``. Prints one JSON
object (also ``benchmarks/results/bench_broker.json``); about 100 s on 2 cores.

The package's bytecode is compiled first, as a wheel install leaves it. Every part runs with a
private ``XDG_RUNTIME_DIR`` of its own (``mkdtemp`` in /tmp, so the socket's path stays short),
hence its own broker, on workspaces below a private scratch directory (`_common`); the CLI finds
its servers as a user's would (ipylsp's real data dir, through ``XDG_DATA_HOME``; the store is a
file of the run's, ``IPYLSP_STORE``) and, with no settings file and no settings flag, takes the
thin path (``_check(None, ...)``). At the end of each part ``ipylsp broker status`` gives the
memory and ``ipylsp broker stop`` ends the broker; every process the run started must be gone
(``leftover_processes == []``). Each part's ``build`` says which build it measured: a tree edited
during the run changes the build and a new broker starts; ``same_broker`` says whether one broker
served the whole part.

The broker serves its own build only (the package's files' sizes and times): a tree edited
during the run changes the build, the next call starts another broker, and the part says so
(``same_broker`` false, ``stop.other_builds``). On a tree others are editing, run it from a
worktree of a commit, first on ``PYTHONPATH``, as ``bench_revisions.py`` does::

    git worktree add --detach /private/dir/snap HEAD
    PYTHONPATH=/private/dir/snap .venv/bin/python /private/dir/snap/benchmarks/bench_broker.py

``cli``
    ``ipylsp check bad.py`` (one line, ``x: int = "s"``: one ty error, nothing for ruff; ty
    and ruff, the defaults) as a subprocess, wall time from this process (spawn -> reaped).
    After one untimed first call (the broker and its servers start: ``first_call_ms``) and two
    more, ``--n`` rounds, each case once a round in rotating order: ``script`` (the console
    script ``.venv/bin/ipylsp``), ``module`` (``python -m ipylsp.cli``), ``python_pass``
    (``python -c pass``), ``python_S_pass`` (``python -S -c pass``), ``raw`` (the raw client,
    ``lsp_client.py``, on a ty and a ruff started once: ``didChange`` of the same text to both,
    then both answers, gathered; ``raw_ty``/``raw_ruff`` are each alone), and in the first
    ``--cold`` rounds ``cold`` (the script with ``IPYLSP_BROKER=0``: today, ty and ruff started
    in the process). The floor is ``python_pass + raw``; the issue's targets: the warm call at
    most 100 ms and at most 30 ms above the floor (``targets``). ``breakdown``: the same call
    with timestamps (``time.perf_counter`` is CLOCK_MONOTONIC, one clock for every process):
    spawn -> first statement (the interpreter), ``import ipylsp.cli``, the broker client's
    imports, argument parsing and the thin path's settings check, ``Broker.attach`` (the place,
    the build's digest, connect, secret, ``hello``: a new session), ``Broker.check`` (the round
    trip with the broker's check and rendering), printing, and the exit; ``importtime``: the
    same call under ``-X importtime`` (every module it imports; top-level entries);
    ``bare_python_ms``: the start and the exit of a ``python -c`` that only reads the clock,
    timed the same way.
``mcp``
    ``ipylsp mcp --root WS`` spawned by the official SDK's stdio client (``env=`` the whole
    environment), ``initialize``, one ``lsp_check`` of the same one-line file: the answer's
    time from the spawn and from ``initialize`` done. With the broker: one untimed first run
    (the broker and its servers start), then fresh processes, each a new session on the warm
    servers; against ``IPYLSP_BROKER=0`` (today: ty and ruff start in the process);
    alternated, ``--mcp`` runs each.
``basedpyright``
    requests 2.32.3's sdist (PyPI, the cache ``bench_delta_accuracy`` fills), ``ipylsp check
    --server basedpyright src/requests/sessions.py`` from its root: the first call with a new
    broker (``first_ms``), then ``--basedpyright`` warm calls, alternated with as many pairs
    of calls with ``IPYLSP_BROKER=0`` (each call starts and indexes basedpyright; the
    second's time is the one compared, as "the second call after a first"). Warm and cold
    must print the same report.
``boundary``
    In this process, the same ``Settings`` on both sides: a warm ``Service`` (in-process) and a
    warm broker (``Broker.attach``), the same file and text (alternating a broken and a fixed
    text between repetitions, written before each, both sides checking it in rotating order):
    ``Service.check_files`` against ``Broker.check_files`` (the report over the socket), and the
    in-process check plus the CLI's rendering (``analysis.report.verdict``) against
    ``Broker.check`` (rendered by the broker, what the thin CLI calls); ``--boundary``
    repetitions. Target: the broker adds at most 1 ms. Also ``round_trip`` (a call the broker
    refuses at once: framing, the socket, its thread), ``attach`` (connect, secret, hello, a
    session), the build's digest, the messages' sizes, the wire form's conversions on each
    side, and the in-process check split by ``_common.WireClock`` into the servers' share and
    ipylsp's own (20 more checks after the timed ones).
``memory``
    Per part, from ``ipylsp broker status``: the broker's own RSS and each server's; and each
    server's process tree (``tree_rss_mb``: basedpyright's wrapper and its node).

The load average is recorded at the start and end (``machine``) and per part.
"""

from __future__ import annotations

import argparse
import asyncio
import compileall
import contextlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as c
import anyio
from lsp_client import LoopThread, RawClient, matcher, tree_rss_kb
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

import ipylsp
from ipylsp.model.checks import FileCheck
from ipylsp.model.settings import Settings
from ipylsp.servers import executables, python_env, registry

BAD = 'x: int = "s"\n'
FIXED = "x: int = 1\n"
EXPECT = "assignable"  # ty: Object of type `Literal["s"]` is not assignable to `int`
PYTHON = sys.executable
IPYLSP = str(Path(sys.executable).parent / "ipylsp")
TARGET_WALL_MS = 100.0
TARGET_ABOVE_FLOOR_MS = 30.0
TARGET_BOUNDARY_MS = 1.0
SOCKET_PATH_MAX = 107
CLI_MORE_HINT = "check fewer files at a time"  # what `ipylsp check` passes (cli.CLI_MORE_HINT)
REQUESTS = ("requests", "2.32.3")
SESSIONS = "src/requests/sessions.py"
SECTIONS = ("cli", "mcp", "basedpyright", "boundary")


# -- numbers ------------------------------------------------------------------------------------


def spread(values: Sequence[float | None]) -> dict[str, Any]:
    """Median, quartiles, min and max of `values` (ms), and how many there were."""
    real = sorted(v for v in values if v is not None)
    if not real:
        return {"n": 0, "median": None}
    quartiles = statistics.quantiles(real, n=4) if len(real) > 1 else [real[0]] * 3
    return {"n": len(real), "median": c.median(real), "q1": round(quartiles[0], 3),
            "q3": round(quartiles[2], 3), "min": round(real[0], 3), "max": round(real[-1], 3)}


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


# -- processes ----------------------------------------------------------------------------------


def timed(argv: Sequence[str], *, cwd: Path, env: dict[str, str] | None = None,
          timeout: float = 180.0) -> tuple[float, subprocess.CompletedProcess[str]]:
    """`argv` run to its end: (ms from just before the spawn to the reaped exit, the result)."""
    start = time.perf_counter()
    done = subprocess.run(list(argv), cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)
    return c.ms(time.perf_counter() - start), done


def without_broker() -> dict[str, str]:
    """This process's environment with the broker off for the child: today's CLI."""
    return {**os.environ, "IPYLSP_BROKER": "0"}


def fell_back(done: subprocess.CompletedProcess[str]) -> bool:
    """The CLI said it had no broker and checked in-process."""
    return "no broker" in done.stderr


def brokers_of(runtime: Path) -> list[int]:
    """This run's broker processes whose place is below `runtime`."""
    mine = []
    for entry in c.leftover_processes(os.environ[c.MARKER_VAR]):
        line = entry["cmdline"]
        if "ipylsp.broker" in line and str(runtime) in line:
            mine.append(int(entry["pid"]))
    return mine


def status(cwd: Path) -> dict[str, Any] | None:
    """`ipylsp broker status`'s JSON (None when no broker of this build runs)."""
    _, done = timed([IPYLSP, "broker", "status"], cwd=cwd)
    try:
        value = json.loads(done.stdout)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def memory(info: dict[str, Any] | None) -> dict[str, Any] | None:
    """The broker's own RSS and its servers', in MB, from a status."""
    if info is None:
        return None

    def mb(kb: Any) -> float | None:
        return round(kb / 1024, 1) if isinstance(kb, int) else None

    servers = [{"server": s.get("server"), "state": s.get("state"), "rss_mb": mb(s.get("rss_kb")),
                "tree_rss_mb": mb(tree_rss_kb(s["pid"])) if isinstance(s.get("pid"), int)
                else None, "root": Path(str(s.get("root"))).name}
               for s in info.get("servers", [])]
    own = mb(info.get("rss_kb"))
    total_servers = round(sum(s["tree_rss_mb"] or s["rss_mb"] or 0 for s in servers), 1)
    return {"broker_rss_mb": own, "servers": servers, "servers_tree_rss_mb": total_servers,
            "total_rss_mb": round((own or 0) + total_servers, 1),
            "contexts": info.get("contexts"), "pid": info.get("pid"),
            "note": "rss_mb: the server's process as the status gives it; tree_rss_mb: with "
                    "its children (lsp_client.tree_rss_kb), e.g. basedpyright's node"}


def rss_kb(pid: int) -> int:
    """VmRSS of one process (0 when gone)."""
    with contextlib.suppress(OSError, ValueError), open(f"/proc/{pid}/status") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def proc_memory(runtime: Path) -> dict[str, Any] | None:
    """The memory of this place's brokers from /proc, when `ipylsp broker status` found none of
    this build (the tree changed during the part): each broker's own RSS and its children's."""
    found = brokers_of(runtime)
    if not found:
        return None
    rows = []
    for pid in found:
        own = rss_kb(pid)
        rows.append({"pid": pid, "broker_rss_mb": round(own / 1024, 1),
                     "children_rss_mb": round((tree_rss_kb(pid) - own) / 1024, 1)})
    return {"source": "/proc (no broker of this build answered)", "brokers": rows}


@contextlib.contextmanager
def private_broker(iso: c.Isolation, name: str, out: dict[str, Any]) -> Iterator[Path]:
    """A private `XDG_RUNTIME_DIR` (short, in /tmp) for this part's broker, the real data dir
    (servers found as a user's CLI finds them) and a store of the run's; afterwards the
    broker's status goes to ``out["memory"]``, it is stopped (``ipylsp broker stop``; any other
    build's broker started meanwhile gets SIGTERM) and waited for."""
    runtime = Path(tempfile.mkdtemp(prefix="ipb-", dir="/tmp"))
    names = ("XDG_RUNTIME_DIR", "XDG_DATA_HOME", "IPYLSP_STORE", "IPYLSP_BROKER")
    saved = {key: os.environ.get(key) for key in names}
    os.environ.update({
        "XDG_RUNTIME_DIR": str(runtime),
        "XDG_DATA_HOME": str(iso.data_dir.parent),
        "IPYLSP_STORE": str(iso.base / f"store-{name}.sqlite3"),
    })
    os.environ.pop("IPYLSP_BROKER", None)
    out["loadavg_at_start"] = load()
    try:
        yield runtime
    finally:
        info = status(iso.base)
        out["build"] = info.get("build") if info else None
        out["memory"] = memory(info) if info else proc_memory(runtime)
        out["stop"] = stop_brokers(runtime, info, iso.base)
        out["broker_logs"] = {log.name: log.read_text(errors="replace").splitlines()[-12:]
                              for log in sorted((runtime / "ipylsp").glob("*.log"))}
        out["loadavg_at_end"] = load()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        shutil.rmtree(runtime, ignore_errors=True)


def stop_brokers(runtime: Path, info: dict[str, Any] | None, cwd: Path) -> dict[str, Any]:
    """``ipylsp broker stop``, then wait until no broker of this place runs; a broker of
    another build (the tree changed during the part) is sent SIGTERM, and named."""
    start = time.perf_counter()
    _, done = timed([IPYLSP, "broker", "stop"], cwd=cwd)
    deadline = time.monotonic() + 15
    pid = info.get("pid") if info else None
    while isinstance(pid, int) and c.alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    stopped_ms = c.ms(time.perf_counter() - start)
    strays = [p for p in brokers_of(runtime) if p != pid]
    for stray in strays:
        with contextlib.suppress(ProcessLookupError):
            os.kill(stray, signal.SIGTERM)
    while strays and any(c.alive(p) for p in strays) and time.monotonic() < deadline:
        time.sleep(0.02)
    return {"said": done.stdout.strip(), "exited_ms": stopped_ms,
            "exited": not (isinstance(pid, int) and c.alive(pid)), "other_builds": strays}


def same_broker(first: dict[str, Any] | None, last: dict[str, Any] | None) -> bool:
    return bool(first and last and first.get("pid") == last.get("pid"))


# -- the raw reference: ty and ruff started once -----------------------------------------------


class RawPair:
    """The raw client on a warm ty and a warm ruff, rooted at `root`, each given exactly the
    settings ipylsp sends; `answer` times a ``didChange`` of `text` to the answer(s)."""

    def __init__(self, iso: c.Isolation, root: Path, file: str) -> None:
        self.path = root / file
        self.thread = LoopThread()
        self.clients: dict[str, RawClient] = {}
        for server in ("ty", "ruff"):
            spec = registry.get(server)
            assert spec is not None
            command = executables.resolve(spec, iso.data_dir).command
            assert command is not None, f"{server} is not installed"
            final = python_env.for_server(spec, root, ceiling=root)
            self.clients[server] = c.reference_client(command, root, final)

    def start(self) -> None:
        for client in self.clients.values():
            self.thread.run(client.start(30), 60)
        self.answer(BAD, ("ty", "ruff"))  # didOpen, then every answer is a didChange's

    def answer(self, text: str, servers: Sequence[str]) -> float:
        """ms from the first ``didChange`` to the last of `servers`' diagnostics for `text`."""

        async def both() -> float:
            start = time.perf_counter()
            await asyncio.gather(*(
                self.clients[s].edit(self.path, text, matcher(EXPECT) if s == "ty" and
                                     text == BAD else accept_any, 30)
                for s in servers))
            return time.perf_counter() - start

        return c.ms(self.thread.run(both(), 60))

    def close(self) -> None:
        for client in self.clients.values():
            with contextlib.suppress(Exception):
                self.thread.run(client.stop(), 30)
        self.thread.close()


def accept_any(diagnostics: list[dict[str, Any]]) -> bool:
    return True


# -- 1. ipylsp check ----------------------------------------------------------------------------

DRIVER = r"""
import time
t = time.perf_counter()
import json, sys
marks = {"start": t}
from ipylsp import cli
marks["cli_imported"] = time.perf_counter()
from ipylsp.broker import client
marks["client_imported"] = time.perf_counter()
attach, check = client.Broker.attach, client.Broker.check
def timed_attach(*args, **kwargs):
    marks["attach_start"] = time.perf_counter()
    try:
        return attach(*args, **kwargs)
    finally:
        marks["attach_end"] = time.perf_counter()
def timed_check(self, *args, **kwargs):
    marks["check_start"] = time.perf_counter()
    try:
        return check(self, *args, **kwargs)
    finally:
        marks["check_end"] = time.perf_counter()
client.Broker.attach = timed_attach
client.Broker.check = timed_check
code = cli.main(sys.argv[2:])
marks["main_end"] = time.perf_counter()
with open(sys.argv[1], "w") as handle:
    json.dump(marks, handle)
sys.exit(code)
"""
"""`ipylsp check` as the console script runs it (`from ipylsp.cli import main`), with
timestamps around its steps; `cli.main` is not changed, only `Broker.attach` and `.check` are
wrapped to note when they start and end."""

SEGMENTS = (
    ("interpreter", "spawn", "start"),
    ("import_cli", "start", "cli_imported"),
    ("import_broker_client", "cli_imported", "client_imported"),
    ("arguments_and_settings", "client_imported", "attach_start"),
    ("attach", "attach_start", "attach_end"),
    ("check_round_trip", "check_start", "check_end"),
    ("print", "check_end", "main_end"),
    ("exit", "main_end", "reaped"),
)


def instrumented(ws: Path, marks_file: Path) -> dict[str, float] | None:
    """One warm `ipylsp check bad.py` with its steps' times (ms); None when it fell back."""
    spawn = time.perf_counter()
    done = subprocess.run([PYTHON, "-c", DRIVER, str(marks_file), "check", "bad.py"], cwd=ws,
                          capture_output=True, text=True, timeout=60, check=False)
    reaped = time.perf_counter()
    if done.returncode != 1 or EXPECT not in done.stdout or fell_back(done):
        return None
    marks = {**json.loads(marks_file.read_text()), "spawn": spawn, "reaped": reaped}
    out = {name: c.ms(marks[end] - marks[begin]) for name, begin, end in SEGMENTS}
    out["wall"] = c.ms(reaped - spawn)
    out["between_attach_and_check"] = c.ms(marks["check_start"] - marks["attach_end"])
    return out


def bare_marks(ws: Path) -> dict[str, float]:
    """`python -c` that only prints the clock: the interpreter's start and its exit (ms)."""
    spawn = time.perf_counter()
    done = subprocess.run([PYTHON, "-c", "import time; print(repr(time.perf_counter()))"],
                          cwd=ws, capture_output=True, text=True, timeout=60, check=True)
    reaped = time.perf_counter()
    mark = float(done.stdout)
    return {"interpreter": c.ms(mark - spawn), "exit": c.ms(reaped - mark)}


def importtime(ws: Path, runs: int = 3) -> dict[str, Any]:
    """The warm `ipylsp check`'s imports (`-X importtime`), every module it imports; the
    top-level entries (each import statement that ran, nested ones inside it)."""
    totals: list[float] = []
    rows: list[tuple[int, int, str]] = []
    own: dict[str, int] = {}
    for _ in range(runs):
        done = subprocess.run([PYTHON, "-X", "importtime", IPYLSP, "check", "bad.py"], cwd=ws,
                              capture_output=True, text=True, timeout=60, check=False)
        rows = []
        for line in done.stderr.splitlines():
            parts = line.split("|")
            if len(parts) == 3 and parts[1].strip().isdigit():
                name = parts[2].rstrip()
                depth = len(name) - len(name.lstrip())
                rows.append((depth, int(parts[1]), name.strip()))
                own[name.strip()] = int(parts[0].rsplit(":", 1)[1])
        top = min(depth for depth, _, _ in rows)
        totals.append(sum(us for depth, us, _ in rows if depth == top) / 1000)
    top = min(depth for depth, _, _ in rows)
    first_level = sorted(((us, name) for depth, us, name in rows if depth == top), reverse=True)
    ours = [name for _, _, name in rows if name.startswith("ipylsp")]
    third_party = sorted({name.split(".")[0] for _, _, name in rows
                          if name.split(".")[0] in THIRD_PARTY_HINTS})
    return {
        "runs": runs,
        "total_ms": spread(totals),
        "modules": len(rows),
        "ipylsp_modules": ours,
        "third_party_packages": third_party,
        "top_level_cumulative_ms": [(name, round(us / 1000, 2)) for us, name in first_level[:12]],
        "self_ms": [(name, round(us / 1000, 2))
                    for name, us in sorted(own.items(), key=lambda kv: -kv[1])[:15]],
        "note": "-X importtime slows imports a little; the times are the last run's",
    }


THIRD_PARTY_HINTS = frozenset({
    "jupyter_core", "platformdirs", "traitlets", "lsprotocol", "cattrs", "attrs", "attr",
    "pydantic", "anyio", "mcp", "fastjsonschema", "typing_extensions",
})


def bench_cli(iso: c.Isolation, n: int, cold: int) -> dict[str, Any]:
    from ipylsp.broker.place import build_id

    out: dict[str, Any] = {}
    ws = iso.workspace({"bad.py": BAD}, "cli")
    raw_root = iso.workspace({"bad.py": BAD}, "raw")
    with private_broker(iso, "cli", out) as runtime:
        socket_path = runtime / "ipylsp" / f"broker-{build_id()}.sock"
        out["socket_path_bytes"] = len(os.fsencode(socket_path))
        assert len(os.fsencode(socket_path)) <= SOCKET_PATH_MAX, socket_path
        first_ms, done = timed([IPYLSP, "check", "bad.py"], cwd=ws)
        assert done.returncode == 1 and EXPECT in done.stdout, (done.stdout, done.stderr)
        assert not fell_back(done), done.stderr
        out["first_call_ms"] = first_ms
        out["first_call_note"] = "the broker starts (its imports), then ty and ruff, then checks"
        for _ in range(2):
            timed([IPYLSP, "check", "bad.py"], cwd=ws)
        first = status(iso.base)
        raw = RawPair(iso, raw_root, "bad.py")
        marks_file = iso.base / "marks.json"
        times: dict[str, list[float]] = {k: [] for k in (
            "script", "module", "cold", "python_pass", "python_S_pass", "raw", "raw_ty",
            "raw_ruff")}
        steps: list[dict[str, float]] = []
        bare: list[dict[str, float]] = []
        wrong: list[str] = []
        try:
            raw.start()

            def cli(argv: list[str], env: dict[str, str] | None, name: str) -> None:
                elapsed, done = timed(argv, cwd=ws, env=env)
                if done.returncode != 1 or EXPECT not in done.stdout or fell_back(done):
                    wrong.append(f"{name}: exit {done.returncode}: {done.stderr[-300:]}")
                    return
                times[name].append(elapsed)

            cases: dict[str, Callable[[], None]] = {
                "script": lambda: cli([IPYLSP, "check", "bad.py"], None, "script"),
                "module": lambda: cli([PYTHON, "-m", "ipylsp.cli", "check", "bad.py"], None,
                                      "module"),
                "cold": lambda: cli([IPYLSP, "check", "bad.py"], without_broker(), "cold"),
                "python_pass": lambda: times["python_pass"].append(
                    timed([PYTHON, "-c", "pass"], cwd=ws)[0]),
                "python_S_pass": lambda: times["python_S_pass"].append(
                    timed([PYTHON, "-S", "-c", "pass"], cwd=ws)[0]),
                "raw": lambda: times["raw"].append(raw.answer(BAD, ("ty", "ruff"))),
                "raw_ty": lambda: times["raw_ty"].append(raw.answer(BAD, ("ty",))),
                "raw_ruff": lambda: times["raw_ruff"].append(raw.answer(BAD, ("ruff",))),
                "breakdown": lambda: steps.append(instrumented(ws, marks_file) or {}),
                "bare": lambda: bare.append(bare_marks(ws)),
            }
            for i in range(n):
                names = [k for k in cases if k != "cold" or i < cold]
                shift = i % len(names)
                for name in names[shift:] + names[:shift]:
                    cases[name]()
                if i % 5 == 4:
                    c.log(f"cli: round {i + 1} of {n}")
        finally:
            raw.close()
        out["importtime"] = importtime(ws)
        last = status(iso.base)
    out["same_broker"] = same_broker(first, last)
    out["wrong"] = wrong
    out["breakdown_fell_back"] = sum(1 for s in steps if not s)
    out["ms"] = {name: spread(values) for name, values in times.items()}
    med = {name: out["ms"][name]["median"] for name in times}
    floor = (None if med["python_pass"] is None or med["raw"] is None
             else round(med["python_pass"] + med["raw"], 3))
    floor_s = (None if med["python_S_pass"] is None or med["raw"] is None
               else round(med["python_S_pass"] + med["raw"], 3))
    out["floor_ms"] = {"python_pass_plus_raw": floor, "python_S_pass_plus_raw": floor_s}
    out["targets"] = {
        kind: {
            "warm_ms": med[kind],
            "at_most_100_ms": med[kind] is not None and med[kind] <= TARGET_WALL_MS,
            "above_floor_ms": c.difference(med[kind], floor),
            "within_30_ms_of_floor": (med[kind] is not None and floor is not None
                                      and med[kind] - floor <= TARGET_ABOVE_FLOOR_MS),
            "above_floor_with_python_S_ms": c.difference(med[kind], floor_s),
        } for kind in ("script", "module")
    }
    out["ratio_cold_to_warm"] = c.ratio(med["cold"], med["script"])
    good = [s for s in steps if s]
    out["breakdown_ms"] = {name: c.median([s[name] for s in good])
                           for name in (*(seg for seg, _, _ in SEGMENTS),
                                        "between_attach_and_check", "wall")}
    out["breakdown_note"] = ("medians of each step separately; `wall` is the instrumented "
                             "call's own (spawn -> reaped), whose steps add up to it")
    out["bare_python_ms"] = {name: c.median([b[name] for b in bare])
                             for name in ("interpreter", "exit")}
    return out


# -- 2. ipylsp mcp ------------------------------------------------------------------------------


async def first_answer(params: StdioServerParameters, errlog: Path) -> dict[str, Any]:
    """Spawn `ipylsp mcp`, initialize, one `lsp_check`: the answer's time from the spawn and
    from `initialize` answered."""
    with errlog.open("a") as err:
        start = time.perf_counter()
        async with (stdio_client(params, errlog=err) as (read, write),
                    ClientSession(read, write) as session):
            await session.initialize()
            initialized = time.perf_counter()
            result = await session.call_tool("lsp_check", {"path": "app.py"})
            answered = time.perf_counter()
    shape = result.model_dump(by_alias=True, exclude_none=True, mode="json")
    text = "".join(block.get("text", "") for block in shape.get("content", []))
    return {"from_spawn_ms": c.ms(answered - start), "initialize_ms": c.ms(initialized - start),
            "from_initialize_ms": c.ms(answered - initialized),
            "right": not shape.get("isError") and "ERROR [" in text and EXPECT in text}


def bench_mcp(iso: c.Isolation, runs: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    root = iso.workspace({"app.py": BAD}, "mcp")
    errlog = iso.base / "mcp-stderr.log"
    with private_broker(iso, "mcp", out):

        def params(env: dict[str, str]) -> StdioServerParameters:
            # the whole environment: the SDK's stdio client passes only a few variables else
            return StdioServerParameters(command=IPYLSP, args=["mcp", "--root", str(root)],
                                         env=env)

        first = anyio.run(first_answer, params(dict(os.environ)), errlog)
        out["first_run_new_broker"] = first
        broker_first = status(iso.base)
        rows: dict[str, list[dict[str, Any]]] = {"broker": [], "today": []}
        for i in range(runs):
            for side in (("broker", "today") if i % 2 == 0 else ("today", "broker")):
                env = dict(os.environ) if side == "broker" else without_broker()
                rows[side].append(anyio.run(first_answer, params(env), errlog))
        broker_last = status(iso.base)
    said = errlog.read_text() if errlog.exists() else ""
    out["same_broker"] = same_broker(broker_first, broker_last)
    out["fell_back"] = said.count("no broker")
    out["all_right"] = all(r["right"] for side in rows.values() for r in side) and first["right"]
    out["ms"] = {side: {key: spread([r[key] for r in values])
                        for key in ("from_spawn_ms", "initialize_ms", "from_initialize_ms")}
                 for side, values in rows.items()}
    out["ratio_today_to_broker"] = {
        key: c.ratio(out["ms"]["today"][key]["median"], out["ms"]["broker"][key]["median"])
        for key in ("from_spawn_ms", "from_initialize_ms")}
    out["runs"] = rows
    return out


# -- 3. basedpyright on requests --------------------------------------------------------------


def requests_tree(iso: c.Isolation) -> Path:
    from bench_delta_accuracy import pypi_sdist

    target = iso.base / "requests"
    shutil.copytree(pypi_sdist(*REQUESTS), target)
    subprocess.run(["git", "init", "-q", str(target)], check=True, capture_output=True)
    return target


def bench_basedpyright(iso: c.Isolation, reps: int) -> dict[str, Any]:
    out: dict[str, Any] = {"tree": f"{REQUESTS[0]} {REQUESTS[1]} (PyPI sdist)", "file": SESSIONS}
    spec = registry.get("basedpyright")
    if spec is None or executables.resolve(spec, iso.data_dir).command is None:
        return {"missing": "basedpyright is not installed (ipylsp install basedpyright)"}
    tree = requests_tree(iso)
    argv = [IPYLSP, "check", "--server", "basedpyright", "--timeout", "120", SESSIONS]
    with private_broker(iso, "basedpyright", out) as runtime:
        first_ms, done = timed(argv, cwd=tree)
        out["first_ms"] = first_ms
        assert not fell_back(done), done.stderr
        reference = (done.returncode, done.stdout)
        out["exit"], out["errors_shown"] = done.returncode, done.stdout.count("ERROR [")
        broker_first = status(tree)
        warm: list[float] = []
        cold_first: list[float] = []
        cold_second: list[float] = []
        differ: list[str] = []
        seen: list[list[int]] = []

        def check(env: dict[str, str] | None, into: list[float], side: str) -> None:
            elapsed, done = timed(argv, cwd=tree, env=env)
            into.append(elapsed)
            if (done.returncode, done.stdout) != reference or fell_back(done):
                differ.append(f"{side}: exit {done.returncode}: {done.stdout[-200:]}"
                              f"{done.stderr[-200:]}")

        for i in range(reps):
            for side in (("warm", "cold") if i % 2 == 0 else ("cold", "warm")):
                if side == "warm":
                    check(None, warm, "warm")
                else:
                    check(without_broker(), cold_first, "cold first")
                    check(without_broker(), cold_second, "cold second")
            seen.append(brokers_of(runtime))
            c.log(f"basedpyright: round {i + 1} of {reps}")
        broker_last = status(tree)
    out["same_broker"] = same_broker(broker_first, broker_last)
    out["outputs_differ"] = differ
    out["brokers_after_each_round"] = seen
    out["ms"] = {"warm": spread(warm), "cold_second": spread(cold_second),
                 "cold_first": spread(cold_first)}
    out["ratio_cold_to_warm"] = c.ratio(out["ms"]["cold_second"]["median"],
                                        out["ms"]["warm"]["median"])
    out["runs"] = {"warm": warm, "cold_first": cold_first, "cold_second": cold_second}
    return out


# -- 4. the boundary ----------------------------------------------------------------------------


@contextlib.contextmanager
def frame_sizes() -> Iterator[list[tuple[str, str, int]]]:
    """The sizes of the frames this process's broker client sends and receives
    ((direction, call, bytes), the 4-byte length included)."""
    from ipylsp.broker import frames

    send, receive = frames.send, frames.receive
    seen: list[tuple[str, str, int]] = []
    last_call = [""]

    def size(message: dict[str, Any]) -> int:
        return len(json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode()) + 4

    def sending(sock: Any, message: dict[str, Any], deadline: float | None = None) -> None:
        last_call[0] = str(message.get("call"))
        seen.append(("sent", last_call[0], size(message)))
        send(sock, message, deadline)

    def receiving(sock: Any, deadline: float | None = None) -> dict[str, Any]:
        message = receive(sock, deadline)
        seen.append(("received", last_call[0], size(message)))
        return message

    frames.send, frames.receive = sending, receiving
    try:
        yield seen
    finally:
        frames.send, frames.receive = send, receive


def bench_boundary(iso: c.Isolation, reps: int) -> dict[str, Any]:
    from ipylsp.analysis.report import FormatOptions
    from ipylsp.analysis.report.verdict import verdict
    from ipylsp.broker import place
    from ipylsp.broker.client import Broker, BrokerError
    from ipylsp.broker.place import build_id

    out: dict[str, Any] = {}
    ws = iso.workspace({"bad.py": BAD}, "boundary")
    path = ws / "bad.py"
    settings = Settings(data_dir=iso.data_dir)
    files = [FileCheck(path, before="")]
    wire = [{"path": str(path), "before": ""}]
    options = FormatOptions.from_settings(settings, more_hint=CLI_MORE_HINT)
    timeout = 30.0
    times: dict[str, list[float]] = {k: [] for k in (
        "service_check_files", "broker_check_files", "service_check_and_render", "broker_check")}
    wrong: list[str] = []
    with (private_broker(iso, "boundary", out), c.closing_service(settings) as service,
          Broker.attach(settings, budget=30) as broker):

        first_pid = broker.pid

        def expected_errors() -> int:
            return 1 if path.read_text() == BAD else 0

        def count(report: Any) -> int:
            return sum(1 for f in report.files for d in f.diagnostics
                       if d.severity.name == "ERROR")

        def service_files() -> None:
            start = time.perf_counter()
            report = service.check_files(files, timeout=timeout)
            times["service_check_files"].append(c.ms(time.perf_counter() - start))
            if count(report) != expected_errors() or report.has_unknown:
                wrong.append("service_check_files")

        def broker_files() -> None:
            start = time.perf_counter()
            report = broker.check_files(files, timeout=timeout)
            times["broker_check_files"].append(c.ms(time.perf_counter() - start))
            if count(report) != expected_errors() or report.has_unknown:
                wrong.append("broker_check_files")

        def service_render() -> None:
            start = time.perf_counter()
            report = service.check_files(files, timeout=timeout)
            shown = verdict(report, [path], options, as_json=False)
            times["service_check_and_render"].append(c.ms(time.perf_counter() - start))
            if shown.exit != expected_errors():
                wrong.append("service_check_and_render")

        def broker_render() -> None:
            start = time.perf_counter()
            shown = broker.check(wire, timeout=timeout, severity=None, as_json=False,
                                 more_hint=CLI_MORE_HINT)
            times["broker_check"].append(c.ms(time.perf_counter() - start))
            if shown.exit != expected_errors():
                wrong.append("broker_check")

        cases = {"service_check_files": service_files, "broker_check_files": broker_files,
                 "service_check_and_render": service_render, "broker_check": broker_render}
        for i in range(-4, reps):  # 4 untimed rounds: servers started, texts known
            path.write_text(BAD if i % 2 == 0 else FIXED)
            names = list(cases)
            shift = i % len(names)
            for name in names[shift:] + names[:shift]:
                cases[name]()
            if i < 0:
                for values in times.values():
                    values.clear()
                wrong.clear()
        out["ms"] = {name: spread(values) for name, values in times.items()}
        path.write_text(BAD)
        with frame_sizes() as seen:
            broker.check_files(files, timeout=timeout)
            broker.check(wire, timeout=timeout, severity=None, as_json=False,
                         more_hint=CLI_MORE_HINT)
            with Broker.attach(settings, budget=30):
                pass
        out["message_bytes"] = [{"direction": d, "call": call, "bytes": size}
                                for d, call, size in seen]

        trips: list[float] = []
        for _ in range(200):
            start = time.perf_counter()
            with contextlib.suppress(BrokerError):  # an unknown call: refused at once
                broker.call("nothing", {}, timeout=5)
            trips.append(c.ms(time.perf_counter() - start))
        out["round_trip_ms"] = spread(trips)
        attaches: list[float] = []
        for _ in range(20):
            start = time.perf_counter()
            with Broker.attach(settings, budget=30):
                attaches.append(c.ms(time.perf_counter() - start))
        out["attach_ms"] = spread(attaches)
        out["wire_conversion_ms"] = conversions(files, service.check_files(files,
                                                                           timeout=timeout))
        out["service_split_ms"] = service_split(service, files, path, timeout)
        digests: list[float] = []
        for _ in range(20):
            place._BUILD.clear()  # its digest, not the answer kept
            start = time.perf_counter()
            build_id()
            digests.append(c.ms(time.perf_counter() - start))
        out["build_digest_ms"] = spread(digests)
        out["same_broker"] = broker.pid == first_pid
    out["wrong"] = wrong
    med = {name: out["ms"][name]["median"] for name in times}
    added = {
        "check_files": c.difference(med["broker_check_files"], med["service_check_files"]),
        "check": c.difference(med["broker_check"], med["service_check_and_render"]),
    }
    out["added_ms"] = added
    out["targets"] = {name: value is not None and value <= TARGET_BOUNDARY_MS
                      for name, value in added.items()}
    return out


def conversions(files: list[FileCheck], report: Any) -> dict[str, Any]:
    """What the wire form costs each side of a `check_files` call (medians of 50, ms)."""
    from ipylsp.model.diagnostics import Report
    from ipylsp.model.wire import from_wire, read, to_wire

    steps: dict[str, Callable[[], object]] = {
        "client_files_to_wire": lambda: to_wire(files),
        "broker_files_from_wire": lambda: from_wire(tuple[FileCheck, ...], to_wire(files)),
        "broker_report_to_wire": lambda: to_wire(report),
        "client_report_read": lambda: read(Report, to_wire(report)),
    }
    out: dict[str, Any] = {}
    for name, step in steps.items():
        values = []
        for _ in range(50):
            start = time.perf_counter()
            step()
            values.append(c.ms(time.perf_counter() - start))
        out[name] = c.median(values)
    return out


def service_split(service: Any, files: list[FileCheck], path: Path, timeout: float
                  ) -> dict[str, Any]:
    """The in-process check's wall time split (`_common.WireClock`): the servers' share (first
    document notification -> last answer) and ipylsp's own; 20 more checks, after the timed
    ones (the clock's wrappers are not in those)."""
    walls: list[float] = []
    wires: list[float | None] = []
    with c.wire_clock() as clock:
        for i in range(20):
            path.write_text(BAD if i % 2 == 0 else FIXED)
            clock.reset()
            start = time.perf_counter()
            service.check_files(files, timeout=timeout)
            walls.append(c.ms(time.perf_counter() - start))
            wires.append(clock.wire_ms())
    own = [round(w - x, 3) for w, x in zip(walls, wires, strict=True) if x is not None]
    return {"wall": c.median(walls), "wire": c.median(wires), "own": c.median(own)}


# -- main ---------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--n", type=int, default=20, help="rounds of the warm CLI's cases")
    parser.add_argument("--cold", type=int, default=10, help="cold CLI calls (IPYLSP_BROKER=0)")
    parser.add_argument("--mcp", type=int, default=7, help="fresh `ipylsp mcp` runs per side")
    parser.add_argument("--basedpyright", type=int, default=3,
                        help="warm calls, and cold pairs, on requests")
    parser.add_argument("--boundary", type=int, default=50, help="repetitions of each side")
    parser.add_argument("--only", default=",".join(SECTIONS),
                        help=f"subset of {','.join(SECTIONS)}")
    args = parser.parse_args()
    only = set(args.only.split(","))
    result: dict[str, Any] = {"benchmark": "bench_broker", "machine": c.machine(),
                              "reference": c.REFERENCE, "args": vars(args)}
    # As a wheel install leaves it: the package's bytecode compiled once (this machine sets
    # PYTHONDONTWRITEBYTECODE, and every CLI call would compile what it imports).
    package = Path(ipylsp.__file__).resolve().parent
    compileall.compile_dir(str(package), quiet=1)
    result["package"] = str(package)
    with c.isolated_run("bench_broker", result) as iso:
        assert iso.data_dir.name == "ipylsp", f"the data dir is not the default: {iso.data_dir}"
        if "cli" in only:
            c.log(f"cli: {args.n} rounds, {args.cold} cold calls")
            result["cli"] = bench_cli(iso, args.n, args.cold)
        if "mcp" in only:
            c.log(f"mcp: {args.mcp} fresh runs per side")
            result["mcp"] = bench_mcp(iso, args.mcp)
        if "basedpyright" in only:
            c.log(f"basedpyright: {args.basedpyright} rounds")
            result["basedpyright"] = bench_basedpyright(iso, args.basedpyright)
        if "boundary" in only:
            c.log(f"boundary: {args.boundary} repetitions")
            result["boundary"] = bench_boundary(iso, args.boundary)
        result["memory"] = {part: result[part].get("memory") for part in SECTIONS
                            if part in result}
        builds = {result[part].get("build") for part in SECTIONS if part in result}
        result["builds"] = sorted(str(b) for b in builds)
    return c.exit_status(result)


if __name__ == "__main__":
    sys.exit(main())
