"""A reworded problem is the same problem, through the service: files, batches and cells.

The fake server's `--reword` ends every message with a chain that alternates from one
document version to the next, as basedpyright's "Cycle detected in import chain" names another
chain from one check to the next. A comment-only edit introduces and fixes nothing; another
code at the same place is reported. Real clangd folds a note and its position into the
message: moving the erroneous line within the file introduces nothing.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ipylsp.cells.session import CellSession
from ipylsp.model.diagnostics import Diagnostic, Report
from ipylsp.model.server_spec import InstallRecipe, ServerSpec
from ipylsp.model.settings import Settings
from ipylsp.service.service import FileCheck, Service
from tests.conftest import fake_command
from tests.real_servers import workspace, write

pytestmark = pytest.mark.real

CYCLE = "x = 1  # ERROR:Cycle detected in import chain\n"
OTHER_CODE = "x = 1  # ERROR[E7]:Cycle detected in import chain\n"


def reworder(language: str) -> Settings:
    spec = ServerSpec(id="fake", name="Fake", languages=(language,),
                      command=fake_command("--diagnostics", "pull", "--reword"),
                      install=InstallRecipe("path", hint="it is a test fixture"))
    return Settings(language_servers={language: ("fake",)}, extra_specs=(spec,),
                    wait_budget=10.0, store=False)


def introduced(report: Report) -> list[tuple[str | None, str]]:
    return [(d.code, d.message.split("\n")[0]) for f in report.files for d in f.diagnostics]


def fixed(report: Report) -> list[tuple[str | None, str]]:
    return [(d.code, d.message.split("\n")[0]) for f in report.files for d in f.fixed]


def current(report: Report) -> list[Diagnostic]:
    return [d for f in report.files for d in f.current]


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return workspace(tmp_path, monkeypatch)


def test_a_reworded_message_in_a_file_and_a_batch_is_neither_introduced_nor_fixed(
    root: Path,
) -> None:
    a, b = write(root, "a.sh", CYCLE), write(root, "b.sh", "echo\n" + CYCLE)
    with Service(reworder("shellscript")) as service:
        first = service.check(a, before="")
        assert introduced(first) == [("E1", "Cycle detected in import chain")]
        a.write_text("# a comment\n" + CYCLE)
        second = service.check(a)
        # the fixture did reword it: the same problem in other words
        assert [d.message for d in current(first)] != [d.message for d in current(second)]
        assert (introduced(second), fixed(second)) == ([], [])
        a.write_text("# a comment\n" + OTHER_CODE)  # a near miss: another code, same place
        third = service.check(a)
        assert introduced(third) == [("E7", "Cycle detected in import chain")]
        assert fixed(third) == [("E1", "Cycle detected in import chain")]
        # a batch: both files written together, each gets a comment; then both again
        service.check(b, before="")
        for comment in ("# one\n", "# two\n"):
            a.write_text(comment + OTHER_CODE)
            b.write_text(comment + "echo\n" + CYCLE)
            batch = service.check_files([FileCheck(a), FileCheck(b)])
            assert len(current(batch)) == 2
            assert (introduced(batch), fixed(batch)) == ([], [])


def test_a_reworded_message_in_the_cells_is_neither_introduced_nor_fixed(
    root: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(root)
    with Service(reworder("python")) as service:
        cells = CellSession.over(service)
        first = cells.run(CYCLE, count=1, cell_id="one")
        assert introduced(first) == [("E1", "Cycle detected in import chain")]
        second = cells.run("y = 2  # a comment\n", count=2, cell_id="two")
        assert (introduced(second), fixed(second)) == ([], [])
        rerun = cells.run(OTHER_CODE, count=3, cell_id="one")  # another code, same place
        assert introduced(rerun) == [("E7", "Cycle detected in import chain")]


# -- real clangd ---------------------------------------------------------------------------------

BUFFER = """\
struct Foo;

int use(struct Foo *f) {
  int r = 0;
  int s = 1;
  int t = 2;
  r += f->x;
  return r + s + t;
}
"""
ERROR_LINE = "  r += f->x;\n"
MOVED = BUFFER.replace(ERROR_LINE, "").replace("  int r = 0;\n", "  int r = 0;\n" + ERROR_LINE)


def clangd() -> Settings:
    assert shutil.which("clangd"), "clangd is not on PATH: apt-get install clangd (CI: .ci/run)"
    return Settings(language_servers={"c": ("clangd",)}, wait_budget=30.0, store=False)


def test_clangd_a_line_moved_carries_its_problems_whatever_positions_they_quote(
    root: Path,
) -> None:
    path = write(root, "buf.c", BUFFER)
    with Service(clangd()) as service:
        first = service.check(path, before="")
        messages = sorted(d.message for d in current(first))
        assert any("buf.c:1:8: note: forward declaration" in m for m in messages), messages
        assert any("buf.c:7:" in m and m.startswith("Forward declaration") for m in messages)
        path.write_text(MOVED)  # the error line moves up; the note's message quotes it
        moved = service.check(path)
        assert any("buf.c:5:" in d.message for d in current(moved)), current(moved)
        assert len(current(moved)) == len(messages)
        assert (introduced(moved), fixed(moved)) == ([], [])
        path.write_text("// one\n// two\n" + MOVED)  # lines above move both quoted positions
        shifted = service.check(path)
        assert any("buf.c:3:8: note" in d.message for d in current(shifted)), current(shifted)
        assert (introduced(shifted), fixed(shifted)) == ([], [])
