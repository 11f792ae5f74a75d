"""Where every report goes as it is made: the pending channel, then the subscribers.

Agent loops in a kernel subscribe (`ipylsp.subscribe`) to see each report without polling.
One place for it, so a cell's check, `ipylsp.check`, a tool call and a late answer all reach
the same callbacks. A callback that raises is logged and dropped: a subscriber's bug never
breaks a check.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import replace

from ipylsp.model.diagnostics import Report
from ipylsp.service.outputs.pending import PendingChannel

log = logging.getLogger(__name__)

Subscriber = Callable[[Report], object]


class ReportSink:
    """Records reports in the pending channel and hands them to the subscribers.

    Callbacks run on the thread that made the report (the caller's for a check, ipylsp's
    loop for a late answer and for a check awaited there, `Service.check_files_async`): they
    should be quick and must not wait on the service (on the loop, its facade raises)."""

    def __init__(self, pending: PendingChannel) -> None:
        self._pending = pending
        self._subscribers: list[Subscriber] = []
        self._lock = threading.Lock()
        self.virtual: set[str] = set()
        """In-memory documents (the notebook's cells): their raw reports are never recorded;
        the cell session shows them moved to cells."""

    def subscribe(self, callback: Subscriber) -> None:
        if not callable(callback):
            raise TypeError(f"callback must be callable, not {type(callback).__name__}")
        with self._lock:
            if callback not in self._subscribers:
                self._subscribers.append(callback)

    def unsubscribe(self, callback: Subscriber) -> bool:
        """False when `callback` was not subscribed (or was dropped after raising)."""
        with self._lock:
            if callback in self._subscribers:
                self._subscribers.remove(callback)
                return True
            return False

    def record(self, report: Report, *, preflight: frozenset[str] = frozenset()) -> None:
        """`preflight`: files whose text was only checked (a preflight's `content`, never
        written); their problems are not pending, since nothing introduced them yet."""
        real = tuple(f for f in report.files if str(f.path) not in self.virtual)
        if len(real) != len(report.files):
            if not real:
                return
            report = replace(report, files=real)
        written = tuple(f for f in report.files if str(f.path) not in preflight)
        self._pending.record(report if len(written) == len(report.files)
                             else replace(report, files=written))
        with self._lock:
            subscribers = list(self._subscribers)
        for callback in subscribers:
            try:
                callback(report)
            except Exception:
                log.exception("ipylsp subscriber %r raised; it is unsubscribed", callback)
                self.unsubscribe(callback)
