"""From the end of a `%%writefile` cell to the renderer's DOM in the browser (issue 12).

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


def run(n: int) -> dict[str, Any]:
    from playwright.sync_api import expect, sync_playwright

    base = Path(tempfile.mkdtemp(prefix="ipylsp-bench-lab-"))
    with running_lab(base) as lab:
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell(s) for s in (FIRST, SETUP, AFTER, BROKEN, FIXED)]
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

            for index in (0, 1, 2):
                run_cell(index, observe=False)
            for warm in range(4):  # servers started and warm
                run_cell(3 + warm % 2, observe=True)
            times = lab.root / "times.jsonl"
            times.write_text("")
            seen: list[float] = []
            for i in range(n):
                dom = run_cell(3 + i % 2, observe=True)
                assert dom is not None
                seen.append(dom)
            browser.close()
        events = [json.loads(line) for line in times.read_text().splitlines()]
        ends = [t for kind, t in events if kind == "end"]
        reports = [t for kind, t in events if kind == "report"]
    assert len(ends) == len(reports) == len(seen) == n, (len(ends), len(reports), len(seen))
    kernel = [c.ms(r - e) for e, r in zip(ends, reports, strict=True)]
    dom = [c.ms(d - e) for e, d in zip(ends, seen, strict=True)]
    return {
        "kernel_ms": c.median(kernel),
        "dom_ms": c.median(dom),
        "browser_ms": c.median([d - k for d, k in zip(dom, kernel, strict=True)]),
        "samples": {"kernel_ms": kernel, "dom_ms": dom},
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
