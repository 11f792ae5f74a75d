"""Formatting a `Report` for people and agents: text/plain, text/html, versioned JSON.

One selection step (`select`: severity filter, order, duplicate merge, count caps, then the
character budget) decides what is shown; every format renders the same selection, so the
text block, the HTML and the JSON always agree. The formats are described in
`docs/schema.md`. In short, text/plain:

    <diagnostics file="src/app.py">
    ERROR [5:7] Name `totl` used when not defined [unresolved-reference, F821] (ty, Ruff)
    ... and 7 more
    UNKNOWN [pyright] timed out after 10.0 s: results for this file are incomplete; <hint>
    </diagnostics>
    fixed 2 errors in src/app.py
    ... and 140 more problems in 120 other files (gen_31.py, gen_32.py, gen_33.py, ...): <hint>

- Positions are 1-based line and 1-based column in code points.
- Files: the ones the check wrote, then the ones it broke elsewhere, each group in natural
  order (`gen_2` before `gen_10`). Inside a file's block: the shown problems (errors first,
  then by line, column, message, server), one line per problem even when several servers
  report it (`merge`), then `... and N more` when the caps or the budget cut that file, then
  one line per unknown server.
- After the block, outside it: `fixed ...` (counts of fixed problems passing the severity
  filter). Outside, so that a block always means "something is wrong here"; a write that only
  fixed problems prints just that line.
- The text stays within `max_report_chars` (about 6,000): whole lines go, lowest priority
  first, blocks always close, and closing lines count what was left out: files with no block
  (`... and N more problems in K other files (...): %lsp pending`), unknown servers
  (`UNKNOWN [ty] results incomplete for K more files (...)`), fixed lines (`fixed N errors in
  K other files`). Check-level UNKNOWN lines and report notes follow, bounded, always shown.
- A report with nothing to say is "" (or, with `show_clean`, one
  `ipylsp: src/app.py clean (ty, ruff)` line per clean file).

Messages are untrusted: in text their line breaks and control characters are flattened and any
`<diagnostics`/`</diagnostics` inside is defanged, so a message cannot close or open a block; in
HTML everything is escaped. A message shows its first line plus continuation lines while it
stays under 200 characters; the JSON keeps it whole.

Modules: `selection` (options, filter, order, caps), `merge` (one problem, one line), `lines`
(each kind of text line), `budget` (`select`: the caps and the character budget), `text`
(text/plain), `markup` (text/html), `schema` (JSON); `mime_bundle` puts them together here.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from ipylsp.analysis.report.budget import select
from ipylsp.analysis.report.lines import MAX_MESSAGE as MAX_MESSAGE
from ipylsp.analysis.report.lines import check_unknown_line as check_unknown_line
from ipylsp.analysis.report.lines import diagnostic_line as diagnostic_line
from ipylsp.analysis.report.lines import fixed_line as fixed_line
from ipylsp.analysis.report.lines import message_text as message_text
from ipylsp.analysis.report.lines import one_line as one_line
from ipylsp.analysis.report.lines import unknown_line
from ipylsp.analysis.report.markup import format_html
from ipylsp.analysis.report.schema import SCHEMA, to_json
from ipylsp.analysis.report.schema import diagnostic_json as diagnostic_json
from ipylsp.analysis.report.selection import FileView, FormatOptions
from ipylsp.analysis.report.text import format_text
from ipylsp.model.diagnostics import Report

__all__ = [
    "MIME_TYPE",
    "SCHEMA",
    "FileView",
    "FormatOptions",
    "ShownReport",
    "format_html",
    "format_text",
    "mime_bundle",
    "select",
    "to_json",
    "unknown_line",
]

MIME_TYPE = "application/vnd.ipylsp.diagnostics+json"


def mime_bundle(report: Report, options: FormatOptions | None = None) -> dict[str, object]:
    """text/plain, text/html and the ipylsp JSON for one display; {} when there is nothing.

    Never text/markdown or application/json: readers that prefer those would hide the block.
    """
    options = options or FormatOptions()
    selected = select(report, options)
    text = format_text(report, options, selected=selected)
    if not text:
        return {}
    return {
        "text/plain": text,
        "text/html": format_html(report, options, selected=selected),
        MIME_TYPE: to_json(report, options, selected=selected),
    }


@dataclass(frozen=True, slots=True, repr=False, eq=False)
class ShownReport(Report):
    """A `Report` that prints as the answer: its repr is its text block (or `empty`, the words
    of the request: "no new problems" for a delta, "no problems" for everything) and its MIME
    bundle that of `mime_bundle`; equal to the same report. The one report type that prints:
    the Python API and `%lsp` return it."""

    empty: str = "no problems"
    options: FormatOptions = field(default_factory=FormatOptions)

    @classmethod
    def of(cls, report: Report, options: FormatOptions, empty: str) -> ShownReport:
        values = {f.name: getattr(report, f.name) for f in fields(Report)}
        return cls(**values, empty=empty, options=options)

    def __eq__(self, other: object) -> bool:  # how it prints is no part of what it says
        if not isinstance(other, Report):
            return NotImplemented
        return all(getattr(self, f.name) == getattr(other, f.name) for f in fields(Report))

    __hash__ = Report.__hash__

    def __repr__(self) -> str:
        return format_text(self, self.options) or self.empty

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return mime_bundle(self, self.options) or {"text/plain": self.empty}
