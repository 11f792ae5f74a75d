"""The cell check on real notebooks: a cell that ran without NameError is never reported as
using an undefined name.

Every code cell of this repository's notebooks (`notebooks/*.ipynb`) and of nbclient's test
notebooks (its sdist's `tests/files/*.ipynb`, for the installed nbclient version, cached by
`scripts/bootstrap` in the git-ignored `.cache/nbclient-notebooks/<version>/`; missing ones
FAIL with the command to run) runs on a real ipykernel through nbclient (`allow_errors`), one
kernel per notebook, in a fresh git worktree, between injected cells:

- first `%load_ext ipylsp`, the embedded default servers (ty + ruff), every severity shown,
  no caps;
- then a preflight check of a small file, which waits for the servers to start: the
  notebook's own cells are checked on warm servers, never cut by the first cells' budget;
- last, a cell that reads an undefined name: its NameError must be reported in that cell by
  both ty and ruff (the check really ran on this notebook, and no earlier cell hid it).

Then, for every code cell whose outputs hold no NameError, no undefined-name diagnostic
(`locate.UNDEFINED_NAME`) of any display's `application/vnd.ipylsp.diagnostics+json` is
located in it. A problem in an earlier cell is reported under a later cell's display with
the earlier cell's `cell` number: diagnostics are mapped to cells by execution count.

Every diagnostic the sweep saw is printed at the end of the module (`pytest -s`).
"""

from __future__ import annotations

import collections
import importlib.metadata
import importlib.util
import json
from pathlib import Path
from typing import Any

import nbformat
import pytest

from ipylsp.analysis.cells.attribution import UNDEFINED_NAME
from tests.real_servers import require
from tests.test_ipython_kernel import MIME, Kernel, kernel_dir_for, seed_workspace

REPO = Path(__file__).resolve().parent.parent
NBCLIENT_VERSION = importlib.metadata.version("nbclient")
NBCLIENT_NOTEBOOKS = REPO / ".cache" / "nbclient-notebooks" / NBCLIENT_VERSION
FETCH = "scripts/bootstrap --no-run"

SETUP = (
    "%load_ext ipylsp\n"
    '%config IPyLSP.language_servers = {"python": ["ty", "ruff"]}\n'
    '%config IPyLSP.severity = "all"\n'
    "%config IPyLSP.max_per_file = 1000\n"
    "%config IPyLSP.max_per_report = 1000\n"
    "%config IPyLSP.max_report_chars = 0"
)
WARM = "__import__('ipylsp').check('_ipylsp_warm.py', content='x = 1\\n');"
SENTINEL = "ipylsp_sweep_sentinel_name"

# nbclient's notebooks that are not run, and why (never silently: they are not collected, and
# `test_nbclient_notebooks_are_there` keeps this list true). Widget notebooks do run:
# ipywidgets is in the test extra.
SKIPPED = {
    "Autokill.ipynb": "kills its own kernel (os.kill(os.getpid(), SIGTERM))",
    "Interrupt.ipynb": "loops forever until the kernel is interrupted",
    "Parallel Execute A.ipynb": "waits for its twin notebook run in parallel, in a directory "
    "nbclient's test framework passes in NBEXECUTE_TEST_PARALLEL_TMPDIR",
    "Parallel Execute B.ipynb": "waits for its twin notebook run in parallel, in a directory "
    "nbclient's test framework passes in NBEXECUTE_TEST_PARALLEL_TMPDIR",
}

# Notebooks where ipylsp is known to break the rule: a strict xfail (it fails once fixed).
KNOWN: dict[str, str] = {}

SEEN: collections.Counter[tuple[str, str, str, str]] = collections.Counter()
"""(severity, code, source, message) of every diagnostic the sweep saw, over all notebooks."""
EXAMPLES: dict[tuple[str, str, str, str], list[str]] = collections.defaultdict(list)
CHECKED: list[tuple[str, int]] = []
"""(notebook, code cells checked) of every notebook run."""

pytestmark = pytest.mark.timeout(120)


def _ours() -> list[Path]:
    return sorted((REPO / "notebooks").glob("*.ipynb"))


def _nbclients() -> list[Path]:
    return sorted(NBCLIENT_NOTEBOOKS.glob("*.ipynb"))


def _params() -> list[Any]:
    params = [pytest.param(p, id=f"notebooks/{p.name}") for p in _ours()]
    for path in _nbclients():
        if path.name in SKIPPED:
            continue
        marks = []
        if path.name in KNOWN:
            marks.append(pytest.mark.xfail(reason=KNOWN[path.name], strict=True))
        params.append(pytest.param(path, id=f"nbclient/{path.name}", marks=marks))
    return params


