"""The one selection step every format renders: severity filter, sort, caps (`select`).

Its own module so that the text, HTML and JSON renderings share it without importing each
other; this is what makes the three agree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ipylsp.analysis.model import Diagnostic, FileReport, Report, Severity, Unknown

if TYPE_CHECKING:
    from ipylsp.settings import Settings, SeverityFilter

_SEVERITIES: dict[str, frozenset[Severity]] = {
    "error": frozenset({Severity.ERROR}),
    "warning": frozenset({Severity.ERROR, Severity.WARNING}),
    "all": frozenset(Severity),
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


def cap(value: int) -> int | None:
    return value if value > 0 else None


def select(report: Report, options: FormatOptions | None = None) -> list[FileView]:
    """Filter, sort and cap: errors first, `max_per_file` per file, `max_per_report` overall.

    The report cap is spent by severity first across all files (an error in the third file
    beats a warning in the first), then in file order, then in each file's order.
    """
    options = options or FormatOptions()
    per_file = cap(options.max_per_file)
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
    per_report = cap(options.max_per_report)
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
