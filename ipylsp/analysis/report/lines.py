"""The lines of text/plain, one function per kind of line, and `render` which puts them
together for a selection.

Its own module because two others need the exact lines: `budget` measures them to fit the
character budget, `text` joins them, and `markup` shows the same lines escaped.
"""

from __future__ import annotations

import html
import re
import time
from collections.abc import Iterable, Sequence

from ipylsp.analysis.report.merge import Row, merge
from ipylsp.analysis.report.selection import FileView, FormatOptions
from ipylsp.model.diagnostics import (
    Diagnostic,
    FileReport,
    Report,
    Severity,
    Unknown,
)

MAX_MESSAGE = 1000
"""Characters of any one server string shown in text/plain and HTML (the JSON keeps it whole)."""
MESSAGE_CHARS = 200
"""A diagnostic's text: its first line, plus continuation lines while it stays this short."""
FIRST_LINE_CHARS = 400
"""A first line longer than this is cut (with "…")."""
MAX_CHECK_LINES = 10
"""Check-level UNKNOWN lines and notes shown, each (the rest counted in one line)."""
NOTE_CHARS = 500
MAX_NAMES = 3
"""Files named on a line that counts files left out."""

_NOUNS = {
    Severity.ERROR: ("error", "errors"),
    Severity.WARNING: ("warning", "warnings"),
    Severity.INFORMATION: ("info message", "info messages"),
    Severity.HINT: ("hint", "hints"),
}

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")
_BLOCK_TAG = re.compile(r"<(/?)(diagnostics)", re.IGNORECASE)
_SPACES = re.compile(r"\s{2,}")


def _clean(text: str, defang: bool) -> str:
    text = _CONTROL.sub(" ", text.replace("\t", " "))
    return _BLOCK_TAG.sub(r"&lt;\1\2", text) if defang else text


def _cut(text: str, limit: int) -> str:
    return text[: limit - 1].rstrip() + "…" if len(text) > limit else text


def _join(parts: Sequence[str]) -> str:
    """Lines as one: "; " between them, a space after a line that ends with a colon."""
    out = ""
    for part in parts:
        out += part if not out else (" " if out.endswith(":") else "; ") + part
    return out


def one_line(message: str, limit: int = MAX_MESSAGE, *, defang: bool = True) -> str:
    """A message as one safe line: lines joined with "; ", control characters as spaces, and
    (with `defang`, for text/plain) `<diagnostics`/`</diagnostics` written `&lt;diagnostics`."""
    parts = [part.strip() for part in message.splitlines()]
    return _cut(_clean(_join([p for p in parts if p]), defang), limit)


def message_text(message: str, *, defang: bool = True) -> str:
    """A diagnostic's message for a model: the first line (cut at `FIRST_LINE_CHARS`), then
    continuation lines while the whole stays within `MESSAGE_CHARS`; "; …" says more was left
    out (the JSON keeps it all). Keeps pyright's `"str" is not assignable to "int"` detail."""
    parts = [_SPACES.sub(" ", _clean(p.strip(), defang)) for p in message.splitlines()]
    parts = [p for p in parts if p]
    if not parts:
        return ""
    if len(parts[0]) > FIRST_LINE_CHARS:
        return _cut(parts[0], FIRST_LINE_CHARS)
    kept = [parts[0]]
    for part in parts[1:]:
        if len(_join([*kept, part])) > MESSAGE_CHARS:
            return _join([*kept, "…"])
        kept.append(part)
    return _join(kept)


def source_label(diagnostic: Diagnostic) -> str:
    return diagnostic.source or diagnostic.server_id


def row_parts(row: Row, *, defang: bool = True) -> tuple[str, str, str, str, str]:
    """(label, `line:column`, message, codes, sources) of one problem; codes and sources list
    every server's of a merged row, comma-separated, "" when there are none. A stored answer's
    sources end with `cached 3 min ago` (a cached row is never merged with a live one); an
    error the kernel's run disproved says `(ran without error)` after its message."""
    first = row[0]
    start = first.range.start
    codes = _unique(one_line(d.code, 100, defang=defang) for d in row if d.code)
    sources = _unique(one_line(source_label(d), 100, defang=defang) for d in row)
    if first.cached is not None:
        sources.append(first.cached.label(time.time()))
    message = message_text(first.message, defang=defang)
    if first.ran_without_error:  # an ERROR the kernel's run disproved (never merged with one)
        message += " (ran without error)"
    return (
        first.severity.label,
        f"{start.line + 1}:{start.column + 1}",
        message,
        ", ".join(c for c in codes if c),
        ", ".join(s for s in sources if s),
    )


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


def row_line(row: Row) -> str:
    """`ERROR [5:7] Name `totl` used when not defined [unresolved-reference, F821] (ty, Ruff)`:
    1-based line and code-point column; `[codes]` and `(sources)` only when there are any."""
    label, position, message, codes, sources = row_parts(row)
    line = f"{label} [{position}] {message}"
    if codes:
        line += f" [{codes}]"
    return f"{line} ({sources})" if sources else line


def diagnostic_line(diagnostic: Diagnostic) -> str:
    """`ERROR [12:8] message [code] (Source)`, 1-based line and code-point column."""
    return row_line((diagnostic,))


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
    if detail and unknown.reason.has_cause:
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


