"""What the Jupyter server extension owns: the service shared by every client of this Jupyter
server (the browser's routes, MCP over HTTP, Jupyter AI's tools), its agent tools rooted at the
server's `root_dir`, and the cells' session of its own tools (whose document says it lives at
the root), closed with the server.

The service is the user's broker's (`broker.relay.attach`, made at the first call: the server
starts without waiting for a broker): the language servers that check this server's files and
cells and answer its tools are the ones every kernel and `ipylsp mcp` of the user share, never
children of the Jupyter server. Its tools are the broker's too, each call relayed whole in the
server's session (`RelayedService.tool`), so that their queries, which cannot cross the socket,
run there as well; but `lsp_check_cell`, whose cells' session is this server's own (its
document named by this process, as a kernel's is), runs here and checks through the service.
Where the broker is off or cannot be had (now or later), the service and the tools are this
process's own, as before the broker, and why is said once: in the server's log, and ever after
in the status route (`in_process`) and `lsp_status`."""

from __future__ import annotations

import logging
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

from ipylsp.agent.result import ToolCaller, ToolResult
from ipylsp.agent.toolbox import Toolbox
from ipylsp.broker.client import wanted
from ipylsp.broker.relay import RelayedService, attach
from ipylsp.cells.session import CellSession
from ipylsp.model.settings import Settings
from ipylsp.service import Service

_lock = threading.Lock()
_current: ServerState | None = None

IN_PROCESS = ("ipylsp: this Jupyter server's language servers run in its own process, not in "
              "the user's broker: %s")
"""The log's line, once, when they do (`ServerState.in_process`)."""


class ServerState:
    def __init__(self, root: Path, settings: Settings,
                 log: logging.Logger | None = None) -> None:
        self.root = root
        # The root is the directory its users work in (JupyterHub's: their home): a file in
        # no project below it is checked, by servers that do not index it all.
        self.settings = replace(settings, directory=root)
        self._log = log or logging.getLogger(__name__)
        self._lock = threading.Lock()
        self._attaching = threading.Lock()
        self._closed = False
        self._service: Service | None = None
        self._off: str | None = None
        """Why the service is this process's own from the start (the broker off, or none)."""
        self._said: str | None = None
        self._cells: CellSession | None = None
        self._own_tools: Toolbox | None = None
        self.toolbox: ToolCaller = _ServerTools(self)

    @property
    def service(self) -> Service:
        """The user's broker's service for this server (attached at first use, the broker
        started if none runs), else one of this process's own (`in_process` says why)."""
        service = self._service
        if service is None:
            with self._attaching:  # one attach; `close` and `tell` do not wait for it
                service = self._service
                if service is None:
                    service = self._attach()
        self.tell()
        return service

    def _attach(self) -> Service:
        if self._closed:  # the server stopped: no broker is started for it any more
            ended = Service(self.settings, cells_dir=self.root)
            ended.close()  # the call that asked ends on it
            return ended
        # the broker ends with this server once alone (a hub's stop, `jupyter lab`'s end):
        # the users' kernels end with it, nothing of theirs stays for its idle
        relayed = attach(self.settings, cells_dir=self.root, ends_broker=True)
        if isinstance(relayed, RelayedService):
            service: Service = relayed
            self._log.info("ipylsp: language servers of the user's broker (pid %d)",
                           relayed.broker_pid)
        else:  # off, or why none can be had; the root's servers check the cells
            service = Service(self.settings, cells_dir=self.root)
        with self._lock:
            if not isinstance(relayed, RelayedService):
                self._off = relayed
            self._service = service
            closed = self._closed
        if closed:  # the server stopped meanwhile: the call that asked ends on it
            service.close()
        return service

    @property
    def in_process(self) -> str | None:
        """Why this server's checks and tools run in the Jupyter server's process and not in
        the user's broker; None: they run in the broker (or nothing was asked yet)."""
        service = self._service
        if isinstance(service, RelayedService):
            return service.fallback
        return self._off

    def tell(self) -> None:
        """Say in the log, once, that the servers run in this process, and why."""
        why = self.in_process
        with self._lock:
            if why is None or self._said is not None:
                return
            self._said = why
        self._log.log(logging.WARNING if wanted(self.settings) else logging.INFO,
                      IN_PROCESS, why)

    @property
    def own_tools(self) -> Toolbox:
        """This process's tools over `service` (the broker's checks while it answers; its
        queries, and everything once no broker can be had, in this process), with the cells'
        session of their own `lsp_check_cell`."""
        service = self.service
        with self._lock:
            if self._own_tools is None:
                self._cells = CellSession.over(service)
                self._own_tools = Toolbox(service, self.root, cells=self._cells,
                                          in_process=lambda: self.in_process)
            return self._own_tools

    def status(self) -> dict[str, Any]:
        """The status route's answer: the one status view's JSON (the broker's servers, when
        they are this server's, and every kernel's), and `in_process`."""
        view = self.service.servers_status()
        self.tell()  # a broker found gone by this call
        return {**view.to_json(), "in_process": self.in_process}

    def close(self) -> None:
        """The service closed (kept: a call still running ends on it, and none attaches again
        once the server stops); the broker's servers stay, for its other clients."""
        with self._lock:
            self._closed = True
            service = self._service
            cells, self._cells = self._cells, None
        if service is not None:
            service.close()
        if cells is not None:
            cells.close()


class _ServerTools:
    """The agent tools of a Jupyter server (a `ToolCaller`, never raises): its own box
    (`ServerState.own_tools`), which has the broker answer each call whole while its service
    is the broker's (`Toolbox._relayed`), and says once in the log when it no longer is."""

    def __init__(self, state: ServerState) -> None:
        self._state = state

    def call(self, name: str, arguments: dict[str, Any] | None = None) -> ToolResult:
        result = self._state.own_tools.call(name, arguments)
        self._state.tell()  # a broker found gone for good: this process answers from now on
        return result


def start(root: Path, settings: Settings, log: logging.Logger | None = None) -> ServerState:
    """The state of this Jupyter server (one per process; a second start replaces it).
    `log`: where the server's lines go (the Jupyter server's)."""
    global _current
    with _lock:
        previous, _current = _current, ServerState(root, settings, log)
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
