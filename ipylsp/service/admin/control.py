"""Starting, stopping and listing servers: which servers there are and which run (here and in
every other live process), installs, start / stop / restart. The facade owns one
`ServerControl` and hands these calls to it; the server table (and installers) are imported on
first use, off the check path. May not check files."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from ipylsp.lsp.client import ClientError
from ipylsp.model.diagnostics import Unknown
from ipylsp.model.status import ServerStatus
from ipylsp.service.runtime.loop import BackgroundLoop, LoopTimeout
from ipylsp.service.runtime.pool import Slot
from ipylsp.service.state import ServiceState

if TYPE_CHECKING:
    from ipylsp.servers.installers import InstallResult
    from ipylsp.service.admin.server_table import (
        InstallProgress,
        ServerRow,
        ServerTable,
        StatusView,
    )

# Beyond the wait budget, how long a caller waits for the loop to hand an answer back. No
# server behaviour reaches it (the calls keep the budget); it guards against our own bugs.
HANDOVER_MARGIN = 2.0


class ServerControl:
    """The servers of one service: `loop` is the facade's loop when it runs (None before the
    first use), `background` starts it; `publish` tells other processes what runs."""

    def __init__(
        self,
        state: ServiceState,
        loop: Callable[[], BackgroundLoop | None],
        background: Callable[[], BackgroundLoop],
        publish: Callable[[list[ServerStatus] | None], None],
    ) -> None:
        self._state = state
        self._loop = loop
        self._background = background
        self._publish = publish

    def status(self) -> list[ServerStatus]:
        loop = self._loop()
        if loop is None:
            return []
        return loop.run(self._status(), 5.0)

    async def _status(self) -> list[ServerStatus]:
        return self._state.pool.status()

    def restart(self, server_id: str | None = None) -> int:
        """Stop matching servers and clear their broken marks; they start again on next use."""
        loop = self._loop()
        if loop is None:
            return 0
        self._state.notices.forget()
        count = loop.run(self._state.pool.restart(server_id), 30.0)
        self._publish(None)
        return count

    async def starting(self, path: Path) -> bool:
        """On the loop: whether a server for `path` has yet to start (not started, or
        starting): a check that must not wait for a start (a cell's code) waits briefly."""
        resolver = self._state.resolver
        running = {server_id for server_id, _ in resolver.running(path)}
        for spec in resolver.servers(path):
            slot = None if spec.id in running else resolver.slot(spec, path)
            if isinstance(slot, Slot) and slot.broken is None:
                return True
        return False

    def start(self, path: Path, budget: float) -> list[str]:
        """Start (or confirm) every server that serves `path`; one status line per server."""
        coro = self._start_servers(path, time.monotonic() + budget)
        try:
            lines = self._background().run(coro, budget + HANDOVER_MARGIN)
        except LoopTimeout:
            return [f"no answer within {budget:.1f} s"]
        self._publish(None)
        return lines

    async def _start_servers(self, path: Path, deadline: float) -> list[str]:
        """Acquire every server for `path`; a line per server saying how that went."""
        lines = []
        for spec in self._state.resolver.servers(path):
            slot = self._state.resolver.slot(spec, path)
            if isinstance(slot, Unknown):
                lines.append(f"{spec.id}: {slot.reason.value}: {slot.detail} {slot.hint}".strip())
                continue
            try:
                client = await self._state.pool.acquire(slot, deadline, patient=True)
            except ClientError as exc:
                lines.append(f"{spec.id}: {exc.reason.value}: {exc.detail}")
                continue
            lines.append(f"{spec.id}: running (pid {client.pid}) for {slot.root}")
        return lines


    def stop(self, server_id: str | None = None) -> int:
        loop = self._loop()
        if loop is None:
            return 0
        count = loop.run(self._state.pool.stop(server_id), 30.0)
        self._publish(None)
        return count

    # -- tables -------------------------------------------------------------------------------

    def servers(self, *, installed_only: bool = False) -> ServerTable:
        """Every server ipylsp knows (the user's own too): installed with its command, or
        missing with how to install it."""
        from ipylsp.service.admin.server_table import table

        return table(self._state.settings, installed_only=installed_only,
                     environment=self._state.environment)

    def which(self, server_id: str) -> ServerRow:
        """One server's row (`.which()`: its command, or why none); `UnknownServer`."""
        from ipylsp.service.admin.server_table import row

        return row(self._state.settings, server_id, self._state.environment)

    def servers_status(self, own_token: int, *, errors: int, pending: int) -> StatusView:
        """Running, starting, broken and stopped servers of this service and of every other
        live process (kernels), then the installed ones; the errors of them all, the pending
        problems of this one."""
        from ipylsp.service.admin.server_table import status

        return status(self._state.settings, self.status(), own_token=own_token,
                      errors=errors, pending=pending, environment=self._state.environment)

    def install(
        self,
        ids: Iterable[str] = (),
        *,
        install_all: bool = False,
        progress: InstallProgress | None = None,
    ) -> list[InstallResult]:
        """Install servers into ipylsp's data dir, in turn (blocking: minutes for npm), telling
        `progress` as each goes; `UnknownServer`/`ValueError` (one line) for a bad request.
        `install_all`: every server with a pip or npm recipe."""
        from ipylsp.service.admin.server_table import install, install_targets

        settings = self._state.settings
        return install(settings, install_targets(settings, ids, install_all=install_all),
                       progress)
