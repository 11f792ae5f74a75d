"""The process-wide `Service`: one per Python process, shared by the public API, the IPython
extension and the agent tools (a kernel runs one set of servers, whichever surface asks).

Its own module so that none of those surfaces imports another to reach it (the public API
and the extension would import each other).
"""

from __future__ import annotations

import threading

from ipylsp.model.settings import Settings
from ipylsp.service.service import Service

_lock = threading.Lock()
_service: Service | None = None


def get_service(settings: Settings | None = None) -> Service:
    """The process-wide `Service` (created on first use; `settings` only applies then)."""
    global _service
    with _lock:
        if _service is None:
            _service = Service(settings)
        return _service


def reset_service() -> None:
    """Close and forget the process-wide service (`%unload_ext`, tests)."""
    global _service
    with _lock:
        current, _service = _service, None
    if current is not None:
        current.close()
