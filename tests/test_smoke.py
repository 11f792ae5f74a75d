"""The real-kernel smoke test `scripts/test` also runs on every other Python we claim.

Beside the fast tests (`-m "not real"`), `.venv-3.10` and `.venv-3.13` run this one real test:
a real ipykernel of that interpreter, driven by nbclient (tests/test_ipython_kernel.py's
harness), loads ipylsp, and a `%%writefile` cell that writes a Python file with a type error
gets exactly the real ty server's report. It runs in the whole suite of `.venv` too.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.real_servers import require
from tests.test_ipython_kernel import (
    BAD,
    BAD_ERROR,
    TY_RUFF,
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
