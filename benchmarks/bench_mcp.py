"""What MCP adds to ipylsp's answers (issue 11).

Run: ``.venv/bin/python benchmarks/bench_mcp.py [--n 30] [--cold 5]``. Prints one JSON object
(also ``benchmarks/results/bench_mcp.json``).

- ``warm``: one ``ipylsp mcp`` process (warm ty + ruff) driven by the SDK's own stdio client,
  and in this process a ``Service`` with the same settings on a copy of the workspace. Each
  round writes the same text (alternating a broken and a fixed version) to every file, then
  times, interleaved in rotating order: ``mcp`` (``tools/call lsp_check``, timed inside the
  client's event loop: request written to answer parsed), ``toolbox`` (``Toolbox.call`` in
  process: the tool's own work) and ``service`` (``Service.check`` in process). Every answer
  is checked (the broken text reports its error, the fixed one none). The issue's target:
  ``mcp`` - ``service`` <= 5 ms at the median.
- ``cold``: a first answer from nothing, alternating: ``ipylsp mcp`` (ty only, as the raw
  client) spawned, MCP ``initialize``, ``lsp_check`` of a file with one error, answer received;
  against the raw client (``lsp_client.py``, in this process) spawning ty, initializing and
  receiving the first diagnostics (``init_ms + diag_ms``; ``probe_*`` in the JSON).
  ``mcp_initialize_ms`` is the part before ty starts: the interpreter, ipylsp's and the SDK's
  imports, the MCP handshake.
  ``mcp_check_after_idle``: the same first ``lsp_check`` when the client calls ``IDLE`` s
  after ``initialize`` (as agents do), once ``ipylsp mcp``'s warm-up imports have run.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as c
import anyio
from anyio.from_thread import BlockingPortal, start_blocking_portal
from bench_servers import PY_TYPE, prepared
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from ipylsp.agent import Toolbox
from ipylsp.model.settings import Settings
from ipylsp.servers import executables, registry
from ipylsp.service.check.file_reports import error_count

BROKEN = "def total(xs: list[int]) -> int:\n    return sum(xs)\n\nprint(totl)\n"
FIXED = "def total(xs: list[int]) -> int:\n    return sum(xs)\n\nprint(total([1]))\n"
IPYLSP = Path(sys.executable).parent / "ipylsp"
IDLE = 2.0
"""Seconds between `initialize` and the first call in the `mcp_check_after_idle` runs."""


def mcp_params(root: Path, data_dir: Path, servers: list[str], base: Path) -> StdioServerParameters:
    config = base / f"ipylsp-{'-'.join(servers)}.json"
    config.write_text(json.dumps({"IPyLSP": {"language_servers": {"python": servers}}}))
    env = {k: v for k, v in os.environ.items()
           if k.startswith(("XDG_", "GO", "npm_", "IPYLSP_")) or k in ("HOME", "TMPDIR")}
    return StdioServerParameters(
        command=str(IPYLSP),
        args=["--data-dir", str(data_dir), "--config", str(config), "mcp", "--root", str(root)],
        env=env,
    )


async def timed_call(session: ClientSession, path: str) -> tuple[float, str, bool]:
    start = time.perf_counter()
    result = await session.call_tool("lsp_check", {"path": path})
    elapsed = time.perf_counter() - start
    text = result.content[0].text if result.content and result.content[0].type == "text" else ""
    return elapsed, text, result.is_error


def warm(n: int, iso: c.Isolation) -> dict[str, Any]:
    served = iso.workspace({"app.py": FIXED}, "served")
    local = iso.workspace({"tool.py": FIXED, "plain.py": FIXED}, "local")
    settings = Settings(language_servers={"python": ("ty", "ruff")}, data_dir=iso.data_dir)
    params = mcp_params(served, iso.data_dir, ["ty", "ruff"], iso.base)
    times: dict[str, list[float]] = {"mcp": [], "toolbox": [], "service": []}
    with (
        c.closing_service(settings) as service,
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(stdio_client(params)) as (read, write),
        portal.wrap_async_context_manager(ClientSession(read, write)) as session,
    ):
        portal.call(session.initialize)
        box = Toolbox(service, local)

        def over_mcp(portal: BlockingPortal = portal) -> tuple[float, int]:
            elapsed, text, is_error = portal.call(timed_call, session, "app.py")
            assert not is_error, text
            return elapsed, text.count("\nERROR [")

        def toolbox() -> tuple[float, int]:
            start = time.perf_counter()
            answer = box.call("lsp_check", {"path": "tool.py"})
            elapsed = time.perf_counter() - start
            assert answer.ok, answer.text
            return elapsed, answer.text.count("\nERROR [")

        def in_service() -> tuple[float, int]:
            start = time.perf_counter()
            report = service.check(local / "plain.py")
            return time.perf_counter() - start, error_count(report)

        cases = {"mcp": over_mcp, "toolbox": toolbox, "service": in_service}
        files = (served / "app.py", local / "tool.py", local / "plain.py")
        for i in range(-4, n):  # 4 untimed rounds: servers started, baselines known
            text = BROKEN if i % 2 == 0 else FIXED
            expected = 1 if text is BROKEN else 0
            for path in files:
                path.write_text(text)
            order = list(cases)[i % 3:] + list(cases)[: i % 3]
            for name in order:
                elapsed, found = cases[name]()
                assert found == expected, (name, found, expected)
                if i >= 0:
                    times[name].append(elapsed)
    medians = {name: c.median([c.ms(t) for t in values]) for name, values in times.items()}
    overhead = round(medians["mcp"] - medians["service"], 2)  # type: ignore[operator]
    return {
        "n": n,
        "servers": ["ty", "ruff"],
        "median_ms": medians,
        "mcp_overhead_ms": {
            "vs_toolbox": round(medians["mcp"] - medians["toolbox"], 2),  # type: ignore[operator]
            "vs_service": overhead,
        },
        "meets_target": overhead <= 5.0,
        "ratio_mcp_to_service": c.ratio(medians["mcp"], medians["service"]),
    }


async def cold_mcp(params: StdioServerParameters, path: str, idle: float = 0.0
                   ) -> dict[str, Any]:
    start = time.perf_counter()
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        initialized = time.perf_counter()
        if idle:  # a client that calls later than at once: the server's warm-up has run
            await anyio.sleep(idle)
            initialized = time.perf_counter()
        result = await session.call_tool("lsp_check", {"path": path})
        answered = time.perf_counter()
        text = result.content[0].text if result.content[0].type == "text" else ""
    return {
        "first_answer_ms": c.ms(answered - start),
        "mcp_initialize_ms": c.ms(initialized - start),
        "check_ms": c.ms(answered - initialized),
        "has_error": "ERROR [" in text and not result.is_error,
    }


def cold_probe(iso: c.Isolation, command: tuple[str, ...]) -> dict[str, Any]:
    """The raw client: spawn ty, initialize, first diagnostics holding the error."""
    spec = registry.get("ty")
    assert spec is not None
    root, path, final = prepared(spec, PY_TYPE, iso)
    res = c.run_reference(c.reference_client(command, root, final), path, PY_TYPE.broken,
                          PY_TYPE.expect)
    init, diag = res["init_ms"], res["diag_ms"]
    return {"first_answer_ms": None if init is None or diag is None else round(init + diag, 3),
            "init_ms": init, "diag_ms": diag}


def cold(n: int, iso: c.Isolation) -> dict[str, Any]:
    spec = registry.get("ty")
    assert spec is not None
    command = executables.resolve(spec, iso.data_dir).command
    assert command is not None, "ty is not installed"
    rows: dict[str, list[dict[str, Any]]] = {"mcp": [], "mcp_idle": [], "probe": []}
    for i in range(n):
        for who in (("mcp", "probe") if i % 2 == 0 else ("probe", "mcp")):
            if who == "probe":
                rows["probe"].append(cold_probe(iso, command))
                continue
            root = iso.workspace({PY_TYPE.file: PY_TYPE.broken, **PY_TYPE.extra}, "cold")
            params = mcp_params(root, iso.data_dir, ["ty"], iso.base)
            rows["mcp"].append(anyio.run(cold_mcp, params, PY_TYPE.file))
            rows["mcp_idle"].append(anyio.run(cold_mcp, params, PY_TYPE.file, IDLE))
    assert all(r["has_error"] for r in rows["mcp"] + rows["mcp_idle"]), rows

    def med(who: str, key: str) -> float | None:
        return c.median([r[key] for r in rows[who]])

    return {
        "n": n,
        "server": "ty",
        "median_ms": {
            "mcp_first_answer": med("mcp", "first_answer_ms"),
            "mcp_initialize": med("mcp", "mcp_initialize_ms"),
            "mcp_check": med("mcp", "check_ms"),
            "mcp_check_after_idle": med("mcp_idle", "check_ms"),
            "probe_first_answer": med("probe", "first_answer_ms"),
            "probe_init": med("probe", "init_ms"),
            "probe_diag": med("probe", "diag_ms"),
        },
        "ratio_mcp_to_probe": c.ratio(med("mcp", "first_answer_ms"),
                                      med("probe", "first_answer_ms")),
        "runs": rows,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--n", type=int, default=30, help="warm rounds")
    parser.add_argument("--cold", type=int, default=5, help="cold starts of each side")
    args = parser.parse_args()
    result: dict[str, Any] = {"machine": c.machine()}
    with c.Isolation() as iso:
        c.log(f"warm: {args.n} rounds")
        result["warm"] = warm(args.n, iso)
        c.log(f"cold: {args.cold} starts each")
        result["cold"] = cold(args.cold, iso)
        result["leftover_processes"] = iso.leftovers()
    c.emit("bench_mcp", result)
    return 1 if result["leftover_processes"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
