"""The structured rendering: versioned JSON, schema "ipylsp.diagnostics/2" (docs/schema.md).

Its own module: the JSON is for programs and keeps what the text cuts (whole messages, every
server's diagnostic of a merged line, every unknown server, 1-based ranges with their ends,
fixed counts, the summary), from the same selection.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Iterable, Sequence

from ipylsp.analysis.report.budget import select
from ipylsp.analysis.report.merge import merge
from ipylsp.analysis.report.selection import FileView, FormatOptions, cap
from ipylsp.model.diagnostics import Cached, Diagnostic, Report, Severity, Unknown

SCHEMA = "ipylsp.diagnostics/2"


def diagnostic_json(d: Diagnostic) -> dict[str, object]:
    """One diagnostic in schema ipylsp.diagnostics/2 (1-based; end is exclusive)."""
    r = d.range
    out: dict[str, object] = {
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
    if d.cached is not None:  # from the store, not a live server
        out["cached"] = cached_json(d.cached)
    if d.ran_without_error:  # an ERROR the kernel's run disproved: a warning now
        out["ran_without_error"] = True
    return out


def cached_json(cached: Cached, now: float | None = None) -> dict[str, object]:
    """`{"source": "cache", "written_at": ISO 8601, "age_s": 180, "stale": false}`."""
    now = time.time() if now is None else now
    return {
        "source": "cache",
        "written_at": datetime.datetime.fromtimestamp(cached.written_at, datetime.timezone.utc)
        .isoformat(timespec="seconds"),
        "age_s": round(max(0.0, now - cached.written_at)),
        "stale": cached.stale,
    }


def _diagnostics_json(view: FileView) -> list[dict[str, object]]:
    """The shown rows' diagnostics; a later server's diagnostic of a merged line says which
    one it repeats (`same_as`, an index in this list)."""
    return rows_json(view.rows)


def rows_json(rows: Iterable[Sequence[Diagnostic]]) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for row in rows:
        first = len(out)
        out.append(diagnostic_json(row[0]))
        out.extend({**diagnostic_json(d), "same_as": first} for d in row[1:])
    return out


def _unknown_json(u: Unknown) -> dict[str, object]:
    return {"server": u.server_id, "reason": u.reason.value, "detail": u.detail, "hint": u.hint}


def to_json(
    report: Report, options: FormatOptions | None = None, *,
    selected: list[FileView] | None = None,
) -> dict[str, object]:
    """The structured form (schema "ipylsp.diagnostics/2", see docs/schema.md)."""
    options = options or FormatOptions()
    views = select(report, options) if selected is None else selected
    fixed_cap = cap(options.max_per_file)
    files: list[dict[str, object]] = []
    for view in views:
        f = view.file
        entry: dict[str, object] = (
            {
                "path": f.display_path,
                "absolute_path": str(f.path),
                "servers": list(f.servers),
                "diagnostics": _diagnostics_json(view),
                "fixed": rows_json(merge(view.fixed[:fixed_cap])),
                "fixed_count": len(view.fixed),
                "unknown": [_unknown_json(u) for u in f.unknown],
                "omitted": view.omitted,
            }
        )
        if f.cell is not None:  # a notebook cell's problems: "path" is "cell [n]"
            entry["cell"] = f.cell
            if f.cell_id is not None:  # the front end's id: where the editor finds it
                entry["cell_id"] = f.cell_id
        if any(d.cached is not None for d in f.diagnostics):
            entry["source"] = "cache" if all(d.cached for d in f.diagnostics) else "mixed"
        files.append(entry)
    every = [d for f in report.files for d in f.diagnostics]
    summary: dict[str, int] = {
        "errors": sum(d.severity == Severity.ERROR for d in every),
        "warnings": sum(d.severity == Severity.WARNING for d in every),
        "fixed": sum(len(v.fixed) for v in views),
        "unknown": sum(len(v.file.unknown) for v in views) + len(report.unknown),
        "shown": sum(len(v.shown) for v in views),
        "omitted": sum(v.omitted for v in views),
    }
    demoted = sum(d.ran_without_error for d in every)
    if demoted:  # errors the kernel's run disproved, among the warnings
        summary["ran_without_error"] = demoted
    return {
        "schema": SCHEMA,
        "root": None if report.root is None else str(report.root),
        "severity": options.severity,
        "files": files,
        "notes": list(report.notes),
        "unknown": [_unknown_json(u) for u in report.unknown],
        "summary": summary,
    }
