"""Batches through the Service on real servers (issue 9, items 1, 2, 5, 8).

- 150 files written at once (one error each) on ty + ruff and on basedpyright + ruff: every
  file reported with its exact line, in natural order, no server broken, `Report.unknown`
  empty or one line per server; then a single write is reported normally, with no UNKNOWN.
- A batch whose files import each other (a changed signature and its updated caller) is not
  reported as breaking the caller.
- A move and a delete are never reported as fixed.
- 1,000 files copied in (copytree of real packages' source trees): within the budget plus the
  hand-over margin; the cap is said with the command for the rest, and nothing is dropped.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ipylsp.analysis.report import format_text
from ipylsp.model.diagnostics import Report, Severity
from ipylsp.model.settings import Settings
from ipylsp.service.service import FileCheck, Service
from tests.real_servers import DATA_DIR, require, workspace, write

pytestmark = pytest.mark.real

TYPE_ERROR = {
    "ty": 'ERROR [1:10] Object of type `Literal["s"]` is not assignable to `int` '
    "[invalid-assignment] (ty)",
    "basedpyright": "ERROR [1:10] Type \"Literal['s']\" is not assignable to declared type "
    "\"int\"; \"Literal['s']\" is not assignable to \"int\" [reportAssignmentType] (basedpyright)",
}

HANDOVER_MARGIN = 2.0  # service._HANDOVER_MARGIN: what a caller may wait beyond the budget


def block(name: str, *lines: str) -> str:
    return "\n".join([f'<diagnostics file="{name}">', *lines, "</diagnostics>"])


@pytest.fixture(params=["ty", "basedpyright"])
def checker_id(request: pytest.FixtureRequest) -> str:
    require(request.param)
    require("ruff")
    return str(request.param)


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return workspace(tmp_path, monkeypatch)


@pytest.fixture
def service(checker_id: str) -> Iterator[Service]:
    with Service(
        Settings(language_servers={"python": (checker_id, "ruff")}, data_dir=DATA_DIR)
    ) as made:
        yield made


def states(service: Service) -> list[tuple[str, str]]:
    return sorted((row.server_id, row.state) for row in service.status())


def one_line_per_server(report: Report) -> bool:
    servers = [u.server_id for u in report.unknown]
    return len(servers) == len(set(servers))


def test_150_files_in_one_check(ws: Path, service: Service, checker_id: str) -> None:
    warm = write(ws, "warm.py", "x: int = 1\n")
    assert format_text(service.check(warm)) == ""  # servers started
    files = [FileCheck(write(ws, f"gen_{n}.py", 'x: int = "s"\n'), before="") for n in
             reversed(range(150))]
    report = service.check_files(files)
    assert [f.display_path for f in report.files] == [f"gen_{n}.py" for n in range(150)]
    assert one_line_per_server(report)
    assert all(not f.unknown for f in report.files)
    answered = [f for f in report.files if f.diagnostics]
    if not report.unknown:  # nothing cut: every file has exactly its error
        assert len(answered) == 150
    expected = TYPE_ERROR[checker_id]
    for f in answered:
        assert format_text(Report(files=(f,))) == block(f.display_path, expected)
    assert states(service) == sorted([(checker_id, "running"), ("ruff", "running")])
    single = write(ws, "single.py", 'y: int = "s"\n')
    after = service.check(single)
    assert format_text(after) == block("single.py", expected)
    assert not after.has_unknown


def test_a_signature_and_its_caller_written_together(ws: Path, service: Service) -> None:
    lib = write(ws, "lib.py", "def area(w: int) -> int:\n    return w * w\n")
    app = write(ws, "app.py", "from lib import area\n\nprint(area(2))\n")
    assert format_text(service.check_files([FileCheck(lib), FileCheck(app)])) == ""
    lib.write_text("def area(w: int, h: int) -> int:\n    return w * h\n")
    app.write_text("from lib import area\n\nprint(area(2, 3))\n")
    report = service.check_files([FileCheck(app), FileCheck(lib)])
    assert format_text(report) == ""


def test_a_move_and_a_delete_are_never_fixed(ws: Path, service: Service, checker_id: str) -> None:
    text = 'x: int = "s"\n'
    single = write(ws, "single.py", text)
    assert format_text(service.check(single)) == block("single.py", TYPE_ERROR[checker_id])
    moved = ws / "moved.py"
    shutil.move(single, moved)
    # As the extension passes them: the destination's baseline is its origin's text before.
    report = service.check_files([FileCheck(single, before=text), FileCheck(moved, before=text)])
    assert format_text(report) == (
        "single.py was moved to moved.py (1 known problem moved with it, not fixed)"
    )
    assert [d for f in report.files for d in f.fixed] == []
    os.remove(moved)
    gone = service.check(moved)
    assert format_text(gone) == "moved.py was removed (1 known problem not counted as fixed)"
    assert [d for f in gone.files for d in f.fixed] == []


def test_a_thousand_files_copied_in(ws: Path, service: Service) -> None:
    """copytree of pip, pygments and IPython (1,000+ files): the check keeps the budget plus
    the hand-over margin, checks `max_files_per_check` of them, and says how to get the rest."""
    packages = Path(pytest.__file__).resolve().parent.parent  # this venv's site-packages
    copied = []
    for name in ("pip", "pygments", "IPython"):
        target = ws / "vendor" / name
        shutil.copytree(packages / name, target, ignore=shutil.ignore_patterns("__pycache__"))
        copied.extend(Path(d) / f for d, _, names in os.walk(target) for f in names)
    assert len(copied) >= 1000
    budget = service.settings.wait_budget
    started = time.monotonic()
    report = service.check_files([FileCheck(p, before="") for p in copied])
    assert time.monotonic() - started <= budget + HANDOVER_MARGIN
    limit = service.settings.max_files_per_check
    assert len([f for f in report.files if not f.elsewhere]) == limit
    assert report.notes[-1] == (
        f"{limit} of {len(copied)} files checked (IPyLSP.max_files_per_check; files that "
        f"existed before first, then new ones); {len(copied) - limit} not checked yet: "
        f"`%lsp check` checks the next {limit}"
    )
    assert one_line_per_server(report), report.unknown
    assert service.unchecked == len(copied) - limit  # nothing dropped: the rest is kept
    rest = service.check_rest()
    assert len([f for f in rest.files if not f.elsewhere]) == limit
    assert service.unchecked == len(copied) - 2 * limit


def test_creations_reach_importers(ws: Path, service: Service) -> None:
    """A module created after an importer failed on it: the importer's error is fixed, and a
    new importer written with the module is not reported (creations are announced after the
    batch's pulls, and a file that then reports an unresolved import is asked again)."""
    app = write(ws, "app.py", "import utils\n\nprint(utils.X)\n")
    first = service.check_files([FileCheck(app, before="")])
    errors = [d for d in first.files[0].diagnostics if d.severity is Severity.ERROR]
    assert errors and errors[0].range.start.line == 0  # the import
    other = write(ws, "other.py", "y = 1\n")  # the directory is known to the server now
    assert format_text(service.check(other)) == ""
    utils = write(ws, "utils.py", "X = 1\n")
    main = write(ws, "main.py", "import utils\n\nprint(utils.X)\n")
    report = service.check_files([FileCheck(utils, before=""), FileCheck(main, before="")])
    count = len(errors)
    assert format_text(report) == f"fixed {count} error{'s' * (count > 1)} in app.py"
