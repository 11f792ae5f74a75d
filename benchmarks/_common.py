"""Shared helpers of the server benchmarks (bench_core, bench_servers, bench_check).

- `load_probe()`: the raw reference client, ``../shared/tools/lsp_probe.py``, imported as a module
  (its `Probe` class), and `probe_args()` to build its arguments without a command line;
- `TimedProbe`: the probe with sub-millisecond timings of its own phases (it rounds to whole ms),
  and an optional warm loop of further change -> diagnostics cycles on the same server;
- `Isolation`: a temporary HOME / XDG_CACHE_HOME / GOPATH / ... for every server spawned by this
  process, tagged with a marker variable so that `leftover_processes()` finds any process that
  outlived the benchmark, however it was spawned (probe, ipylsp, a child Python process);
- `make_workspace()`: a temporary git worktree (so ipylsp's workspace gate passes);
- `RssSampler`: peak summed VmRSS of a process tree, sampled every 50 ms on a thread;
- `median()`, `emit()` (one JSON object on stdout, also written to ``benchmarks/results/``).
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import contextlib
import importlib.util
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def use_private_tmp() -> Path:
    """Point TMPDIR (this process's and its children's) at a fresh directory below none that
    another user can write to, removed at exit: ipylsp roots no server under a shared /tmp,
    so the benchmarks' workspaces are made there."""
    import atexit

    from ipylsp.private import scratch_dir

    scratch = scratch_dir("ipylsp-bench-", REPO / ".cache")
    os.environ["TMPDIR"] = str(scratch)
    tempfile.tempdir = None
    atexit.register(shutil.rmtree, scratch, True)
    return scratch


use_private_tmp()

PROBE_PATH = Path(os.environ.get("IPYLSP_PROBE", REPO.parent / "shared" / "tools" / "lsp_probe.py"))
FAKE_SERVER = REPO / "tests" / "fixtures" / "fake_server.py"
RESULTS = REPO / "benchmarks" / "results"
MARKER_VAR = "IPYLSP_BENCH_MARKER"


# -- numbers ---------------------------------------------------------------------------------------


def median(values: Sequence[float | None]) -> float | None:
    real = [v for v in values if v is not None]
    return round(statistics.median(real), 3) if real else None


def ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


def difference(a: float | None, b: float | None) -> float | None:
    """a - b, rounded; None when either is missing (a side that gave no number)."""
    return None if a is None or b is None else round(a - b, 3)


def ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b <= 0:
        return None
    return round(a / b, 3)


def machine() -> dict[str, Any]:
    return {
        "date": time.strftime("%Y-%m-%d"),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "loadavg_at_start": [round(x, 2) for x in os.getloadavg()],
    }


def emit(name: str, result: Mapping[str, Any]) -> None:
    """Print the one JSON object and keep a copy under benchmarks/results/ (gitignored)."""
    result = dict(result)
    if isinstance(result.get("machine"), dict):
        result["machine"] = {
            **result["machine"],
            "loadavg_at_end": [round(x, 2) for x in os.getloadavg()],
        }
    text = json.dumps(result, indent=2, default=str)
    with contextlib.suppress(OSError):
        RESULTS.mkdir(parents=True, exist_ok=True)
        (RESULTS / f"{name}.json").write_text(text + "\n")
    print(text)


def log(message: str) -> None:
    """Progress for people, on stderr (stdout carries the JSON only)."""
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# -- isolation and leftovers -----------------------------------------------------------------------


