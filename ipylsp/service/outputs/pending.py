"""The pending channel: problems introduced by writes and not yet handed to the caller.

Every check feeds it; `take()` hands over a capped part of it and forgets exactly what it
handed over: what the caps (or the caller's character budget) cut stays pending for the next
call, so a hand-over that says `... and 23 more pending` keeps those 23. The newest writes
come first. An entry is keyed without its range (severity, code, source, server, message) so
that a problem reported in one cell and moved by the next is one problem, not two; its
position is refreshed from the file's latest diagnostics at hand-over, and entries the file
no longer has are dropped (they are no longer problems).

A channel can be followed (`follow`): its journal is called with the whole channel first
(`owed`), then with every change in the order the channel made it, so that a copy kept
elsewhere (a broker's client: `broker/ledger.py`) stays the same channel, and a new one made
from that copy (`restore`) owes exactly what it owed.
"""

from __future__ import annotations

import collections
import itertools
import sys
import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from ipylsp.analysis.report import FormatOptions, ShownReport, select
from ipylsp.model.diagnostics import Diagnostic, FileReport, Report
from ipylsp.model.settings import Settings

MAX_PER_FILE = 10
MAX_TOTAL = 30
NOTHING_PENDING = "nothing pending"
"""What every surface says when nothing is pending."""

Identity = tuple[int, str | None, str | None, str, str]

OWED, RECORDED, TAKEN = "owed", "recorded", "taken"
"""A journal's entries: the whole channel (`restore` it), what a check added (`record` it),
what a hand-over took (`handed_over`)."""

Follower = Callable[[str, Report], None]
"""What `follow` calls with each entry of the journal, `(entry, report)`, under the channel's
lock (it must be quick and must not call the channel)."""


def _identity(diagnostic: Diagnostic) -> Identity:
    return (
        diagnostic.severity.value,
        diagnostic.code,
        diagnostic.source,
        diagnostic.server_id,
        " ".join(diagnostic.message.split()),
    )


