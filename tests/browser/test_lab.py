"""The JupyterLab extension in a real JupyterLab and a real Chromium: the renderer of
application/vnd.ipylsp.diagnostics+json, its locations opening the editor (in an untrusted
notebook, without the trust dialog), the status bar item and the Problems panel (both on the
server extension's routes `GET ipylsp/api/status` and `GET ipylsp/api/diagnostics`).
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from playwright.sync_api import Locator, Page, expect

from tests.browser.conftest import Lab, screenshot

pytestmark = pytest.mark.real

SETUP = '%load_ext ipylsp\n%config IPyLSP.language_servers = {"python": ["ty", "ruff"]}'
BROKEN = """%%writefile shop.py
def total(prices: list[float], discount: float = 0.0) -> float:
    return sum(prices) * (1 - discount)


basket = [9.99, 5.0]
print(total(basket, discount="10%"))
print(totl(basket))
"""
FIXED = BROKEN.replace('discount="10%"', "discount=0.1").replace("totl(", "total(")
# The renderer's lines for BROKEN: what text/plain says, the location as path:line:col.
ROWS = [
    "ERROR shop.py:6:21 Argument to function `total` is incorrect: Expected `float`, "
    'found `Literal["10%"]` [invalid-argument-type] (ty)',
    "ERROR shop.py:7:7 Name `totl` used when not defined [unresolved-reference, F821] (ty, Ruff)",
]
LIVE_TIMEOUT = 90_000  # the first check starts ty and ruff


def notebook(root: Path, name: str, sources: list[str], *, execute: bool) -> nbformat.NotebookNode:
    """Write `name` under `root`: its cells, run on a real kernel (nbclient) when `execute`.
    Never signed: JupyterLab opens it untrusted."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in sources]
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
    }
    if execute:
        NotebookClient(nb, timeout=120, resources={"metadata": {"path": str(root)}}).execute()
    nbformat.write(nb, root / name)
    return nb


def open_in_lab(page: Page, lab: Lab, path: str) -> None:
    page.goto(lab.open_url(path))
    expect(page.locator("#jupyterlab-splash")).to_have_count(0, timeout=60_000)
    tab = page.locator("#jp-main-dock-panel .lm-TabBar-tab.lm-mod-current .lm-TabBar-tabLabel")
    expect(tab).to_have_text(Path(path).name)


def current_tab(page: Page) -> Locator:
    return page.locator("#jp-main-dock-panel .lm-TabBar-tab.lm-mod-current .lm-TabBar-tabLabel")


def cursor(page: Page) -> Locator:
    """The status bar's line/column item of the current editor."""
    return page.locator("#jp-main-statusbar .jp-StatusBar-TextItem", has_text=re.compile(r"^Ln "))


@pytest.fixture(scope="module")
def saved(lab: Lab) -> nbformat.NotebookNode:
    """saved.ipynb: the setup, the broken write and the fix, run on a real kernel with real
    ty and ruff; its outputs are saved, it is not signed (JupyterLab opens it untrusted)."""
    return notebook(lab.root, "saved.ipynb", [SETUP, BROKEN, FIXED], execute=True)


def test_saved_report_renders_and_opens_the_file(
    lab: Lab, saved: nbformat.NotebookNode, page: Page
) -> None:
    """The renderer shows each problem as text/plain does, and clicking a location opens the
    file in the editor with the cursor there, in an untrusted notebook, with no dialog."""
    open_in_lab(page, lab, "saved.ipynb")

    report = page.locator(".jp-Notebook .jp-Cell").nth(1).locator(".jp-ipylsp-report")
    expect(report.locator(".jp-ipylsp-file-header")).to_have_text("shop.py (ty, ruff)")
    expect(report.locator(".jp-ipylsp-row")).to_have_text(ROWS)
    # The bundle's text/html and text/plain are not rendered beside it.
    expect(page.locator(".jp-Notebook .ipylsp-diagnostics")).to_have_count(0)
    screenshot(page, "saved-report")

    report.get_by_role("button", name="shop.py:7:7").click()
    expect(current_tab(page)).to_have_text("shop.py")
    expect(cursor(page)).to_have_text("Ln 7, Col 7")
    expect(page.locator(".jp-Dialog")).to_have_count(0)
    screenshot(page, "saved-report-opened")

    # Back in the notebook, the other location: line 6, column 21.
    page.locator("#jp-main-dock-panel .lm-TabBar-tab", has_text="saved.ipynb").click()
    report.get_by_role("button", name="shop.py:6:21").click()
    expect(current_tab(page)).to_have_text("shop.py")
    expect(cursor(page)).to_have_text("Ln 6, Col 21")
    expect(page.locator(".jp-Dialog")).to_have_count(0)


