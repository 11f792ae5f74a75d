"""`Toolbox`: the tools bound to one Service and one workspace root, and the dispatcher that
never raises: bad arguments, a missing server, a timeout or a bug of ours all come back as a
failed `ToolResult` with an error code and one line saying what to do next. Where the service
is the user's broker's (a kernel's, a Jupyter server's), the dispatcher has the broker answer
each call whole (`Toolbox._relayed`), but those whose cells are this process's (`HERE`): a
query's features cannot cross the socket, and asked here they would start servers in this
process."""

from __future__ import annotations

import contextvars
import logging
import os
import threading
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ipylsp.agent.errors import ErrorCode, ToolError
from ipylsp.agent.registry import TOOLS, Arguments
from ipylsp.agent.result import ToolResult
from ipylsp.agent.workspace import Workspace
from ipylsp.model.diagnostics import UnknownReason
from ipylsp.service import FileRefused, read_text

if TYPE_CHECKING:
    from ipylsp.cells.session import CellSession
    from ipylsp.lsp.requests import Feature, FeatureResult
    from ipylsp.service import Service, Trip

A = TypeVar("A")
T = TypeVar("T")

log = logging.getLogger(__name__)

_BUDGET: contextvars.ContextVar[float | None] = contextvars.ContextVar("budget", default=None)
"""The running tool call's budget (`Toolbox.call`): per thread, a box serving many at once."""

ERROR_CODES: dict[UnknownReason, ErrorCode] = {
    UnknownReason.NO_FILE: "file_not_found",
    UnknownReason.NOT_READ: "invalid_argument",
    UnknownReason.NO_LANGUAGE: "unsupported_language",
    UnknownReason.NO_PROVIDER: "server_unavailable",
    UnknownReason.NOT_INSTALLED: "server_unavailable",
    UnknownReason.BROKEN: "server_unavailable",
    UnknownReason.REFUSED: "server_unavailable",
    UnknownReason.EXCLUDED: "server_unavailable",
    UnknownReason.TIMED_OUT: "timeout",
    UnknownReason.CRASHED: "server_exited",
    UnknownReason.FAILED: "lsp_error",
}
"""Why there is no answer, as the agent's error code: the one place the vocabulary meets
the agents' (HTTP statuses follow from the code, `server.handlers`)."""

_NEXT_STEP: dict[ErrorCode, str] = {
    "timeout": "retry in a moment (the server may still be starting or indexing); "
    "lsp_status shows what runs",
    "server_exited": "retry: the server restarts on the next call; lsp_status shows it",
    "lsp_error": "try another position or tool",
    "unsupported_language": "ipylsp has no language server for this kind of file",
}


HERE = frozenset({"lsp_check_cell"})
"""The tools a box whose service is the broker's still answers itself: the cells it checks
are this process's (its kernel's, or its own `cells`)."""


