"""Marks in the editors, in a real JupyterLab and a real Chromium: every current problem of a
cell underlined in its CodeMirror editor from the notebook's kernel (real ty and ruff), the
message on hover, edits that drop the marks of the lines they change and move the others, a
fix that clears them, "check this cell before running", marks in a file editor from the
kernels' stored answers, one error count across the status item, the Problems panel and the
reports, the setting that turns marks off, and a kernel without ipylsp drawing nothing.
"""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Iterator

import pytest
from playwright.sync_api import Locator, Page, expect

from tests.browser.conftest import Lab, running_lab, screenshot
from tests.browser.test_lab import BROKEN, LIVE_TIMEOUT, SETUP, cursor, notebook, open_in_lab

pytestmark = pytest.mark.real

WARM = "import ipylsp\n_ = ipylsp.get_service().start('warm.py')"  # no cut first checks
DEFINE = "def f(x: int) -> int:\n    return x"
CALL = "y = 1\nf('s')"
CALL_HOVER = ('ERROR Argument to function `f` is incorrect: Expected `int`, found '
              '`Literal["s"]` [invalid-argument-type] (ty)')


def cell(page: Page, index: int) -> Locator:
    return page.locator(".jp-Notebook .jp-Cell").nth(index)


def marks(page: Page, index: int) -> Locator:
    return cell(page, index).locator(".cm-content .cm-ipylsp-mark")


def idle(page: Page) -> None:
    expect(page.locator("#jp-main-statusbar").get_by_text(re.compile(r"\| Idle$"))).to_have_count(
        1, timeout=60_000
    )


def run(page: Page, index: int) -> None:
    cell(page, index).locator(".jp-InputArea-editor").click()
    page.keyboard.press("Shift+Enter")


def run_all(page: Page, count: int) -> None:
    """Run the first `count` cells, each once the one before it is done, as a person does (under
    load the front end can send cells typed in a burst out of order, and a cell run before its
    notebook has a kernel is dropped: its prompt stays empty)."""
    prompts = page.locator(".jp-Notebook .jp-Cell .jp-InputPrompt")
    for index in range(count):
        run(page, index)
        expect(prompts.nth(index)).to_have_text(re.compile(r"\[\d+\]"), timeout=LIVE_TIMEOUT)


def hover_text(page: Page, mark: Locator) -> str:
    page.mouse.move(0, 0)
    mark.hover()
    tip = page.locator(".cm-tooltip .jp-ipylsp-hover")
    expect(tip).to_have_count(1)
    return tip.inner_text()


def keep_the_kernel(page: Page) -> None:
    """Answer "Select Kernel" with a Python 3 kernel whenever it shows up (the front end asks
    when a notebook opened before the kernel specs loaded: under load). The choice is made
    once the list holds it (it fills in with the specs), then accepted."""
    dialog = page.locator(".jp-Dialog").filter(has_text="Select Kernel")

    def answer() -> None:
        python = dialog.locator("option", has_text="Python 3 (ipykernel)").first
        expect(python).to_have_count(1, timeout=60_000)
        value = python.get_attribute("value")
        assert value is not None, "the Python 3 choice has no value"
        dialog.locator("select").select_option(value=value)
        dialog.locator(".jp-Dialog-button.jp-mod-accept").click()

    page.add_locator_handler(dialog, answer)


def open_cells(page: Page, lab: Lab, name: str, sources: list[str]) -> None:
    notebook(lab.root, name, sources, execute=False)
    keep_the_kernel(page)
    open_in_lab(page, lab, name)
    idle(page)
    run_all(page, len(sources))


