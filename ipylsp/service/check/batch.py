"""A batch: the files one cell (or one `Service.check_files` call) wrote, checked as one job.

Its own module because this is where a check's budget is kept. Per server (`server_run`): every new
text is synced first (after one round of file events), then the server's files are asked about
concurrently, at most `in_flight(server)` requests at a time; baselines not known from an
earlier check go first. At the deadline, files still unanswered are a budget cut, said once per
server (`Report.unknown`), not a timeout of the server; their requests keep going in the
background (`BatchResult.late`: the service hands late answers to the pending channel). A
server counts toward "broken" only when it answered nothing at all in the check. Other open
files are re-diagnosed once per batch. A file that is not read (`before_text.FileRefused`: not
a regular file, over `max_file_mb`, unreadable) is not one of the report's files: a note says
why, in one line.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ipylsp.analysis.naturalsort import natural_key
from ipylsp.lsp.client import FILE_CREATED, ClientError
from ipylsp.model.checks import FileCheck
from ipylsp.model.diagnostics import FileReport, Unknown, UnknownReason, display_path
from ipylsp.service.check import elsewhere, server_run
from ipylsp.service.check.before_text import FileRefused
from ipylsp.service.check.file_reports import merge_reports
from ipylsp.service.check.files import Checker, FilePlan, ServerOutcome
from ipylsp.service.check.server_run import Job, ServerRun
from ipylsp.service.runtime.pool import BRIEF_CHECK
from ipylsp.service.runtime.resolver import BatchLookups

log = logging.getLogger(__name__)

CUT_HINT = (
    "their results go to `%lsp pending` as they arrive; a larger IPyLSP.wait_budget waits "
    "for them"
)


@dataclass
class BatchResult:
    files: list[FileReport] = field(default_factory=list)
    unknown: list[Unknown] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    late: list[tuple[ServerRun, list[Job]]] = field(default_factory=list)
    """Runs still going after the deadline, with the jobs the report counted as not checked."""
    rest: list[FileCheck] = field(default_factory=list)
    """Files over `max_files_per_check`, not checked (the next `check_rest`)."""


async def check(
    checker: Checker,
    files: Sequence[FileCheck],
    deadline: float,
    *,
    budget: float,
    limit: int | None = None,
    brief: bool = False,
) -> BatchResult:
    """Check `files` as one batch; see the module docstring. Never raises for a server.
    `brief`: the caller chose a short budget on purpose (`pool.BRIEF_CHECK`)."""
    BRIEF_CHECK.set(brief)  # this task's context only
    result = BatchResult()
    chosen, result.rest = choose(files, limit)
    lookups = BatchLookups(checker.state.resolver)
    planned = await asyncio.gather(
        *(
            checker.plan(f.path, content=f.content, before=f.before, deadline=deadline,
                         shown_root=lookups.shown_root(f.path), virtual=f.virtual,
                         preflight=f.preflight)
            for f in chosen
        ),
        return_exceptions=True,
    )
    plans: list[FilePlan] = []
    failed: list[FileReport] = []
    for item, planned_one in zip(chosen, planned, strict=True):
        if isinstance(planned_one, FilePlan):
            plans.append(planned_one)
        elif isinstance(planned_one, FileRefused):  # not a document: said in one line
            result.notes.append(
                planned_one.sentence(display_path(item.path, lookups.shown_root(item.path)))
            )
            checker.state.known.forget(item.path)  # no longer a text ipylsp knows
        elif isinstance(planned_one, Exception):  # an unreadable file fails alone
            log.warning("cannot check %s: %r", item.path, planned_one)
            shown = lookups.shown_root(item.path)
            failed.append(FileReport(
                path=item.path, display_path=display_path(item.path, shown),
                unknown=(Unknown("ipylsp", UnknownReason.FAILED, repr(planned_one)),),
            ))
        else:
            raise planned_one
    plans.sort(key=lambda p: natural_key(p.display))
    written = [p for p in plans if not (p.preflight or p.virtual)]
    events = [
        (p.path, elsewhere.file_event(p.path, checker.state.known, p.before_text)) for p in written
    ]
    created = [e for e in events if e[1] == FILE_CREATED]
    try:  # changes and deletions first; open documents see every new text before any pull
        await elsewhere.announce(checker.state.pool, [e for e in events if e[1] != FILE_CREATED])
        await elsewhere.sync_written(checker.state.pool, {p.path: p.new_text for p in written})
    except Exception:
        log.exception("syncing %d written files failed", len(written))
    runs = await server_run.start_runs(checker, lookups, plans, deadline)
    try:
        if runs:
            await asyncio.wait([r.task for r in runs if r.task is not None],
                               timeout=max(deadline - time.monotonic(), 0.0))
    finally:
        for run in runs:
            run.late = True
            run.slot.leave_check()
    told = await _recheck_imports(checker, runs, created, deadline)
    lifted = await _settle(checker, plans, runs, budget, result)
    result.files = [checker.finish(plan, lifted) for plan in plans]
    if failed:
        result.files = sorted(result.files + failed, key=lambda f: natural_key(f.display_path))
    result.notes.extend(moves(plans))
    # Servers whose view of the workspace the batch changed: those that answered, and
    # those serving a deleted file (its importers may break).
    answered = {id(run.client): (run.slot.spec.id, run.client) for run in runs if run.answered}
    for plan in plans:
        if plan.deleted:
            running = checker.state.resolver.running(plan.path)
            answered.update((id(c), (sid, c)) for sid, c in running)
    # Other servers hear of creations only when an open document of theirs has an error a
    # new file could fix (then it is re-diagnosed below).
    paths = frozenset(p.path for p in written)
    try:
        await elsewhere.announce(
            checker.state.pool, created,
            lambda sid, client: id(client) not in told
            and elsewhere.has_import_errors(checker.state.known, sid, client, paths),
        )
    except Exception:
        log.exception("announcing %d created files failed", len(created))
    if answered and written:
        broken = await elsewhere.rediagnose(
            checker.state.known, paths, list(answered.values()), deadline,
            shown_root=checker.state.resolver.shown_root, only_imports=len(created) == len(events),
        )
        result.files.extend(sorted(broken, key=lambda f: natural_key(f.display_path)))
    result.files = merge_reports(result.files)
    return result


async def _recheck_imports(
    checker: Checker, runs: list[ServerRun], created: list[tuple[Path, int]], deadline: float
) -> set[int]:
    """Creations are not announced before the pulls: basedpyright re-analyzes the whole
    program (builtins included) after such an event before it answers any pull
    (benchmarks/README.md), and a file the batch opens needs no event. But a server may have
    cached a directory without the new files: a file of the batch that then reports an
    unresolved import is asked again once the server was told. Returns the clients told
    (`id`)."""
    told: set[int] = set()
    if not created:
        return told
    for run in runs:
        suspects = [
            j for j in run.jobs
            if j.answered and any(elsewhere.about_imports(d) for d in j.outcome.current)
        ]
        mine = [e for e in created if e[0].is_relative_to(run.client.root)]
        if not suspects or not mine or time.monotonic() >= deadline:
            continue
        try:
            await run.client.files_changed(mine)
        except ClientError:
            continue
        told.add(id(run.client))
        await asyncio.gather(
            *(checker.ask_current(run.client, j.outcome, j.plan, deadline, save=False)
              for j in suspects),
            return_exceptions=True,  # an answer that does not come keeps the first one
        )
    return told


def choose(
    files: Sequence[FileCheck], limit: int | None
) -> tuple[list[FileCheck], list[FileCheck]]:
    """At most `limit` files (deletions and virtual documents are free): files that existed
    before the write first, then new ones, each in natural order; the rest is returned apart,
    never dropped."""
    if limit is None or limit <= 0:
        return list(files), []
    free = [f for f in files if f.virtual or (f.content is None and not f.path.exists())]
    present = [f for f in files if f not in free]
    if len(present) <= limit:
        return list(files), []
    present.sort(key=lambda f: (f.before == "", natural_key(str(f.path))))
    return free + present[:limit], present[limit:]


async def _settle(
    checker: Checker,
    plans: list[FilePlan],
    runs: list[ServerRun],
    budget: float,
    result: BatchResult,
) -> frozenset[str]:
    """At the deadline: unanswered files become a cut (one line per server); a server that
    answered nothing counts a timeout; uniform unknowns of a multi-file batch are said once.
    Returns the servers whose unknowns were lifted to `result.unknown`."""
    snapshot = [(run, [j for j in run.jobs if not j.done]) for run in runs]
    cut: dict[str, list[int]] = {}  # server id -> [not checked, asked], over all its roots
    for run, pending in snapshot:
        for job in run.jobs:
            job.retry = False  # a restart that did not finish in time
        if not pending:
            continue
        files = [j for j in run.jobs if not j.plan.virtual]  # the cells say their own
        several = len(files) > 1
        busy = run.client.progress.describe() if run.client.progress.busy else ""
        detail = "waiting for diagnostics"
        if busy:
            detail += f" while the server was busy ({busy})"
        for job in pending:
            job.outcome.unknown = Unknown(run.slot.spec.id, UnknownReason.TIMED_OUT, detail)
            job.outcome.cut = several and not job.plan.virtual
        if several:
            counts = cut.setdefault(run.slot.spec.id, [0, 0])
            counts[0] += sum(not j.plan.virtual for j in pending)
            counts[1] += len(files)
        if run.task is not None and not run.task.done():
            result.late.append((run, pending))
    # one line per server, also when it runs for several workspace roots of the batch
    result.unknown.extend(
        Unknown(server_id, UnknownReason.TIMED_OUT,
                f"{missing} of {asked} files not checked within {budget:.1f} s", CUT_HINT)
        for server_id, (missing, asked) in cut.items()
    )
    for run, _ in snapshot:
        timed_out = any(
            j.outcome.unknown is not None and j.outcome.unknown.reason is UnknownReason.TIMED_OUT
            for j in run.jobs
        )
        if run.answered:
            checker.state.pool.record_success(run.slot)
        elif timed_out and not BRIEF_CHECK.get():
            # nothing at all in a whole budget (a check that chose to wait less, such as a
            # cell's first check while servers start, proves nothing about the server)
            await checker.state.pool.record_timeout(run.slot)
    return _lift(checker, plans, result)


def _lift(checker: Checker, plans: list[FilePlan], result: BatchResult) -> frozenset[str]:
    """One line for a server that could not answer for any file of a multi-file batch (the
    virtual documents, the cells, say their own)."""
    files = [p for p in plans if not p.virtual]
    by_server: dict[str, list[ServerOutcome]] = {}
    for plan in files:
        for outcome in plan.outcomes:
            by_server.setdefault(outcome.spec.id, []).append(outcome)
    lifted = set()
    for server_id, outcomes in by_server.items():
        said = [o for o in outcomes if not o.cut]
        unknowns = [o.unknown for o in said if o.unknown is not None]
        if len(said) < 2 or len(unknowns) < len(said):
            continue
        if len({(u.reason, u.detail) for u in unknowns}) != 1:
            continue
        first = next((u for u in unknowns if u.hint), unknowns[0])
        detail = first.detail
        if first.reason.has_cause:
            detail = f"({detail})"
        line = Unknown(
            server_id,
            first.reason,
            f"{first.reason.value} {detail}".strip() + f": {len(said)} files not checked",
            first.hint,
        )
        where = checker.state.resolver.shown_root(files[0].path) or files[0].path.parent
        result.unknown.append(checker.state.notices.once(line, where))
        lifted.add(server_id)
    return frozenset(lifted)


def moves(plans: list[FilePlan]) -> list[str]:
    """A file moved or removed fixes nothing: a note, when it had known problems."""
    notes = []
    arrived = {p.new_text: p for p in plans if p.new_text and not (p.preflight or p.virtual)}
    for plan in plans:
        if not plan.deleted or plan.known is None:
            continue
        count = sum(len(ds) for ds in plan.known.results.values())
        if not count:
            continue
        what = f"{count} known problem" + ("" if count == 1 else "s")
        target = arrived.get(plan.before_text) if plan.before_text else None
        if target is not None:
            notes.append(
                f"{plan.display} was moved to {target.display} ({what} moved with it, not fixed)"
            )
        else:
            notes.append(f"{plan.display} was removed ({what} not counted as fixed)")
    return notes
