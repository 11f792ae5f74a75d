"""Clients keyed by (server id, workspace root): lazy single-flight starts, crash restarts with
backoff, a broken set, and an idle reaper.

A wedged server must cost the kernel at most one wait budget: a start that outlives a check's
budget keeps running in the background, and later checks answer "still starting" at once; a
start that fails, or a server that gives no answer at all in `max_timeouts` checks in a row
while reporting no progress, is marked broken until `restart`. Nothing a check awaits here
stops a process: dead, wedged and broken clients are stopped in the background. Servers start
in the service's client `Environment`.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from ipylsp.lsp.client import ClientError, LanguageClient
from ipylsp.model.diagnostics import UnknownReason
from ipylsp.model.environment import Environment
from ipylsp.model.server_spec import ServerSpec
from ipylsp.model.settings import Settings
from ipylsp.model.status import ServerState, ServerStatus

log = logging.getLogger(__name__)

Key = tuple[str, Path, Path | None]
"""(server id, root, gate): the gate is the workspace of the files it serves, which shapes its
configuration below a plain directory (`Resolver.admit`): two clients working in different
directories of a broker never share a server configured for the other."""

BRIEF_CHECK: contextvars.ContextVar[bool] = contextvars.ContextVar("brief_check", default=False)
"""Set by a check that chose to wait less than the budget (a cell's first check while servers
start): a start it does not see finish has not outlived a budget, and later checks still wait
for it."""


@dataclass
class Slot:
    """Everything the pool knows about one (server, root, gate)."""

    spec: ServerSpec
    root: Path
    command: tuple[str, ...]
    gate: Path | None = None
    """The workspace of the files it serves (`Key`)."""
    environment: str = ""
    """The digest of the client's `Environment` it runs in (part of its answers' store key)."""
    executable: tuple[int, int, int] | None = None
    """The identity of its executable when it started (`_identity`): another one at the same
    path (an upgrade) restarts it at the next use, so a long-lived process (a broker) never
    answers with the version it started with."""
    client: LanguageClient | None = None
    starting: asyncio.Task[LanguageClient] | None = None
    start_began: float = 0.0
    start_outlived_budget: bool = False
    broken: str | None = None
    crashes: int = 0
    last_crash: float = 0.0
    timeouts: int = 0
    reported: set[str] = field(default_factory=set)
    checks: int = 0
    """Checks using the slot right now; answers nobody waits for any more hold back meanwhile."""
    idle: asyncio.Event = field(default_factory=asyncio.Event)
    """Set while `checks` is 0."""

    def enter_check(self) -> None:
        self.checks += 1
        self.idle.clear()

    def leave_check(self) -> None:
        self.checks -= 1
        if self.checks <= 0:
            self.checks = 0
            self.idle.set()


def _identity(command: tuple[str, ...]) -> tuple[int, int, int] | None:
    """The device, inode and modification time of a command's executable (None: no such
    file, or not a path: found on PATH at spawn)."""
    try:
        info = os.stat(command[0])
    except (OSError, IndexError, ValueError):
        return None
    return (info.st_dev, info.st_ino, info.st_mtime_ns)


class ClientPool:
    def __init__(self, settings: Settings, environment: Environment | None = None) -> None:
        """`environment`: the client's, which servers run in (None: this process's)."""
        self.settings = settings
        self.environment = environment
        self._slots: dict[Key, Slot] = {}
        self._reaper: asyncio.Task[None] | None = None
        self._stopping: set[asyncio.Task[None]] = set()

    def _stop_later(self, client: LanguageClient) -> None:
        """Stop a client off the check's path (shutdown, grace, kill take seconds)."""
        task = asyncio.get_running_loop().create_task(client.stop())
        self._stopping.add(task)
        task.add_done_callback(self._stopping.discard)

    # -- acquiring ----------------------------------------------------------------------------

    def find(self, server_id: str, root: Path, gate: Path | None) -> Slot | None:
        return self._slots.get((server_id, root, gate))

    def add(self, spec: ServerSpec, root: Path, command: tuple[str, ...],
            gate: Path | None) -> Slot:
        """A new slot; `spec` is final here (overrides and Python environment applied)."""
        slot = self._slots[(spec.id, root, gate)] = Slot(
            spec=spec, root=root, command=command, gate=gate,
            environment=(self.environment or Environment.current()).digest())
        return slot

    async def acquire(
        self, slot: Slot, deadline: float, *, patient: bool = False
    ) -> LanguageClient:
        """A running client for the slot, started or restarted as needed; `ClientError` else.

        `patient`: wait for a start that already outlived an earlier budget (an explicit
        `start`), instead of answering "still starting" at once as checks do."""
        self._ensure_reaper()
        if slot.broken is not None:
            raise ClientError(UnknownReason.BROKEN, slot.broken)
        client = slot.client
        if client is not None and client.alive:
            if _identity(slot.command) == slot.executable:
                return client
            log.info("restarting %s for %s: its executable changed", slot.spec.id, slot.root)
            self._stop_later(client)
            slot.client = client = None
        if client is not None and slot.starting is None:
            await self._after_crash(slot, client, deadline)
        if slot.starting is None:
            slot.start_began = time.monotonic()
            slot.start_outlived_budget = False
            slot.starting = asyncio.get_running_loop().create_task(self._start(slot))
        elif slot.start_outlived_budget and not patient:
            waited = time.monotonic() - slot.start_began
            raise ClientError(
                UnknownReason.TIMED_OUT,
                f"after {waited:.0f} s, still starting (initialize unanswered)",
            )
        starting = slot.starting
        # `asyncio.wait`, not `wait_for(shield(...))`: neither the budget nor a `stop` that
        # cancels the start may turn into a CancelledError of this check.
        await asyncio.wait({starting}, timeout=max(deadline - time.monotonic(), 0))
        if not starting.done():
            waited = time.monotonic() - slot.start_began
            if not BRIEF_CHECK.get():
                slot.start_outlived_budget = True
            raise ClientError(
                UnknownReason.TIMED_OUT,
                f"after {waited:.1f} s, still starting (initialize unanswered)",
            )
        if starting.cancelled():
            raise ClientError(UnknownReason.FAILED, "stopped while starting")
        return starting.result()

    async def _after_crash(self, slot: Slot, client: LanguageClient, deadline: float) -> None:
        """A dead client: count the crash, back off, or give up and mark the slot broken."""
        detail = client.exit_reason()
        slot.client = None
        self._stop_later(client)
        slot.crashes += 1
        now = time.monotonic()
        if slot.crashes > self.settings.max_restarts:
            slot.broken = f"crashed {slot.crashes} times; last: {detail}"
            raise ClientError(UnknownReason.BROKEN, slot.broken)
        backoff = 0.0 if slot.crashes == 1 else 0.5 * 2 ** (slot.crashes - 2)
        wait = slot.last_crash + backoff - now
        slot.last_crash = now
        if wait > 0:
            if now + wait > deadline:
                raise ClientError(UnknownReason.CRASHED, f"{detail}; restarting in {wait:.1f} s")
            await asyncio.sleep(wait)  # restart backoff, not synchronisation
        log.warning("restarting %s for %s after: %s", slot.spec.id, slot.root, detail)

    async def _start(self, slot: Slot) -> LanguageClient:
        settings = self.settings
        slot.executable = _identity(slot.command)
        client = LanguageClient(
            slot.spec,
            slot.root,
            slot.command,
            request_timeout=settings.request_timeout,
            shutdown_grace=settings.shutdown_grace,
            max_open_documents=settings.max_open_documents,
            max_message_bytes=settings.max_message_bytes,
            environment=self.environment,
        )
        try:
            await client.start(settings.initialize_timeout)
        except ClientError as exc:
            slot.broken = exc.detail
            raise
        finally:
            slot.starting = None
        slot.client = client
        slot.timeouts = 0
        return client

    # -- outcomes -----------------------------------------------------------------------------

    def record_success(self, slot: Slot) -> None:
        slot.timeouts = 0

    async def record_timeout(self, slot: Slot) -> None:
        """Count a check in which the server answered nothing; one that reports progress is
        busy, not wedged. After `max_timeouts` in a row it is set aside as broken (stopped in
        the background), so later checks answer from the broken set at once."""
        client = slot.client
        if client is None or client.progress.busy:
            return
        slot.timeouts += 1
        if slot.timeouts >= self.settings.max_timeouts:
            slot.broken = f"after {slot.timeouts} checks without an answer"
            slot.client = None
            self._stop_later(client)

    # -- control ------------------------------------------------------------------------------

    def _matching(self, server_id: str | None, root: Path | None) -> list[Slot]:
        return [
            slot
            for (sid, sroot, _), slot in self._slots.items()
            if (server_id is None or sid == server_id) and (root is None or sroot == root)
        ]

    async def stop(self, server_id: str | None = None, root: Path | None = None) -> int:
        """Stop matching servers; the number that were running or starting."""
        slots = self._matching(server_id, root)
        live = sum(
            1 for s in slots if s.starting is not None or (s.client is not None and s.client.alive)
        )
        await asyncio.gather(*(self._stop_slot(slot) for slot in slots))
        return live

    def retire_below(self, server_id: str, below: Path, keep: int, *, besides: Slot) -> int:
        """At most `keep` slots of `server_id` rooted strictly below `below` stay, `besides`
        (just added) among them: the least recently used of the others that no check is using
        are stopped in the background and forgotten (a plain directory's servers, one per
        directory the user writes in, must not grow without bound). How many went."""
        def used(slot: Slot) -> float:
            return slot.client.last_used if slot.client is not None else slot.start_began

        below_it = sorted(
            (slot for (sid, root, _), slot in self._slots.items()
             if sid == server_id and root != below and root.is_relative_to(below)
             and slot is not besides),
            key=used, reverse=True,
        )
        retired = [slot for slot in below_it[max(keep - 1, 0):]
                   if slot.checks == 0 and slot.starting is None]
        for slot in retired:
            self._slots.pop((slot.spec.id, slot.root, slot.gate), None)
            client, slot.client = slot.client, None
            if client is not None:
                self._stop_later(client)
        return len(retired)

    async def restart(self, server_id: str | None = None, root: Path | None = None) -> int:
        """Stop and forget the slots (clearing broken marks); the next use starts afresh."""
        slots = self._matching(server_id, root)
        await asyncio.gather(*(self._stop_slot(slot) for slot in slots))
        for slot in slots:
            self._slots.pop((slot.spec.id, slot.root, slot.gate), None)
        return len(slots)

    async def _stop_slot(self, slot: Slot) -> None:
        starting = slot.starting
        if starting is not None:
            starting.cancel()
            with contextlib.suppress(BaseException):
                await starting
            if slot.starting is starting:  # cancelled before it ran: its `finally` never did
                slot.starting = None
        client, slot.client = slot.client, None
        if client is not None:
            await client.stop()

    async def close(self) -> None:
        if self._reaper is not None:
            self._reaper.cancel()
        await self.stop()
        if self._stopping:
            await asyncio.gather(*self._stopping, return_exceptions=True)
        self._slots.clear()

    def clients(self) -> list[tuple[Slot, LanguageClient]]:
        return [(s, s.client) for s in self._slots.values() if s.client is not None]

    def status(self) -> list[ServerStatus]:
        """Every slot's row, owned by this process."""
        rows = []
        for slot in self._slots.values():
            client = slot.client
            state: ServerState
            if slot.broken is not None:
                state, detail = ServerState.BROKEN, slot.broken
            elif slot.starting is not None:
                state, detail = ServerState.STARTING, "initializing"
            elif client is not None:
                state = client.state if client.alive else ServerState.CRASHED
                detail = client.progress.describe() or client.state_detail
            else:
                state, detail = ServerState.STOPPED, ""
            rows.append(
                ServerStatus(
                    server_id=slot.spec.id,
                    root=slot.root,
                    state=state,
                    detail=detail,
                    pid=client.pid if client is not None and client.alive else None,
                    owner=os.getpid(),
                    open_documents=len(client.documents) if client is not None else 0,
                    crashes=slot.crashes,
                )
            )
        return rows

    # -- idle reaping -------------------------------------------------------------------------

    def _ensure_reaper(self) -> None:
        if self._reaper is None and self.settings.idle_timeout > 0:
            self._reaper = asyncio.get_running_loop().create_task(self._reap_forever())

    async def _reap_forever(self) -> None:
        period = max(min(self.settings.idle_timeout / 4, 60.0), 0.05)
        while True:
            await asyncio.sleep(period)  # a timer, not synchronisation
            await self.reap_idle()

    async def reap_idle(self) -> int:
        cutoff = time.monotonic() - self.settings.idle_timeout
        idle = [
            slot
            for slot in self._slots.values()
            if slot.client is not None and slot.client.last_used < cutoff
        ]
        await asyncio.gather(*(self._stop_slot(slot) for slot in idle))
        return len(idle)