def count_phrase(diagnostics: Iterable[Diagnostic]) -> str:
    """`1 error`, `2 errors and 1 warning`, `1 error, 2 warnings and 3 hints`."""
    counts: dict[Severity, int] = {}
    for d in diagnostics:
        counts[d.severity] = counts.get(d.severity, 0) + 1
    parts = [
        f"{n} {_NOUNS[severity][0 if n == 1 else 1]}" for severity, n in sorted(counts.items())
    ]
    if len(parts) <= 1:
        return "".join(parts)
    return ", ".join(parts[:-1]) + " and " + parts[-1]


def fixed_phrase(fixed: Sequence[Diagnostic]) -> str:
    """The counts of fixed problems: one problem two servers reported counts once."""
    return count_phrase(row[0] for row in merge(fixed))


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def fixed_line(view: FileView) -> str:
    """`fixed 2 errors in src/app.py` ("" when nothing was fixed)."""
    if not view.fixed:
        return ""
    return f"fixed {fixed_phrase(view.fixed)} in {one_line(view.file.display_path, 500)}"


def open_tag(f: FileReport) -> str:
    return f'<diagnostics file="{html.escape(one_line(f.display_path, 500), quote=True)}">'


def clean_line(f: FileReport) -> str:
    path = one_line(f.display_path, 500)
    if not f.servers:
        return f"ipylsp: {path} not checked (no language server for this file)"
    return f"ipylsp: {path} clean ({', '.join(one_line(s, 100) for s in f.servers)})"


def _names(views: Sequence[FileView]) -> str:
    names = [one_line(v.file.display_path, 200) for v in views[:MAX_NAMES]]
    return ", ".join([*names, "..."] if len(views) > MAX_NAMES else names)


def hidden_line(views: Sequence[FileView], hint: str = "") -> str:
    """`... and 140 more problems in 120 other files (a.py, b.py, c.py, ...): %lsp pending`:
    files whose problems were all cut (no block), named up to three."""
    hidden = [v for v in views if not v.has_block and v.omitted]
    if not hidden:
        return ""
    other = " other" if any(v.has_block for v in views) else ""
    files = "file" if len(hidden) == 1 else "files"
    total = _plural(sum(v.omitted for v in hidden), "more problem")
    line = f"... and {total} in {len(hidden)}{other} {files} ({_names(hidden)})"
    hint = one_line(hint, 200)
    return f"{line}: {hint}" if hint else line


def hidden_unknown_line(views: Sequence[FileView]) -> str:
    """`UNKNOWN [ty, ruff] results incomplete for 12 more files (a.py, b.py, c.py, ...)`: files
    whose unknown servers the budget left out (an unknown is never silently dropped)."""
    hidden = [v for v in views if v.hidden_unknown]
    if not hidden:
        return ""
    servers = _unique(one_line(u.server_id, 100) for v in hidden for u in v.file.unknown)
    more = _plural(len(hidden), "more file")
    return f"UNKNOWN [{', '.join(servers)}] results incomplete for {more} ({_names(hidden)})"


def fixed_others_line(views: Sequence[FileView]) -> str:
    """`fixed 140 errors in 120 other files`: fixed lines the budget left out, in one."""
    hidden = [v for v in views if v.fixed and not v.fixed_shown]
    if not hidden:
        return ""
    counts = fixed_phrase([d for v in hidden for d in v.fixed])
    return f"fixed {counts} in {_plural(len(hidden), 'other file')}"


def clean_more_line(views: Sequence[FileView]) -> str:
    hidden = [v for v in views if v.clean and not v.clean_shown]
    return f"ipylsp: {_plural(len(hidden), 'more file')} with nothing to report" if hidden else ""


def bounded(lines: Sequence[str], what: str) -> list[str]:
    """At most `MAX_CHECK_LINES` lines, the rest counted: check-level lines always fit."""
    if len(lines) <= MAX_CHECK_LINES:
        return list(lines)
    return [*lines[: MAX_CHECK_LINES - 1], f"... and {len(lines) - MAX_CHECK_LINES + 1} {what}"]


def check_lines(report: Report) -> list[str]:
    """Check-level UNKNOWN lines, bounded."""
    lines = [check_unknown_line(u) for u in report.unknown]
    return bounded(lines, "more servers unknown")


def note_lines(report: Report) -> list[str]:
    """The report's notes, one line each, bounded."""
    return bounded([one_line(n, NOTE_CHARS) for n in report.notes if n.strip()], "more notes")


def render(
    report: Report, views: Sequence[FileView], options: FormatOptions,
    memo: dict[Row, str] | None = None,
) -> list[str]:
    """The lines of text/plain for a selection (see the `report` docstring for the layout).
    `memo` keeps row lines between calls (the budget renders one report many times)."""
    memo = {} if memo is None else memo
    lines: list[str] = []
    for view in views:
        if view.has_block:
            lines.append(open_tag(view.file))
            for row in view.rows:
                line = memo.get(row)
                if line is None:
                    line = memo[row] = row_line(row)
                lines.append(line)
            if view.omitted:
                lines.append(f"... and {view.omitted} more")
            lines.extend(unknown_line(u, brief=options.is_brief(u.server_id)) for u in view.unknown)
            lines.append("</diagnostics>")
        if options.show_fixed and view.fixed and view.fixed_shown:
            lines.append(fixed_line(view))
    lines.append(hidden_line(views, options.more_hint))
    lines.append(hidden_unknown_line(views))
    if options.show_fixed:
        lines.append(fixed_others_line(views))
    lines.extend(check_lines(report))
    if options.show_clean:
        lines.extend(clean_line(v.file) for v in views if v.clean and v.clean_shown)
        lines.append(clean_more_line(views))
    lines.extend(note_lines(report))
    return [line for line in lines if line]
