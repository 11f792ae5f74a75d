"""Putting reports into cell outputs, and objects whose reprs carry the answer.

One display per cell, with the MIME bundle of docs/contract.md: `text/plain` (the
self-contained block most agent tools read), `text/html`, and
`application/vnd.ipylsp.diagnostics+json`. Magics return `ShownReport`s instead, so the
answer lands in `execute_result` `text/plain`, which some agent tools read exclusively.
"""

from __future__ import annotations

import dataclasses
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported on first use: `%load_ext` stays cheap
    from ipylsp.analysis.report import FormatOptions
    from ipylsp.model.diagnostics import Report
    from ipylsp.model.settings import Settings, SeverityFilter


def options_for(settings: Settings, severity: SeverityFilter | None = None) -> FormatOptions:
    """The notebook's report options: the settings' (with `show_clean`), the severity a
    magic was asked for (None: the settings')."""
    from ipylsp.analysis.report import FormatOptions

    return FormatOptions.from_settings(settings, severity=severity,
                                       show_clean=settings.show_clean)


class CellReport:
    """The one display of a cell's report. A check that takes long first shows a waiting line
    (which servers, starting or indexing), updated in place and finally replaced by the report.

    A waiting line that was shown never ends empty: the protocol has no way to remove one
    output (`clear_output` clears the cell's own output too) and an emptied display stays in
    the saved notebook as an empty output that agents read as nothing. So a clean outcome
    after a wait says so in one line (`outcome_line`); a quick clean check prints nothing.
    """

    def __init__(self) -> None:
        self._handle: Any = None
        self._started = time.monotonic()

    def waiting(self, line: str) -> None:
        from IPython.display import display

        bundle = {"text/plain": line}
        if self._handle is None:
            self._handle = display(bundle, raw=True, display_id=True)  # type: ignore[no-untyped-call]
        else:
            self._handle.update(bundle, raw=True)

    def show(self, report: Report, settings: Settings, notes: tuple[str, ...] = ()) -> None:
        """The report, unless there is nothing to say (then a waiting line is emptied)."""
        from IPython.display import display

        from ipylsp.analysis.report import mime_bundle

        if notes:
            report = dataclasses.replace(report, notes=report.notes + tuple(notes))
        bundle = mime_bundle(report, options_for(settings))
        if self._handle is not None:
            outcome = {"text/plain": outcome_line(report, time.monotonic() - self._started)}
            self._handle.update(bundle or outcome, raw=True)
        elif bundle:
            display(bundle, raw=True)  # type: ignore[no-untyped-call]


def outcome_line(report: Report, seconds: float) -> str:
    """`checked app.py: nothing new (ty, ruff; 1.4 s)`: what a shown waiting line becomes
    when the check had nothing to report."""
    files = report.files
    what = files[0].display_path if len(files) == 1 else f"{len(files)} files"
    servers = ", ".join(dict.fromkeys(s for f in files for s in f.servers))
    detail = f"{servers}; {seconds:.1f} s" if servers else f"{seconds:.1f} s"
    return f"checked {what}: nothing new ({detail})"


class TextView:
    """Plain text as an execute_result (hover, definition, status ...)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text
