"""What the Jupyter server extension owns: one Service shared by every client of this Jupyter
server (the browser's routes, MCP over HTTP, Jupyter AI's tools), its cells' session (whose
document says it lives at the root), its tool box rooted at the server's `root_dir`, closed
with the server."""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path

from ipylsp.agent.toolbox import Toolbox
from ipylsp.cells.session import CellSession
from ipylsp.model.settings import Settings
from ipylsp.service import Service

_lock = threading.Lock()
_current: ServerState | None = None


class ServerState:
    def __init__(self, root: Path, settings: Settings) -> None:
        self.root = root
        # The root is the directory its users work in (JupyterHub's: their home): a file in
        # no project below it is checked, by servers that do not index it all.
        settings = replace(settings, directory=root)
        self.service = Service(settings, cells_dir=root)  # the root's servers check cells
        self.cells = CellSession.over(self.service)
        self.toolbox = Toolbox(self.service, root, cells=self.cells)

    def close(self) -> None:
        self.service.close()
        self.cells.close()


def start(root: Path, settings: Settings) -> ServerState:
    """The state of this Jupyter server (one per process; a second start replaces it)."""
    global _current
    with _lock:
        previous, _current = _current, ServerState(root, settings)
        state = _current
    if previous is not None:
        previous.close()
    return state


def current() -> ServerState | None:
    """The running server's state, for tools called from outside the routes (Jupyter AI)."""
    return _current


def stop() -> None:
    global _current
    with _lock:
        state, _current = _current, None
    if state is not None:
        state.close()