class Isolation:
    """Temporary home and caches for servers started by this process (and its children).

    Changes ``os.environ`` (servers inherit it). ipylsp's data dir is taken *before* HOME moves,
    so `data_dir` still points at the real installs; pass it as ``Settings(data_dir=...)``.
    """

    def __init__(self) -> None:
        from ipylsp.servers import executables

        self.data_dir = executables.data_dir()
        self.base = Path(tempfile.mkdtemp(prefix="ipylsp-bench-"))
        self.marker = uuid.uuid4().hex
        self._saved: dict[str, str | None] = {}
        home = self.base / "home"
        values = {
            "HOME": str(home),
            "XDG_CACHE_HOME": str(home / ".cache"),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_DATA_HOME": str(home / ".local" / "share"),
            "XDG_STATE_HOME": str(home / ".local" / "state"),
            "GOPATH": str(home / "go"),
            "GOCACHE": str(home / ".cache" / "go-build"),
            "GOFLAGS": "-mod=mod",
            "GOPROXY": "off",
            "GOTOOLCHAIN": "local",
            "npm_config_cache": str(home / ".npm"),
            MARKER_VAR: self.marker,
        }
        for sub in (".cache", ".config", ".local/share", ".local/state"):
            (home / sub).mkdir(parents=True, exist_ok=True)
        for key, value in values.items():
            self._saved[key] = os.environ.get(key)
            os.environ[key] = value

    def workspace(self, files: Mapping[str, str], name: str = "ws") -> Path:
        return make_workspace(files, self.base, name)

    def close(self) -> None:
        for key, value in self._saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        shutil.rmtree(self.base, ignore_errors=True)

    def leftovers(self, settle: float = 3.0) -> list[dict[str, Any]]:
        """Processes still alive that carry this run's marker (after up to `settle` seconds)."""
        deadline = time.monotonic() + settle
        while True:
            found = leftover_processes(self.marker)
            if not found or time.monotonic() >= deadline:
                return found
            time.sleep(0.05)

    def __enter__(self) -> Isolation:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _watchdog_pids() -> set[int]:
    """ipylsp's watchdog of *this* process: a helper, not a server (it exits when we do)."""
    try:
        from ipylsp.lsp.process import Watchdog
    except ImportError:
        return set()
    instance = Watchdog._instance
    return {instance.pid} if instance is not None else set()


def proc_state(pid: int) -> str | None:
    """The /proc state letter of `pid` (None when gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
        return stat[stat.rindex(b")") + 2 :].split()[0].decode()
    except (OSError, ValueError, IndexError):
        return None


def proc_start(pid: int) -> int | None:
    """Start time (clock ticks since boot) of `pid`, to tell it from a reused pid."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
        return int(stat[stat.rindex(b")") + 2 :].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def alive(pid: int, start: int | None = None) -> bool:
    state = proc_state(pid)
    if state is None or state in ("Z", "X"):
        return False
    return start is None or proc_start(pid) == start


def cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()[:200]
    except OSError:
        return ""


def leftover_processes(marker: str) -> list[dict[str, Any]]:
    """Live processes (not zombies) whose environment holds ``MARKER_VAR=marker``."""
    needle = f"{MARKER_VAR}={marker}".encode()
    skip = {os.getpid()} | _watchdog_pids()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) in skip:
            continue
        pid = int(entry)
        try:
            with open(f"/proc/{pid}/environ", "rb") as handle:
                environ = handle.read()
        except OSError:
            continue
        if needle in environ.split(b"\0") and alive(pid):
            found.append({"pid": pid, "cmdline": cmdline(pid)})
    return found


def tree(pid: int) -> list[int]:
    from ipylsp.lsp.process import descendants

    return [pid, *descendants(pid)]


def tree_rss_kb(pid: int) -> int:
    total = 0
    for member in tree(pid):
        try:
            with open(f"/proc/{member}/status") as handle:
                for line in handle:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
                        break
        except (OSError, ValueError):
            continue
    return total


class RssSampler:
    """Peak summed VmRSS of a process tree, sampled every `period` seconds on a thread."""

    def __init__(self, period: float = 0.05) -> None:
        self.period = period
        self.pid: int | None = None
        self.peak_kb = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="rss-sampler")
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.period)

    def sample(self) -> None:
        """Sample now too (a server that lives less than a period would be missed)."""
        pid = self.pid
        if pid is not None:
            self.peak_kb = max(self.peak_kb, tree_rss_kb(pid))

    def stop(self) -> float:
        self._stop.set()
        self._thread.join(2)
        return round(self.peak_kb / 1024, 1)


# -- workspaces ------------------------------------------------------------------------------------


def make_workspace(files: Mapping[str, str], base: Path | None = None, name: str = "ws") -> Path:
    """A fresh git worktree holding `files` (relative path -> text); nothing committed."""
    parent = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=base))
    root = parent / name
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True, capture_output=True)
    for relative, text in files.items():
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return root.resolve()


# -- the raw reference client ----------------------------------------------------------------------

_probe_module: Any = None


def load_probe() -> Any:
    global _probe_module
    if _probe_module is None:
        spec = importlib.util.spec_from_file_location("lsp_probe", PROBE_PATH)
        if spec is None or spec.loader is None:
            raise RuntimeError(f"cannot load {PROBE_PATH}")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _probe_module = module
    return _probe_module


