"""A notebook in a home directory of 10,000+ files (issue 22, item 6): servers rooted at the
home with their file discovery bounded (`ServerSpec.plain`, what ipylsp sends there) vs the
same servers unbounded, and vs an empty root.

Run: ``.venv/bin/python benchmarks/bench_home.py [--reps 3] [--servers ty,ruff,basedpyright]``.
Prints one JSON object (also ``benchmarks/results/bench_home.json``).

The home is made once: ``miniconda3/lib/python3.X/site-packages`` holding copies of the
packages installed in this venv (not hidden: the worst case, a conda install at ``~``),
``data/`` with 1,500 CSV files, ``projects/`` with 300 small modules, and ``bad.py`` with an
undefined name. Per server and variant, a fresh raw client (`lsp_client.RawClient`, the
reference) with exactly the settings and initialization options ipylsp sends
(`resolver.plain_spec` for "bounded"): ``init_ms`` (spawn to initialized), ``diag_ms`` (didOpen to
the first diagnostics holding the error), ``rss_mb`` (the server's process tree, sampled).
Variants alternate, medians. Then ipylsp itself: a `Service` with ``directory`` = the home
checks ``bad.py`` with ty + ruff from cold (``first_check_ms``) and the servers' RSS; then
``projects/p0/bad.py``, two levels below (``below_check_ms``, ``below_codes``: ty answers it
from a server rooted at ``projects/p0``), and the servers' RSS and roots after both.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as c
from lsp_client import process_tree, tree_rss_kb

from ipylsp.model.settings import Settings
from ipylsp.servers import executables, python_env, registry
from ipylsp.service.runtime.resolver import plain_spec
from ipylsp.service.service import Service

BAD = "import os\nprint(undefined_name)\n"
FIXED = "import os\nprint(os.name)\n"
EXPECT = r"undefined_name"


def make_home(base: Path) -> Path:
    home = base / "home"
    packages = home / "miniconda3" / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
    site = Path(next(p for p in sys.path if p.endswith("site-packages")))
    target = packages / "site-packages"
    target.mkdir(parents=True)
    for entry in sorted(site.iterdir()):
        if entry.is_dir() and not entry.name.endswith(".dist-info") and entry.name != "__pycache__":
            shutil.copytree(entry, target / entry.name, symlinks=True,
                            ignore=shutil.ignore_patterns("__pycache__", "*.so"))
        if sum(1 for _ in target.rglob("*")) > 9000:
            break
    (home / "data").mkdir()
    for i in range(1500):
        (home / "data" / f"d{i}.csv").write_text("a,b\n1,2\n")
    for i in range(300):
        project = home / "projects" / f"p{i % 10}"
        project.mkdir(parents=True, exist_ok=True)
        (project / f"m{i}.py").write_text(f"x{i} = {i}\n")
    (home / "bad.py").write_text(BAD)
    home.chmod(0o700)
    return home


def reference(server_id: str, root: Path, bounded: bool) -> dict[str, Any]:
    spec = registry.get(server_id)
    assert spec is not None
    data = executables.data_dir(Settings())
    command = executables.resolve(spec, data).command
    assert command is not None, f"{server_id} is not installed: run scripts/bootstrap"
    if bounded:
        spec = plain_spec(spec)
    served = python_env.for_server(spec, root)
    client = c.reference_client(command, root, served)
    return c.run_reference(client, root / "bad.py", BAD, EXPECT, fixed=FIXED, rss=True)


def ipylsp_first_check(home: Path) -> dict[str, Any]:
    settings = Settings(language_servers={"python": ("ty", "ruff")}, directory=home)
    below = home / "projects" / "p0" / "bad.py"
    below.write_text(BAD)
    started = time.perf_counter()
    with Service(settings) as service:
        report = service.check(home / "bad.py", before="")
        took = c.ms(time.perf_counter() - started)
        codes = sorted(d.code or "" for f in report.files for d in f.diagnostics)
        pids = service.server_pids()
        rss = sum(tree_rss_kb(p) for p in pids) / 1024
        started = time.perf_counter()
        report = service.check(below, before="")
        below_took = c.ms(time.perf_counter() - started)
        below_codes = sorted(d.code or "" for f in report.files for d in f.diagnostics)
        below_unknown = [u.server_id for f in report.files for u in f.unknown]
        pids = service.server_pids()
        rss_after = sum(tree_rss_kb(p) for p in pids) / 1024
        roots = sorted({f"{r.server_id} {r.root}" for r in service.status()})
    return {"first_check_ms": took, "codes": codes, "servers_rss_mb": round(rss, 1),
            "below_check_ms": below_took, "below_codes": below_codes,
            "below_unknown": below_unknown, "servers_rss_mb_after_below": round(rss_after, 1),
            "roots": roots, "server_processes": sum(len(process_tree(p)) for p in pids)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--servers", default="ty,ruff,basedpyright")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="home-"))
    c.log("making the home ...")
    home = make_home(base)
    empty = base / "empty"
    empty.mkdir()
    (empty / "bad.py").write_text(BAD)
    files = sum(1 for p in home.rglob("*") if p.is_file())
    result: dict[str, Any] = {"machine": c.machine(), "reference": c.REFERENCE,
                              "home_files": files,
                              "home_py_files": sum(1 for _ in home.rglob("*.py")),
                              "servers": {}}
    for server_id in args.servers.split(","):
        runs: dict[str, list[dict[str, Any]]] = {"bounded": [], "unbounded": [], "empty": []}
        for rep in range(args.reps):
            order = [("bounded", home, True), ("unbounded", home, False), ("empty", empty, True)]
            for name, root, bounded in order if rep % 2 == 0 else order[::-1]:
                c.log(f"{server_id} {name} #{rep + 1}")
                runs[name].append(reference(server_id, root, bounded))
        result["servers"][server_id] = {
            name: {key: c.median([r.get(key) for r in rows])
                   for key in ("init_ms", "diag_ms", "rss_mb")}
            | {"errors": [r["error"] for r in rows if r.get("error")]}
            for name, rows in runs.items()
        }
        bounded, unbounded = (result["servers"][server_id][k] for k in ("bounded", "unbounded"))
        result["servers"][server_id]["diag_ratio_bounded_vs_unbounded"] = c.ratio(
            bounded["diag_ms"], unbounded["diag_ms"])
    result["ipylsp_ty_ruff_at_home"] = ipylsp_first_check(home)
    c.emit("bench_home", result)


if __name__ == "__main__":
    main()