def test_nbclient_notebooks_are_there() -> None:
    """Fails (never skips) when the cache is missing: the sweep would silently shrink."""
    found = {p.name for p in _nbclients()}
    assert found, (
        f"nbclient {NBCLIENT_VERSION}'s test notebooks are missing from {NBCLIENT_NOTEBOOKS} "
        f"(they come with nbclient's sdist, not its wheel): run {FETCH}"
    )
    named = {*SKIPPED, *KNOWN, "JupyterWidgets.ipynb", "Output.ipynb"}
    assert named <= found, sorted(named - found)  # the lists are not stale


def _reports(cell: dict[str, Any]) -> list[dict[str, Any]]:
    return [o["data"][MIME] for o in cell.get("outputs", [])
            if o["output_type"] in ("display_data", "update_display_data")
            and MIME in o.get("data", {})]


def _name_error(cell: dict[str, Any]) -> bool:
    return any(o["output_type"] == "error" and o.get("ename") == "NameError"
               for o in cell.get("outputs", []))


def _diagnostics_by_count(cells: list[Any]) -> dict[int, list[dict[str, Any]]]:
    """Every diagnostic of every report, by the execution count of the cell it is located in
    (the newest cell's and earlier cells' alike)."""
    found: dict[int, list[dict[str, Any]]] = collections.defaultdict(list)
    for cell in cells:
        for report in _reports(cell):
            for entry in report["files"]:
                if entry.get("cell") is None:
                    continue
                found[entry["cell"]].extend(entry["diagnostics"])
    return found


@pytest.fixture(scope="module", autouse=True)
def summary() -> Any:
    yield
    lines = [f"cells sweep: {len(CHECKED)} notebooks, {sum(n for _, n in CHECKED)} code cells "
             f"checked; {len(SKIPPED)} notebooks not run (reasons in SKIPPED)"]
    lines.append(f"diagnostics seen ({sum(SEEN.values())}, the sentinel's included):")
    for key, n in SEEN.most_common():
        severity, code, source, message = key
        lines.append(f"  {n:3d}x {severity} [{code}] ({source}) {message}")
        lines.extend(f"         at {where}" for where in EXAMPLES[key][:3])
    print("\n" + "\n".join(lines))


@pytest.mark.real
@pytest.mark.parametrize("path", _params())
def test_no_undefined_name_in_a_cell_that_ran_without_name_error(
    path: Path, tmp_path: Path
) -> None:
    require("ty")
    require("ruff")
    nb = nbformat.read(path, as_version=4)
    ws = seed_workspace(tmp_path)
    code = [c for c in nb.cells if c.cell_type == "code"]
    with Kernel(kernel_dir_for(tmp_path), ws, timeout=30) as k:
        cells = [nbformat.v4.new_code_cell(SETUP), nbformat.v4.new_code_cell(WARM), *code,
                 nbformat.v4.new_code_cell(SENTINEL)]
        k.nb.cells = cells
        for index, cell in enumerate(cells):
            k.client.execute_cell(cell, index)
    setup, warm, *ran, sentinel = cells
    assert not any(o["output_type"] == "error" for o in (*setup.outputs, *warm.outputs)), (
        setup.outputs, warm.outputs)
    by_count = _diagnostics_by_count(cells)
    source_of = {c.execution_count: c.source for c in cells if c.execution_count is not None}
    for count, found in by_count.items():
        for d in found:
            key = (d["severity"], str(d["code"]), str(d["source"]), d["message"].split("\n")[0])
            SEEN[key] += 1
            line = source_of[count].split("\n")[d["line"] - 1] if count in source_of else "?"
            EXAMPLES[key].append(f"{path.name} cell [{count}] {d['line']}:{d['column']}: "
                                 f"{line.strip()[:70]!r}")

    # the check ran on this notebook: the sentinel's NameError is reported in its cell
    assert _name_error(sentinel), sentinel.outputs
    codes = {d["code"] for d in by_count.get(sentinel.execution_count, [])}
    assert {"unresolved-reference", "F821"} <= codes, (sentinel.execution_count, dict(by_count))

    checked = [c for c in ran if c.execution_count is not None and not _name_error(c)]
    CHECKED.append((f"{path.parent.name}/{path.name}", len(checked)))
    wrong = {
        c.execution_count: (c.source, [d for d in by_count.get(c.execution_count, [])
                                       if d["code"] in UNDEFINED_NAME])
        for c in checked
    }
    wrong = {n: found for n, found in wrong.items() if found[1]}
    assert not wrong, json.dumps(wrong, indent=1)
