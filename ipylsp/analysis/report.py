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
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ipylsp.analysis.model import Diagnostic, FileReport, Report, Severity, Unknown, UnknownReason

if TYPE_CHECKING:
    from ipylsp.settings import Settings, SeverityFilter

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

SCHEMA = "ipylsp.diagnostics/1"
MIME_TYPE = "application/vnd.ipylsp.diagnostics+json"
MAX_MESSAGE = 1000
"""Characters of a message shown in text/plain and HTML (the JSON keeps it whole)."""

_SEVERITIES: dict[str, frozenset[Severity]] = {
    "error": frozenset({Severity.ERROR}),
    "warning": frozenset({Severity.ERROR, Severity.WARNING}),
    "all": frozenset(Severity),
}
_NOUNS = {
    Severity.ERROR: ("error", "errors"),
    Severity.WARNING: ("warning", "warnings"),
    Severity.INFORMATION: ("info message", "info messages"),
    Severity.HINT: ("hint", "hints"),
}


@dataclass(frozen=True, slots=True)
class FormatOptions:
    """What to show and how much. The defaults are the contract's (errors only, 20/50)."""

    severity: SeverityFilter = "error"
    """"error": errors only; "warning": errors and warnings; "all": everything."""
    max_per_file: int = 20
    """Diagnostics shown per file; 0 or less means no limit."""
    max_per_report: int = 50
    """Diagnostics shown in the whole report; 0 or less means no limit."""
    show_clean: bool = False
    """Say `ipylsp: <path> clean (<servers>)` for files with nothing to show."""
    show_fixed: bool = True
    """Say `fixed N errors in <path>` for fixed problems that pass the severity filter."""
    brief_unknown: bool | frozenset[str] = False
    """Unknown servers the caller has already explained for this workspace root: True for
    all, or a set of server ids. Those get a short note instead of the full line and hint."""

    def __post_init__(self) -> None:
        if self.severity not in _SEVERITIES:
            raise ValueError(f"severity must be one of {sorted(_SEVERITIES)}: {self.severity!r}")

    @classmethod
    def from_settings(cls, settings: Settings, **overrides: Any) -> FormatOptions:
        """Options from the core settings (severity filter and caps), with overrides."""
        values: dict[str, Any] = {
            "severity": settings.severity,
            "max_per_file": settings.max_per_file,
            "max_per_report": settings.max_per_report,
        }
        values.update(overrides)
        return cls(**values)

    def shows(self, severity: Severity) -> bool:
        return severity in _SEVERITIES[self.severity]

    def is_brief(self, server_id: str) -> bool:
        if isinstance(self.brief_unknown, bool):
            return self.brief_unknown
        return server_id in self.brief_unknown


@dataclass(frozen=True, slots=True)
class FileView:
    """One file after filtering and caps: what every format renders."""

    file: FileReport
    shown: tuple[Diagnostic, ...]
    omitted: int
    """Diagnostics passing the filter but cut by the caps."""
    fixed: tuple[Diagnostic, ...]
    """Fixed diagnostics passing the filter, sorted (not capped)."""
    unknown: tuple[Unknown, ...] = field(default=())

    @property
    def has_block(self) -> bool:
        return bool(self.shown or self.unknown)

    @property
    def clean(self) -> bool:
        return not (self.shown or self.omitted or self.unknown)


def _order(diagnostic: Diagnostic) -> tuple[int, int, int, str, str, int, int, str, str]:
    r = diagnostic.range
    return (
        *diagnostic.sort_key(),
        r.end.line,
        r.end.column,
        diagnostic.code or "",
        diagnostic.source or "",
    )


def _limit(value: int) -> int | None:
    return value if value > 0 else None


def select(report: Report, options: FormatOptions | None = None) -> list[FileView]:
    """Filter, sort and cap: errors first, `max_per_file` per file, `max_per_report` overall.

    The report cap is spent by severity first across all files (an error in the third file
    beats a warning in the first), then in file order, then in each file's order.
    """
    options = options or FormatOptions()
    per_file = _limit(options.max_per_file)
    filtered = [
        sorted((d for d in f.diagnostics if options.shows(d.severity)), key=_order)
        for f in report.files
    ]
    capped = [items[:per_file] for items in filtered]
    pool = sorted(
        (
            (int(d.severity), index, rank)
            for index, items in enumerate(capped)
            for rank, d in enumerate(items)
        ),
    )
    per_report = _limit(options.max_per_report)
    chosen = set((index, rank) for _, index, rank in pool[:per_report])
    views: list[FileView] = []
    for index, f in enumerate(report.files):
        shown = tuple(d for rank, d in enumerate(capped[index]) if (index, rank) in chosen)
        fixed = tuple(sorted((d for d in f.fixed if options.shows(d.severity)), key=_order))
        views.append(
            FileView(
                file=f,
                shown=shown,
                omitted=len(filtered[index]) - len(shown),
                fixed=fixed,
                unknown=f.unknown,
            )
        )
    return views