def test_a_wrong_call_is_marked_hovered_followed_and_cleared(lab: Lab, page: Page) -> None:
    open_cells(page, lab, "marks.ipynb", [SETUP, WARM, DEFINE, CALL])
    call = marks(page, 3)
    expect(call).to_have_count(1, timeout=LIVE_TIMEOUT)
    expect(call).to_have_text("'s'")  # line 2, columns 3-5: the argument
    expect(call).to_have_class(re.compile(r"\bcm-ipylsp-error\b"))
    assert hover_text(page, call) == CALL_HOVER
    # the report under the cell says the same, at `cell [n] 2:3`
    expect(cell(page, 3).locator(".jp-ipylsp-row")).to_have_text(re.compile(
        r"^ERROR cell \[\d+\] 2:3 " + re.escape(CALL_HOVER[len("ERROR "):])))
    screenshot(page, "marks-cell")

    # the report's `cell [n] 2:3` puts the cursor there
    cell(page, 0).locator(".jp-InputArea-editor").click()
    cell(page, 3).get_by_role("button", name=re.compile(r"^cell \[\d+\] 2:3$")).click()
    expect(cursor(page)).to_have_text("Ln 2, Col 3")
    expect(cell(page, 3)).to_have_class(re.compile(r"\bjp-mod-active\b"))

    # a line added above: the mark follows the text
    page.keyboard.press("Control+Home")
    page.keyboard.type("z = 0\n")
    expect(call).to_have_text("'s'")
    expect(marks(page, 2)).to_have_count(0)

    # the fix, in the defining cell: the call's mark goes
    cell(page, 2).locator(".jp-InputArea-editor").click()
    page.keyboard.press("Control+A")
    page.keyboard.type("def f(x: str) -> str:\n    return x")
    page.keyboard.press("Shift+Enter")
    expect(call).to_have_count(0, timeout=LIVE_TIMEOUT)
    screenshot(page, "marks-fixed")


def test_editing_a_marked_line_drops_its_mark_until_the_next_run(lab: Lab, page: Page) -> None:
    open_cells(page, lab, "edits.ipynb", [SETUP, WARM, DEFINE, "f('a')\nf('b')"])
    expect(marks(page, 3)).to_have_text(["'a'", "'b'"], timeout=LIVE_TIMEOUT)
    editor = cell(page, 3).locator(".cm-content")
    editor.locator(".cm-line").nth(0).click()
    page.keyboard.press("End")
    page.keyboard.type("  # changed")
    expect(marks(page, 3)).to_have_text(["'b'"])  # the changed line's mark went
    page.keyboard.press("Shift+Enter")
    expect(marks(page, 3)).to_have_text(["'a'", "'b'"], timeout=LIVE_TIMEOUT)


def test_check_this_cell_before_running(lab: Lab, page: Page) -> None:
    open_cells(page, lab, "preflight.ipynb", [SETUP, WARM, DEFINE, "f(1)"])
    prompt = cell(page, 3).locator(".jp-InputPrompt")
    expect(prompt).to_have_text(re.compile(r"\[\d+\]"), timeout=LIVE_TIMEOUT)
    ran = prompt.inner_text()
    expect(marks(page, 3)).to_have_count(0)
    cell(page, 3).locator(".jp-InputArea-editor").click()
    page.keyboard.press("Control+A")
    page.keyboard.type("f('s')")
    page.keyboard.press("Control+Shift+Enter")
    expect(marks(page, 3)).to_have_text(["'s'"], timeout=LIVE_TIMEOUT)
    expect(page.locator(".jp-toast-container, .Toastify")).to_contain_text(
        "1 error in this cell if it ran now")
    assert prompt.inner_text() == ran  # nothing ran
    screenshot(page, "marks-preflight")


def test_a_kernel_without_ipylsp_draws_nothing(lab: Lab, page: Page) -> None:
    open_cells(page, lab, "plain.ipynb", [DEFINE, "f('s')", "import ipylsp"])
    expect(cell(page, 2).locator(".jp-InputPrompt")).to_have_text(re.compile(r"\[3\]"),
                                                                  timeout=LIVE_TIMEOUT)
    expect(page.locator(".cm-ipylsp-mark")).to_have_count(0)


def open_problems(page: Page) -> Locator:
    page.keyboard.press("Control+Shift+C")
    page.locator(".lm-CommandPalette-input").fill("ipylsp: Problems")
    page.keyboard.press("Enter")
    panel = page.locator("#jp-ipylsp-problems")
    expect(panel).to_be_visible()
    return panel


