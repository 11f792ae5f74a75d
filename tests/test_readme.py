"""The README's notebook example runs as written: its cells, in a fresh workspace (a new git
worktree), on a real kernel with the default servers (the embedded ty + ruff)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.real_servers import require
from tests.test_ipython_kernel import REPO, Kernel, kernel_dir_for, seed_workspace

pytestmark = [pytest.mark.real, pytest.mark.timeout(180)]


def notebook_cells() -> list[str]:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## In a notebook", 1)[1].split("\n## ", 1)[0]
    return [block.strip("\n") for block in re.findall(r"```python\n(.*?)```", section, re.S)]


def test_the_notebook_example_runs_as_written(tmp_path: Path) -> None:
    require("ty")
    require("ruff")
    cells = notebook_cells()
    assert cells[:2] == ["%load_ext ipylsp", '%%writefile app.py\nx: int = "a"']
    ws = seed_workspace(tmp_path)
    with Kernel(kernel_dir_for(tmp_path), ws) as kernel:
        ran = [kernel.run(source) for source in cells]
    for cell in ran:
        assert cell.error is None, (cell.source, cell.outputs)
    load, write, status, check_all, hover, pending = ran
    assert load.outputs == []
    report = (
        '<diagnostics file="app.py">\n'
        'ERROR [1:10] Object of type `Literal["a"]` is not assignable to `int` '
        "[invalid-assignment] (ty)\n"
        "</diagnostics>"
    )
    assert write.stdout == "Writing app.py\n"
    assert write.displays[-1] == report
    assert status.result is not None and "ty" in status.result and "ruff" in status.result
    assert check_all.result == report
    assert hover.result is not None and hover.result.strip() != ""
    assert pending.result == report
