"""`Service`: the one facade every surface (Python API, IPython, CLI, agents) stands on.

Sync methods, callable from any thread, that run coroutines on a private background loop and
never wait longer than their budget. Nothing here raises because a server misbehaved: failures
come back as `Unknown` entries in the `Report`. Its servers are found and run in one client's
`Environment`, given or this process's.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Coroutine, Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ipylsp.analysis.report import FormatOptions, ShownReport
from ipylsp.lsp.jsonrpc import deadline_scope
from ipylsp.lsp.requests.feature import check_place
from ipylsp.model.checks import FileCheck, absolute
from ipylsp.model.diagnostics import Report, UnknownReason
from ipylsp.model.environment import Environment
from ipylsp.model.settings import Settings
from ipylsp.model.status import ServerState, ServerStatus
from ipylsp.service.admin.control import HANDOVER_MARGIN, ServerControl
from ipylsp.service.answers import clear_store, store_info, stored_report
from ipylsp.service.check import batch
from ipylsp.service.check.file_reports import common_root, failed_files, known_report
from ipylsp.service.check.files import Checker
from ipylsp.service.check.late_answers import LateAnswers
from ipylsp.service.outputs.pending import PendingChannel
from ipylsp.service.outputs.subscribers import ReportSink, Subscriber
from ipylsp.service.queries import Feature, FeatureResult, Trip
from ipylsp.service.runtime import cleanup
from ipylsp.service.runtime.loop import BackgroundLoop, LoopTimeout
from ipylsp.service.state import ServiceState
from ipylsp.store import StoreInfo

if TYPE_CHECKING:
    from ipylsp.servers.installers import InstallResult
    from ipylsp.service.admin.server_table import (
        InstallProgress,
        ServerRow,
        ServerTable,
        StatusView,
    )

log = logging.getLogger(__name__)

FIRST_WAIT, EVERY_WAIT = 0.5, 0.25
"""A check's `progress`: its first line after this many seconds, then one every so often."""

__all__ = ["FileCheck", "Service"]

A = TypeVar("A")
T = TypeVar("T")


