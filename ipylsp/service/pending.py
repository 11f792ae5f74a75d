"""The pending channel: problems introduced by writes and not yet handed to the caller.

Every check feeds it; `take()` hands over what is still a problem and empties it. An entry is
keyed without its range (severity, code, source, server, message) so that a problem reported in
one cell and moved by the next is one problem, not two; its position is refreshed from the
file's latest diagnostics at hand-over, and entries the file no longer has are dropped.
"""

from __future__ import annotations

import collections
import threading
from pathlib import Path

from ipylsp.analysis.model import Diagnostic, FileReport, Report, Severity

MAX_PER_FILE = 10
MAX_TOTAL = 30

Identity = tuple[int, str | None, str | None, str, str]


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

    def record(self, report: Report) -> None:
        """Add what a check introduced; drop what it fixed; remember each file's latest state."""
        with self._lock:
            for file in report.files:
                counter = self._pending.setdefault(file.path, collections.Counter())
                counter.update(_identity(d) for d in file.diagnostics)
                counter.subtract(_identity(d) for d in file.fixed)
                self._pending[file.path] = +counter
                if not self._pending[file.path]:  # nothing pending: forget the file entirely
                    del self._pending[file.path]
                    self._latest.pop(file.path, None)
                elif file.unknown == () or file.current:
                    self._latest[file.path] = file

    def take(
        self, *, max_per_file: int = MAX_PER_FILE, max_total: int = MAX_TOTAL
    ) -> tuple[Report, int]:
        """(pending problems, errors first, capped; how many were cut); empties the channel."""
        with self._lock:
            pending, self._pending = self._pending, {}
            latest, self._latest = self._latest, {}
        files: list[FileReport] = []
        cut = 0
        budget = max_total
        ordered = sorted(pending.items(), key=lambda item: _worst(item[1]))
        for path, counter in ordered:
            file = latest.get(path)
            if file is None:
                continue
            remaining = collections.Counter(counter)
            chosen: list[Diagnostic] = []
            for diagnostic in sorted(file.current, key=Diagnostic.sort_key):
                key = _identity(diagnostic)
                if remaining[key] > 0:
                    remaining[key] -= 1
                    chosen.append(diagnostic)
            keep = min(len(chosen), max_per_file, budget)
            cut += len(chosen) - keep
            budget -= keep
            if keep:
                files.append(
                    FileReport(
                        path=path,
                        display_path=file.display_path,
                        diagnostics=tuple(chosen[:keep]),
                        current=file.current,
                        servers=file.servers,
                    )
                )
        return Report(files=tuple(files)), cut

    def __len__(self) -> int:
        with self._lock:
            return sum(sum(c.values()) for c in self._pending.values())


def _worst(counter: collections.Counter[Identity]) -> int:
    return min((key[0] for key in counter), default=int(Severity.HINT))
