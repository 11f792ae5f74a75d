"""The real-kernel smoke test `scripts/test` also runs on every other Python we claim.

Beside the fast tests (`-m "not real"`), `.venv-3.10` and `.venv-3.13` run these real tests:
a real ipykernel of that interpreter, driven by nbclient (tests/test_ipython_kernel.py's
harness), loads ipylsp, and a `%%writefile` cell that writes a Python file with a type error
gets exactly the real ty server's report; and what the cells' runs disproved is demoted, each
Python its own way (`ipython/monitor.py`). They run in the whole suite of `.venv` too.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from tests.real_servers import require
from tests.test_ipython_kernel import (
    BAD,
    BAD_ERROR,
    MIME,
    TY_RUFF,
    Cell,
    Kernel,
    block,
    kernel_dir_for,
    seed_workspace,
)

pytestmark = [pytest.mark.real, pytest.mark.smoke, pytest.mark.timeout(180)]


def test_writefile_on_a_real_kernel_reports_the_ty_error(tmp_path: Path) -> None:
    require("ty")
    require("ruff")
    ws = seed_workspace(tmp_path)
    with Kernel(kernel_dir_for(tmp_path), ws) as kernel:
        # The kernel is this interpreter (kernel_dir_for: sys.executable), not the .venv's.
        version = kernel.run("import sys; print(sys.version_info[:2])")
        assert version.stdout == f"{tuple(sys.version_info[:2])}\n", version.outputs
        assert kernel.run("%load_ext ipylsp").outputs == []
        assert kernel.run(TY_RUFF).outputs == []
        cell = kernel.run(f"%%writefile wf.py\n{BAD}")
    assert cell.stdout == "Writing wf.py\n", cell.outputs
    assert cell.displays == [block("wf.py", BAD_ERROR)], cell.outputs
    assert (ws / "wf.py").read_text() == BAD


# -- what ran, ran (analysis/cells/ran.py) ------------------------------------------------------


PRECISE = sys.version_info >= (3, 12)
"""The kernel is this interpreter: 3.12+ records the instructions that ran."""

LOADER = (
    "class Frame:\n    iloc = [1, 2]\n\n\n"
    "def load(ok: bool) -> Frame | None:\n    return Frame() if ok else None\n\n\n"
    "def area(w: int, h: int) -> int:\n    return w * h"
)
UNION = "Attribute `iloc` is not defined on `None` in union `Frame | None`"


def union(line: int, column: int, label: str = "ERROR", *, ran: bool = False) -> str:
    mark = " (ran without error)" if ran else ""
    return f"{label} [{line}:{column}] {UNION}{mark} [missing-union-attribute] (ty)"


def payload(cell: Cell) -> dict[str, Any]:
    (data,) = [o["data"][MIME] for o in cell.outputs if o["output_type"] == "display_data"]
    assert isinstance(data, dict)
    return data


def test_what_ran_ran_on_a_real_kernel(tmp_path: Path) -> None:
    """An error the cell's run disproved is a warning marked `(ran without error)`, hidden at
    the default severity and counted; code the run did not evaluate, and claims about types,
    keep their ERROR. On this interpreter: 3.12+ records the instructions that ran, 3.10 and
    3.11 only the top-level statements that finished."""
    for server in ("ty", "ruff"):
        require(server)
    warm = "import ipylsp\n_ = ipylsp.get_service().start('warm.py')"  # servers started
    with Kernel(kernel_dir_for(tmp_path), seed_workspace(tmp_path)) as kernel:
        for setup in ("%load_ext ipylsp", TY_RUFF, warm, LOADER):
            assert kernel.run(setup).outputs == [], setup

        # a union's None where the run used the attribute: hidden at the default severity ...
        used = kernel.run("frame = load(True)\nfirst = frame.iloc[0]\nprint(first)")
        assert (used.stdout, used.displays) == ("1\n", []), used.outputs
        # ... shown, marked and flagged with warnings
        assert kernel.run('%config IPyLSP.severity = "warning"').outputs == []
        again = kernel.run("frame = load(True)\nsecond = frame.iloc[1]")
        assert again.displays == [block(f"cell [{again.count}]", union(2, 10, "WARN", ran=True))]
        (entry,) = payload(again)["files"]
        assert [(d["severity"], d.get("ran_without_error")) for d in entry["diagnostics"]] == [
            ("warning", True)
        ]
        assert kernel.run('%config IPyLSP.severity = "error"').outputs == []

        # the function's body has a real error; the cell defining it runs fine: reported
        defined = kernel.run("def broken():\n    return frame.nosuch_attribute")
        assert [line.split("] ", 1)[0] for line in defined.displays[0].splitlines()[1:-1]] == [
            "ERROR [2:12"
        ], defined.outputs

        # runs and returns "222": the argument's type is the bug
        wrong = kernel.run('size = area("2", 3)\nprint(size)')
        assert wrong.stdout == "222\n"
        assert wrong.displays == [block(
            f"cell [{wrong.count}]",
            "ERROR [1:13] Argument to function `area` is incorrect: Expected `int`, found "
            '`Literal["2"]` [invalid-argument-type] (ty)',
        )]

        # raises on its second line: that line and the lines after keep their full check
        raised = kernel.run(
            "frame = load(False)\nframe.iloc\nlater = frame.iloc\nprint(frame.iloc)"
        )
        assert raised.error is not None and raised.error[0] == "AttributeError"
        assert raised.displays == [block(
            f"cell [{raised.count}]", union(2, 1), union(3, 9), union(4, 7)
        )]
        summary = payload(raised)["summary"]
        assert (summary["errors"], summary.get("ran_without_error")) == (3, None)

        # the first line's error is a warning: not shown at severity error, but counted
        mixed = kernel.run("frame = load(True)\nthird = frame.iloc\nif third[0] > 5:\n"
                           "    print(frame.iloc)")
        assert mixed.displays == [block(f"cell [{mixed.count}]", union(4, 11))], mixed.outputs
        summary = payload(mixed)["summary"]
        assert (summary["errors"], summary["warnings"], summary["ran_without_error"]) == (1, 1, 1)

        # the branch taken: its body ran (recorded on 3.12+; before, only top-level statements)
        taken = kernel.run("frame = load(True)\nif frame is not None or True:\n"
                           "    fourth = frame.iloc")
        expected = [] if PRECISE else [block(f"cell [{taken.count}]", union(3, 14))]
        assert taken.displays == expected, taken.outputs
