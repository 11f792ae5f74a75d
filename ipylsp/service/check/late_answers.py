"""Late answers: what servers say about a batch's files after its check returned.

They go to the pending channel, not into the cell's display. The cell's output is what an
agent already read and what the notebook saves: rewriting it later reaches nobody who reads
outputs once, and a display update from the loop thread would race the next cell's own output.
The pending channel is asked (`%lsp pending`, `ipylsp.pending()`), hands each problem over once,
and the check's cut line says the rest arrives there. A newer check of a file takes its
document: the late question about it is dropped (the newer check asks again).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Collection
from pathlib import Path

from ipylsp.model.diagnostics import Report
from ipylsp.service.check.files import Checker
from ipylsp.service.check.server_run import Job, ServerRun
from ipylsp.service.outputs.subscribers import ReportSink

log = logging.getLogger(__name__)


class LateAnswers:
    """Runs of earlier checks still going; their answers are recorded as pending."""

    def __init__(self, checker: Checker, sink: ReportSink) -> None:
        self._checker = checker
        self._sink = sink
        self._waiting: dict[asyncio.Task[None], list[Job]] = {}

    def adopt(self, late: list[tuple[ServerRun, list[Job]]]) -> None:
        loop = asyncio.get_running_loop()
        for run, jobs in late:
            task = loop.create_task(self._collect(run, jobs))
            self._waiting[task] = jobs
            task.add_done_callback(self._forget)

    def _forget(self, task: asyncio.Task[None]) -> None:
        self._waiting.pop(task, None)

    def cancel(self, paths: Collection[Path]) -> None:
        """A new check of these files: their late questions give way (locks released)."""
        for jobs in self._waiting.values():
            for job in jobs:
                if job.plan.path in paths:
                    job.cancel()

    @property
    def outstanding(self) -> int:
        return sum(1 for jobs in self._waiting.values() for job in jobs if not job.done)

    async def settled(self) -> None:
        """Until every late question has been answered, dropped or given up."""
        while self._waiting:
            await asyncio.wait(list(self._waiting))

    async def _collect(self, run: ServerRun, jobs: list[Job]) -> None:
        if run.task is not None:
            await asyncio.wait({run.task})
        answered = [job for job in jobs if job.answered and not job.cancelled]
        if not answered:
            return
        self._checker.state.pool.record_success(run.slot)  # slow, not wedged
        files = []
        for job in answered:
            try:
                report = self._checker.late_report(job.plan, job.outcome)
            except Exception:
                log.exception("late answer for %s failed", job.plan.path)
                continue
            if report is not None:
                files.append(report)
        if files:
            self._sink.record(Report(files=tuple(files)))

    async def close(self) -> None:
        for jobs in list(self._waiting.values()):
            for job in jobs:
                job.cancel()
        tasks = list(self._waiting)
        for task in tasks:
            task.cancel()
        with contextlib.suppress(Exception):
            await asyncio.gather(*tasks, return_exceptions=True)
