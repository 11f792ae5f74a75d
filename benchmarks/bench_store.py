#!/usr/bin/env python3
"""The persistent store (issue 14): what it adds to a warm check, what it saves the first
check after a restart, and its size.

    .venv/bin/python benchmarks/bench_store.py [--n 40] [--restarts 8] [--files 1000]
        [--servers ty,basedpyright]

- ``check``: two services on one workspace, each with its own warm ty, one with the store and
  one without (`Settings.store`), checking the same edits alternately (the order swaps every
  round): ``check(path)`` after a write, the baseline known (rolled forward), the answer cache.
  ``added_ms`` is the difference of the medians; ``store_calls_per_check_us`` is the store's own
  time inside each check, timed around its calls (a put per server, the lookup when no
  baseline is known, the answers' key with its configuration files' stats), which no noise of
  two ty processes hides.
- ``restart``, per server (ty, basedpyright): a new service (what a restarted kernel has)
  checks a file whose before text the server answered for before the restart: with the store
  it asks the server once (the new text), without it twice (the baseline, then the new text).
  The file is a 2,000-line module.
  The wall time includes the server's start; ``pulls`` counts its diagnostic requests.
- ``size``: puts of 1,000 files x 2 servers x 10 diagnostics; a put's cost to the caller (the
  writer thread does the disk), a lookup, the file's size.

JSON on stdout (and `benchmarks/results/bench_store.json`).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as c

from ipylsp.lsp import jsonrpc
from ipylsp.model.diagnostics import Diagnostic, Position, Range, Severity
from ipylsp.model.settings import Settings
from ipylsp.servers import config_files
from ipylsp.service import answers
from ipylsp.service.check import files as files_mod
from ipylsp.service.service import Service
from ipylsp.store import Store

HEAD = "def double(value: int) -> int:\n    return value * 2\n\n\n"
EDITS = (HEAD + 'x: int = "s"\n', HEAD + 'x: int = "s"\ny: str = double(2)\n')
"""One error, then two: the check of each edit introduces or fixes one."""
PYPROJECT = '[project]\nname = "bench"\n\n[tool.ty.rules]\nunused-ignore-comment = "warn"\n'
"""A configuration file the answers' key digests (read once, then stat'ed per check)."""
BIG_HEAD = "".join(
    f"def f{i}(value: int, name: str) -> str:\n    total = value * {i}\n"
    f"    return name + str(total)\n\n\n" for i in range(400)
)
BIG = (BIG_HEAD + 'x: int = "s"\n', BIG_HEAD + 'x: int = "s"\ny: str = f1(2, "a") + 1\n')
"""The restart's file: a 2,000-line module (a server's first analysis of it is not free)."""


def diagnostics(n: int) -> tuple[Diagnostic, ...]:
    return tuple(
        Diagnostic(Range(Position(i, 4), Position(i, 12)), Severity.ERROR,
                   f"Object of type `Literal[{i}]` is not assignable to `str`", "ty",
                   "invalid-assignment", "ty")
        for i in range(n)
    )


class StoreClock:
    """Time spent in the store's calls from a check (bench-side wrapping of `Answers`, and of
    the answers' key, `config_key`, which stats the server's configuration files)."""

    def __init__(self) -> None:
        self.spent = 0.0
        self.key_spent = 0.0
        """Of `spent`, in `config_key`."""

    @contextmanager
    def installed(self) -> Iterator[None]:
        saved = {name: getattr(answers.Answers, name) for name in ("put", "baseline")}
        key = files_mod.config_key

        def timed(original: Callable[..., Any], *, is_key: bool = False) -> Callable[..., Any]:
            def call(*args: Any, **kwargs: Any) -> Any:
                t0 = time.perf_counter()
                try:
                    return original(*args, **kwargs)
                finally:
                    spent = time.perf_counter() - t0
                    self.spent += spent
                    self.key_spent += spent if is_key else 0.0
            return call

        for name, original in saved.items():
            setattr(answers.Answers, name, timed(original))
        files_mod.config_key = timed(key, is_key=True)
        try:
            yield
        finally:
            for name, original in saved.items():
                setattr(answers.Answers, name, original)
            files_mod.config_key = key


class PullCounter:
    """Diagnostic pulls sent to servers (bench-side wrapping of the JSON-RPC endpoint)."""

    def __init__(self) -> None:
        self.pulls = 0

    @contextmanager
    def installed(self) -> Iterator[None]:
        original = jsonrpc.Endpoint.request

        async def request(endpoint: Any, method: str, *args: Any, **kwargs: Any) -> Any:
            if method == "textDocument/diagnostic":
                self.pulls += 1
            return await original(endpoint, method, *args, **kwargs)

        jsonrpc.Endpoint.request = request  # type: ignore[method-assign]
        try:
            yield
        finally:
            jsonrpc.Endpoint.request = original  # type: ignore[method-assign]


def settings(iso: c.Isolation, store: Path | None, server: str = "ty") -> Settings:
    return Settings(language_servers={"python": (server,)}, data_dir=iso.data_dir,
                    store=store is not None, store_path=store, wait_budget=30.0)


def bench_check(iso: c.Isolation, n: int, store: Path) -> dict[str, Any]:
    ws = iso.workspace({"on.py": EDITS[0], "off.py": EDITS[0], "pyproject.toml": PYPROJECT},
                       "check")
    clock = StoreClock()
    times: dict[str, list[float]] = {"on": [], "off": []}
    per_check: list[float] = []
    key_per_check: list[float] = []
    wrong = 0
    with Service(settings(iso, store)) as on, Service(settings(iso, None)) as off, \
            clock.installed():
        services = {"on": (on, ws / "on.py"), "off": (off, ws / "off.py")}
        for service, path in services.values():  # start ty, know the first text
            service.check(path, before="")
        # A configuration file changed less than RACY_NS ago is read again by every check (its
        # stat cannot be trusted yet); the measured rounds are the steady state after that.
        written = (ws / "pyproject.toml").stat().st_ctime_ns
        time.sleep(max(0.0, (written + config_files.RACY_NS - time.time_ns()) / 1e9))
        for round_ in range(n + 5):
            text = EDITS[(round_ + 1) % 2]
            for name in (("on", "off") if round_ % 2 else ("off", "on")):
                service, path = services[name]
                path.write_text(text)
                spent_before, key_before = clock.spent, clock.key_spent
                t0 = time.perf_counter()
                report = service.check(path)
                elapsed = time.perf_counter() - t0
                introduced = sum(len(f.diagnostics) for f in report.files)
                wrong += introduced != (1 if text is EDITS[1] else 0)
                if round_ >= 5:  # the first rounds warm up
                    times[name].append(c.ms(elapsed))
                    if name == "on":
                        per_check.append((clock.spent - spent_before) * 1e6)
                        key_per_check.append((clock.key_spent - key_before) * 1e6)
    on_ms, off_ms = c.median(times["on"]), c.median(times["off"])
    return {
        "n": n,
        "store_on_median_ms": on_ms,
        "store_off_median_ms": off_ms,
        "added_ms": c.difference(on_ms, off_ms),
        "ratio_on_off": c.ratio(on_ms, off_ms),
        "store_calls_per_check_us": round(c.median(per_check) or 0, 1),
        "of_which_config_key_us": round(c.median(key_per_check) or 0, 1),
        "wrong_results": wrong,
    }


def bench_restart(iso: c.Isolation, n: int, store: Path, server: str) -> dict[str, Any]:
    ws = iso.workspace({"app.py": BIG[0]}, f"restart-{server}")
    path = ws / "app.py"
    with Service(settings(iso, store, server)) as before_restart:  # the kernel before the restart
        before_restart.check(path, before="")
    path.write_text(BIG[1])
    times: dict[str, list[float]] = {"on": [], "off": []}
    pulls: dict[str, list[int]] = {"on": [], "off": []}
    counter = PullCounter()
    with counter.installed():
        for round_ in range(n):
            for name in (("on", "off") if round_ % 2 else ("off", "on")):
                counter.pulls = 0
                with Service(settings(iso, store if name == "on" else None, server)) as restarted:
                    t0 = time.perf_counter()
                    report = restarted.check(path, before=BIG[0])
                    times[name].append(c.ms(time.perf_counter() - t0))
                errors = [d for f in report.files for d in f.diagnostics
                          if d.severity == Severity.ERROR]
                assert len(errors) == 1, report  # the `+` on line 2,002, whichever side
                pulls[name].append(counter.pulls)
    on_ms, off_ms = c.median(times["on"]), c.median(times["off"])
    return {
        "n": n,
        "with_store_median_ms": on_ms,
        "without_store_median_ms": off_ms,
        "saved_ms": c.difference(off_ms, on_ms),
        "pulls_with_store": sorted(set(pulls["on"])),
        "pulls_without_store": sorted(set(pulls["off"])),
    }


def bench_size(files: int) -> dict[str, Any]:
    ten = diagnostics(10)
    with tempfile.TemporaryDirectory() as top:
        store = Store(Path(top) / "store.sqlite3", max_bytes=0)
        put_us: list[float] = []
        texts = [f"text of file {n}\n" * 40 for n in range(files)]
        for n, text in enumerate(texts):
            for server in ("ty", "ruff"):
                t0 = time.perf_counter()
                store.put_diagnostics(f"/ws/pkg/module_{n}.py", text, server, ten)
                put_us.append((time.perf_counter() - t0) * 1e6)
        t0 = time.perf_counter()
        store.flush(120)
        drained_ms = c.ms(time.perf_counter() - t0)
        get_us: list[float] = []
        for n, text in enumerate(texts[:500]):
            t0 = time.perf_counter()
            hit = store.get_diagnostics(f"/ws/pkg/module_{n}.py", text, "ty")
            get_us.append((time.perf_counter() - t0) * 1e6)
            assert hit is not None and len(hit.diagnostics) == 10
        store.flush(120)
        info = store.info()
        size = sum(p.stat().st_size for p in Path(top).iterdir())
        store.close()
        t0 = time.perf_counter()
        Store(Path(top) / "store.sqlite3").close()  # a kernel's first use opens and checks it
        open_ms = c.ms(time.perf_counter() - t0)
    return {
        "files": files, "servers": 2, "diagnostics_per_answer": 10,
        "put_caller_median_us": round(c.median(put_us) or 0, 1),
        "writer_drain_after_puts_ms": drained_ms,
        "get_median_us": round(c.median(get_us) or 0, 1),
        "open_ms": open_ms,
        "rows": info.rows, "used_bytes": info.bytes, "file_bytes_with_wal": size,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=40, help="timed checks per side")
    parser.add_argument("--restarts", type=int, default=8, help="restarts per side")
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--servers", default="ty,basedpyright", help="for the restart case")
    args = parser.parse_args()
    started = time.monotonic()
    result: dict[str, Any] = {"benchmark": "bench_store", "machine": c.machine()}
    iso = c.Isolation()
    try:
        store = iso.base / "store.sqlite3"
        result["check"] = bench_check(iso, args.n, store)
        result["restart"] = {
            server: bench_restart(iso, args.restarts, store, server)
            for server in args.servers.split(",") if server
        }
        result["size"] = bench_size(args.files)
    finally:
        result["leftover_processes"] = iso.leftovers()
        iso.close()
    result["elapsed_s"] = round(time.monotonic() - started, 1)
    c.emit("bench_store", result)
    return 0 if not result["leftover_processes"] and not result["check"]["wrong_results"] else 1


if __name__ == "__main__":
    sys.exit(main())
