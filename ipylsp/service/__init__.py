"""The service: one facade (`Service`) over an asyncio loop on a daemon thread, and the few
values the surfaces exchange with it. The surfaces (`ipython/`, `agent/`, `server/`, the CLI,
the Python API) import the service only from here (`tests/test_layers.py` says so); the rooms
behind it are the service's own.

Rooms by concern: the check pipeline (`check/`), the runtime that runs servers (`runtime/`:
loop, pool, resolver, cleanup, the process-wide service, the status file), queries beyond
diagnostics (`queries`), the notebook's cells (`cells`), where reports go (`outputs/`),
administration of servers (`admin/`), and the store as a cache (`answers`). Never imports
IPython, Jupyter, tornado, traitlets or mcp: the surfaces adapt it.

Names load on first use: a thin client (the CLI's `status`) imports only what it touches.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # what mypy and editors see; at run time, `__getattr__` loads it
    from ipylsp.service.admin.server_table import InstallProgress as InstallProgress
    from ipylsp.service.admin.server_table import StatusView as StatusView
    from ipylsp.service.admin.server_table import UnknownServer as UnknownServer
    from ipylsp.service.answers import STORE_OFF as STORE_OFF
    from ipylsp.service.cells import CellSession as CellSession
    from ipylsp.service.cells import KernelView as KernelView
    from ipylsp.service.check.before_text import MAX_FILE_BYTES as MAX_FILE_BYTES
    from ipylsp.service.check.before_text import FileRefused as FileRefused
    from ipylsp.service.check.before_text import read_text as read_text
    from ipylsp.service.check.before_text import readable_text as readable_text
    from ipylsp.service.check.before_text import special_file as special_file
    from ipylsp.service.queries import Trip as Trip
    from ipylsp.service.runtime.process_wide import get_service as get_service
    from ipylsp.service.runtime.process_wide import reset_service as reset_service
    from ipylsp.service.service import NOTHING_PENDING as NOTHING_PENDING
    from ipylsp.service.service import Service as Service

_EXPORTS = {
    "Service": "service", "NOTHING_PENDING": "service",
    "CellSession": "cells", "KernelView": "cells",
    "get_service": "runtime.process_wide", "reset_service": "runtime.process_wide",
    "InstallProgress": "admin.server_table", "StatusView": "admin.server_table",
    "UnknownServer": "admin.server_table",
    "STORE_OFF": "answers",
    "MAX_FILE_BYTES": "check.before_text", "FileRefused": "check.before_text",
    "read_text": "check.before_text", "readable_text": "check.before_text",
    "special_file": "check.before_text",
    "Trip": "queries",
}
"""Each exported name, and the room that defines it (`tests/test_layers.py` checks that the
`TYPE_CHECKING` imports above say the same)."""

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> object:
    room = _EXPORTS.get(name)
    if room is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{room}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
