"""The server-table part of the `Service` facade: which servers there are, which run (here
and in every other live process), and installs. Apart from `service.py`, which is about
checking; `servers` (and installers) are imported on first use, off the check path."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from ipylsp.service.pool import SlotStatus
from ipylsp.settings import Settings

if TYPE_CHECKING:
    from ipylsp.lsp.installers import InstallResult
    from ipylsp.service.servers import InstallProgress, ServerRow, ServerTable, StatusTable


class ServerTables:
    """Mixed into `Service`: needs its settings and its own servers' `status()`."""

    _settings: Settings

    def status(self) -> list[SlotStatus]:
        raise NotImplementedError

    def servers(self, *, installed_only: bool = False) -> ServerTable:
        """Every server ipylsp knows (the user's own too): installed with its command, or
        missing with how to install it."""
        from ipylsp.service.servers import table

        return table(self._settings, installed_only=installed_only)

    def which(self, server_id: str) -> ServerRow:
        """One server's row (`.which()`: its command, or why none); `UnknownServer`."""
        from ipylsp.service.servers import row

        return row(self._settings, server_id)

    def servers_status(self) -> StatusTable:
        """Running, starting, broken and stopped servers of this service and of every other
        live process (kernels), then the installed ones."""
        from ipylsp.service.servers import status

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
        from ipylsp.service.servers import install, install_targets

        targets = install_targets(self._settings, ids, install_all=install_all)
        return install(self._settings, targets, progress)
