"""Services closed at interpreter exit and on SIGTERM, so no language server outlives the
process that started it (a SIGTERM handler is installed only when none was: a host's own
handler is left alone)."""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import threading
import weakref
from types import FrameType
from typing import Protocol


class Closable(Protocol):
    def close(self) -> None: ...


_live: weakref.WeakSet[Closable] = weakref.WeakSet()
_cleanup_installed = False


def _close_all() -> None:
    for service in list(_live):
        with contextlib.suppress(Exception):
            service.close()


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    _close_all()
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)


def register(service: Closable) -> None:
    """Close `service` at exit and on SIGTERM (unless it is gone by then)."""
    global _cleanup_installed
    _live.add(service)
    if _cleanup_installed:
        return
    _cleanup_installed = True
    atexit.register(_close_all)
    if threading.current_thread() is threading.main_thread():
        with contextlib.suppress(ValueError, OSError):
            if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
                signal.signal(signal.SIGTERM, _on_sigterm)
