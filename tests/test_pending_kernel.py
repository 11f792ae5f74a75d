"""`%lsp pending` in a real kernel (nbclient; harness of test_ipython_kernel), issue 9 item 13.

Two cells write 25 files each (one error each, ty + ruff). The first hand-over is cut by the
caps (30 problems) and says how many stay; they come in the second, newest writes first;
every problem is handed over exactly once, and a third call has nothing.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from tests.real_servers import require
from tests.test_ipython_kernel import TY_RUFF, Kernel, kernel_dir_for, seed_workspace

pytestmark = [pytest.mark.real, pytest.mark.timeout(180)]


def write_cell(prefix: str) -> str:
    return (
        "from pathlib import Path\n"
        "for n in range(25):\n"
        f"    Path(f'{prefix}_{{n}}.py').write_text('x: int = \"s\"\\n')\n"
    )


def problems(text: str) -> list[str]:
    """The file of each ERROR line of a hand-over."""
    found = []
    for path, body in re.findall(r'<diagnostics file="([^"]+)">\n(.*?)</diagnostics>', text, re.S):
        found.extend(path for line in body.splitlines() if line.startswith("ERROR [1:10] "))
    return found


def test_a_cut_hand_over_keeps_the_rest_for_the_next(tmp_path: Path) -> None:
    require("ty")
    require("ruff")
    ws = seed_workspace(tmp_path)
    with Kernel(kernel_dir_for(tmp_path), ws) as kernel:
        assert kernel.run("%load_ext ipylsp").outputs == []
        assert kernel.run(TY_RUFF).outputs == []
        for prefix in ("old", "new"):
            [report] = kernel.run(write_cell(prefix)).displays
            assert len(problems(report)) == 25
        first = kernel.run("%lsp pending").result or ""
        handed = problems(first)
        left = 50 - len(handed)
        assert left > 0 and first.endswith(f"\n... and {left} more pending: %lsp pending")
        # the newest cell's files first: all of them are in the first hand-over
        assert {f"new_{n}.py" for n in range(25)} <= set(handed)
        second = kernel.run("%lsp pending").result or ""
        assert "more pending" not in second
        handed += problems(second)
        assert Counter(handed) == Counter(f"{p}_{n}.py" for p in ("old", "new") for n in range(25))
        assert kernel.run("%lsp pending").result == "nothing pending"