def test_saved_fix_says_what_text_plain_says(
    lab: Lab, saved: nbformat.NotebookNode, page: Page
) -> None:
    """The fix's report: the renderer's `fixed` line is text/plain's."""
    bundles = [o["data"] for o in saved.cells[2].outputs if "data" in o]
    assert len(bundles) == 1
    assert bundles[0]["text/plain"] == "fixed 2 errors in shop.py"
    open_in_lab(page, lab, "saved.ipynb")
    fixed = page.locator(".jp-Notebook .jp-Cell").nth(2).locator(".jp-ipylsp-report")
    expect(fixed.locator(".jp-ipylsp-fixed")).to_have_text(bundles[0]["text/plain"], timeout=10_000)
    expect(fixed.locator(".jp-ipylsp-row")).to_have_count(0)


def run_cell(page: Page, index: int) -> None:
    cell = page.locator(".jp-Notebook .jp-Cell").nth(index)
    cell.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Shift+Enter")


QUICKSTART = Path(__file__).resolve().parents[2] / "notebooks" / "quickstart.ipynb"


def test_live_report_status_and_problems(lab: Lab, page: Page) -> None:
    """Run notebooks/quickstart.ipynb in JupyterLab: the report renders under the writing
    cell; the status item shows the kernel's running servers and their errors (route `GET
    ipylsp/api/status`); the Problems panel lists the file's problems, opens them, and empties
    after the fix (route `GET ipylsp/api/diagnostics`)."""
    quickstart = nbformat.read(QUICKSTART, as_version=4)
    sources = [c.source for c in quickstart.cells if c.cell_type == "code"]
    assert sources[1:3] == [BROKEN, FIXED], "the quickstart's cells are the ones tested here"
    nbformat.write(quickstart, lab.root / "quickstart.ipynb")
    open_in_lab(page, lab, "quickstart.ipynb")
    expect(page.locator("#jp-main-statusbar").get_by_text(re.compile(r"\| Idle$"))).to_have_count(
        1, timeout=60_000
    )

    run_cell(page, 1)  # %load_ext ipylsp (cell 0 is markdown)
    run_cell(page, 3)  # %%writefile shop.py, with the errors
    written = page.locator(".jp-Notebook .jp-Cell").nth(3)
    expect(written.locator(".jp-ipylsp-row")).to_have_text(ROWS, timeout=LIVE_TIMEOUT)
    screenshot(page, "live-report")

    # The status bar item: the kernel's ty and ruff, the 2 errors of shop.py.
    status = page.locator("#jp-main-statusbar .jp-ipylsp-status")
    expect(status).to_have_text("ipylsp: 2 running · 2 errors", timeout=20_000)
    status.click()
    servers = page.locator(".jp-ipylsp-status-popup .jp-ipylsp-status-server")
    expect(servers).to_have_count(2)
    pairs = sorted(
        (row.locator("td").nth(0).inner_text(), row.locator("td").nth(1).inner_text())
        for row in servers.all()
    )
    assert pairs == [("ruff", "running"), ("ty", "running")]
    expect(page.locator(".jp-ipylsp-status-popup .jp-ipylsp-status-errors")).to_have_text(
        "2 errors across kernels"
    )
    screenshot(page, "live-status-popup")
    status.click()  # closes it again
    expect(page.locator(".jp-ipylsp-status-popup")).to_have_count(0)

    # The Problems panel, from the command palette.
    page.keyboard.press("Control+Shift+C")
    page.locator(".lm-CommandPalette-input").fill("ipylsp: Problems")
    page.keyboard.press("Enter")
    panel = page.locator("#jp-ipylsp-problems")
    expect(panel).to_be_visible()
    expect(panel.locator(".jp-ipylsp-problems-summary")).to_have_text(
        "2 errors in 1 file", timeout=LIVE_TIMEOUT
    )
    expect(panel.locator(".jp-ipylsp-file-header")).to_have_text("shop.py (ty, ruff)")
    expect(panel.locator(".jp-ipylsp-row")).to_have_text(ROWS)
    screenshot(page, "live-problems")
    panel.get_by_role("button", name="shop.py:6:21").click()
    expect(current_tab(page)).to_have_text("shop.py")
    expect(cursor(page)).to_have_text("Ln 6, Col 21")

    # The fix: its report says so, the panel empties, the status counts no error.
    page.locator("#jp-main-dock-panel .lm-TabBar-tab", has_text="quickstart.ipynb").click()
    run_cell(page, 5)  # %%writefile shop.py, fixed
    fixed = page.locator(".jp-Notebook .jp-Cell").nth(5)
    expect(fixed.locator(".jp-ipylsp-fixed")).to_have_text(
        "fixed 2 errors in shop.py", timeout=LIVE_TIMEOUT
    )
    expect(panel.locator(".jp-ipylsp-problems-summary")).to_have_text(
        "No problems", timeout=LIVE_TIMEOUT
    )
    expect(panel.locator(".jp-ipylsp-row")).to_have_count(0)
    expect(status).to_have_text(re.compile(r"^ipylsp: \d+ running · 0 errors$"), timeout=20_000)
    screenshot(page, "live-fixed")