def probe_args(
    *,
    root: Path,
    file: str,
    lang: str,
    expect: str,
    cmd: Sequence[str],
    fixed: Path | None = None,
    settings: Mapping[str, Any] | None = None,
    init_options: Mapping[str, Any] | None = None,
    timeout: float = 60.0,
    linger: float = 0.0,
    mode: str = "auto",
) -> argparse.Namespace:
    """The probe's argparse namespace, as its command line would build it."""
    return argparse.Namespace(
        root=str(root),
        file=file,
        lang=lang,
        expect=expect,
        fixed=str(fixed) if fixed is not None else None,
        settings=json.dumps(settings) if settings else None,
        init_options=json.dumps(init_options) if init_options is not None else None,
        save=False,
        mode=mode,
        timeout=timeout,
        open_delay=0,
        linger=linger,
        race=False,
        trace=None,
        stderr=None,
        cmd=list(cmd),
    )


def timed_probe_class() -> Any:
    """`TimedProbe(args, loop_cycles=0, pause=0.0)`: the probe, with precise phase times and
    a warm loop.

    The probe's own numbers are whole milliseconds; this subclass notes the monotonic time just
    before the fixing ``didChange`` is written and just after its diagnostics arrived (the same
    two points the probe's ``clear_ms`` spans). With ``loop_cycles=N`` it then keeps the same
    server and alternates broken/fixed ``didChange`` N more times, each waited for with the
    probe's own ``wait_for`` (pull where registered, else push; re-pull on refresh or after
    100 ms), recording each cycle's milliseconds in ``res["loop_ms"]``; ``pause`` seconds of
    think time precede each cycle (untimed). With ``stepped=True`` the cycles are instead driven
    one at a time from another thread (`SteppedProbe`).
    """
    probe = load_probe()

    class TimedProbe(probe.Probe):  # type: ignore[misc, name-defined]
        def __init__(
            self,
            args: argparse.Namespace,
            loop_cycles: int = 0,
            pause: float = 0.0,
            stepped: bool = False,
        ) -> None:
            super().__init__(args)
            self.loop_cycles = loop_cycles
            self.pause = pause
            self.stepped = stepped
            self.ready: concurrent.futures.Future[bool] = concurrent.futures.Future()
            self.steps: asyncio.Queue[Any] | None = None
            self._calls = 0
            self._t_change: float | None = None
            self.res["loop_ms"] = []

        async def notify(self, method: str, params: Any) -> None:
            if method == "textDocument/didChange" and self._t_change is None:
                self._t_change = time.monotonic()
            await super().notify(method, params)

        async def wait_for(self, want_error: bool, deadline: float) -> Any:
            self._calls += 1
            result = await super().wait_for(want_error, deadline)
            if self._calls == 1:
                self.res["diag_s"] = time.monotonic() - self.phase_t if result[0] else None
            if self._calls == 2 and self._t_change is not None:
                ok = result[0] is not None
                self.res["clear_s"] = time.monotonic() - self._t_change if ok else None
                if ok and self.stepped:
                    await self._stepped_loop()
                elif ok and self.loop_cycles:
                    await self._warm_loop()
            return result

        async def _cycle(self, want_error: bool) -> float | None:
            self.version += 1
            self.phase_t = start = time.monotonic()
            await super().notify(
                "textDocument/didChange",
                {
                    "textDocument": {"uri": self.uri, "version": self.version},
                    "contentChanges": [{"text": self.text if want_error else self.fixed}],
                },
            )
            channel, _ = await super().wait_for(want_error, start + self.a.timeout)
            elapsed = time.monotonic() - start
            return ms(elapsed) if channel is not None else None

        async def _warm_loop(self) -> None:
            for cycle in range(self.loop_cycles):
                if self.pause:
                    await asyncio.sleep(self.pause)  # think time between edits, not a sync
                # the document is fixed now: break it first
                self.res["loop_ms"].append(await self._cycle(cycle % 2 == 0))

        async def _stepped_loop(self) -> None:
            self.steps = asyncio.Queue()
            self.ready.set_result(True)
            while True:
                item = await self.steps.get()
                if item is None:
                    return
                want_error, reply = item
                try:
                    reply.set_result(await self._cycle(want_error))
                except Exception as exc:  # hand it to the driving thread
                    reply.set_exception(exc)

        async def run(self) -> Any:
            try:
                return await super().run()
            finally:
                if not self.ready.done():
                    self.ready.set_result(False)

    return TimedProbe


