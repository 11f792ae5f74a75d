"""From the end of a cell to the renderer's DOM and to the marks in the editors, in the browser
(issues 12 and 23).

Run: ``.venv/bin/python benchmarks/bench_lab.py [--n 20]``. Prints one JSON object (also
``benchmarks/results/bench_lab.json``). Needs what the browser tests need
(``scripts/build-labextension --browser``, Debian's chromium).

A real ``jupyter lab`` (the browser tests' launcher) and Chromium through Playwright. The
notebook's first cell registers a ``post_run_cell`` hook *before* ``%load_ext ipylsp`` (so it
runs before ipylsp's check: the cell's end, ``t_end``) and its third one a hook *after* it (it
runs once the report is displayed: ``t_report``); both append wall-clock times to a file. The
`%%writefile` cell alternates a broken and a fixed version of one module, so each run makes a
report. In the page, a MutationObserver notes ``Date.now()`` when a new
``.jp-ipylsp-report`` (not the previous run's) appears under that cell (``t_dom``). Same
machine, same clock.

- ``kernel_ms``: t_report - t_end, ipylsp's check and display in the kernel (warm ty + ruff);
- ``dom_ms``: t_dom - t_end, what the user waits for (the kernel's part, the output message
  over ZMQ and the websocket, the renderer);
- ``browser_ms``: dom - kernel, what the trip to the page and the renderer add.

The marks (issue 23), in the same notebook and run: a cell that defined ``f(x: str)`` is
changed to ``f(x: int)`` and run, which breaks a later cell's ``f('s')`` (then changed back,
which fixes it). From the defining cell's end (``t_end``, as above):

- ``cell_marks.report_ms``: to its report's DOM (which says the later cell broke);
- ``cell_marks.marks_ms``: to the mark in the later cell's editor (the report, then the
  extension's silent request for what changed, then the drawing);
- ``ask_ms``, ``draw_ms``: the extension's own measures of its request to the kernel and of
  setting the marks in the editors (``performance.measure`` in labextension/src/cellmarks.ts).

``marks_200``: the same with ``g``, called ten times in each of 20 cells: 200 marks drawn at
once (``marks_ms`` to the last cell's marks, ``ask_ms``, ``draw_ms``).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import _common as c
import nbformat

from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS, running_lab

BROKEN = (
    "%%writefile shop.py\ndef total(prices: list[float]) -> float:\n    return sum(prices)\n\n"
    "print(totl([1.0]))\n"
)
FIXED = BROKEN.replace("totl(", "total(")
HOOK = (
    "import json, time\n"
    "def _note(kind):\n"
    "    def hook(result):\n"
    "        with open('times.jsonl', 'a') as f:\n"
    "            f.write(json.dumps([kind, time.time()]) + '\\n')\n"
    "    return hook\n"
)
FIRST = HOOK + "get_ipython().events.register('post_run_cell', _note('end'))"
SETUP = '%load_ext ipylsp\n%config IPyLSP.language_servers = {"python": ["ty", "ruff"]}'
AFTER = "get_ipython().events.register('post_run_cell', _note('report'))"

def define(name: str, kind: str) -> str:
    return f"def {name}(x: {kind}) -> {kind}: return x"


CALL_F = "f('s')"
CALLS_G = ["\n".join(f"g('{cell}-{i}')" for i in range(10)) for cell in range(20)]
CELLS = [FIRST, SETUP, AFTER, BROKEN, FIXED, define("f", "str"), CALL_F, define("g", "str"),
         *CALLS_G]
WRITE, F, G = 3, 5, 7  # the `%%writefile` cells, the definitions of f and g

OBSERVE = """(index) => {
  window.__ipylspSeen = null;
  const cell = document.querySelectorAll('.jp-Notebook .jp-Cell')[index];
  const old = cell.querySelector('.jp-OutputArea .jp-ipylsp-report');
  const observer = new MutationObserver(() => {
    const report = cell.querySelector('.jp-OutputArea .jp-ipylsp-report');
    if (report && report !== old) {
      window.__ipylspSeen = Date.now();
      observer.disconnect();
    }
  });
  observer.observe(cell, {childList: true, subtree: true});
}"""

MARKED = """([index, present]) => {
  window.__ipylspMarked = null;
  const cell = document.querySelectorAll('.jp-Notebook .jp-Cell')[index];
  const done = () => (cell.querySelectorAll('.cm-content .cm-ipylsp-mark').length > 0) === present;
  const observer = new MutationObserver(() => {
    if (done()) {
      window.__ipylspMarked = Date.now();
      observer.disconnect();
    }
  });
  observer.observe(cell, {childList: true, subtree: true, attributes: true});
  performance.clearMeasures();
}"""

MEASURES = """() => ['ipylsp:ask-marks', 'ipylsp:draw-marks'].map(name => {
  const entry = performance.getEntriesByName(name).pop();
  return entry ? [entry.duration, entry.detail] : null;
})"""


def run(n: int) -> dict[str, Any]:
    from playwright.sync_api import expect, sync_playwright

    base = Path(tempfile.mkdtemp(prefix="ipylsp-bench-lab-"))
    with running_lab(base) as lab:
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell(s) for s in CELLS]
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                     "language": "python"}
        nbformat.write(nb, lab.root / "bench.ipynb")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            page.goto(lab.open_url("bench.ipynb"))
            expect(page.locator("#jupyterlab-splash")).to_have_count(0, timeout=60_000)
            kernel_ready = page.locator("#jp-main-statusbar").get_by_text(re.compile(r"\| Idle$"))
            expect(kernel_ready).to_have_count(1, timeout=60_000)
            cells = page.locator(".jp-Notebook .jp-Cell")

            def run_cell(index: int, *, observe: bool) -> float | None:
                if observe:
                    page.evaluate(OBSERVE, index)
                cells.nth(index).locator(".jp-InputArea-editor").click()
                page.keyboard.press("Shift+Enter")
                if not observe:
                    expect(cells.nth(index).locator(".jp-InputPrompt")).to_have_text(
                        re.compile(r"\[\d+\]"), timeout=60_000
                    )
                    return None
                page.wait_for_function("window.__ipylspSeen !== null", timeout=120_000)
                return float(page.evaluate("window.__ipylspSeen")) / 1000

            times = lab.root / "times.jsonl"

            def last_end() -> float:
                ends = [t for kind, t in map(json.loads, times.read_text().splitlines())
                        if kind == "end"]
                return float(ends[-1])

            def rewrite(index: int, text: str) -> None:
                cells.nth(index).locator(".jp-InputArea-editor").click()
                page.keyboard.press("Control+A")
                page.keyboard.insert_text(text)

            def marked(index: int, target: int) -> dict[str, Any]:
                """The definition in cell `index` takes an int and runs (it breaks `target`'s
                calls): its end to its report's DOM and to `target`'s marks; then it takes a
                str again and runs (the marks go), unmeasured."""
                name = CELLS[index].split()[1].split("(")[0]
                rewrite(index, define(name, "int"))
                page.evaluate(MARKED, [target, True])
                report = run_cell(index, observe=True)
                page.wait_for_function("window.__ipylspMarked !== null", timeout=120_000)
                mark = float(page.evaluate("window.__ipylspMarked")) / 1000
                ask, draw = page.evaluate(MEASURES)
                end = last_end()
                rewrite(index, define(name, "str"))
                page.evaluate(MARKED, [target, False])
                run_cell(index, observe=True)
                page.wait_for_function("window.__ipylspMarked !== null", timeout=120_000)
                assert report is not None and ask is not None and draw is not None
                return {"report_ms": c.ms(report - end), "marks_ms": c.ms(mark - end),
                        "ask_ms": ask[0], "draw_ms": draw[0], "marks": draw[1]["marks"],
                        "cells": draw[1]["cells"]}

            for index in range(WRITE):
                run_cell(index, observe=False)
            for warm in range(4):  # servers started and warm
                run_cell(WRITE + warm % 2, observe=True)
            for index in range(F, len(CELLS)):  # the definitions and the calls ran
                run_cell(index, observe=False)
            for index in (F, G):
                marked(index, index + 1)  # warm too
            times.write_text("")
            seen: list[float] = []
            for i in range(n):
                dom = run_cell(WRITE + i % 2, observe=True)
                assert dom is not None
                seen.append(dom)
            events = [json.loads(line) for line in times.read_text().splitlines()]
            ends = [t for kind, t in events if kind == "end"]
            reports = [t for kind, t in events if kind == "report"]
            one = [marked(F, F + 1) for _ in range(n)]
            many = [marked(G, len(CELLS) - 1) for _ in range(n)]
            browser.close()
    assert len(ends) == len(reports) == len(seen) == n, (len(ends), len(reports), len(seen))
    # the cells listed: the calls' and the definition's own (its text changed, no marks)
    assert {(m["marks"], m["cells"]) for m in one} == {(1, 2)}, one
    assert {(m["marks"], m["cells"]) for m in many} == {(200, 21)}, many
    kernel = [c.ms(r - e) for e, r in zip(ends, reports, strict=True)]
    dom = [c.ms(d - e) for e, d in zip(ends, seen, strict=True)]

    def medians(runs: list[dict[str, Any]], *keys: str) -> dict[str, Any]:
        return {key: c.median([r[key] for r in runs]) for key in keys}

    return {
        "kernel_ms": c.median(kernel),
        "dom_ms": c.median(dom),
        "browser_ms": c.median([d - k for d, k in zip(dom, kernel, strict=True)]),
        "cell_marks": medians(one, "report_ms", "marks_ms", "ask_ms", "draw_ms"),
        "marks_200": {**medians(many, "report_ms", "marks_ms", "ask_ms", "draw_ms"), "marks": 200,
                      "cells": 20},
        "samples": {"kernel_ms": kernel, "dom_ms": dom,
                    "cell_marks_ms": [r["marks_ms"] for r in one],
                    "marks_200_draw_ms": [r["draw_ms"] for r in many]},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=20)
    args = parser.parse_args()
    result: dict[str, Any] = {"machine": c.machine(), "n": args.n}
    with c.Isolation() as iso:
        result.update(run(args.n))
        result["leftover_processes"] = iso.leftovers()
    c.emit("bench_lab", result)
    return 1 if result["leftover_processes"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