def test_one_count_in_the_status_the_problems_panel_and_the_reports(
    lab: Lab, page: Page
) -> None:
    """A cell's own error and a written file's two: the reports say 1 and 2, the status item
    counts 3, the Problems panel lists 3 (the cell's under the notebook, a link to it)."""
    open_cells(page, lab, "count.ipynb", [SETUP, WARM, DEFINE, CALL, BROKEN])
    expect(cell(page, 4).locator(".jp-ipylsp-row")).to_have_count(2, timeout=LIVE_TIMEOUT)
    expect(cell(page, 3).locator(".jp-ipylsp-row")).to_have_count(1)
    status = page.locator("#jp-main-statusbar .jp-ipylsp-status")
    expect(status).to_have_text(re.compile(r"^ipylsp: \d+ running · 3 errors$"), timeout=20_000)

    panel = open_problems(page)
    expect(panel.locator(".jp-ipylsp-problems-summary")).to_have_text(
        "3 errors in 1 file and 1 cell", timeout=LIVE_TIMEOUT
    )
    expect(panel.locator(".jp-ipylsp-file-header")).to_have_text(
        ["shop.py (ty, ruff)", re.compile(r"^cell \[\d+\]$")])
    expect(panel.locator(".jp-ipylsp-notebook-header")).to_have_text("count.ipynb")
    group = panel.locator(".jp-ipylsp-notebook")
    expect(group.locator(".jp-ipylsp-row")).to_have_text([
        re.compile(r"^ERROR cell \[\d+\] 2:3 " + re.escape(CALL_HOVER[len("ERROR "):]))])
    # the count holds once the panel asked the server for the file
    expect(status).to_have_text(re.compile(r"^ipylsp: \d+ running · 3 errors$"), timeout=20_000)
    screenshot(page, "marks-count")

    cell(page, 0).locator(".jp-InputArea-editor").click()
    group.get_by_role("button", name=re.compile(r"^cell \[\d+\] 2:3$")).click()
    expect(cell(page, 3)).to_have_class(re.compile(r"\bjp-mod-active\b"))
    expect(cursor(page)).to_have_text("Ln 2, Col 3")


def open_file(page: Page, path: str) -> Locator:
    """`path` in JupyterLab's file editor (File > Open from Path, from the palette): its text."""
    page.keyboard.press("Control+Shift+C")
    page.locator(".lm-CommandPalette-input").fill("Open from Path")
    page.keyboard.press("Enter")
    page.locator(".jp-Dialog input").fill(path)
    page.keyboard.press("Enter")
    return page.locator(".jp-FileEditor .cm-content")


MANY = 26  # more problems than a report lists for one file (max_per_file, 20)


def test_a_file_editor_marks_every_problem_not_a_reports_first_20(
    lab: Lab, page: Page
) -> None:
    (lab.root / "many.py").unlink(missing_ok=True)
    names = [f"missing_{i:02d}" for i in range(MANY)]
    # a few lines (the editor draws only the lines in view)
    body = "".join(f"print({', '.join(names[i:i + 9])})\n" for i in range(0, MANY, 9))
    open_cells(page, lab, "many.ipynb", [SETUP, f"%%writefile many.py\n{body}"])
    report = cell(page, 1).locator(".jp-ipylsp-report")
    # one row per problem both servers report, the first 20 of them
    expect(report).to_contain_text(f"... and {MANY - 20} more", timeout=LIVE_TIMEOUT)
    file_marks = open_file(page, "many.py").locator(".cm-ipylsp-mark")
    # every name, ty's mark and Ruff's (stored answers are never merged)
    expect(file_marks).to_have_text([n for n in names for _ in ("ty", "ruff")],
                                    timeout=LIVE_TIMEOUT)


