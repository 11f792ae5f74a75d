"""The one selection every format renders: count caps, then the character budget (`select`).

Its own module because the budget needs the exact text lines (`lines.render`) and the lines
need the selection's views: this is where the two meet. Agent tools drop or stub big outputs
(jupyter-ai-tools replaces a cell's outputs over 10,000 JSON characters with a stub), so a
report's text/plain is kept within `FormatOptions.max_report_chars`: the items the caps kept
are taken in priority order (`selection.priority`) as long as the whole text fits, and what
is left out is announced by the closing lines. Blocks are never cut in the middle: whole lines
go, and a file's block closes.
"""

from __future__ import annotations

from ipylsp.analysis.report.lines import render
from ipylsp.analysis.report.merge import Row
from ipylsp.analysis.report.selection import (
    FileView,
    FormatOptions,
    Prepared,
    prepare,
    priority,
    views,
)
from ipylsp.model.diagnostics import Report


def text_size(
    report: Report, selected: list[FileView], options: FormatOptions, memo: dict[Row, str]
) -> int:
    """Characters of the text/plain that `selected` renders to."""
    lines = render(report, selected, options, memo)
    return sum(map(len, lines)) + max(len(lines) - 1, 0)


def select(report: Report, options: FormatOptions | None = None) -> list[FileView]:
    """Filter, merge, order, caps and budget: what every format shows (docs/schema.md).

    The most items (in priority order) whose text fits, by bisection over the count of items:
    the size grows with the count but not strictly (a file's last problem removes its
    `... and 1 more`), so the result always fits, and is the largest count or close to it.
    Check-level lines and notes are always shown, even past the budget.
    """
    options = options or FormatOptions()
    prepared: list[Prepared] = prepare(report, options)
    items = priority(prepared, options)
    blank = views(prepared, ())
    everything = views(prepared, items, blank)
    memo: dict[Row, str] = {}
    limit = options.max_report_chars
    if limit <= 0 or text_size(report, everything, options, memo) <= limit:
        return everything
    fits, too_big = 0, len(items)
    while too_big - fits > 1:
        middle = (fits + too_big) // 2
        if text_size(report, views(prepared, items[:middle], blank), options, memo) <= limit:
            fits = middle
        else:
            too_big = middle
    return views(prepared, items[:fits], blank)
