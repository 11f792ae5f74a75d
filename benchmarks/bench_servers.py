"""Every installed language server, through ipylsp and through the raw client side by side.

Run: ``.venv/bin/python benchmarks/bench_servers.py [--n 3] [--only ty,gopls,...]``. Prints one
JSON object (also written to ``benchmarks/results/bench_servers.json``).

For each row of the registry the executable is resolved the way ipylsp does it
(`ipylsp.servers.executables.resolve`); missing servers are listed under ``missing`` with the
reason, and installed servers without a planted-error case here under ``no_case``. Each
installed server gets a tiny temporary git workspace with one planted error and its fix, and
N runs of each client, interleaved (alternating which goes first):

- ``init_ms``: spawn -> initialize answered. ipylsp: ``LanguageClient.start`` (spawn, initialize,
  ``initialized``, ``didChangeConfiguration``); raw client (``lsp_client.measure``): the same.
- ``diag_ms``: didOpen -> first diagnostics holding the planted error. ipylsp:
  ``LanguageClient.diagnostics(path, broken)`` — the diagnostics *for that document version* (the
  first version-tagged push, or a pull); the raw client instead waits until some push or pull
  holds the error. ``ipylsp_first_answer_has_error`` says whether ipylsp's one answer had it.
- ``clear_ms``: didChange with the fix -> diagnostics without the error (same two clients).
- ``rss_mb``: peak summed VmRSS of the server's process tree, sampled every 50 ms and at the
  end of each phase (`lsp_client.RssSampler`, both clients).

Both clients get exactly the same settings and initialization options (the registry row, with
the Python environment ipylsp hands over applied for Python servers), and neither sends didSave.
Servers run with a temporary HOME and caches; ``leftover_processes`` must be ``[]``.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as c

from ipylsp.lsp.client import ClientError, LanguageClient
from ipylsp.model.server_spec import ServerSpec
from ipylsp.servers import executables, languages, python_env, registry, roots


@dataclass(frozen=True)
class Case:
    """A workspace with one planted error (`file` holds `broken`; `fixed` removes the error)."""

    file: str
    broken: str
    fixed: str
    expect: str  # regex over a diagnostic's message (or its JSON, for the raw client)
    extra: dict[str, str] = field(default_factory=dict)


PY_TYPE = Case(
    "app.py",
    'def double(value: int) -> int:\n    return value * 2\n\n\nx: int = "s"\n',
    "def double(value: int) -> int:\n    return value * 2\n\n\nx: int = 1\n",
    r"assignable",
    {"pyproject.toml": '[project]\nname = "bench"\nversion = "0"\n'},
)
PY_LINT = Case(
    "app.py",
    "import os\n\nprint(os.sep, undefined_name)\n",
    "import os\n\nprint(os.sep, 'defined')\n",
    r"undefined_name",
    {"pyproject.toml": '[project]\nname = "bench"\nversion = "0"\n'},
)

HTML = "<!DOCTYPE html>\n<html><head><style>\n{style}\n</style></head><body></body></html>\n"

CASES: dict[str, Case] = {
    "ty": PY_TYPE,
    "pyright": PY_TYPE,
    "basedpyright": PY_TYPE,
    "pyrefly": PY_TYPE,
    "pylsp": PY_TYPE,
    "ruff": PY_LINT,
    "jedi-language-server": Case(
        "app.py",
        "def f(:\n    pass\n",
        "def f():\n    pass\n",
        r"invalid syntax|syntax",
    ),
    "typescript": Case(
        "src/index.ts",
        'export const x: number = "s";\n',
        "export const x: number = 1;\n",
        r"not assignable",
        {"tsconfig.json": '{"compilerOptions": {"strict": true}, "include": ["src"]}\n'},
    ),
    "typescript-language-server": Case(
        "src/index.ts",
        'export const x: number = "s";\n',
        "export const x: number = 1;\n",
        r"not assignable",
        {"tsconfig.json": '{"compilerOptions": {"strict": true}, "include": ["src"]}\n'},
    ),
    "clangd": Case(
        "main.c",
        "int main(void) {\n    return undefined_var;\n}\n",
        "int main(void) {\n    return 0;\n}\n",
        r"undeclared identifier",
        {"compile_flags.txt": "-std=c11\n"},
    ),
    "gopls": Case(
        "main.go",
        'package main\n\nfunc main() {\n\tvar x int = "s"\n\t_ = x\n}\n',
        "package main\n\nfunc main() {\n\tvar x int = 1\n\t_ = x\n}\n",
        r"cannot use",
        {"go.mod": "module example.com/bench\n\ngo 1.19\n"},
    ),
    "bash-language-server": Case(
        "run.sh",
        '#!/bin/bash\necho "$undefined_var"\n',
        '#!/bin/bash\nundefined_var=1\necho "$undefined_var"\n',
        r"referenced but not assigned",
    ),
    "yaml-language-server": Case(
        "config.yaml",
        "name: bench\nitems: [one, two\nother: 1\n",
        "name: bench\nitems: [one, two]\nother: 1\n",
        r".",  # any diagnostic: the broken flow sequence is the only problem in the file
    ),
    "vscode-json-language-server": Case(
        "data.json",
        '{\n  "a": 1,\n}\n',
        '{\n  "a": 1\n}\n',
        r"[Tt]railing comma",
    ),
    "vscode-css-language-server": Case(
        "style.css",
        "a {\n  color: red;\n",
        "a {\n  color: red;\n}\n",
        r"expected",
    ),
    "vscode-html-language-server": Case(
        "index.html",
        HTML.format(style="a { color: red;"),
        HTML.format(style="a { color: red; }"),
        r"expected",
    ),
    "dockerfile-language-server": Case(
        "Dockerfile",
        "FROM alpine:3\nRUNN echo hi\n",
        "FROM alpine:3\nRUN echo hi\n",
        r"[Uu]nknown instruction",
    ),
}


def prepared(spec: ServerSpec, case: Case, iso: c.Isolation) -> tuple[Path, Path, ServerSpec]:
    """(workspace root, file, final spec) — the root as the checker finds it."""
    ws = iso.workspace({case.file: case.broken, **case.extra}, spec.id.replace("/", "-"))
    path = ws / case.file
    root = roots.find_root(path, spec.root_markers, git_worktree=ws)
    final = python_env.for_server(spec, root, ceiling=ws)
    return root, path, final


def run_raw(
    spec: ServerSpec, command: tuple[str, ...], case: Case, iso: c.Isolation, timeout: float
) -> dict[str, Any]:
    root, path, final = prepared(spec, case, iso)
    res = c.run_reference(
        c.reference_client(command, root, final),
        path,
        case.broken,
        case.expect,
        fixed=case.fixed,
        language_id=languages.language_id(path) or "plaintext",
        timeout=timeout,
        rss=True,
    )
    return {
        "init_ms": res["init_ms"],
        "diag_ms": res["diag_ms"],
        "clear_ms": res["clear_ms"],
        "rss_mb": res.get("rss_mb"),
        "channel": res.get("diag_channel"),
        "error": res["error"],
        "first_messages": res.get("diag_messages"),
    }


async def _ipylsp_async(
    final: ServerSpec,
    command: tuple[str, ...],
    root: Path,
    path: Path,
    case: Case,
    timeout: float,
    sampler: c.RssSampler,
) -> dict[str, Any]:
    pattern = re.compile(case.expect, re.I | re.S)
    language_id = languages.language_id(path) or "plaintext"
    client = LanguageClient(final, root, command, request_timeout=timeout)
    out: dict[str, Any] = {}
    try:
        start = time.monotonic()
        starting = asyncio.ensure_future(client.start(timeout))
        while client.pid is None and not starting.done():
            await asyncio.sleep(0.001)
        sampler.pid = client.pid
        await starting
        out["init_ms"] = c.ms(time.monotonic() - start)
        sampler.sample()
        start = time.monotonic()
        _, diags = await client.diagnostics(
            path, case.broken, language_id, deadline=start + timeout
        )
        out["diag_ms"] = c.ms(time.monotonic() - start)
        out["first_answer_has_error"] = any(pattern.search(d.message) for d in diags)
        out["first_messages"] = [d.message[:120] for d in diags][:4]
        sampler.sample()
        start = time.monotonic()
        _, diags = await client.diagnostics(path, case.fixed, language_id, deadline=start + timeout)
        out["clear_ms"] = c.ms(time.monotonic() - start)
        out["fix_answer_clean"] = not any(pattern.search(d.message) for d in diags)
        sampler.sample()
        out["channel"] = "pull" if client.uses_pull else "push"
    except ClientError as exc:
        out["error"] = f"{exc.reason.value}: {exc.detail}"
    finally:
        await client.stop()
    return out


def run_ipylsp(
    spec: ServerSpec, command: tuple[str, ...], case: Case, iso: c.Isolation, timeout: float
) -> dict[str, Any]:
    root, path, final = prepared(spec, case, iso)
    sampler = c.RssSampler()
    try:
        out = asyncio.run(_ipylsp_async(final, command, root, path, case, timeout, sampler))
    finally:
        out_rss = sampler.stop()
    out["rss_mb"] = out_rss
    return out


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        key: c.median([r.get(key) for r in rows])
        for key in ("init_ms", "diag_ms", "clear_ms", "rss_mb")
    }


def bench_server(
    spec: ServerSpec, command: tuple[str, ...], iso: c.Isolation, n: int, timeout: float
) -> dict[str, Any]:
    case = CASES[spec.id]
    probe_rows: list[dict[str, Any]] = []
    ipylsp_rows: list[dict[str, Any]] = []
    for i in range(n):
        order = ("probe", "ipylsp") if i % 2 == 0 else ("ipylsp", "probe")
        for who in order:
            if who == "probe":
                probe_rows.append(run_raw(spec, command, case, iso, timeout))
            else:
                ipylsp_rows.append(run_ipylsp(spec, command, case, iso, timeout))
    probe, ours = summarize(probe_rows), summarize(ipylsp_rows)
    return {
        "command": list(command),
        "case": {"file": case.file, "expect": case.expect},
        "probe": probe,
        "ipylsp": ours,
        "ratio": {k: c.ratio(ours[k], probe[k]) for k in ("init_ms", "diag_ms", "clear_ms")},
        "channel": {"probe": probe_rows[0].get("channel"), "ipylsp": ipylsp_rows[0].get("channel")},
        "ipylsp_first_answer_has_error": all(r.get("first_answer_has_error") for r in ipylsp_rows),
        "ipylsp_fix_answer_clean": all(r.get("fix_answer_clean") for r in ipylsp_rows),
        "errors": sorted({str(r["error"]) for r in probe_rows + ipylsp_rows if r.get("error")}),
        "runs": {"probe": probe_rows, "ipylsp": ipylsp_rows},
    }


def table(servers: dict[str, Any]) -> list[str]:
    """A markdown table (also in the JSON, for the README)."""

    def cell(row: dict[str, Any], key: str) -> str:
        a, b = row["ipylsp"].get(key), row["probe"].get(key)

        def fmt(v: float | None) -> str:
            return "-" if v is None else f"{v:.0f}"

        return f"{fmt(a)} / {fmt(b)}"

    lines = [
        "| server | init ms | first diag ms | clear ms | RSS MB | channel | ipylsp answer ok |",
        "|---|---|---|---|---|---|---|",
    ]
    for sid, row in servers.items():
        ok = row["ipylsp_first_answer_has_error"] and row["ipylsp_fix_answer_clean"]
        lines.append(
            f"| {sid} | {cell(row, 'init_ms')} | {cell(row, 'diag_ms')} | {cell(row, 'clear_ms')} "
            f"| {cell(row, 'rss_mb')} | {row['channel']['ipylsp']} | {'yes' if ok else 'NO'} |"
        )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=3, help="runs per client and server")
    parser.add_argument("--only", default="", help="comma-separated server ids")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per phase")
    args = parser.parse_args()
    only = {s for s in args.only.split(",") if s}
    started = time.monotonic()
    result: dict[str, Any] = {
        "benchmark": "bench_servers",
        "machine": c.machine(),
        "reference": c.REFERENCE,
        "columns": "each cell: ipylsp / raw client (medians)",
    }
    iso = c.Isolation()
    servers: dict[str, Any] = {}
    missing: dict[str, str] = {}
    no_case: list[str] = []
    try:
        for spec in registry.all_specs():
            if only and spec.id not in only:
                continue
            resolution = executables.resolve(spec, iso.data_dir)
            if resolution.command is None:
                missing[spec.id] = resolution.reason
                continue
            if spec.id not in CASES:
                no_case.append(spec.id)
                continue
            c.log(f"{spec.id}: {args.n} runs per client")
            servers[spec.id] = bench_server(spec, resolution.command, iso, args.n, args.timeout)
            if resolution.warnings:
                servers[spec.id]["warnings"] = list(resolution.warnings)
    finally:
        result["leftover_processes"] = iso.leftovers()
        iso.close()
    result["table"] = table(servers)
    result["servers"] = servers
    result["missing"] = missing
    result["installed_without_case"] = no_case
    result["elapsed_s"] = round(time.monotonic() - started, 1)
    c.emit("bench_servers", result)
    return 0 if not result["leftover_processes"] else 1


if __name__ == "__main__":
    sys.exit(main())
