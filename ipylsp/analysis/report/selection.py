"""What a report shows, before any rendering: options, filter, order, duplicates, count caps.

Its own module so that the text, HTML and JSON renderings share one selection without
importing each other; this is what makes the three agree. The character budget, which needs
the text's line lengths, is applied on top of this in `budget.py`.

Order: files the check wrote, then files it broke or fixed elsewhere (`FileReport.elsewhere`),
each group in natural order of the shown path (`gen_2` before `gen_10`). Within a file: errors
first, then line, column, message, server. What the caps and the budget keep is spent by
priority: unknown servers and errors first, across files, then warnings, ..., then `fixed`
lines, then clean confirmations (see `priority`).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ipylsp.analysis.naturalsort import natural_key
from ipylsp.analysis.report.merge import Row, merge
from ipylsp.model.diagnostics import Diagnostic, FileReport, Report, Severity, Unknown
from ipylsp.model.settings import SeverityFilter  # at run time: the wire form reads the hints

if TYPE_CHECKING:
    from ipylsp.model.settings import Settings

_SEVERITIES: dict[str, frozenset[Severity]] = {
    "error": frozenset({Severity.ERROR}),
    "warning": frozenset({Severity.ERROR, Severity.WARNING}),
    "all": frozenset(Severity),
}

MORE_HINT = "%lsp pending"
"""Where the problems a cut report leaves out can be had, in a notebook (the hand-over)."""


@dataclass(frozen=True, slots=True)
class FormatOptions:
    """What to show and how much. The defaults are the contract's (errors only, 20/50, 6,000
    characters)."""

    severity: SeverityFilter = "error"
    """"error": errors only; "warning": errors and warnings; "all": everything."""
    max_per_file: int = 20
    """Problems shown per file; 0 or less means no limit."""
    max_per_report: int = 50
    """Problems shown in the whole report; 0 or less means no limit."""
    max_report_chars: int = 6000
    """Characters of text/plain (on top of the caps; agent tools drop bigger outputs);
    0 or less means no limit. Check-level lines and notes are always shown."""
    more_hint: str = MORE_HINT
    """What the line announcing files left out ends with: how to get the rest ("" for
    nothing). The CLI says something else than the notebook."""
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
    def from_settings(
        cls,
        settings: Settings,
        *,
        severity: SeverityFilter | None = None,
        max_report_chars: int | None = None,
        more_hint: str = MORE_HINT,
        show_clean: bool = False,
    ) -> FormatOptions:
        """The one builder of every surface's options: the settings' severity filter, caps and
        budget; a request's own `severity` and an answer's own size (`max_report_chars`) when
        given; `show_clean` only where it is honoured (the notebook's reports: the other
        surfaces say "clean" their own way)."""
        return cls(
            severity=settings.severity if severity is None else severity,
            max_per_file=settings.max_per_file,
            max_per_report=settings.max_per_report,
            max_report_chars=(
                settings.max_report_chars if max_report_chars is None else max_report_chars
            ),
            more_hint=more_hint,
            show_clean=show_clean,
        )

    def shows(self, severity: Severity) -> bool:
        return severity in _SEVERITIES[self.severity]

    def is_brief(self, server_id: str) -> bool:
        if isinstance(self.brief_unknown, bool):
            return self.brief_unknown
        return server_id in self.brief_unknown


@dataclass(frozen=True, slots=True)
class FileView:
    """One file after filter, caps and budget: what every format renders."""

    file: FileReport
    rows: tuple[Row, ...]
    """Shown problems, one text line each (duplicates of several servers merged)."""
    omitted: int
    """Problems passing the filter but cut by the caps or the budget."""
    fixed: tuple[Diagnostic, ...]
    """Fixed diagnostics passing the filter, sorted (not capped)."""
    unknown: tuple[Unknown, ...] = field(default=())
    """Unknown servers shown in the file's block."""
    hidden_unknown: int = 0
    """Unknown servers of the file left out by the budget (the block is gone too)."""
    fixed_shown: bool = True
    """Whether the file's own `fixed` line fits (else it is counted in one line at the end)."""
    clean_shown: bool = True
    """Whether the file's `clean` line fits (with `show_clean`)."""

    @property
    def shown(self) -> tuple[Diagnostic, ...]:
        """Every diagnostic of the shown rows (a merged row contributes each server's)."""
        return tuple(d for row in self.rows for d in row)

    @property
    def has_block(self) -> bool:
        return bool(self.rows or self.unknown)

    @property
    def clean(self) -> bool:
        return not (self.rows or self.omitted or self.unknown or self.hidden_unknown)


