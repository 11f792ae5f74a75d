"""The servers part of the `Service` facade: which servers there are and which run (here and
in every other live process), installs, and start / stop / restart. Apart from `service.py`,
which is about checking; `servers` (and installers) are imported on first use, off the check
path."""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from ipylsp.model.settings import Settings
from ipylsp.service.check.files import Checker
from ipylsp.service.runtime.loop import BackgroundLoop, LoopTimeout
from ipylsp.service.runtime.pool import ClientPool, Slot, SlotStatus

if TYPE_CHECKING:
    from ipylsp.servers.installers import InstallResult
    from ipylsp.service.admin.server_table import (
        InstallProgress,
        ServerRow,
        ServerTable,
        StatusTable,
    )

# Beyond the wait budget, how long a caller waits for the loop to hand an answer back. No
# server behaviour reaches it (the calls keep the budget); it guards against our own bugs.
HANDOVER_MARGIN = 2.0


class ServerControl:
    """Mixed into `Service`, whose loop, pool, checker and settings it works with."""

    _settings: Settings
    _loop: BackgroundLoop | None
    _pool: ClientPool
    _checker: Checker

    def _background(self) -> BackgroundLoop:
        raise NotImplementedError

    @staticmethod
    def _normalize(path: str | os.PathLike[str]) -> Path:
        raise NotImplementedError

    def _publish_status(self, rows: list[SlotStatus] | None = None) -> None:
        raise NotImplementedError

    def status(self) -> list[SlotStatus]:
        if self._loop is None:
            return []
        return self._loop.run(self._status(), 5.0)

    async def _status(self) -> list[SlotStatus]:
        return self._pool.status()

    def restart(self, server_id: str | None = None) -> int:
        """Stop matching servers and clear their broken marks; they start again on next use."""
        if self._loop is None:
            return 0
        self._checker.forget_reported()
        count = self._loop.run(self._pool.restart(server_id), 30.0)
        self._publish_status()
        return count

    def starting(self, path: str | os.PathLike[str]) -> bool:
        """Whether a server for `path` has yet to start (not started, or starting): a caller
        that must not wait for a start (a cell's check) then waits briefly instead."""
        if self._loop is None or not self._loop.running:
            return True
        try:
            return bool(self._loop.run(self._starting(self._normalize(path)), 1.0))
        except LoopTimeout:  # a loop this busy: do not wait on it either
            return True

    async def _starting(self, path: Path) -> bool:
        resolver = self._checker.resolver
        running = {server_id for server_id, _ in resolver.running(path)}
        for spec in resolver.servers(path):
            slot = None if spec.id in running else resolver.slot(spec, path)
            if isinstance(slot, Slot) and slot.broken is None:
                return True
        return False

    def start(self, path: str | os.PathLike[str], *, timeout: float | None = None) -> list[str]:
        """Start (or confirm) every server that serves `path`; one status line per server."""
        budget = self._settings.wait_budget if timeout is None else float(timeout)
        coro = self._checker.start_servers(self._normalize(path), time.monotonic() + budget)
        try:
            lines = self._background().run(coro, budget + HANDOVER_MARGIN)
        except LoopTimeout:
            return [f"no answer within {budget:.1f} s"]
        self._publish_status()
        return lines

    def stop(self, server_id: str | None = None) -> int:
        if self._loop is None:
            return 0
        count = self._loop.run(self._pool.stop(server_id), 30.0)
        self._publish_status()
        return count

    def server_pids(self) -> list[int]:
        return [row.pid for row in self.status() if row.pid is not None]

    # -- tables -------------------------------------------------------------------------------

    def servers(self, *, installed_only: bool = False) -> ServerTable:
        """Every server ipylsp knows (the user's own too): installed with its command, or
        missing with how to install it."""
        from ipylsp.service.admin.server_table import table

        return table(self._settings, installed_only=installed_only)

    def which(self, server_id: str) -> ServerRow:
        """One server's row (`.which()`: its command, or why none); `UnknownServer`."""
        from ipylsp.service.admin.server_table import row

        return row(self._settings, server_id)

    def servers_status(self) -> StatusTable:
        """Running, starting, broken and stopped servers of this service and of every other
        live process (kernels), then the installed ones."""
        from ipylsp.service.admin.server_table import status

        return status(self._settings, self.status(), own_token=id(self))

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

        targets = install_targets(self._settings, ids, install_all=install_all)
        return install(self._settings, targets, progress)