class Toolbox:
    """The agent tools for `root` (default: the current directory), answered by `service`
    (default: this process's, `ipylsp.get_service()`: in a kernel, the one its cells' checks
    use, so that `lsp_pending` hands over what they introduced); `cells`: the
    cells' session `lsp_check_cell` checks against (default: `cells`); `in_process`: says why
    the servers run in this process and not in the user's broker, where the surface knows
    (`lsp_status` says it)."""

    def __init__(
        self,
        service: Service | None = None,
        root: str | os.PathLike[str] | None = None,
        *,
        max_chars: int | None = None,
        cells: CellSession | None = None,
        in_process: Callable[[], str | None] | None = None,
    ) -> None:
        self._service = service
        self._own_service = service is not None
        self.workspace = Workspace(Path.cwd() if root is None else root)
        self._max_chars = max_chars
        self._cells = cells
        self._cells_lock = threading.Lock()
        self._in_process = in_process

    @property
    def service(self) -> Service:
        if self._service is None:  # a kernel's that loaded ipylsp (its broker's), if any
            from ipylsp import get_service

            self._service = get_service()
        return self._service

    @property
    def cells(self) -> CellSession:
        """The cells' session `lsp_check_cell` checks against where no kernel with ipylsp
        loaded has one: the one given, else the process's (`process_session`) for the
        process-wide service, else one of its own over its service, made at first use."""
        with self._cells_lock:
            if self._cells is None:
                from ipylsp.cells.session import CellSession, process_session

                self._cells = (CellSession.over(self.service) if self._own_service
                               else process_session())
            return self._cells

    @property
    def in_process(self) -> str | None:
        """Why this box's servers run in this process, not in the user's broker (None: they
        do not, or its surface does not say)."""
        return None if self._in_process is None else self._in_process()

    @property
    def max_chars(self) -> int:
        """Characters of one answer's text (`max_answer_chars`)."""
        if self._max_chars is not None:
            return self._max_chars
        return self.service.settings.max_answer_chars

    # -- the dispatcher ------------------------------------------------------------------------

    def call(self, name: str, arguments: Arguments | None = None, *,
             budget: float | None = None) -> ToolResult:
        """Run tool `name`; never raises. `budget`: the seconds its waits on servers get
        (None: the service's `wait_budget`; a broker's retry gives what is left of the
        caller's: `broker.client.share`)."""
        from ipylsp.agent.schemas import validate, whole_numbers

        token = _BUDGET.set(budget)
        try:
            found = TOOLS.get(name) if isinstance(name, str) else None
            if found is None:
                raise ToolError(
                    "unknown_tool", f"there is no tool {name!r}; the tools are {', '.join(TOOLS)}"
                )
            args = {} if arguments is None else arguments
            validate(found, args)
            relayed = self._relayed(name, args)
            if relayed is not None:
                return relayed
            return found.run(self, whole_numbers(found, args))
        except ToolError as error:
            return ToolResult.failure(error)
        except Exception as exc:  # our bug must reach the model as an answer, not a traceback
            log.exception("tool %s failed", name)
            return ToolResult.failure(ToolError("lsp_error", f"ipylsp failed: {exc!r}"))
        finally:
            _BUDGET.reset(token)

    def _relayed(self, name: str, arguments: Arguments) -> ToolResult | None:
        """The call answered whole by the user's broker, where this box's service is the
        broker's (a kernel's, a Jupyter server's): a query's features cannot cross the socket
        (`RelayedService.trip`), and asked here they would start servers in this process.
        None: this process answers (its service is its own; `HERE`; no broker can be had any
        more, which the service says). A call the broker took and never answered is a
        `timeout`: its budget is spent."""
        from ipylsp.broker.client import BrokerLate
        from ipylsp.broker.relay import RelayedService

        service = self.service
        if not isinstance(service, RelayedService) or name in HERE:
            return None
        try:
            answer = service.tool(name, dict(arguments), root=self.workspace.root,
                                  max_chars=self._max_chars, budget=self.budget)
        except BrokerLate as late:
            return ToolResult.failure(ToolError("timeout", f"{late}; retry"))
        except RuntimeError as exc:  # the broker's bug, said as this box says its own
            return ToolResult.failure(ToolError("lsp_error", f"ipylsp failed: {exc}"))
        return None if answer is None else ToolResult.from_dict(answer)

    @property
    def budget(self) -> float | None:
        """The seconds the running call's waits get (`call`'s `budget`; None: the
        service's)."""
        return _BUDGET.get()

    # -- helpers for the tools -----------------------------------------------------------------

    def trip(self, plan: Callable[[Trip], Coroutine[Any, Any, T]]) -> T:
        """`Service.trip`: a tool's place found and its features asked in one coroutine on
        the service's loop, under one deadline, each file read once; a timeout is the
        `timeout` error."""
        try:
            return self.service.trip(plan, timeout=self.budget)
        except TimeoutError as late:
            raise _error(UnknownReason.TIMED_OUT, str(late)) from None

    async def ask(
        self, trip: Trip, feature: Feature[Any, A], path: Path, line: int = 0, column: int = 0
    ) -> FeatureResult[A]:
        """`Trip.feature`, its failure raised as the matching `ToolError`."""
        result = await trip.feature(feature, path, line, column)
        if result.reason is None:
            return result
        detail = result.error.strip() or f"{feature.kind} failed"
        raise _error(result.reason, detail, result.unknown[0].hint)

    def read(self, path: Path, trip: Trip | None = None) -> str:
        """A file's text as the servers see it (undecodable bytes replaced), read as the check
        reads it (once per `trip`): `invalid_argument` for what it does not read (a FIFO, a
        file over `max_file_mb`), in the check's words."""
        shown = self.workspace.shown(path)
        try:
            if trip is not None:
                text = trip.read(path)
            else:
                text = read_text(path, self.service.settings.max_file_bytes)
        except FileRefused as refused:
            raise ToolError("invalid_argument", refused.about(shown)) from None
        if text is None:
            raise ToolError("file_not_found", f"{shown} does not exist")
        return text


def _error(reason: UnknownReason, detail: str, hint: str = "") -> ToolError:
    """Why there is no answer, as the agent's error: its code, then what to do next."""
    code = ERROR_CODES.get(reason, "lsp_error")
    step = hint or _NEXT_STEP.get(code, "")
    if reason is UnknownReason.NO_PROVIDER:
        step = "no server for this file offers it; lsp_status lists the installed servers"
    return ToolError(code, f"{detail}; {step}" if step else detail)


def call_tool(name: str, arguments: Arguments | None = None, **options: Any) -> ToolResult:
    """Run tool `name` with this process's service (`ipylsp.get_service()`: in a kernel that
    loaded ipylsp, the kernel's, whose checks and pending these are), the workspace root being
    the current directory (`root=` to choose another). Never raises."""
    try:
        box = Toolbox(**options)
    except (TypeError, ValueError) as exc:
        return ToolResult.failure(ToolError("invalid_argument", str(exc)))
    return box.call(name, arguments)