@dataclass(frozen=True, slots=True)
class Prepared:
    """One file after filter, order and merge, before caps."""

    file: FileReport
    rows: tuple[Row, ...]
    fixed: tuple[Diagnostic, ...]

    @property
    def clean(self) -> bool:
        return not (self.rows or self.file.unknown)


Item = tuple[str, int, int]
"""Something the caps and the budget keep or cut: ("row", file, rank), ("unknown", file, 0),
("fixed", file, 0) or ("clean", file, 0); file indexes the prepared list."""


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


def file_order(f: FileReport) -> tuple[bool, tuple[tuple[int, int | str], ...]]:
    """Written files first, then files elsewhere; natural order of the shown path."""
    return (f.elsewhere, natural_key(f.display_path))


def prepare(report: Report, options: FormatOptions) -> list[Prepared]:
    """Every file in display order, its problems filtered, sorted and merged into rows."""
    prepared: list[Prepared] = []
    for f in sorted(report.files, key=file_order):
        diagnostics = sorted((d for d in f.diagnostics if options.shows(d.severity)), key=_order)
        fixed = tuple(sorted((d for d in f.fixed if options.shows(d.severity)), key=_order))
        prepared.append(Prepared(f, tuple(merge(diagnostics)), fixed))
    return prepared


def priority(prepared: list[Prepared], options: FormatOptions) -> list[Item]:
    """What the count caps keep, most important first: a file's unknown servers and its errors
    (files in display order), then warnings, information, hints, then `fixed` lines, then
    clean confirmations. The report cap is spent in this order too (an error in the third
    file beats a warning in the first)."""
    per_file = cap(options.max_per_file)
    keyed: list[tuple[tuple[int, int, int, int], Item]] = []
    rows: list[tuple[tuple[int, int, int, int], Item]] = []
    for index, p in enumerate(prepared):
        if p.file.unknown:
            keyed.append(((0, index, 0, 0), ("unknown", index, 0)))
        for rank, row in enumerate(p.rows[:per_file]):
            rows.append(((int(row[0].severity) - 1, index, 1, rank), ("row", index, rank)))
        if p.fixed and options.show_fixed:
            keyed.append(((len(Severity), index, 0, 0), ("fixed", index, 0)))
        if p.clean and options.show_clean:
            keyed.append(((len(Severity) + 1, index, 0, 0), ("clean", index, 0)))
    rows.sort()
    keyed.extend(rows[: cap(options.max_per_report)])
    keyed.sort()
    return [item for _, item in keyed]


def views(
    prepared: list[Prepared], kept: Collection[Item], blank: list[FileView] | None = None
) -> list[FileView]:
    """The views that show exactly the `kept` items. `blank` (the views that show nothing, the
    same `prepared`) is reused for files with nothing kept: the budget's bisection builds
    views many times, and most files of a big batch keep nothing."""
    by_file: dict[int, set[tuple[str, int]]] = {}
    for kind, index, rank in kept:
        by_file.setdefault(index, set()).add((kind, rank))
    out: list[FileView] = []
    for index, p in enumerate(prepared):
        mine = by_file.get(index)
        if mine is None and blank is not None:
            out.append(blank[index])
            continue
        mine = mine or set()
        rows = tuple(row for rank, row in enumerate(p.rows) if ("row", rank) in mine)
        unknown = p.file.unknown if ("unknown", 0) in mine else ()
        out.append(
            FileView(
                file=p.file,
                rows=rows,
                omitted=len(p.rows) - len(rows),
                fixed=p.fixed,
                unknown=unknown,
                hidden_unknown=len(p.file.unknown) - len(unknown),
                fixed_shown=("fixed", 0) in mine,
                clean_shown=("clean", 0) in mine,
            )
        )
    return out
