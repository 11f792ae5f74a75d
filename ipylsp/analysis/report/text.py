"""The text/plain rendering (what agents read), and the one-line helpers HTML reuses.

Its own module: the text block is the contract agents parse (see the `report` docstring and
docs/schema.md); the HTML shows the same lines escaped, so it imports them from here.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Sequence

from ipylsp.analysis.model import Diagnostic, FileReport, Report, Severity, Unknown, UnknownReason
from ipylsp.analysis.report.selection import FileView, FormatOptions, select

MAX_MESSAGE = 1000
"""Characters of a message shown in text/plain and HTML (the JSON keeps it whole)."""

_NOUNS = {
    Severity.ERROR: ("error", "errors"),
    Severity.WARNING: ("warning", "warnings"),
    Severity.INFORMATION: ("info message", "info messages"),
    Severity.HINT: ("hint", "hints"),
}

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")
_BLOCK_TAG = re.compile(r"<(/?)(diagnostics)", re.IGNORECASE)


def one_line(message: str, limit: int = MAX_MESSAGE, *, defang: bool = True) -> str:
    """A message as one safe line: lines joined with "; ", control characters as spaces, and
    (with `defang`, for text/plain) `<diagnostics`/`</diagnostics` written `&lt;diagnostics`."""
    parts = [part.strip() for part in message.replace("\t", " ").splitlines()]
    text = "; ".join(part for part in parts if part)
    text = _CONTROL.sub(" ", text)
    if defang:
        text = _BLOCK_TAG.sub(r"&lt;\1\2", text)
    if len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    return text


def source_label(diagnostic: Diagnostic) -> str:
    return diagnostic.source or diagnostic.server_id


def diagnostic_line(diagnostic: Diagnostic) -> str:
    """`ERROR [12:8] message [code] (Source)`, 1-based line and code-point column."""
    start = diagnostic.range.start
    parts = [
        f"{diagnostic.severity.label} [{start.line + 1}:{start.column + 1}]",
        one_line(diagnostic.message),
    ]
    if diagnostic.code:
        parts.append(f"[{one_line(diagnostic.code, 100)}]")
    label = source_label(diagnostic)
    if label:
        parts.append(f"({one_line(label, 100)})")
    return " ".join(parts)


def unknown_line(unknown: Unknown, *, brief: bool = False) -> str:
    """The line for a server whose answer is not known.

    Full: `UNKNOWN [pyright] timed out after 10.0 s: results for this file are incomplete; <hint>`
    (the detail continues the reason, so write it as such: "after 10.0 s", "with exit code 1").
    Brief: `UNKNOWN [pyright] timed out: results incomplete`.
    """
    server = one_line(unknown.server_id, 100)
    reason = unknown.reason.value
    if brief:
        return f"UNKNOWN [{server}] {reason}: results incomplete"
    detail = one_line(unknown.detail, 300)
    if detail and unknown.reason is UnknownReason.NOT_INSTALLED:
        detail = f"({detail})"  # "not installed (tsc not found)": a cause, not a continuation
    line = f"UNKNOWN [{server}] {reason}{' ' + detail if detail else ''}"
    line += ": results for this file are incomplete"
    hint = one_line(unknown.hint, 300)
    return f"{line}; {hint}" if hint else line


def check_unknown_line(unknown: Unknown) -> str:
    """A line about the whole check for one server (`Report.unknown`), e.g.
    `UNKNOWN [basedpyright] 24 of 150 files not checked within 10.0 s; <hint>`."""
    server = one_line(unknown.server_id, 100)
    detail = one_line(unknown.detail, 300) or unknown.reason.value
    line = f"UNKNOWN [{server}] {detail}"
    hint = one_line(unknown.hint, 300)
    return f"{line}; {hint}" if hint else line


def _count_phrase(diagnostics: Iterable[Diagnostic]) -> str:
    counts: dict[Severity, int] = {}
    for d in diagnostics:
        counts[d.severity] = counts.get(d.severity, 0) + 1
    parts = [
        f"{n} {_NOUNS[severity][0 if n == 1 else 1]}" for severity, n in sorted(counts.items())
    ]
    if len(parts) <= 1:
        return "".join(parts)
    return ", ".join(parts[:-1]) + " and " + parts[-1]


def fixed_line(view: FileView) -> str:
    """`fixed 2 errors in src/app.py` ("" when nothing was fixed)."""
    if not view.fixed:
        return ""
    return f"fixed {_count_phrase(view.fixed)} in {one_line(view.file.display_path, 500)}"


def _attribute(path: str) -> str:
    return html.escape(one_line(path, 500), quote=True)


def clean_line(f: FileReport) -> str:
    path = one_line(f.display_path, 500)
    if not f.servers:
        return f"ipylsp: {path} not checked (no language server for this file)"
    return f"ipylsp: {path} clean ({', '.join(one_line(s, 100) for s in f.servers)})"


def hidden_line(views: Sequence[FileView]) -> str:
    hidden = [v for v in views if not v.has_block and v.omitted]
    if not hidden:
        return ""
    total = sum(v.omitted for v in hidden)
    names = [one_line(v.file.display_path, 200) for v in hidden[:3]]
    if len(hidden) > 3:
        names.append("...")
    files = "file" if len(hidden) == 1 else "files"
    return f"... and {total} more in {len(hidden)} other {files} ({', '.join(names)})"


def format_text(report: Report, options: FormatOptions | None = None) -> str:
    """The text/plain rendering ("" when there is nothing to say)."""
    options = options or FormatOptions()
    views = select(report, options)
    lines: list[str] = []
    for view in views:
        if view.has_block:
            lines.append(f'<diagnostics file="{_attribute(view.file.display_path)}">')
            lines.extend(diagnostic_line(d) for d in view.shown)
            if view.omitted:
                lines.append(f"... and {view.omitted} more")
            lines.extend(unknown_line(u, brief=options.is_brief(u.server_id)) for u in view.unknown)
            lines.append("</diagnostics>")
        if options.show_fixed and view.fixed:
            lines.append(fixed_line(view))
    hidden = hidden_line(views)
    if hidden:
        lines.append(hidden)
    lines.extend(check_unknown_line(u) for u in report.unknown)
    if options.show_clean:
        lines.extend(clean_line(v.file) for v in views if v.clean)
    lines.extend(one_line(note) for note in report.notes if note.strip())
    return "\n".join(lines)
