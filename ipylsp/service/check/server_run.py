"""One server's part of a batch: its slot acquired, every new text synced first, then its
files asked about concurrently, at most `in_flight(server)` requests at a time (baselines
not known from an earlier check first). A run may outlive its check (`LATE_WINDOW`);
what the deadline means for the report is `batch`'s.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from ipylsp.lsp.client import ClientError, LanguageClient
from ipylsp.lsp.jsonrpc import deadline_scope
from ipylsp.model.diagnostics import Unknown, UnknownReason
from ipylsp.service.check.before_text import read_text
from ipylsp.service.check.files import Checker, FilePlan, ServerOutcome
from ipylsp.service.check.open_documents import match_disk
from ipylsp.service.runtime.pool import Slot
from ipylsp.service.runtime.resolver import BatchLookups

log = logging.getLogger(__name__)

IN_FLIGHT: dict[str, int] = {"ty": 32, "ruff": 32, "basedpyright": 8, "pyright": 8}
"""Diagnostic requests in flight per server during a batch. More in flight is more
throughput (all at once is fastest), but a newer check waits behind what is in flight: ruff
and ty answer a file far faster than the pyright family, so they take more in flight for the
same wait. benchmarks/bench_batch.py --in-flight sweeps it (benchmarks/README.md)."""
DEFAULT_IN_FLIGHT = 8

LATE_WINDOW = 60.0
"""Seconds after a check's deadline during which its unanswered requests may still answer."""


def in_flight(server_id: str) -> int:
    return IN_FLIGHT.get(server_id, DEFAULT_IN_FLIGHT)


@dataclass(eq=False)
class Job:
    """One (file, server) question of a batch."""

    plan: FilePlan
    outcome: ServerOutcome
    baseline: bool
    """The before text must be diagnosed first (not known from an earlier check)."""
    done: bool = False
    answered: bool = False
    cancelled: bool = False
    retry: bool = False
    synced: bool = False
    """The new text (and didSave) already sent before the pulls."""
    task: asyncio.Task[None] | None = None

    def cancel(self) -> None:
        """A newer check wants the document: drop this question (and its lock)."""
        self.cancelled = True
        if self.task is not None and not self.task.done():
            self.task.cancel()


@dataclass(eq=False)
class ServerRun:
    """One server's part of a batch."""

    slot: Slot
    client: LanguageClient
    jobs: list[Job]
    answered: int = 0
    late: bool = False
    """The check has returned: what is left yields to newer checks of the same server."""
    task: asyncio.Task[None] | None = None


async def start_runs(
    checker: Checker, lookups: BatchLookups, plans: list[FilePlan], deadline: float
) -> list[ServerRun]:
    """Outcomes for every (file, server); a started run per server that can answer."""
    groups: dict[int, tuple[Slot, list[Job]]] = {}
    for plan in plans:
        if not plan.asks_servers or plan.language_id is None:
            continue
        for spec in lookups.servers(plan.path, plan.language_id):
            outcome = checker.outcome(spec, plan, lookups.slot(spec, plan.path))
            plan.outcomes.append(outcome)
            if outcome.slot is not None:
                job = Job(plan, outcome, checker.needs_baseline(outcome, plan))
                groups.setdefault(id(outcome.slot), (outcome.slot, []))[1].append(job)
        plan.outcomes.extend(checker.misconfigured(plan))
    slots = [slot for slot, _ in groups.values()]
    clients = await asyncio.gather(*(_acquire(checker, slot, deadline) for slot in slots))
    runs = []
    late_deadline = deadline + LATE_WINDOW
    for (slot, jobs), client in zip(groups.values(), clients, strict=True):
        if isinstance(client, ClientError):
            unknown = checker.state.resolver.unknown_for(slot.spec, slot.root, client)
            for job in jobs:
                job.outcome.unknown, job.done = unknown, True
            continue
        run = ServerRun(slot, client, jobs)
        slot.enter_check()
        for job in jobs:
            job.outcome.client = client
        with deadline_scope(late_deadline):  # the run's writes may outlive the check
            run.task = asyncio.get_running_loop().create_task(
                _run(checker, run, late_deadline)
            )
        runs.append(run)
    return runs


async def _acquire(checker: Checker, slot: Slot, deadline: float) -> LanguageClient | ClientError:
    try:
        return await checker.state.pool.acquire(slot, deadline)
    except ClientError as exc:
        return exc