def test_cuts_unknown_servers_and_notes_say_what_text_plain_says(lab: Lab, page: Page) -> None:
    """A report with a cut (`... and N more`), a file-level and a check-level UNKNOWN server,
    a note and a fixed line (the model's own formatter makes the bundle): the renderer shows
    each as the text/plain line of the same bundle."""
    from ipylsp.analysis.report import MIME_TYPE, FormatOptions, mime_bundle
    from ipylsp.model.diagnostics import (
        Diagnostic,
        FileReport,
        Position,
        Range,
        Report,
        Severity,
        Unknown,
        UnknownReason,
    )

    def diag(line: int, message: str) -> Diagnostic:
        where = Range(Position(line, 4), Position(line, 8))
        return Diagnostic(where, Severity.ERROR, message, "Pyright", "reportX", "pyright")

    src = lab.root / "src"
    src.mkdir(exist_ok=True)
    (src / "app.py").write_text("x = 1\n" * 10)
    report = Report(
        files=(
            FileReport(
                path=src / "app.py",
                display_path="src/app.py",
                diagnostics=(diag(1, "first"), diag(2, "second"), diag(3, "third")),
                fixed=(diag(8, "old"),),
                unknown=(
                    Unknown("ty", UnknownReason.TIMED_OUT, "after 10.0 s", "raise the budget"),
                ),
                servers=("pyright", "ty"),
            ),
        ),
        root=lab.root,
        notes=("src/old.py was removed",),
        unknown=(
            Unknown(
                "basedpyright",
                UnknownReason.TIMED_OUT,
                "24 of 150 files not checked within 10.0 s",
                "the rest: %lsp pending",
            ),
        ),
    )
    bundle = mime_bundle(report, FormatOptions(max_per_file=1))
    text = str(bundle["text/plain"]).split("\n")
    expected = {
        "more": "... and 2 more",
        "file_unknown": "UNKNOWN [ty] timed out after 10.0 s: results for this file are "
        "incomplete; raise the budget",
        "fixed": "fixed 1 error in src/app.py",
        "check_unknown": "UNKNOWN [basedpyright] 24 of 150 files not checked within 10.0 s; "
        "the rest: %lsp pending",
        "note": "src/old.py was removed",
    }
    assert set(expected.values()) <= set(text), text  # the lines text/plain says

    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("# a report made by ipylsp.analysis.report.mime_bundle")
    cell.outputs = [nbformat.v4.new_output("display_data", data=bundle)]
    nb.cells = [cell]
    nbformat.write(nb, lab.root / "cuts.ipynb")
    assert MIME_TYPE in bundle
    open_in_lab(page, lab, "cuts.ipynb")

    out = page.locator(".jp-Notebook .jp-ipylsp-report")
    expect(out.locator(".jp-ipylsp-row")).to_have_text(
        ["ERROR src/app.py:2:5 first [reportX] (Pyright)"]
    )
    expect(out.locator(".jp-ipylsp-file .jp-ipylsp-more")).to_have_text(expected["more"])
    expect(out.locator(".jp-ipylsp-file .jp-ipylsp-unknown")).to_have_text(expected["file_unknown"])
    expect(out.locator(".jp-ipylsp-file .jp-ipylsp-fixed")).to_have_text(expected["fixed"])
    expect(out.locator(":scope > .jp-ipylsp-unknown")).to_have_text(expected["check_unknown"])
    expect(out.locator(":scope > .jp-ipylsp-note")).to_have_text(expected["note"])
    screenshot(page, "cuts-unknown-notes")


