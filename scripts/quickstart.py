#!/usr/bin/env python3
"""Run notebooks/quickstart.ipynb headless and print what its cells output.

    .venv/bin/python scripts/quickstart.py [--notebook PATH] [--keep]

The notebook runs on a real ipykernel of this Python (nbclient), with its working directory in a
temporary copy of a small workspace (a git repository: a README and a pyproject.toml), so nothing is
written to the checkout. Every code cell is printed with the `text/plain` of its outputs
(streams, results, displays; errors with their traceback). The Python servers are the embedded
default, ty + ruff from PyPI, so no node is needed.

Exit status: 0 when every cell ran and the notebook showed a `<diagnostics>` report, a
"fixed" line and a cell's code checked before it ran; 1 otherwise (a cell raised, the kernel
died, or a report is missing); 2 when the notebook cannot be run at all (nbclient or ipykernel
missing).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
NOTEBOOK = REPO / "notebooks" / "quickstart.ipynb"

# The small workspace the notebook runs in (copied into a temporary directory, then git init).
WORKSPACE = {
    "README.md": "A small workspace for the ipylsp quickstart.\n",
    "pyproject.toml": '[project]\nname = "quickstart-shop"\nversion = "0.1.0"\n',
}
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def make_workspace(top: Path) -> Path:
    ws = top / "workspace"
    ws.mkdir()
    for name, text in WORKSPACE.items():
        (ws / name).write_text(text)
    git = ["git", "-c", "user.name=quickstart", "-c", "user.email=quickstart@localhost"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "workspace"]):
        subprocess.run([*git, *args], cwd=ws, check=True, capture_output=True)
    return ws


def kernel_dir(top: Path) -> Path:
    """A "python3" kernelspec that runs this very interpreter (the venv's ipykernel)."""
    spec = top / "kernels" / "python3"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (ipylsp quickstart)",
        "language": "python",
    }))
    return spec.parent


def output_text(output: Any) -> str:
    kind = output.get("output_type")
    if kind == "stream":
        return str(output.get("text", ""))
    if kind in ("display_data", "execute_result"):
        return str(output.get("data", {}).get("text/plain", "")) + "\n"
    if kind == "error":
        return ANSI.sub("", "\n".join(output.get("traceback", []))) + "\n"
    return ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notebook", type=Path, default=NOTEBOOK)
    parser.add_argument("--keep", action="store_true", help="keep the temporary workspace")
    parser.add_argument("--timeout", type=int, default=180, help="seconds per cell")
    args = parser.parse_args(argv)
    try:
        import nbformat
        from jupyter_client.kernelspec import KernelSpecManager
        from jupyter_client.manager import AsyncKernelManager
        from nbclient import NotebookClient
        from nbclient.exceptions import CellExecutionError, DeadKernelError
        from traitlets import default
    except ImportError as exc:
        print(f"quickstart: {exc.name} is missing: run scripts/bootstrap", file=sys.stderr)
        return 2

    from ipylsp.private import scratch_dir

    # below no directory another user can write to: ipylsp roots no server under a shared /tmp
    top = scratch_dir("ipylsp-quickstart-", Path(__file__).resolve().parent.parent / ".cache")
    ws = make_workspace(top)
    specs = kernel_dir(top)

    class Manager(AsyncKernelManager):  # type: ignore[misc]
        @default("kernel_spec_manager")
        def _specs(self) -> KernelSpecManager:
            return KernelSpecManager(kernel_dirs=[str(specs)])

    nb = nbformat.read(args.notebook, as_version=4)
    client = NotebookClient(
        nb,
        kernel_name="python3",
        kernel_manager_class=Manager,
        timeout=args.timeout,
        resources={"metadata": {"path": str(ws)}},
    )
    log = top / "kernel.log"
    env = {**os.environ, "IPYTHONDIR": str(top / "ipython"), "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
    print(f"quickstart: running {args.notebook.name} in {ws}", flush=True)
    failure = ""
    try:
        with open(log, "wb") as kernel_stderr:
            client.execute(env=env, stderr=kernel_stderr)
    except CellExecutionError as exc:
        failure = f"a cell raised: {ANSI.sub('', str(exc).strip().splitlines()[-1])}"
    except DeadKernelError as exc:
        failure = f"the kernel died: {exc}"
    except Exception as exc:  # a kernel that cannot start, a timeout, ...
        failure = f"{type(exc).__name__}: {exc}"

    shown = []
    for index, cell in enumerate(c for c in nb.cells if c.cell_type == "code"):
        text = "".join(output_text(o) for o in cell.get("outputs", []))
        shown.append(text)
        print(f"\n--- [{index + 1}] {cell.source.splitlines()[0] if cell.source else ''}")
        print(textwrap.indent(text.rstrip("\n"), "    ") if text.strip() else "    (no output)")
    everything = "\n".join(shown)
    if not failure and "<diagnostics" not in everything:
        failure = "no <diagnostics> report in the outputs"
    if not failure and not re.search(r"^fixed \d+ ", everything, re.MULTILINE):
        failure = 'no "fixed ..." line in the outputs'
    if not failure and '<diagnostics file="cell [ ]">' not in everything:
        failure = "no report of a cell's code in the outputs (%lsp check_cell)"

    if failure:
        print(f"\nquickstart: FAILED: {failure}", file=sys.stderr)
        tail = log.read_text(errors="replace").strip().splitlines()[-20:] if log.exists() else []
        if tail:
            print("kernel log (last lines):\n" + "\n".join(tail), file=sys.stderr)
    else:
        print("\nquickstart: ok (the broken write was reported, the fix said what it fixed, "
              "and a cell's code was checked before it ran)")
    if args.keep:
        print(f"quickstart: kept {top}")
    else:
        shutil.rmtree(top, ignore_errors=True)
    return 1 if failure else 0


if __name__ == "__main__":
    sys.exit(main())