def test_a_file_a_cell_wrote_shows_its_marks_when_opened(lab: Lab, page: Page) -> None:
    """The file editor's marks come from the kernel's stored answers (no check by the Jupyter
    server's own service), follow the typing, and go with an edit of their line."""
    (lab.root / "shop.py").unlink(missing_ok=True)
    open_cells(page, lab, "writes.ipynb", [SETUP, BROKEN])
    expect(cell(page, 1).locator(".jp-ipylsp-row")).to_have_count(2, timeout=LIVE_TIMEOUT)
    editor = open_file(page, "shop.py")
    file_marks = editor.locator(".cm-ipylsp-mark")
    # ty's and ruff's stored answers, each its own mark (stored answers are never merged)
    expect(file_marks).to_have_text(['discount="10%"', "totl", "totl"], timeout=LIVE_TIMEOUT)
    assert sorted(hover_text(page, file_marks.nth(2)).splitlines()) == [
        "ERROR Name `totl` used when not defined [unresolved-reference] (ty)",
        "ERROR Undefined name `totl` [F821] (Ruff)",
    ]
    screenshot(page, "marks-file")
    editor.locator(".cm-line").nth(0).click()
    page.keyboard.press("Home")
    page.keyboard.type("# a comment\n")  # the marks move down a line with the text
    expect(file_marks).to_have_text(['discount="10%"', "totl", "totl"])
    assert editor.locator(".cm-line").nth(6).locator(".cm-ipylsp-mark").count() == 1
    editor.locator(".cm-line").nth(6).click()  # print(total(basket, discount="10%"))
    page.keyboard.press("End")
    page.keyboard.type("  # changed")
    expect(file_marks).to_have_text(["totl", "totl"])


def put_setting(lab: Lab, marks: bool) -> None:
    """JupyterLab's settings for the extension (what its settings editor writes)."""
    body = json.dumps({"raw": json.dumps({"marks": marks})}).encode()
    request = urllib.request.Request(
        f"{lab.url}lab/api/settings/ipylsp:plugin", data=body, method="PUT",
        headers={"Authorization": f"token {lab.token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        assert answer.status == 204


def test_the_setting_turns_the_marks_off_not_the_reports(lab: Lab, page: Page) -> None:
    put_setting(lab, marks=False)
    try:
        open_cells(page, lab, "quiet.ipynb", [SETUP, WARM, DEFINE, CALL])
        expect(cell(page, 3).locator(".jp-ipylsp-row")).to_have_count(1, timeout=LIVE_TIMEOUT)
        expect(page.locator(".cm-ipylsp-mark")).to_have_count(0)
        screenshot(page, "marks-off")
    finally:
        put_setting(lab, marks=True)


# -- Notebook 7 ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def notebook7(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    with running_lab(tmp_path_factory.mktemp("nb7"), app="notebook") as server:
        yield server


def test_notebook_7_draws_the_same_marks(notebook7: Lab, page: Page) -> None:
    """Notebook 7 loads the same prebuilt extension: the mark, its hover, the link."""
    notebook(notebook7.root, "nb7.ipynb", [SETUP, WARM, DEFINE, CALL], execute=False)
    # Its kernel is started first, as when the notebook was open before: the page connects to
    # it. Notebook 7 starting one itself under load was seen to start two (the cells split
    # between them) or to drop the first cell run; that is the front end's, not ipylsp's.
    notebook7.api("api/sessions", {"path": "nb7.ipynb", "name": "nb7.ipynb", "type": "notebook",
                                   "kernel": {"name": "python3"}})
    keep_the_kernel(page)
    page.goto(notebook7.notebook_url("nb7.ipynb"))
    expect(page.locator(".jp-Notebook .jp-Cell")).to_have_count(4, timeout=60_000)
    expect(page.locator("#jp-ipylsp-problems")).to_have_count(1)  # the plugin activated
    # Notebook 7 has no status bar: its toolbar's kernel indicator says when the kernel is up
    expect(page.locator(".jp-Notebook-ExecutionIndicator")).to_have_attribute(
        "data-status", "idle", timeout=60_000
    )
    run_all(page, 4)
    call = marks(page, 3)
    expect(call).to_have_text(["'s'"], timeout=LIVE_TIMEOUT)
    assert hover_text(page, call) == CALL_HOVER
    screenshot(page, "marks-notebook7")
    cell(page, 0).locator(".jp-InputArea-editor").click()
    cell(page, 3).get_by_role("button", name=re.compile(r"^cell \[\d+\] 2:3$")).click()
    expect(cell(page, 3)).to_have_class(re.compile(r"\bjp-mod-active\b"))