def test_live_cell_problems_are_located_in_cells(lab: Lab, page: Page) -> None:
    """A cell's own code, run in JupyterLab (which sends each cell's id): the problem a later
    call introduced renders as `cell [n] line:col`, a link that puts the cursor there (the
    report's JSON names the cell by its id), and re-running the defining cell with a new
    signature replaces it in place, so its report says the later call is fixed."""
    warm = "import ipylsp\n_ = ipylsp.get_service().start('warm.py')"  # no cut first checks
    notebook(lab.root, "cells.ipynb", [SETUP, warm, "def f(x: int) -> int: return x", "f('s')"],
             execute=False)
    open_in_lab(page, lab, "cells.ipynb")
    expect(page.locator("#jp-main-statusbar").get_by_text(re.compile(r"\| Idle$"))).to_have_count(
        1, timeout=60_000
    )
    for index in range(4):
        run_cell(page, index)
    call = page.locator(".jp-Notebook .jp-Cell").nth(3)
    expect(call.locator(".jp-ipylsp-file-header")).to_have_text("cell [4] (ty, ruff)",
                                                                timeout=LIVE_TIMEOUT)
    expect(call.locator(".jp-ipylsp-row")).to_have_text([
        'ERROR cell [4] 1:3 Argument to function `f` is incorrect: Expected `int`, found '
        '`Literal["s"]` [invalid-argument-type] (ty)'
    ])
    screenshot(page, "live-cell-report")
    page.locator(".jp-Notebook .jp-Cell").nth(0).locator(".jp-InputArea-editor").click()
    call.locator(".jp-ipylsp-row").get_by_role("button", name="cell [4] 1:3").click()
    expect(call).to_have_class(re.compile(r"\bjp-mod-active\b"))
    expect(cursor(page)).to_have_text("Ln 1, Col 3")

    define = page.locator(".jp-Notebook .jp-Cell").nth(2)
    define.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Control+A")
    page.keyboard.type("def f(x: str) -> str: return x")
    page.keyboard.press("Shift+Enter")
    expect(define.locator(".jp-ipylsp-fixed")).to_have_text("fixed 1 error in cell [4]",
                                                           timeout=LIVE_TIMEOUT)
    screenshot(page, "live-cell-fixed")


def test_stored_answers_render_marked_cached(lab: Lab, page: Page) -> None:
    """ty goes missing after it answered once: the next write's report carries ty's stored
    answer, and the renderer marks each such line `cached N s ago` as text/plain does
    (issue 14)."""
    setup = ('%load_ext ipylsp\n%config IPyLSP.language_servers = {"python": ["ty"]}\n'
             "%config IPyLSP.check_cells = False")
    down = '%config IPyLSP.servers = {"ty": {"command": ["no-such-ty", "server"]}}\n%lsp stop'
    again = BROKEN.replace("print(totl(basket))", "print(totl(basket))  # again")
    nb = notebook(lab.root, "stored.ipynb", [setup, BROKEN, down, again], execute=True)
    (bundle,) = [o["data"] for o in nb.cells[3].outputs if "data" in o]
    plain = bundle["text/plain"].splitlines()
    assert re.fullmatch(r"ERROR \[6:21\] .* \(ty, cached \d+ s ago, stale\)", plain[1]), plain
    open_in_lab(page, lab, "stored.ipynb")
    report = page.locator(".jp-Notebook .jp-Cell").nth(3).locator(".jp-ipylsp-report")
    cached = r" \(ty, cached \d+ (s|min) ago, stale\)"
    expect(report.locator(".jp-ipylsp-row")).to_have_text([
        re.compile(re.escape(
            "ERROR shop.py:6:21 Argument to function `total` is incorrect: Expected `float`, "
            'found `Literal["10%"]` [invalid-argument-type]') + cached),
        re.compile(re.escape(
            "ERROR shop.py:7:7 Name `totl` used when not defined [unresolved-reference]") + cached),
    ])
    expect(report.locator(".jp-ipylsp-unknown")).to_contain_text("UNKNOWN [ty] not installed")
    screenshot(page, "stored-report")