class Service:
    """Language servers for any number of workspaces, driven from a background loop."""

    def __init__(self, settings: Settings | None = None, *, cells_dir: Path | None = None,
                 environment: Environment | None = None, shares: Service | None = None,
                 pending: PendingChannel | None = None) -> None:
        """`cells_dir`: the directory whose servers check the cells' document of this service's
        surfaces (the server extension's root: its cell checks share the servers of its file
        checks); None: where `cells_place.default_path` puts it (the working directory, or a sealed
        directory shared by the kernels working in the same one). `environment`: the client's, which
        servers are found and run in (its interpreter, PATH, GOPATH...); None: this process's
        (`Environment.current`). `shares`: another service whose servers, loop and store this one
        uses, with its settings, environment and (unless given) `cells_dir` (a broker's client):
        this one keeps its own checked files, pending problems and subscribers, and closing it stops
        none of that service's servers; of `settings`, only its client's own knobs are its own
        (`CLIENT_KNOBS`: the directory it works in, what it is shown), the rest must be the
        shared service's (`ValueError`). `pending`: the channel its problems wait in for a
        hand-over (a broker's session: one its client keeps a copy of; a client's own service
        when its broker is gone: that copy, still owed); None: a new one."""
        self._cells_dir = cells_dir if cells_dir is not None or shares is None else (
            shares.cells_dir)
        self._host = shares
        if shares is None:
            self._state = ServiceState(settings or Settings(), environment)
        else:
            self._state = shares._state.sharing(settings)
        self._loop: BackgroundLoop | None = None
        self._checker = Checker(self._state)
        self._control = ServerControl(
            self._state, self._running_loop, self._background, self._publish_status
        )
        self._pending = PendingChannel() if pending is None else pending
        self._sink = ReportSink(self._pending)
        self._late = LateAnswers(self._checker, self._sink)
        self._unchecked: list[FileCheck] = []
        self._lock = threading.Lock()
        self._publishing = threading.Lock()
        self._closed = False
        cleanup.register(self)

    # -- configuration ------------------------------------------------------------------------

    @property
    def settings(self) -> Settings:
        return self._state.settings

    def configure(self, settings: Settings) -> Settings:
        """New settings at once (e.g. from `%config`); running servers keep running. One that
        shares another's takes only its client's own knobs (`CLIENT_KNOBS`: the directory it
        works in, what it is shown; else `ValueError`), keeping its checked files and pending
        problems."""
        self._state.configure(settings)
        return self.settings

    @property
    def cells_dir(self) -> Path | None:
        """The directory the cells' document of this service's surfaces says it lives in
        (`__init__`), or None: data for the session that sends the document
        (`CellSession.over`), to the service a virtual file like any other."""
        return self._cells_dir

    # -- servers (`admin.control`) ----------------------------------------------------------

    def status(self) -> list[ServerStatus]:
        """This service's servers: running, starting, broken, stopped."""
        return self._control.status()

    def start(self, path: str | os.PathLike[str], *, timeout: float | None = None) -> list[str]:
        """Start (or confirm) every server that serves `path`; one status line per server."""
        budget = self.settings.wait_budget if timeout is None else float(timeout)
        return self._control.start(absolute(path), budget)

    def stop(self, server_id: str | None = None) -> int:
        return self._control.stop(server_id)

    def restart(self, server_id: str | None = None) -> int:
        """Stop matching servers and clear their broken marks; they start again on next use."""
        return self._control.restart(server_id)

    def server_pids(self) -> list[int]:
        return [row.pid for row in self.status() if row.pid is not None]

    def servers(self, *, installed_only: bool = False) -> ServerTable:
        """Every server ipylsp knows: installed with its command, or missing with how to
        install it."""
        return self._control.servers(installed_only=installed_only)

    def which(self, server_id: str) -> ServerRow:
        """One server's row (`.which()`: its command, or why none); `UnknownServer`."""
        return self._control.which(server_id)

    def servers_status(self) -> StatusView:
        """The one status view: servers of this service and of every other live process, the
        installed ones, the current errors of every live service, this one's pending count."""
        return self._control.servers_status(
            own_token=id(self._host or self), errors=self.error_count(),
            pending=self.pending_count
        )

    def install(
        self,
        ids: Iterable[str] = (),
        *,
        install_all: bool = False,
        progress: InstallProgress | None = None,
    ) -> list[InstallResult]:
        """Install servers into ipylsp's data dir, in turn (blocking: minutes for npm)."""
        return self._control.install(ids, install_all=install_all, progress=progress)

    # -- plumbing -----------------------------------------------------------------------------

    def _running_loop(self) -> BackgroundLoop | None:
        """The loop when it runs: the shared service's, for one that shares."""
        return self._loop if self._host is None else self._host._running_loop()

    def _background(self) -> BackgroundLoop:
        with self._lock:
            if self._closed:
                raise RuntimeError("this ipylsp Service is closed")
            if self._host is not None:
                return self._host._background()
            if self._loop is None or not self._loop.running:
                self._loop = BackgroundLoop()
            return self._loop

    # -- checking -----------------------------------------------------------------------------

    def check(
        self,
        path: str | os.PathLike[str],
        *,
        content: str | None = None,
        before: str | None = None,
        timeout: float | None = None,
    ) -> Report:
        """What the file's current text (or `content`, without writing it) introduced.

        `before` is the text before the edit; when omitted, the last text the service saw for
        the file, else its git HEAD version, else empty (everything counts as new). For a
        preflight (`content` given) it defaults to the file's text on disk: the proposed edit.
        """
        return self.check_files([FileCheck.asked(path, before=before, content=content)],
                                timeout=timeout)

    def check_files(
        self,
        files: Sequence[FileCheck],
        *,
        timeout: float | None = None,
        progress: Callable[[str], None] | None = None,
        cold: float | None = None,
    ) -> Report:
        """One report for several written files (a cell that wrote many, and its code).

        `progress`, if given, is called with a line saying what the check waits for (servers
        starting, indexing) when it takes longer than half a second, and then every 0.25 s.
        `cold`: seconds to wait instead when every file is virtual (a cell's code, no write)
        and one of their servers has yet to start, decided on the loop: a cell does not wait
        for starts. What those servers do not answer then is said nowhere (the next check
        includes it) and counts neither as a timeout nor as a start that outlived a budget."""
        budget = self.settings.wait_budget if timeout is None else float(timeout)
        if not files:
            return Report()
        deadline = self._checking(files, budget)
        loop = self._background()
        try:
            on_wait = None if progress is None else lambda: progress(
                self._waiting_for(self.status()))
            result, rows = loop.run(
                self._check_all_with_status(files, deadline, budget, cold),
                budget + HANDOVER_MARGIN,
                on_wait=on_wait, first_wait=FIRST_WAIT, every=EVERY_WAIT,
            )
        except LoopTimeout:
            result, rows = self._all_timed_out(files), None
        return self._checked(files, result, rows)

    async def check_files_async(
        self,
        files: Sequence[FileCheck],
        *,
        timeout: float | None = None,
        progress: Callable[[str], None] | None = None,
        cold: float | None = None,
    ) -> Report:
        """`check_files`, awaited on the service's own loop (`event_loop`), from a coroutine
        of an adapter whose I/O runs there (the broker's client connections): the same check,
        without a thread's hand-off each way. `progress` is called on the loop."""
        budget = self.settings.wait_budget if timeout is None else float(timeout)
        if not files:
            return Report()
        if asyncio.get_running_loop() is not self.event_loop():
            raise RuntimeError("check_files_async runs on the service's own loop")
        deadline = self._checking(files, budget)
        ticking = None if progress is None else _Ticking(
            FIRST_WAIT, EVERY_WAIT, lambda: progress(self._waiting_for(self._state.pool.status())))
        # A task of its own, left to its cancellation at the deadline, not awaited through
        # it (as `loop.run` leaves it): a server's start cancelled kills its process first,
        # seconds that are not the check's. Its entries (`_checked`) are this task's.
        checking = asyncio.ensure_future(
            self._check_all_with_status(files, deadline, budget, cold))
        checking.add_done_callback(_retrieved)
        try:
            await asyncio.wait({checking}, timeout=budget + HANDOVER_MARGIN)
        finally:
            if ticking is not None:
                ticking.cancel()
            in_time = checking.done()
            if not in_time:
                checking.cancel()
        if in_time:
            result, rows = checking.result()
        else:
            result, rows = self._all_timed_out(files), self._state.pool.status()
        return self._checked(files, result, rows, on_loop=True)

    def _checking(self, files: Sequence[FileCheck], budget: float) -> float:
        """A check begins: its deadline; its virtual documents are known as such."""
        self._sink.virtual.update(str(f.path) for f in files if f.virtual)
        return time.monotonic() + budget

    def _all_timed_out(self, files: Sequence[FileCheck]) -> batch.BatchResult:
        return batch.BatchResult(files=failed_files(
            (f.path for f in files), self.settings, UnknownReason.TIMED_OUT, "check timed out",
        ))

    def _checked(self, files: Sequence[FileCheck], result: batch.BatchResult,
                 rows: list[ServerStatus] | None, *, on_loop: bool = False) -> Report:
        """A check's report from its batch's result, recorded (pending, subscribers) and the
        servers' status published (`on_loop`: the file written off it)."""
        virtual = [f.path for f in files if f.virtual]
        notes = list(result.notes)
        if result.rest:
            with self._lock:
                self._unchecked = list(result.rest)
            written = len(files) - len(virtual)
            checked = written - len(result.rest)
            notes.append(
                f"{checked} of {written} files checked (IPyLSP.max_files_per_check; files "
                f"that existed before first, then new ones); {len(result.rest)} not checked "
                f"yet: `%lsp check` checks the next {self.settings.max_files_per_check}"
            )
        report = Report(
            files=tuple(result.files),
            root=common_root(  # the written files' root; the cells' alone when none
                [r.path for r in result.files if r.path not in virtual] or virtual,
                self.settings,
            ),
            notes=tuple(notes),
            unknown=tuple(result.unknown),
        )
        self._sink.record(
            report, preflight=frozenset(str(f.path) for f in files if f.content is not None)
        )
        self._publish_status(rows, off_loop=on_loop)
        return report

    def subscribe(self, callback: Subscriber) -> None:
        """Call `callback(report)` with every report as it is made: checks (preflights
        included) and late answers. A callback that raises is logged and unsubscribed."""
        self._sink.subscribe(callback)

    def unsubscribe(self, callback: Subscriber) -> bool:
        """Stop calling `callback`; False when it was not subscribed."""
        return self._sink.unsubscribe(callback)

    def checked_files(self) -> list[Path]:
        """The files this client has checked and its in-memory documents (a kernel's cells):
        what it uses the servers that serve them for."""
        return sorted(self._state.known)

    def changed_on_disk(self, paths: Iterable[Path] | None = None) -> list[Path]:
        """Checked files (all, or those of `paths`) whose text on disk is no longer the text
        last checked: an editor, another process or `git checkout` changed them."""
        return self._state.known.changed_on_disk(paths, self.settings.max_file_bytes)

    def check_rest(
        self,
        *,
        timeout: float | None = None,
        progress: Callable[[str], None] | None = None,
    ) -> Report:
        """The next `max_files_per_check` files a capped check left unchecked (an empty report
        when there are none); what still remains after them is kept for the next call."""
        with self._lock:
            rest, self._unchecked = self._unchecked, []
        return self.check_files(rest, timeout=timeout, progress=progress)

    def settle_late(self, timeout: float) -> bool:
        """Wait until the answers that earlier checks did not wait for are in the pending
        channel (or given up); False when `timeout` ran out first. For scripts and tests: a
        notebook just asks `%lsp pending` later."""
        loop = self._running_loop()
        if loop is None:
            return True
        try:
            loop.run(self._late.settled(), timeout)
        except LoopTimeout:
            return False
        return True

    @property
    def unchecked(self) -> int:
        """Files a capped check left for `check_rest`."""
        return len(self._unchecked)

    async def _check_all_with_status(
        self, files: Sequence[FileCheck], deadline: float, budget: float, cold: float | None
    ) -> tuple[batch.BatchResult, list[ServerStatus]]:
        """The batch's result, and the pool's status read on the loop (no second thread hop)."""
        return await self._check_all(files, deadline, budget, cold), self._state.pool.status()

    async def _check_all(
        self, files: Sequence[FileCheck], deadline: float, budget: float, cold: float | None
    ) -> batch.BatchResult:
        self._late.cancel({f.path for f in files})
        brief = cold is not None and await self._cold(files)
        if brief:
            deadline = min(deadline, time.monotonic() + max(cold or 0.0, 0.0))
        try:
            with deadline_scope(deadline):
                result = await batch.check(
                    self._checker, files, deadline, budget=budget,
                    limit=self.settings.max_files_per_check, brief=brief,
                )
        except Exception as exc:  # the kernel must never see our bugs as its own
            log.exception("check of %d files failed", len(files))
            return batch.BatchResult(files=failed_files(
                (f.path for f in files), self.settings,
                UnknownReason.FAILED, repr(exc),
            ))
        self._late.adopt(result.late)
        if brief:  # said nowhere: the next check includes what the starting servers owe
            result.files = [
                replace(f, unknown=tuple(
                    u for u in f.unknown if u.reason is not UnknownReason.TIMED_OUT
                )) for f in result.files
            ]
        return result

    async def _cold(self, files: Sequence[FileCheck]) -> bool:
        """Only virtual files (no write to wait for), and a server of theirs not started."""
        if not all(f.virtual for f in files):
            return False
        for f in files:
            if await self._control.starting(f.path):
                return True
        return False

    @staticmethod
    def _waiting_for(rows: list[ServerStatus]) -> str:
        """A line for people: which servers (`rows`) a long check is waiting for, and why."""
        parts = []
        for row in rows:
            if row.state is ServerState.STARTING:
                parts.append(f"{row.server_id} (starting)")
            elif row.state is ServerState.RUNNING and row.detail not in ("", "running"):
                parts.append(f"{row.server_id} ({row.detail})")
        what = ", ".join(parts) if parts else "diagnostics"
        return f"ipylsp: waiting for {what}"

    def _publish_status(self, rows: list[ServerStatus] | None = None, *,
                        off_loop: bool = False) -> None:
        """Let `ipylsp status` in another process see this process's servers (the shared
        service's file, for one that shares). `off_loop`: called on the loop, which decides
        whether the status changed and leaves the file's writing to its executor."""
        if self._host is not None:
            self._host._publish_status(rows, off_loop=off_loop)
            return
        from ipylsp.servers.executables import data_dir
        from ipylsp.service.runtime.status_file import write_status

        def locked(write: Callable[[], None]) -> None:  # one writer at a time
            with contextlib.suppress(Exception), self._publishing:
                write()

        def later(write: Callable[[], None]) -> None:
            asyncio.get_running_loop().run_in_executor(None, locked, write)

        with contextlib.suppress(Exception):  # the report is ready: never fail the caller here
            write_status(
                data_dir(self.settings), id(self), self.status() if rows is None else rows,
                errors=self.error_count(), write=later if off_loop else locked,
            )

    def pending(
        self, options: FormatOptions | None = None, *, again: str = "ipylsp.pending()"
    ) -> ShownReport:
        """Problems introduced by writes and not yet handed over, newest writes first (10 per
        file, 30 in all, and what a report rendered with `options` shows). Only what is handed
        over is forgotten: a cut hand-over's note says how many stay pending for the next
        call, and `again` is how to make it (`%lsp pending`). What is taken prints whole (no
        second budget could hide a problem handed over), or says "nothing pending". Without
        `options`, nothing is cut to a rendering, and it prints with the settings' options,
        every severity."""
        return self._pending.hand_over(options, self.settings, again)

    @property
    def pending_count(self) -> int:
        """Problems introduced by writes and not yet handed over."""
        return len(self._pending)

    @property
    def thread_ident(self) -> int | None:
        """The background loop's thread (started if needed; starting it spawns no server)."""
        return self._background().thread_ident

    def event_loop(self) -> asyncio.AbstractEventLoop | None:
        """The loop this service's work runs on (started if needed; starting it spawns no
        server), for `check_files_async`; None where its work runs in another process."""
        return self._background().loop

    def feature(
        self,
        feature: Feature[Any, A],
        path: str | os.PathLike[str],
        line: int = 0,
        column: int = 0,
        *,
        timeout: float | None = None,
    ) -> FeatureResult[A]:
        """A language feature (a `Feature` of `lsp/requests/`, with its parameters:
        `CALLS.given("outgoing")`) at a 0-based position; for a feature that takes a file or
        a query, `path` alone."""
        check_place(line, column)
        where = absolute(path)
        try:
            return self.trip(lambda trip: trip.feature(feature, where, line, column),
                             timeout=timeout)
        except TimeoutError as late:
            return feature.failed(UnknownReason.TIMED_OUT, str(late))

    def trip(
        self, plan: Callable[[Trip], Coroutine[Any, Any, T]], *, timeout: float | None = None
    ) -> T:
        """Run `plan` on the loop in one trip: the features it asks (`Trip.feature`) share one
        deadline (`timeout`, default `wait_budget`) and read each file once. What `plan`
        raises is raised here; `TimeoutError` ("no answer within 10.0 s") when it outlives
        the deadline by the hand-over margin (a bug of ours: every wait is bounded)."""
        budget = self.settings.wait_budget if timeout is None else float(timeout)
        trip = Trip(self._state, time.monotonic() + budget)
        try:
            return self._background().run(plan(trip), budget + HANDOVER_MARGIN)
        except LoopTimeout:
            raise TimeoutError(f"no answer within {budget:.1f} s") from None

    def error_count(self) -> int:
        """Current errors of the checked files, one per problem however many servers report
        it: what a status bar counts (live answers only: no store lookups after each check)."""
        return self._state.known.errors

    def diagnostics(
        self, path: str | os.PathLike[str] | None = None, *, cached: bool = False,
        within: Callable[[Path], bool] | None = None,
    ) -> Report:
        """The current diagnostics of one file, or of every checked file (those `within` a
        workspace, when given): a file changed on disk since its last check (an editor,
        another process, `git checkout`), or one never checked, is checked first; the others
        answer from memory, with no server round trip. `cached`: from the persistent store
        instead (any process's answers; a directory, or the current one, for every stored
        file under it), marked cached and maybe stale, nothing checked."""
        if cached:
            where = absolute(path if path is not None else os.getcwd())
            return stored_report(self._state.answers, where, self.settings)
        known = self._state.known
        if path is not None:
            paths = [absolute(path)]
            stale = ([paths[0]] if paths[0] not in known and paths[0].is_file()
                     else self.changed_on_disk(paths))
        else:
            stale = self.changed_on_disk(p for p in known if within is None or within(p))
        notes: tuple[str, ...] = ()
        if stale:  # what the check could not do (a file no longer read) is said here
            notes = self.check_files([FileCheck(p) for p in stale]).notes
        if path is None:
            paths = [p for p in sorted(known) if within is None or within(p)]
        report = known_report(
            known, paths, self.settings,
            lambda file, server, text: self._state.answers.cached(file, server, text, ""),
        )
        return replace(report, notes=(*notes, *report.notes)) if notes else report

    def store_info(self, *, clear: bool = False) -> StoreInfo:
        """The persistent store: its file, size, rows, files (no path when off).
        `clear`: forget every answer in it (what it held is returned)."""
        return (clear_store if clear else store_info)(self._state.answers)

    def close(self) -> None:
        """Stop every server (shutdown, exit, kill) and the loop. Safe to call twice."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        loop = self._running_loop()
        if loop is not None and loop.running:
            with contextlib.suppress(Exception):
                loop.run(self._late.close(), 5)
            if self._host is not None and self._sink.virtual:
                with contextlib.suppress(Exception):  # its documents go with it, not the servers
                    loop.run(self._close_virtual(), 5)
            if self._host is None:
                with contextlib.suppress(Exception):
                    loop.run(self._state.pool.close(), self.settings.shutdown_grace * 2 + 5)
                loop.stop()
        self._state.close()
        if self._host is not None:
            return  # the shared service's status file is its own
        from ipylsp.servers.executables import data_dir
        from ipylsp.service.runtime.status_file import remove_status

        remove_status(data_dir(self.settings), id(self))

    async def _close_virtual(self) -> None:
        """Close, in the shared servers, the in-memory documents this client sent (a kernel's
        cells): nothing of a client that ended stays open for the others' servers."""
        paths = [Path(p) for p in self._sink.virtual]
        for _, client in self._state.pool.clients():
            for path in paths:
                await client.close_document(path)  # nothing when it is not open there

    def __enter__(self) -> Service:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _retrieved(task: asyncio.Future[Any]) -> None:
    """A check's task abandoned at its deadline: what it raised while cancelled is logged, not
    left for the loop to report as never retrieved."""
    if not task.cancelled() and task.exception() is not None:
        log.debug("a check's task ended after its deadline", exc_info=task.exception())


class _Ticking:
    """`call()` on the running loop after `first` seconds, then every `every` seconds, until
    cancelled (a check's progress, on the loop); what it raises is logged, never the loop's."""

    def __init__(self, first: float, every: float, call: Callable[[], object]) -> None:
        self._loop = asyncio.get_running_loop()
        self._every = every
        self._call = call
        self._handle = self._loop.call_later(first, self._tick)

    def _tick(self) -> None:
        try:
            self._call()
        except Exception:
            log.exception("a check's progress failed")
        self._handle = self._loop.call_later(self._every, self._tick)

    def cancel(self) -> None:
        self._handle.cancel()
