"""The marks the editors draw, asked of a real ipykernel the way the lab extension asks: a
silent execute request whose user expression calls `ipylsp.ipython.marks` (schema
ipylsp.marks/1). Cells carry JupyterLab's cell ids; real ty and ruff check them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jupyter_core.utils import run_sync

from ipylsp.analysis.cells.marks import MIME_TYPE, SCHEMA
from tests.contracts import validate_marks
from tests.test_cells_kernel import CellKernel, ours, payload
from tests.test_ipython_kernel import TY_RUFF, kernel_dir_for, seed_workspace

pytestmark = [pytest.mark.real, pytest.mark.timeout(180)]

MODULE = "__import__('ipylsp.ipython.marks', fromlist=['marks'])"
"""What the lab extension's expressions call (labextension/src/kernel.ts)."""


def ask(kernel: CellKernel, expression: str) -> dict[str, Any]:
    """A silent execute request with one user expression; its ipylsp.marks/1 payload."""
    kc = kernel.client.kc
    assert kc is not None
    msg_id = kc.execute("", silent=True, store_history=False,
                        user_expressions={"marks": expression})
    while True:
        reply = run_sync(kc.get_shell_msg)(timeout=60)
        if reply["parent_header"].get("msg_id") == msg_id:
            break
    value = reply["content"]["user_expressions"]["marks"]
    assert value["status"] == "ok", value
    payload = value["data"][MIME_TYPE]
    assert isinstance(payload, dict) and payload["schema"] == SCHEMA
    validate_marks(payload)
    return payload


def marks(kernel: CellKernel, token: str = "", since: int = 0) -> dict[str, Any]:
    return ask(kernel, f"{MODULE}.marks({token!r}, {since})")


def where(payload: dict[str, Any]) -> dict[str | None, list[tuple[int, int, int, int, str]]]:
    """Per cell id: each mark's 1-based range and code."""
    return {c["cell_id"]: [(d["line"], d["column"], d["end_line"], d["end_column"], d["code"])
                           for d in c["diagnostics"]] for c in payload["cells"]}


@pytest.fixture
def kernel(tmp_path: Path) -> Iterator[CellKernel]:
    ws = seed_workspace(tmp_path)
    with CellKernel(kernel_dir_for(tmp_path), ws) as k:
        yield k


GUARDED = (f"{MODULE}.marks('', 0) if 'ipylsp.ipython.extension' in __import__('sys').modules"
           " else None")
"""What the lab extension sends: a kernel that never loaded ipylsp imports nothing of it."""


def test_no_ipylsp_no_marks(kernel: CellKernel) -> None:
    """A kernel that did not load ipylsp answers that it has nothing to draw; asked the way
    the extension asks, it answers None and imports nothing."""
    kernel.run("x = 1")
    kc = kernel.client.kc
    assert kc is not None
    msg_id = kc.execute("", silent=True, store_history=False,
                        user_expressions={"marks": GUARDED, "imported": "'ipylsp' in "
                                          "__import__('sys').modules"})
    while True:
        reply = run_sync(kc.get_shell_msg)(timeout=60)
        if reply["parent_header"].get("msg_id") == msg_id:
            break
    answers = reply["content"]["user_expressions"]
    assert answers["marks"]["data"] == {"text/plain": "None"}
    assert answers["imported"]["data"] == {"text/plain": "False"}
    payload = marks(kernel)
    assert (payload["state"], payload["cells"]) == ("not loaded", [])


def test_every_current_problem_by_cell_id_and_only_what_changed(kernel: CellKernel) -> None:
    kernel.run("%load_ext ipylsp")
    kernel.run(TY_RUFF)
    assert marks(kernel)["state"] == "ready"  # the %load_ext cell was checked
    kernel.run("import ipylsp\n_ = ipylsp.get_service().start('warm.py')")
    define = kernel.run("def f(x: int) -> int:\n    return x", cell_id="define")
    call = kernel.run("y = 1\nf('s')", cell_id="call")
    (entry,) = payload(call)["files"]  # the report under the cell names it by its id
    assert (entry["cell"], entry["cell_id"]) == (call.count, "call")
    first = marks(kernel)
    assert first["complete"] is True
    assert where(first)["define"] == []
    assert where(first)["call"] == [(2, 3, 2, 6, "invalid-argument-type")]
    (entry,) = [c for c in first["cells"] if c["cell_id"] == "call"]
    assert (entry["count"], entry["source"]) == (call.count, "y = 1\nf('s')")
    (mark,) = entry["diagnostics"]
    assert mark["message"].startswith("Argument to function `f` is incorrect")
    assert (mark["severity"], mark["source"], mark["server"]) == ("error", "ty", "ty")
    token, generation = first["token"], first["generation"]

    # nothing changed since: nothing listed; an unchanged re-run keeps the marks (listed
    # again for its new execution count)
    assert marks(kernel, token, generation)["cells"] == []
    rerun = kernel.run("y = 1\nf('s')", cell_id="call")
    again = marks(kernel, token, generation)
    assert again["complete"] is False
    assert where(again) == {"call": [(2, 3, 2, 6, "invalid-argument-type")]}
    assert again["cells"][0]["count"] == rerun.count != call.count
    generation = again["generation"]

    # the fix, in another cell: the call's marks go, and only what changed is listed
    kernel.run("def f(x: str) -> str:\n    return x", cell_id="define")
    fixed = marks(kernel, token, generation)
    assert where(fixed) == {"define": [], "call": []}
    assert define.count is not None


def test_preflight_marks_the_cell_without_running_it(kernel: CellKernel) -> None:
    kernel.run("%load_ext ipylsp")
    kernel.run(TY_RUFF)
    kernel.run("import ipylsp\n_ = ipylsp.get_service().start('warm.py')")
    kernel.run("def f(x: int) -> int:\n    return x", cell_id="define")
    kernel.run("f(1)", cell_id="call")
    before = marks(kernel)

    checked = ask(kernel, f"{MODULE}.preflight('call', \"print('ok')\\nf('s')\")")
    assert checked["preflight"] is True
    assert where(checked) == {"call": [(2, 3, 2, 6, "invalid-argument-type")]}
    assert checked["cells"][0]["source"] == "print('ok')\nf('s')"

    # nothing was recorded as run: the marks and the next check are as before
    after = marks(kernel)
    assert (after["generation"], where(after)) == (before["generation"], where(before))
    assert where(after)["call"] == []
    # and running the text checked before reports it as the cell's own (its baseline was
    # not taken from the preflight)
    ran = kernel.run("print('ok')\nf('s')", cell_id="call")
    assert [line.split(" Argument")[0] for line in ours(ran)[0].splitlines()[1:2]] == [
        "ERROR [2:3]"]


