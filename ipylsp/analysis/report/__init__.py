"""Formatting a `Report` for people and agents: text/plain, text/html, versioned JSON.

One selection step (`select`) applies the severity filter and the caps; every format renders
the same selection, so the text block, the HTML and the JSON always agree. The formats are
described in `docs/schema.md`. In short, text/plain:

    <diagnostics file="src/app.py">
    ERROR [12:8] Type "str" is not assignable to type "int" [reportAssignmentType] (Pyright)
    ... and 7 more
    UNKNOWN [pyright] timed out after 10.0 s: results for this file are incomplete; <hint>
    </diagnostics>
    fixed 2 errors in src/app.py

- Positions are 1-based line and 1-based column in code points.
- Inside a file's block: the shown diagnostics (errors first, then by line, column, message,
  server), then `... and N more` when the caps cut that file, then one line per unknown server.
- After the block, outside it: `fixed ...` (counts of fixed problems passing the severity
  filter). Outside, so that a block always means "something is wrong here"; a write that only
  fixed problems prints just that line.
- Files whose problems were all cut by the report cap get no block; one last line names them:
  `... and 12 more in 2 other files (src/b.py, src/c.py)`.
- Report notes follow verbatim, one per line. A report with nothing to say is "" (or, with
  `show_clean`, one `ipylsp: src/app.py clean (ty, ruff)` line per clean file).

Messages are untrusted: in text their line breaks and control characters are flattened and any
`<diagnostics`/`</diagnostics` inside is defanged, so a message cannot close or open a block; in
HTML everything is escaped.

Modules: `selection` (options, filter and caps), `text` (text/plain), `markup` (text/html),
`schema` (JSON); `mime_bundle` puts them together here.
"""

from __future__ import annotations

from ipylsp.analysis.model import Report
from ipylsp.analysis.report.markup import format_html
from ipylsp.analysis.report.schema import SCHEMA, to_json
from ipylsp.analysis.report.schema import diagnostic_json as diagnostic_json
from ipylsp.analysis.report.selection import FileView, FormatOptions, select
from ipylsp.analysis.report.text import MAX_MESSAGE as MAX_MESSAGE
from ipylsp.analysis.report.text import diagnostic_line as diagnostic_line
from ipylsp.analysis.report.text import fixed_line as fixed_line
from ipylsp.analysis.report.text import format_text, unknown_line
from ipylsp.analysis.report.text import one_line as one_line

__all__ = [
    "MIME_TYPE",
    "SCHEMA",
    "FileView",
    "FormatOptions",
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
    text = format_text(report, options)
    if not text:
        return {}
    return {
        "text/plain": text,
        "text/html": format_html(report, options),
        MIME_TYPE: to_json(report, options),
    }
