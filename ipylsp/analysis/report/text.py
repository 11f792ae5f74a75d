"""The text/plain rendering (what agents read): the selected lines, joined.

Its own module: the text block is the contract agents parse (see the `report` docstring and
docs/schema.md). The lines themselves live in `lines` (the budget measures them, the HTML
shows them escaped).
"""

from __future__ import annotations

from ipylsp.analysis.report.budget import select
from ipylsp.analysis.report.lines import check_unknown_line as check_unknown_line
from ipylsp.analysis.report.lines import render
from ipylsp.analysis.report.selection import FileView, FormatOptions
from ipylsp.model.diagnostics import Report


def format_text(
    report: Report, options: FormatOptions | None = None, *,
    selected: list[FileView] | None = None,
) -> str:
    """The text/plain rendering ("" when there is nothing to say), within the budget.
    `selected`: `select(report, options)` when the caller has it already."""
    options = options or FormatOptions()
    if selected is None:
        selected = select(report, options)
    return "\n".join(render(report, selected, options))