async def _run(checker: Checker, run: ServerRun, deadline: float) -> None:
    """Baselines, then every new text synced, then the current diagnostics; one restart when
    the server is found dead mid-run (killed since the last check)."""
    for attempt in (1, 2):
        client = run.client
        jobs = [j for j in run.jobs if not j.done and not j.cancelled]
        await _ask_all(checker, client, run, jobs, deadline)
        retry = [j for j in run.jobs if j.retry]
        if not retry:
            return
        for job in retry:
            job.retry = False
        error = None
        if attempt == 1:
            try:
                run.client = await checker.state.pool.acquire(run.slot, deadline)
            except ClientError as exc:
                error = exc
        else:
            error = ClientError(UnknownReason.CRASHED, run.client.exit_reason())
        if error is not None:
            unknown = checker.state.resolver.unknown_for(run.slot.spec, run.slot.root, error)
            for job in retry:
                job.outcome.unknown, job.done = unknown, True
            return
        for job in retry:
            job.outcome.client = run.client


async def _ask_all(
    checker: Checker, client: LanguageClient, run: ServerRun, jobs: list[Job], deadline: float
) -> None:
    """Baselines first; then every new text is sent (didOpen / didChange + didSave) before
    any pull: a caller and its callee written together are diagnosed against each other's
    new text, and ty cancels pulls that race a later didOpen (benchmarks/README.md). The
    open-documents cap makes room for the batch while it runs, and is restored after (the
    server analyzes every open file in the background: basedpyright does)."""
    gate = asyncio.Semaphore(in_flight(run.slot.spec.id))

    def baseline(job: Job) -> Awaitable[None]:
        return checker.ask_baseline(client, job.outcome, job.plan, deadline)

    def current(job: Job) -> Awaitable[None]:
        return checker.ask_current(client, job.outcome, job.plan, deadline, save=not job.synced)

    cap = checker.state.settings.max_open_documents
    client.max_open_documents = max(client.max_open_documents, cap + len(jobs))
    try:
        # what else it has open is the disk's text first (another process, an editor, an
        # earlier preflight changed it): its answers about these files depend on them
        limit = checker.state.settings.max_file_bytes
        await match_disk(client, lambda path: read_text(path, limit),
                         {j.plan.path for j in run.jobs}, deadline)
        await _each([j for j in jobs if j.baseline], baseline, gate, run, final=False)
        rest = [j for j in jobs if not (j.done or j.cancelled or j.retry)]
        for job in rest:
            if job.cancelled:
                continue
            plan = job.plan
            assert plan.new_text is not None and plan.language_id is not None
            try:
                await client.sync_document(
                    plan.path, plan.new_text, plan.language_id,
                    save=not (plan.preflight or plan.virtual), in_memory=plan.virtual,
                    deadline=deadline,
                )
                job.synced = True
            except ClientError as exc:
                _failed(run, job, exc)
        rest = [j for j in rest if not (j.done or j.retry)]
        await _each(rest, current, gate, run, final=True)
    finally:
        client.max_open_documents = cap
        await client.trim_documents()


async def _each(
    jobs: list[Job],
    ask: Callable[[Job], Awaitable[None]],
    gate: asyncio.Semaphore,
    run: ServerRun,
    *,
    final: bool,
) -> None:
    async def one(job: Job) -> None:
        async with gate:
            while run.late and run.slot.checks:  # a newer check goes first
                await run.slot.idle.wait()
            if job.cancelled or job.done:
                return
            try:
                await ask(job)
            except ClientError as exc:
                _failed(run, job, exc)
                return
        run.answered += 1
        if final:
            job.done = job.answered = True

    loop = asyncio.get_running_loop()
    tasks = []
    for job in jobs:
        job.task = loop.create_task(one(job))
        tasks.append(job.task)
    # Cancelled jobs (a newer check took the document) end quietly.
    await asyncio.gather(*tasks, return_exceptions=True)


def _failed(run: ServerRun, job: Job, exc: ClientError) -> None:
    if exc.reason is UnknownReason.CRASHED and not run.client.alive:
        job.retry = True  # the run restarts the server once
        return
    job.outcome.unknown = Unknown(job.outcome.spec.id, exc.reason, exc.detail)
    job.done = True
