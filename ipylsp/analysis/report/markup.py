"""The text/html rendering (for people): inline styles only, every server string escaped.

Its own module: HTML is a view of the same selection and the same lines as the text block.
"""

from __future__ import annotations

import html
from collections.abc import Iterable

from ipylsp.analysis.report.budget import select
from ipylsp.analysis.report.lines import (
    MAX_MESSAGE,
    check_lines,
    clean_line,
    clean_more_line,
    fixed_line,
    fixed_others_line,
    hidden_line,
    hidden_unknown_line,
    note_lines,
    one_line,
    row_parts,
    unknown_line,
)
from ipylsp.analysis.report.merge import Row
from ipylsp.analysis.report.selection import FileView, FormatOptions
from ipylsp.model.diagnostics import Report, Severity

_COLORS = {
    Severity.ERROR: "#d32f2f",
    Severity.WARNING: "#b26a00",
    Severity.INFORMATION: "#1976d2",
    Severity.HINT: "#607d8b",
}
_MUTED = "color:#808080"
_UNKNOWN = "color:#8e24aa"
_FIXED = "color:#2e7d32"


def _e(text: str, limit: int = MAX_MESSAGE) -> str:
    """Untrusted text as one escaped HTML line."""
    return html.escape(one_line(text, limit, defang=False), quote=True)


def _html_row(row: Row) -> str:
    label, position, message, codes, sources = row_parts(row, defang=False)
    parts = [
        f'<span style="color:{_COLORS[row[0].severity]};font-weight:bold">{label}</span>',
        f'<span style="{_MUTED}">{position}</span>',
        html.escape(message, quote=True),
    ]
    if codes:
        parts.append(f'<span style="{_MUTED}">[{html.escape(codes, quote=True)}]</span>')
    if sources:
        parts.append(f'<span style="{_MUTED}">({html.escape(sources, quote=True)})</span>')
    return f"<div>{' '.join(parts)}</div>"


def format_html(
    report: Report, options: FormatOptions | None = None, *,
    selected: list[FileView] | None = None,
) -> str:
    """The text/html rendering: inline styles only, every server string escaped."""
    options = options or FormatOptions()
    views = select(report, options) if selected is None else selected
    out: list[str] = []

    def line(style: str, text: str) -> None:
        if text:
            out.append(f'<div style="{style}">{_e(text)}</div>')

    def each(style: str, texts: Iterable[str]) -> None:
        for text in texts:
            line(style, text)

    for view in views:
        if view.has_block:
            path = _e(view.file.display_path, 500)
            out.append(f'<div style="margin:2px 0"><div style="font-weight:bold">{path}</div>')
            out.append('<div style="padding-left:1.5em">')
            out.extend(_html_row(row) for row in view.rows)
            if view.omitted:
                line(_MUTED, f"... and {view.omitted} more")
            each(_UNKNOWN, (unknown_line(u, brief=options.is_brief(u.server_id))
                            for u in view.unknown))
            out.append("</div></div>")
        if options.show_fixed and view.fixed and view.fixed_shown:
            line(_FIXED, fixed_line(view))
    line(_MUTED, hidden_line(views, options.more_hint))
    line(_UNKNOWN, hidden_unknown_line(views))
    if options.show_fixed:
        line(_FIXED, fixed_others_line(views))
    each(_UNKNOWN, check_lines(report))
    if options.show_clean:
        each(_MUTED, (clean_line(v.file) for v in views if v.clean and v.clean_shown))
        line(_MUTED, clean_more_line(views))
    each(_MUTED, note_lines(report))
    if not out:
        return ""
    style = "font-family:var(--jp-code-font-family,monospace);font-size:12px;line-height:1.5"
    return f'<div class="ipylsp-diagnostics" style="{style}">{"".join(out)}</div>'
