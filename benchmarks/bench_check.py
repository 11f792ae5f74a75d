"""End-to-end ``Service.check`` with a baseline vs a plain diagnostics pull on a warm server.

Issue 4. Run: ``.venv/bin/python benchmarks/bench_check.py [--n 30] [--servers ty,pyright]``.
Prints one JSON object (also written to ``benchmarks/results/bench_check.json``).

Per server (ty, pyright), on one temporary git workspace, with three warm servers of that kind:

- ``raw``: the raw reference client (``lsp_client.RawClient`` on its own ``LoopThread``), timed
  from the calling thread around one ``didChange`` and the first diagnostics answer for it;
  ``raw_in_loop`` is the same timed inside its loop.
- ``plain``: ipylsp's own ``LanguageClient`` on a ``BackgroundLoop`` (the same
  loop-thread machinery ``Service`` uses), timed from the calling thread around
  ``loop.run(client.diagnostics(path, text))`` with the text alternating between two versions:
  one ``didChange`` and one pull (the floor any check has to pay). ``plain_in_loop`` is the same
  call timed inside the loop (without the thread hand-over).
- ``baseline``: the file is written, then ``check(path, before=V)`` with ``V`` differing from the
  text the server last saw, so ipylsp needs a baseline round trip (``didChange(V)`` + pull) before
  the new text's (``didChange`` + ``didSave`` + pull), then the delta.
- ``roll_forward``: the file is written, then ``check(path)``: the baseline is the text and result
  of the previous check (known), so one round trip, then the delta.

The four cases are interleaved (rotating order), ``n`` timed calls each, medians. Every result is
checked (the introduced/fixed counts expected from the texts), so a fast wrong answer shows.
``*_wire_median_ms`` is the span from the first document notification written to the last answer
read (`_common.WireClock`); wall minus wire is ipylsp's own cost.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as c
from lsp_client import Diagnostics, LoopThread

from ipylsp.lsp.client import LanguageClient
from ipylsp.model.diagnostics import Report, Severity
from ipylsp.model.settings import Settings
from ipylsp.servers import executables, languages, python_env, registry, roots
from ipylsp.service.runtime.loop import BackgroundLoop

HEAD = '''"""A module with a few functions."""

from __future__ import annotations


def double(value: int) -> int:
    return value * 2


def greet(name: str) -> str:
    return "hello " + name


'''
ONE = HEAD + 'x: int = "s"\n'  # one error
TWO = HEAD + 'x: int = "s"\ny: str = double(2)\n'  # two errors
TEXTS = (ONE, TWO)


def any_answer(diagnostics: Diagnostics) -> bool:
    """The raw client takes the first answer for the new text, as `LanguageClient` does."""
    return True


def error_count(report: Report, attr: str) -> int:
    return sum(1 for f in report.files for d in getattr(f, attr) if d.severity is Severity.ERROR)


def bench(iso: c.Isolation, server: str, n: int, warmup: int) -> dict[str, Any]:
    spec = registry.get(server)
    assert spec is not None
    resolution = executables.resolve(spec, iso.data_dir)
    if resolution.command is None:
        return {"missing": resolution.reason}
    ws = iso.workspace({"mod.py": ONE}, f"check-{server}")
    path = ws / "mod.py"
    root = roots.find_root(path, spec.root_markers, git_worktree=ws)
    final = python_env.for_server(spec, root, ceiling=ws)
    language_id = languages.language_id(path) or "python"
    settings = Settings(language_servers={"python": (server,)}, data_dir=iso.data_dir)

    loop = BackgroundLoop("bench-plain")
    client = LanguageClient(final, root, resolution.command)
    clock = c.WireClock()
    raw = c.reference_client(resolution.command, root, final)
    raw_loop = LoopThread()
    times: dict[str, list[float]] = {
        k: [] for k in ("raw", "raw_in_loop", "plain", "plain_in_loop", "baseline", "roll_forward")
    }
    wire: dict[str, list[float | None]] = {k: [] for k in ("plain", "baseline", "roll_forward")}
    wrong: dict[str, int] = {k: 0 for k in ("raw", "plain", "baseline", "roll_forward")}

    def raw_pull(text: str) -> tuple[float, int]:
        seconds, _, diags = raw_loop.run(raw.edit(path, text, any_answer, 30, language_id), 60)
        return seconds, sum(1 for d in diags if d.get("severity") == 1)

    async def plain_pull(text: str) -> tuple[float, int]:
        start = time.monotonic()
        _, diags = await client.diagnostics(path, text, language_id, deadline=start + 30)
        return time.monotonic() - start, sum(1 for d in diags if d.severity is Severity.ERROR)

    try:
        c.log(f"{server}: warming the three servers")
        loop.run(client.start(60), 90)
        raw_loop.run(raw.start(60), 90)
        for k in range(warmup + 1):
            loop.run(plain_pull(TEXTS[k % 2] if k < warmup else ONE), 60)
            raw_pull(TEXTS[k % 2] if k < warmup else ONE)
        with c.closing_service(settings) as service:
            service.check(path)
            for k in range(warmup):
                path.write_text(TEXTS[(k + 1) % 2] if k < warmup - 1 else ONE)
                service.check(path)
            plain_i = 0  # the plain and raw clients' documents hold ONE
            raw_i = 0
            svc_i = 0  # the service's last known text is ONE
            c.log(f"{server}: {n} timed calls per case, interleaved")
            for i in range(n):
                cases = ("raw", "plain", "baseline", "roll_forward")
                shift = i % 4
                for case in cases[shift:] + cases[:shift]:
                    if case == "raw":
                        raw_i += 1
                        text = TEXTS[raw_i % 2]
                        start = time.monotonic()
                        inner, count = raw_pull(text)
                        times["raw"].append(c.ms(time.monotonic() - start))
                        times["raw_in_loop"].append(c.ms(inner))
                        wrong["raw"] += count != (1 if text == ONE else 2)
                        continue
                    if case == "plain":
                        plain_i += 1
                        text = TEXTS[plain_i % 2]
                        clock.reset()
                        start = time.monotonic()
                        inner, count = loop.run(plain_pull(text), 60)
                        times["plain"].append(c.ms(time.monotonic() - start))
                        times["plain_in_loop"].append(c.ms(inner))
                        wire["plain"].append(clock.wire_ms())
                        wrong["plain"] += count != (1 if text == ONE else 2)
                        continue
                    previous = TEXTS[svc_i % 2]
                    svc_i += 1
                    text = TEXTS[svc_i % 2]
                    path.write_text(text)
                    clock.reset()
                    if case == "baseline":
                        # a before-text the server has not seen: the baseline needs a round trip
                        before = previous + f"# edited elsewhere ({i})\n"
                        start = time.monotonic()
                        report = service.check(path, before=before)
                    else:
                        start = time.monotonic()
                        report = service.check(path)
                    times[case].append(c.ms(time.monotonic() - start))
                    wire[case].append(clock.wire_ms())
                    expected = (1, 0) if text == TWO else (0, 1)  # (introduced, fixed)
                    got = (error_count(report, "diagnostics"), error_count(report, "fixed"))
                    wrong[case] += got != expected or report.has_unknown
    finally:
        clock.close()
        try:
            loop.run(client.stop(), 30)
            raw_loop.run(raw.stop(), 30)
        finally:
            loop.stop()
            raw_loop.close()
    medians = {k: c.median(v) for k, v in times.items()}
    wires = {k: c.median(v) for k, v in wire.items()}
    return {
        "command": list(resolution.command),
        "n": n,
        "warmup": warmup,
        "median_ms": medians,
        "wire_median_ms": wires,
        "own_median_ms": {
            k: round(medians[k] - wires[k], 3)
            for k in wires
            if medians[k] is not None and wires[k] is not None
        },
        "ratio_baseline_vs_plain": c.ratio(medians["baseline"], medians["plain"]),
        "ratio_roll_forward_vs_plain": c.ratio(medians["roll_forward"], medians["plain"]),
        **{
            f"ratio_{k}_vs_raw": c.ratio(medians[k], medians["raw"])
            for k in ("plain", "baseline", "roll_forward")
        },
        "wrong_results": wrong,
        "times_ms": times,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=30, help="timed calls per case")
    parser.add_argument("--servers", default="ty,pyright")
    parser.add_argument("--warmup", type=int, default=30, help="untimed changes per server first")
    args = parser.parse_args()
    result: dict[str, Any] = {"benchmark": "bench_check", "machine": c.machine()}
    with c.isolated_run("bench_check", result) as iso:
        result["servers"] = {
            s: bench(iso, s, args.n, args.warmup) for s in args.servers.split(",") if s
        }
    return c.exit_status(result)


if __name__ == "__main__":
    sys.exit(main())
