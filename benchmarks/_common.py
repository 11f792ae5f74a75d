"""Shared helpers of the server benchmarks.

- `reference_client()` / `run_reference()`: the raw reference client, `lsp_client.RawClient`
  (``benchmarks/lsp_client.py``), given exactly the settings ipylsp sends, and one measured
  session of it (init, first diagnostics, fix -> clear);
- `Isolation`: a temporary HOME / XDG_CACHE_HOME / GOPATH / ... for every server spawned by this
  process, tagged with a marker variable so that `leftover_processes()` finds any process that
  outlived the benchmark, however it was spawned (raw client, ipylsp, a child Python process);
- `make_workspace()`: a temporary git worktree (so ipylsp's workspace gate passes);
- `RssSampler` (from `lsp_client`): peak summed VmRSS of a process tree, sampled every 50 ms;
- `WireClock`: a check's time split into the server's share and ipylsp's own;
- `median()`, `emit()` (one JSON object on stdout, also written to ``benchmarks/results/``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from lsp_client import RawClient, RssSampler, measure

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

REFERENCE = "benchmarks/lsp_client.py"
"""What the server benchmarks compare against (the JSON's ``reference``)."""
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


@contextlib.contextmanager
def isolated_run(name: str, result: dict[str, Any]) -> Iterator[Isolation]:
    """A benchmark's run in an `Isolation`: afterwards `result` records the processes it left
    behind (`leftover_processes`) and its `elapsed_s`, and is emitted (`emit`); an exception
    still records the leftovers and closes the isolation, then propagates (nothing emitted)."""
    started = time.monotonic()
    iso = Isolation()
    try:
        yield iso
    finally:
        result["leftover_processes"] = iso.leftovers()
        iso.close()
    result["elapsed_s"] = round(time.monotonic() - started, 1)
    emit(name, result)


def exit_status(result: Mapping[str, Any]) -> int:
    """A benchmark's exit status: 1 when it left processes behind (`isolated_run`)."""
    return 0 if not result["leftover_processes"] else 1


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


def reference_client(command: Sequence[str], root: Path, spec: Any) -> RawClient:
    """The raw client on `root`, with exactly the settings and initialization options ipylsp
    sends to that server (`spec`: the registry row as `python_env.for_server` hands it over)."""
    return RawClient(
        command, root, settings=spec.settings, init_options=spec.initialization_options
    )


def run_reference(
    client: RawClient, *args: Any, rss: bool = False, **kwargs: Any
) -> dict[str, Any]:
    """`lsp_client.measure` (the same arguments) in this thread, on an event loop of its own:
    ``init_ms``, ``diag_ms``, ``clear_ms``, channels, ``error``; with `rss`, ``rss_mb`` too."""
    sampler = RssSampler() if rss else None
    result: dict[str, Any] = asyncio.run(measure(client, *args, sampler=sampler, **kwargs))
    return result


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
