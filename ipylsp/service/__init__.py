"""The service: one facade (`Service`) over an asyncio loop on a daemon thread, and the few
values the surfaces exchange with it. The surfaces (`ipython/`, `agent/`, `server/`, the CLI,
the Python API) import the service only from here (`tests/test_layers.py` says so); the rooms
behind it are the service's own.

Rooms by concern: the check pipeline (`check/`), the runtime that runs servers (`runtime/`:
loop, pool, resolver, cleanup, the process-wide service, the status file), queries beyond
diagnostics (`queries`), where reports go (`outputs/`), administration of servers
(`admin/`), and the store as a cache (`answers`). Never imports IPython, Jupyter, tornado,
traitlets or mcp: the surfaces adapt it. The notebook's cells are not a room: their session
lives with the kernel (`ipylsp/cells/`) and sends their document here as a virtual
`FileCheck`, like any surface's check.

Names load on first use: a thin client (the CLI's `status`) imports only what it touches.
Besides the service's own, it exports what the surfaces need of servers as data and on disk
(`data_dir`, `languages`, `registry`, `regular_file`, `workspace_gate`, `InstallResult`,
`StoreInfo`, `cells_place`: where the cells' document says it lives; `descendants`: a
process's tree): a
surface imports nothing of `servers/`, `store/` or `lsp/` but the features' vocabulary
(`lsp.requests`), whose values its tables name.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # `typing.TYPE_CHECKING`, without importing typing (see ipylsp/__init__)
if TYPE_CHECKING:  # what mypy and editors see; at run time, `__getattr__` loads it
    from ipylsp.lsp.procfs import descendants as descendants
    from ipylsp.servers import cells_place as cells_place
    from ipylsp.servers import languages as languages
    from ipylsp.servers import registry as registry
    from ipylsp.servers import regular_file as regular_file
    from ipylsp.servers.executables import data_dir as data_dir
    from ipylsp.servers.installers import InstallResult as InstallResult
    from ipylsp.servers.roots import workspace_gate as workspace_gate
    from ipylsp.service.admin.server_table import InstallProgress as InstallProgress
    from ipylsp.service.admin.server_table import StatusView as StatusView
    from ipylsp.service.admin.server_table import UnknownServer as UnknownServer
    from ipylsp.service.answers import STORE_OFF as STORE_OFF
    from ipylsp.service.check.before_text import MAX_FILE_BYTES as MAX_FILE_BYTES
    from ipylsp.service.check.before_text import FileRefused as FileRefused
    from ipylsp.service.check.before_text import read_text as read_text
    from ipylsp.service.check.before_text import readable_text as readable_text
    from ipylsp.service.check.before_text import special_file as special_file
    from ipylsp.service.check.file_reports import failed_files as failed_files
    from ipylsp.service.outputs.pending import NOTHING_PENDING as NOTHING_PENDING
    from ipylsp.service.outputs.pending import OWED as OWED
    from ipylsp.service.outputs.pending import PendingChannel as PendingChannel
    from ipylsp.service.queries import Trip as Trip
    from ipylsp.service.runtime.process_wide import get_service as get_service
    from ipylsp.service.runtime.process_wide import reset_service as reset_service
    from ipylsp.service.service import Service as Service
    from ipylsp.store import STORE_ENV as STORE_ENV
    from ipylsp.store import StoreInfo as StoreInfo

_EXPORTS = {
    "Service": "service", "NOTHING_PENDING": "outputs.pending",
    "PendingChannel": "outputs.pending", "OWED": "outputs.pending",
    "get_service": "runtime.process_wide", "reset_service": "runtime.process_wide",
    "InstallProgress": "admin.server_table", "StatusView": "admin.server_table",
    "UnknownServer": "admin.server_table",
    "STORE_OFF": "answers",
    "MAX_FILE_BYTES": "check.before_text", "FileRefused": "check.before_text",
    "read_text": "check.before_text", "readable_text": "check.before_text",
    "special_file": "check.before_text", "failed_files": "check.file_reports",
    "Trip": "queries",
    "data_dir": "ipylsp.servers.executables", "InstallResult": "ipylsp.servers.installers",
    "languages": "ipylsp.servers", "registry": "ipylsp.servers",
    "regular_file": "ipylsp.servers", "workspace_gate": "ipylsp.servers.roots",
    "cells_place": "ipylsp.servers", "descendants": "ipylsp.lsp.procfs",
    "STORE_ENV": "ipylsp.store", "StoreInfo": "ipylsp.store",
}
"""Each exported name, and the room that defines it (a whole module name: a module of the
layers below; `tests/test_layers.py` checks that the `TYPE_CHECKING` imports above say the
same)."""

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> object:
    room = _EXPORTS.get(name)
    if room is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    where = room if room.startswith("ipylsp.") else f"{__name__}.{room}"
    module = importlib.import_module(where)
    value = (getattr(module, name) if hasattr(module, name)
             else importlib.import_module(f"{where}.{name}"))  # a module of that package
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