# --- text -------------------------------------------------------------------------------------

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


def _label(diagnostic: Diagnostic) -> str:
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
    label = _label(diagnostic)
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


def _clean_line(f: FileReport) -> str:
    path = one_line(f.display_path, 500)
    if not f.servers:
        return f"ipylsp: {path} not checked (no language server for this file)"
    return f"ipylsp: {path} clean ({', '.join(one_line(s, 100) for s in f.servers)})"


def _hidden_line(views: Sequence[FileView]) -> str:
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
    hidden = _hidden_line(views)
    if hidden:
        lines.append(hidden)
    if options.show_clean:
        lines.extend(_clean_line(v.file) for v in views if v.clean)
    lines.extend(one_line(note) for note in report.notes if note.strip())
    return "\n".join(lines)


# --- HTML -------------------------------------------------------------------------------------

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
    if _label(d):
        parts.append(f'<span style="{_MUTED}">({_e(_label(d), 100)})</span>')
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
    hidden = _hidden_line(views)
    if hidden:
        out.append(f'<div style="{_MUTED}">{_e(hidden)}</div>')
    if options.show_clean:
        out.extend(
            f'<div style="{_MUTED}">{_e(_clean_line(v.file))}</div>' for v in views if v.clean
        )
    out.extend(f'<div style="{_MUTED}">{_e(n)}</div>' for n in report.notes if n.strip())
    if not out:
        return ""
    style = "font-family:var(--jp-code-font-family,monospace);font-size:12px;line-height:1.5"
    return f'<div class="ipylsp-diagnostics" style="{style}">{"".join(out)}</div>'


# --- JSON -------------------------------------------------------------------------------------


def diagnostic_json(d: Diagnostic) -> dict[str, object]:
    """One diagnostic in schema ipylsp.diagnostics/1 (1-based; end is exclusive)."""
    r = d.range
    return {
        "severity": d.severity.json_name,
        "line": r.start.line + 1,
        "column": r.start.column + 1,
        "end_line": r.end.line + 1,
        "end_column": r.end.column + 1,
        "message": d.message,
        "code": d.code,
        "source": d.source,
        "server": d.server_id,
    }


def _unknown_json(u: Unknown) -> dict[str, object]:
    return {"server": u.server_id, "reason": u.reason.value, "detail": u.detail, "hint": u.hint}


def to_json(report: Report, options: FormatOptions | None = None) -> dict[str, object]:
    """The structured form (schema "ipylsp.diagnostics/1", see docs/schema.md)."""
    options = options or FormatOptions()
    views = select(report, options)
    fixed_cap = _limit(options.max_per_file)
    files: list[dict[str, object]] = []
    for view in views:
        f = view.file
        files.append(
            {
                "path": f.display_path,
                "absolute_path": str(f.path),
                "servers": list(f.servers),
                "diagnostics": [diagnostic_json(d) for d in view.shown],
                "fixed": [diagnostic_json(d) for d in view.fixed[:fixed_cap]],
                "fixed_count": len(view.fixed),
                "unknown": [_unknown_json(u) for u in view.unknown],
                "omitted": view.omitted,
            }
        )
    every = [d for f in report.files for d in f.diagnostics]
    return {
        "schema": SCHEMA,
        "root": None if report.root is None else str(report.root),
        "severity": options.severity,
        "files": files,
        "notes": list(report.notes),
        "summary": {
            "errors": sum(d.severity == Severity.ERROR for d in every),
            "warnings": sum(d.severity == Severity.WARNING for d in every),
            "fixed": sum(len(v.fixed) for v in views),
            "unknown": sum(len(v.unknown) for v in views),
            "shown": sum(len(v.shown) for v in views),
            "omitted": sum(v.omitted for v in views),
        },
    }


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
