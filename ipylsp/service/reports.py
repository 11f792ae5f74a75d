"""`FileReport`s as the service hands them out: paths shown relative to the workspace, one
entry per file.

Apart from the checker because the other-files pass, the features and the facade build and
merge the same reports.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ipylsp.analysis.model import Diagnostic, FileReport, Unknown
from ipylsp.lsp import roots


def display_root(path: Path, markers: tuple[str, ...]) -> Path | None:
    """The workspace `path` is shown relative to (`Settings.workspace_markers`)."""
    return roots.workspace_gate(path, markers)


def display_path(path: Path, root: Path | None) -> str:
    """Relative to the workspace root; absolute outside one."""
    if root is not None:
        try:
            return path.relative_to(root).as_posix()
        except ValueError:
            pass
    return str(path)


def file_report(
    path: Path,
    display_root: Path | None,
    introduced: tuple[Diagnostic, ...],
    current: tuple[Diagnostic, ...],
    fixed: tuple[Diagnostic, ...],
    unknown: tuple[Unknown, ...],
    servers: tuple[str, ...],
) -> FileReport:
    return FileReport(
        path=path,
        display_path=display_path(path, display_root),
        diagnostics=introduced,
        current=current,
        fixed=fixed,
        unknown=unknown,
        servers=servers,
    )


def merge_reports(reports: list[FileReport]) -> list[FileReport]:
    """One entry per path, in first-seen order; the parts of later entries appended."""
    merged: dict[Path, FileReport] = {}
    for report in reports:
        previous = merged.get(report.path)
        if previous is None:
            merged[report.path] = report
            continue
        merged[report.path] = replace(
            previous,
            diagnostics=previous.diagnostics + report.diagnostics,
            current=previous.current + report.current,
            fixed=previous.fixed + report.fixed,
            unknown=previous.unknown + report.unknown,
            servers=tuple(dict.fromkeys(previous.servers + report.servers)),
        )
    return list(merged.values())
