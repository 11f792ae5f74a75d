"""`FileReport`s as the service hands them out: paths shown relative to the workspace, one
entry per file.

Apart from the checker because the other-files pass, the features and the facade build and
merge the same reports.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path

from ipylsp.model.diagnostics import (
    Diagnostic,
    FileReport,
    Report,
    Unknown,
    UnknownReason,
    display_path,
)
from ipylsp.model.settings import Settings
from ipylsp.servers import roots
from ipylsp.service.check.known_files import KnownFiles


def display_root(path: Path, settings: Settings) -> Path | None:
    """The workspace `path` belongs to and is shown relative to: the one rule
    (`roots.workspace_gate` with `Settings.workspace_markers` and `Settings.directory`)."""
    return roots.workspace_gate(path, settings.workspace_markers, directory=settings.directory)


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


def failed_files(
    paths: Iterable[Path], settings: Settings, reason: UnknownReason, detail: str
) -> list[FileReport]:
    """Each file of a check that produced no result (timed out, or our own failure)."""
    return [
        FileReport(
            path=path,
            display_path=display_path(path, display_root(path, settings)),
            unknown=(Unknown("ipylsp", reason, detail),),
        )
        for path in paths
    ]


def common_root(paths: Iterable[Path], settings: Settings) -> Path | None:
    """The workspace root of every path, when they share one (a report's `root`)."""
    found = {display_root(path, settings) for path in paths}
    return found.pop() if len(found) == 1 else None


StandIn = Callable[[Path, str, str], tuple[Diagnostic, ...]]
"""(path, server, text) -> the server's stored answer for the file, marked cached."""


def known_report(
    known: KnownFiles, paths: Iterable[Path], settings: Settings,
    stand_in: StandIn | None = None,
) -> Report:
    """The last known diagnostics of `paths` (those known), no server round trip. A server
    that did not answer for the last text is an UNKNOWN (never a silent clean), with its stored
    answer when `stand_in` has one."""
    files = []
    for path in paths:
        entry = known.get(path)
        if entry is None:
            continue
        everything = tuple(d for ds in entry.results.values() for d in ds)
        cached = () if stand_in is None else tuple(
            d for server in entry.missed for d in stand_in(path, server, entry.text)
        )
        files.append(
            FileReport(
                path=path,
                display_path=display_path(path, display_root(path, settings)),
                diagnostics=everything + cached,
                current=everything,
                unknown=tuple(
                    Unknown(server, UnknownReason.FAILED, "has not answered for the file's last "
                            "text (no answer yet, or held back by a syntax error)")
                    for server in entry.missed
                ),
                servers=tuple(entry.results),
            )
        )
    return Report(files=tuple(files), root=common_root((f.path for f in files), settings))


def error_count(report: Report) -> int:
    """Errors in a report, one per problem however many servers report it (`merge`)."""
    from ipylsp.analysis.report.merge import errors

    return sum(errors(f.diagnostics) for f in report.files)