class PendingChannel:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: dict[Path, collections.Counter[Identity]] = {}
        self._latest: dict[Path, FileReport] = {}
        self._written: dict[Path, tuple[int, int]] = {}  # (check, place in it): newest first
        self._clock = itertools.count()
        self._journal: Follower | None = None

    def follow(self, journal: Follower | None) -> None:
        """From now on, call `journal` with every change (None: no more): first `(OWED, the
        whole channel)`, then `(RECORDED, report)` and `(TAKEN, report)` in the channel's
        order (module doc)."""
        with self._lock:
            self._journal = journal
            if journal is not None:
                journal(OWED, self._offer(sys.maxsize, sys.maxsize))

    def owed(self) -> Report:
        """Everything pending, as one report (newest writes first) that `restore` or `record`
        in another channel makes owe the same; nothing is forgotten."""
        with self._lock:
            return self._offer(sys.maxsize, sys.maxsize)

    def restore(self, report: Report) -> None:
        """Become the channel `report` (an `owed()`) describes, forgetting what it held."""
        with self._lock:
            self._pending.clear()
            self._latest.clear()
            self._written.clear()
            self._record(report)

    def replay(self, entry: str, report: Report) -> None:
        """Apply an entry of another channel's journal (`follow`), so that this one stays a
        copy of it; an entry of another kind is ignored."""
        if entry == OWED:
            self.restore(report)
        elif entry == RECORDED:
            self.record(report)
        elif entry == TAKEN:
            self.handed_over(report)

    def record(self, report: Report) -> None:
        """Add what a check introduced; drop what it fixed; remember each file's latest state."""
        with self._lock:
            if self._journal is None:
                self._record(report)
                return
            owed = {f.path for f in report.files if f.path in self._pending}
            self._record(report)
            # a clean write of a file that owed nothing changed nothing: not journaled
            owing = tuple(f for f in report.files if f.path in owed or f.path in self._pending)
            if owing:
                self._journal(RECORDED, report if len(owing) == len(report.files)
                              else replace(report, files=owing))

    def _record(self, report: Report) -> None:
        check = next(self._clock)
        for place, file in enumerate(report.files):
            counter = self._pending.setdefault(file.path, collections.Counter())
            counter.update(_identity(d) for d in file.diagnostics)
            counter.subtract(_identity(d) for d in file.fixed)
            self._pending[file.path] = +counter
            self._written[file.path] = (check, place)
            if not self._pending[file.path]:  # nothing pending: forget the file entirely
                self._forget(file.path)
            elif file.unknown == () or file.current:
                self._latest[file.path] = file

    def take(
        self,
        *,
        max_per_file: int = MAX_PER_FILE,
        max_total: int = MAX_TOTAL,
        options: FormatOptions | None = None,
    ) -> tuple[Report, int]:
        """(the hand-over, how many problems are still pending after it).

        The hand-over holds the newest writes first, each file's problems errors first, at most
        `max_per_file` per file and `max_total` in all. With `options`, it is further cut to
        what a report rendered with them shows (their severity filter, caps and character
        budget): the caller renders it without a budget of its own and shows all of it. Only
        what is handed over is forgotten; the rest waits for the next call.
        """
        with self._lock:
            offered = self._offer(max_per_file, max_total)
            if options is not None:
                offered = _shown(offered, options) or offered  # (nothing fits: all of it)
            self._subtract(offered)
            if self._journal is not None and offered.files:
                self._journal(TAKEN, offered)
            remaining = sum(sum(c.values()) for c in self._pending.values())
        return offered, remaining

    def hand_over(self, options: FormatOptions | None, settings: Settings, again: str,
                  more: int = 0) -> ShownReport:
        """`take` as every surface shows it: cut by `options` (else every severity, with
        `settings`' options), its note saying how many stay pending (and `more` kept
        elsewhere) and how to ask again, printing whole, or "nothing pending"."""
        report, left = self.take(options=options)
        if left + more:
            report = replace(report, notes=(*report.notes,
                                            f"... and {left + more} more pending: {again}"))
        shown = options or FormatOptions.from_settings(settings, severity="all")
        return ShownReport.of(report, replace(shown, max_report_chars=0), NOTHING_PENDING)

    def handed_over(self, report: Report) -> None:
        """Forget what the channel this one copies handed over (a `TAKEN` entry of its
        journal), as its `take` did: the entries their files no longer have go too."""
        with self._lock:
            self._offer(0, 0)
            self._subtract(report)

    def _subtract(self, report: Report) -> None:
        for file in report.files:
            counter = self._pending.get(file.path)
            if counter is None:
                continue
            counter.subtract(_identity(d) for d in file.diagnostics)
            self._pending[file.path] = +counter
            if not self._pending[file.path]:
                self._forget(file.path)

    def _offer(self, max_per_file: int, max_total: int) -> Report:
        """The next hand-over (nothing forgotten yet); stale entries are dropped on the way."""

        def newest_first(path: Path) -> tuple[int, int]:  # a batch keeps its own order
            check, place = self._written.get(path, (-1, 0))
            return (-check, place)

        files: list[FileReport] = []
        budget = max_total
        for path in sorted(self._pending, key=newest_first):
            counter = self._pending[path]
            file = self._latest.get(path)
            chosen: list[Diagnostic] = []
            if file is not None:
                remaining = collections.Counter(counter)
                for diagnostic in sorted(file.current, key=Diagnostic.sort_key):
                    key = _identity(diagnostic)
                    if remaining[key] > 0:
                        remaining[key] -= 1
                        chosen.append(diagnostic)
            if not chosen:  # the file no longer has any of them
                self._forget(path)
                continue
            self._pending[path] = collections.Counter(_identity(d) for d in chosen)
            keep = min(len(chosen), max_per_file, budget)
            budget -= keep
            if keep and file is not None:
                files.append(
                    FileReport(
                        path=path,
                        display_path=file.display_path,
                        diagnostics=tuple(chosen[:keep]),
                        current=file.current,
                        servers=file.servers,
                    )
                )
        return Report(files=tuple(files))

    def _forget(self, path: Path) -> None:
        self._pending.pop(path, None)
        self._latest.pop(path, None)
        self._written.pop(path, None)

    def __len__(self) -> int:
        with self._lock:
            return sum(sum(c.values()) for c in self._pending.values())


def _shown(report: Report, options: FormatOptions) -> Report | None:
    """The part of `report` that a rendering with `options` shows (every format shows the same
    selection), as a report of its own; None when that is nothing."""
    files = []
    for view in select(report, options):
        shown = view.shown
        if shown:
            files.append(
                FileReport(
                    path=view.file.path,
                    display_path=view.file.display_path,
                    diagnostics=shown,
                    current=view.file.current,
                    servers=view.file.servers,
                )
            )
    return Report(files=tuple(files)) if files else None
