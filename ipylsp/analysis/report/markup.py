"""The text/html rendering (for people): inline styles only, every server string escaped.

Its own module: HTML is a view of the same selection and the same lines as the text block.
"""

from __future__ import annotations

import html

from ipylsp.analysis.model import Diagnostic, Report, Severity
from ipylsp.analysis.report.selection import FormatOptions, select
from ipylsp.analysis.report.text import (
    MAX_MESSAGE,
    check_unknown_line,
    clean_line,
    fixed_line,
    hidden_line,
    one_line,
    source_label,
    unknown_line,
)

_COLORS = {
    Severity.ERROR: "#d32f2f",
    Severity.WARNING: "#b26a00",
    Severity.INFORMATION: "#1976d2",
    Severity.HINT: "#607d8b",
}
_MUTED = "color:#808080"


def _e(text: str, limit: int = MAX_MESSAGE) -> str:
    """Untrusted text as one escaped HTML line."""
    return html.escape(one_line(text, limit, defang=False), quote=True)


def _html_diagnostic(d: Diagnostic) -> str:
    start = d.range.start
    parts = [
        f'<span style="color:{_COLORS[d.severity]};font-weight:bold">{d.severity.label}</span>',
        f'<span style="{_MUTED}">{start.line + 1}:{start.column + 1}</span>',
        _e(d.message),
    ]
    if d.code:
        parts.append(f'<span style="{_MUTED}">[{_e(d.code, 100)}]</span>')
    if source_label(d):
        parts.append(f'<span style="{_MUTED}">({_e(source_label(d), 100)})</span>')
    return f"<div>{' '.join(parts)}</div>"


def format_html(report: Report, options: FormatOptions | None = None) -> str:
    """The text/html rendering: inline styles only, every server string escaped."""
    options = options or FormatOptions()
    views = select(report, options)
    out: list[str] = []
    for view in views:
        path = _e(view.file.display_path, 500)
        if view.has_block:
            out.append(f'<div style="margin:2px 0"><div style="font-weight:bold">{path}</div>')
            out.append('<div style="padding-left:1.5em">')
            out.extend(_html_diagnostic(d) for d in view.shown)
            if view.omitted:
                out.append(f'<div style="{_MUTED}">... and {view.omitted} more</div>')
            for u in view.unknown:
                text = _e(unknown_line(u, brief=options.is_brief(u.server_id)))
                out.append(f'<div style="color:#8e24aa">{text}</div>')
            out.append("</div></div>")
        if options.show_fixed and view.fixed:
            out.append(f'<div style="color:#2e7d32">{_e(fixed_line(view))}</div>')
    hidden = hidden_line(views)
    if hidden:
        out.append(f'<div style="{_MUTED}">{_e(hidden)}</div>')
    out.extend(
        f'<div style="color:#8e24aa">{_e(check_unknown_line(u))}</div>' for u in report.unknown
    )
    if options.show_clean:
        out.extend(
            f'<div style="{_MUTED}">{_e(clean_line(v.file))}</div>' for v in views if v.clean
        )
    out.extend(f'<div style="{_MUTED}">{_e(n)}</div>' for n in report.notes if n.strip())
    if not out:
        return ""
    style = "font-family:var(--jp-code-font-family,monospace);font-size:12px;line-height:1.5"
    return f'<div class="ipylsp-diagnostics" style="{style}">{"".join(out)}</div>'
