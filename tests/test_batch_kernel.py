"""Batches in a real kernel (nbclient; harness of test_ipython_kernel), issue 9 items 1, 2, 8.

- A cell that writes 150 files (one error each) on ty + ruff and on basedpyright + ruff (the
  default after scripts/bootstrap): the files in natural order, at most one UNKNOWN line per
  server (a cut, never "broken"), no server broken afterwards; the next single write is
  reported normally with no UNKNOWN.
- `shutil.move` and `os.remove` of a file with an error are never reported as fixed.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.real_servers import require
from tests.test_batch import TYPE_ERROR
from tests.test_ipython_kernel import Kernel, block, kernel_dir_for, seed_workspace

pytestmark = [pytest.mark.real, pytest.mark.timeout(240)]

WRITE_150 = """\
from pathlib import Path
for n in range(150):
    Path(f"gen_{n}.py").write_text('x: int = "s"\\n')
"""

STATES = "import ipylsp; print(sorted({(r.server_id, r.state) for r in ipylsp.status()}))"


def setup(kernel: Kernel, checker: str) -> None:
    assert kernel.run("%load_ext ipylsp").outputs == []
    kernel.run(f'%config IPyLSP.language_servers = {{"python": ["{checker}", "ruff"]}}')
    warm = kernel.run("%%writefile warm.py\nx: int = 1\n")
    # servers started, clean: nothing, or the waiting line's one-line outcome (never empty)
    assert all(
        re.fullmatch(rf"checked warm\.py: nothing new \({checker}, ruff; \d+\.\d s\)", text)
        for text in warm.displays
    ), warm.displays


@pytest.mark.parametrize("checker", ["ty", "basedpyright"])
def test_a_cell_writing_150_files(tmp_path: Path, checker: str) -> None:
    require(checker)
    require("ruff")
    ws = seed_workspace(tmp_path)
    with Kernel(kernel_dir_for(tmp_path), ws) as kernel:
        setup(kernel, checker)
        cell = kernel.run(WRITE_150)
        [text] = cell.displays
        files = re.findall(r'<diagnostics file="([^"]+)">', text)
        assert files and files == [f"gen_{n}.py" for n in range(len(files))]
        unknown = re.findall(r"^UNKNOWN \[([^\]]+)\] (.*)$", text, re.M)
        assert len({server for server, _ in unknown}) == len(unknown)  # one line per server
        cut = re.compile(r"\d+ of 150 files not checked within 10\.0 s")
        assert all(cut.fullmatch(detail.split(";")[0]) for _, detail in unknown), unknown
        assert "broken" not in text
        states = kernel.run(STATES).stdout
        assert states.strip() == str(sorted({(checker, "running"), ("ruff", "running")}))
        single = kernel.run('%%writefile single.py\ny: int = "s"\n')
        assert single.displays == [block("single.py", TYPE_ERROR[checker])]


def test_a_move_and_a_delete_are_never_fixed(tmp_path: Path) -> None:
    require("ty")
    require("ruff")
    ws = seed_workspace(tmp_path)
    with Kernel(kernel_dir_for(tmp_path), ws) as kernel:
        setup(kernel, "ty")
        first = kernel.run('%%writefile single.py\nx: int = "s"\n')
        assert first.displays == [block("single.py", TYPE_ERROR["ty"])]
        moved = kernel.run("import shutil; shutil.move('single.py', 'moved.py')")
        assert moved.displays == [
            "single.py was moved to moved.py (1 known problem moved with it, not fixed)"
        ]
        removed = kernel.run("import os; os.remove('moved.py')")
        assert removed.displays == ["moved.py was removed (1 known problem not counted as fixed)"]


def test_over_the_file_cap_the_rest_is_one_lsp_check_away(tmp_path: Path) -> None:
    require("ty")
    require("ruff")
    ws = seed_workspace(tmp_path, {"old_1.py": "x = 1\n", "old_2.py": "x = 2\n"})
    with Kernel(kernel_dir_for(tmp_path), ws) as kernel:
        setup(kernel, "ty")
        kernel.run("%config IPyLSP.max_files_per_check = 3")
        cell = kernel.run(
            "from pathlib import Path\n"
            "for n in range(5):\n"
            "    Path(f'gen_{n}.py').write_text('x: int = \"s\"\\n')\n"
            "for n in (1, 2):\n"
            "    Path(f'old_{n}.py').write_text('x: int = \"s\"\\n')\n"
        )
        [text] = cell.displays
        # the files that existed before the cell first, then new ones, in natural order
        assert re.findall(r'<diagnostics file="([^"]+)">', text) == ["gen_0.py", "old_1.py",
                                                                      "old_2.py"]
        assert text.endswith(
            "3 of 7 files checked (IPyLSP.max_files_per_check; files that existed before first, "
            "then new ones); 4 not checked yet: `%lsp check` checks the next 3"
        )
        rest = kernel.run("%lsp check").result or ""
        assert re.findall(r'<diagnostics file="([^"]+)">', rest) == ["gen_1.py", "gen_2.py",
                                                                      "gen_3.py"]
        last = kernel.run("%lsp check").result or ""
        assert re.findall(r'<diagnostics file="([^"]+)">', last) == ["gen_4.py"]
        assert kernel.run("%lsp check").result == "no files left unchecked"