def run_probe(args: argparse.Namespace, loop_cycles: int = 0, pause: float = 0.0) -> dict[str, Any]:
    """Run the probe in this process (its own event loop); its result dict."""
    cls = timed_probe_class()
    result: dict[str, Any] = asyncio.run(cls(args, loop_cycles, pause).run())
    return result


class SteppedProbe:
    """The probe on its own event-loop thread, its warm-loop cycles driven one by one.

    `start()` runs the probe up to its fix-to-clear phase (spawn, initialize, didOpen, first
    diagnostics, didChange with the fix, cleared diagnostics) and returns False if that failed;
    `step(want_error)` then does one more didChange -> fresh diagnostics cycle and returns its
    milliseconds; `finish()` lets the probe shut the server down and returns its result dict.
    Lets a benchmark alternate cycle by cycle between the probe and ipylsp.
    """

    def __init__(self, args: argparse.Namespace) -> None:
        self.probe = timed_probe_class()(args, stepped=True)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self._run: concurrent.futures.Future[Any] | None = None

    def start(self, timeout: float = 120.0) -> bool:
        self._run = asyncio.run_coroutine_threadsafe(self.probe.run(), self._loop)
        return bool(self.probe.ready.result(timeout))

    def step(self, want_error: bool, timeout: float = 60.0) -> float | None:
        queue = self.probe.steps
        if queue is None:
            return None
        reply: concurrent.futures.Future[float | None] = concurrent.futures.Future()
        self._loop.call_soon_threadsafe(queue.put_nowait, (want_error, reply))
        return reply.result(timeout)

    def finish(self, timeout: float = 30.0) -> dict[str, Any]:
        try:
            if self.probe.steps is not None:
                self._loop.call_soon_threadsafe(self.probe.steps.put_nowait, None)
            result: dict[str, Any] = self._run.result(timeout) if self._run else {}
            return result
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(5)
            if not self._thread.is_alive():
                self._loop.close()


class WireClock:
    """Where a check's time goes: on the wire (server) or in ipylsp (everything else).

    Wraps `ipylsp.lsp.jsonrpc.Endpoint` for the benchmark only: notes the monotonic time of the
    first document notification written (``didOpen``/``didChange``) and of the last message read
    (a response or a push) since `reset()`. ``wire_s`` is the span between them: the server's
    share of a check; the check's wall time minus it is ipylsp's own cost.
    """

    DOC_METHODS = ("textDocument/didOpen", "textDocument/didChange")

    def __init__(self) -> None:
        from ipylsp.lsp import jsonrpc

        self._endpoint = jsonrpc.Endpoint
        self._orig_send = jsonrpc.Endpoint._send
        self._orig_dispatch = jsonrpc.Endpoint._dispatch
        self.first_doc: float | None = None
        self.last_read: float | None = None
        clock = self
        orig_send, orig_dispatch = self._orig_send, self._orig_dispatch

        async def _send(endpoint: Any, message: dict[str, Any], *args: Any) -> None:
            if clock.first_doc is None and message.get("method") in clock.DOC_METHODS:
                clock.first_doc = time.monotonic()
            await orig_send(endpoint, message, *args)

        def _dispatch(endpoint: Any, message: dict[str, Any]) -> None:
            method = message.get("method")
            if method is None or method == "textDocument/publishDiagnostics":
                clock.last_read = time.monotonic()
            orig_dispatch(endpoint, message)

        jsonrpc.Endpoint._send = _send  # type: ignore[method-assign]
        jsonrpc.Endpoint._dispatch = _dispatch  # type: ignore[method-assign]

    def reset(self) -> None:
        self.first_doc = self.last_read = None

    def wire_ms(self) -> float | None:
        if self.first_doc is None or self.last_read is None or self.last_read < self.first_doc:
            return None
        return ms(self.last_read - self.first_doc)

    def close(self) -> None:
        self._endpoint._send = self._orig_send  # type: ignore[method-assign]
        self._endpoint._dispatch = self._orig_dispatch  # type: ignore[method-assign]


@contextlib.contextmanager
def wire_clock() -> Iterator[WireClock]:
    clock = WireClock()
    try:
        yield clock
    finally:
        clock.close()


@contextlib.contextmanager
def closing_service(settings: Any) -> Iterator[Any]:
    from ipylsp.service.service import Service

    service = Service(settings)
    try:
        yield service
    finally:
        service.close()
