"""`RelayedService`: the service facade of a kernel (or any long-lived client) whose work is
done by the user's broker, on the servers every other client of the same context uses.

It is a `Service` to its callers (the cell hooks, the magics): each facade method is one call
over the broker's socket, `{"call": "service", "args": {"method": ..., "args": ...}}`, whose
arguments and answer take the model's one wire form (`model.wire`) as typed by `Service`'s own
signature (`hints`): the contract is the facade's, read on both sides, never copied. A query
(`feature`: `%lsp hover`, `ipylsp.references(...)`) is `{"call": "feature", ...}`: a declared
feature as its kind and parameters (`lsp.requests.declared`), its place as `Service.feature`
types it, asked in this client's session on the broker's servers; its `FeatureResult` comes
back in its wire form, its answer read as the feature's `answer_type`. What cannot cross (a
`Feature` of the caller's own, whose functions stay here; a `trip`'s plan, a coroutine of
callbacks; installing, which needs no running server) is done in this process by a local
`Service` made on first need; an agent tool, whose queries run in such a plan, is relayed
whole instead (`tool`: the broker's tools, in this client's session, as the Jupyter server
extension asks them).

Never worse than in-process: where the broker cannot be had any more (it does not start, it
refuses, it took a call and hung), the local `Service` answers this call and every later one,
said once in `%lsp status` (`fallback`); a broker killed meanwhile is replaced within the call
and its budget (`Broker.call`); a check the broker took and did not answer within its budget
is a report of "timed out" files (its budget is spent), and the next check runs here. Nothing
pending is lost either way: this process keeps a copy of what its session owes it
(`broker/ledger.py`), which the session of a broker that replaces a killed one takes over,
and the local `Service` hands over when the broker is gone for good.

Paths are made absolute here, against this process's working directory (the broker's is `/`).
Touches only the socket (through `client.Broker`) and the facade.
"""

from __future__ import annotations

import functools
import importlib
import os
import threading
import typing
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ipylsp.broker.client import (
    ANSWER_MARGIN,
    Broker,
    BrokerError,
    BrokerLate,
    BrokerUnavailable,
    share,
)
from ipylsp.model.checks import FileCheck, absolute
from ipylsp.model.diagnostics import Report, UnknownReason
from ipylsp.model.settings import Settings, for_servers
from ipylsp.model.wire import from_wire, to_wire

if TYPE_CHECKING:
    from ipylsp.analysis.report import FormatOptions, ShownReport
    from ipylsp.lsp.requests import Feature, FeatureResult
    from ipylsp.model.status import ServerStatus
    from ipylsp.service import (
        InstallProgress,
        InstallResult,
        PendingChannel,
        Service,
        StatusView,
        StoreInfo,
    )

    _Facade = Service
else:
    _Facade = object
    """A `Service` to the type checker and its callers, not at run time: importing the
    service's machinery costs each kernel about 3.6 MB it does not use (its work runs in the
    broker). Every public member of `Service` is defined here (tests/test_relay.py)."""

RELAYED = frozenset({
    "status", "start", "stop", "restart", "servers_status", "check_files", "check_rest",
    "changed_on_disk", "settle_late", "pending", "pending_count", "error_count", "diagnostics",
    "store_info", "unchecked", "configure", "checked_files",
})
"""The facade's methods (and properties) a client may call in the broker; the broker refuses
any other name."""

PLACE = ("path", "line", "column", "timeout")
"""The parameters of `Service.feature` a relayed query sends beside its feature."""

A = TypeVar("A")

REACH_NOTE = "shared with {others} other client{s} of the broker (kernels, `ipylsp mcp`)"


class SharedServers(RuntimeError):
    """`stop` or `restart` without `shared=True` in a context other clients use: nothing was
    stopped (their checks would fail or wait for a start they did not ask for)."""

    def __init__(self, others: int) -> None:
        self.others = others
        super().__init__(REACH_NOTE.format(others=others, s="s" if others != 1 else ""))


_ANNOTATED = {
    "ShownReport": "ipylsp.analysis.report", "FormatOptions": "ipylsp.analysis.report",
    "ServerStatus": "ipylsp.model.status", "StatusView": "ipylsp.service",
    "InstallProgress": "ipylsp.service", "InstallResult": "ipylsp.service",
    "StoreInfo": "ipylsp.service", "Service": "ipylsp.service",
}
"""Where the names the facade's annotations use beyond their modules' own are defined."""


class _Names(dict[str, Any]):
    """The annotations' names, each imported when an annotation first reads it (a kernel
    imports the store's module only when it decodes a `StoreInfo`)."""

    def __missing__(self, name: str) -> Any:
        if name not in _ANNOTATED:
            raise KeyError(name)
        value = getattr(importlib.import_module(_ANNOTATED[name]), name)
        self[name] = value
        return value


@functools.cache
def signature(facade: type, method: str) -> dict[str, Any]:
    """The types of `facade.method`'s parameters and answer (`return`); a property: its
    getter's."""
    member = facade.__dict__[method]
    function = member.fget if isinstance(member, property) else member
    found: dict[str, Any] = typing.get_type_hints(function, localns=_Names())
    return found


def hints(method: str) -> dict[str, Any]:
    """The types of a relayed facade method's parameters and answer, read from `Service`'s
    own signature (the broker's side: the contract)."""
    if method not in RELAYED:
        raise ValueError(f"{method!r} is not a relayed facade method")
    from ipylsp.service import Service

    return signature(Service, method)


def encode_args(method: str, args: dict[str, Any]) -> dict[str, Any]:
    """`args` of `method` in their wire form (a client's side)."""
    if method not in RELAYED:
        raise ValueError(f"{method!r} is not a relayed facade method")
    return {name: to_wire(value) for name, value in args.items()}


def decode_args(method: str, args: dict[str, Any]) -> dict[str, Any]:
    """A relayed call's arguments read against the facade's signature; `ValueError` for a
    parameter it does not have or a value of another type (the broker's side)."""
    types = hints(method)
    out: dict[str, Any] = {}
    for name, value in args.items():
        if name == "return" or name not in types:
            raise ValueError(f"{method} takes no {name!r}")
        out[name] = from_wire(types[name], value)
    return out


def call_relayed(service: Service, method: str, args: dict[str, Any], **local: Any) -> Any:
    """Run a relayed call on the broker's side: its answer's wire form. `local`: arguments
    that do not cross (a check's `progress`, which sends each line to the client)."""
    decoded = {**decode_args(method, args), **local}
    member = getattr(type(service), method)
    value = getattr(service, method) if isinstance(member, property) else (
        getattr(service, method)(**decoded))
    return to_wire(value)


def feature_call(feature: Feature[Any, Any], path: Path, line: int, column: int,
                 timeout: float | None) -> dict[str, Any] | None:
    """A query's wire form (a client's side): its feature as the declared one it is, and its
    place; None for a feature that is not declared (it cannot cross)."""
    from ipylsp.lsp.requests.declared import wire_form

    form = wire_form(feature)
    if form is None:
        return None
    place = {"path": path, "line": line, "column": column, "timeout": timeout}
    return {"feature": form, **{name: to_wire(value) for name, value in place.items()}}


def answer_feature(service: Service, args: dict[str, Any]) -> Any:
    """Ask a relayed query on the broker's side: its `FeatureResult`'s wire form. `ValueError`
    for a feature that is not declared, or a place `Service.feature` does not take."""
    from ipylsp.lsp.requests.declared import from_wire_form
    from ipylsp.service import Service

    feature = from_wire_form(args.get("feature"))
    types = signature(Service, "feature")
    place = {name: from_wire(types[name], args.get(name)) for name in PLACE}
    if not os.path.isabs(place["path"]):
        raise ValueError("a query needs an absolute path")
    return service.feature(feature, **place).to_wire()


class RelayedService(_Facade):
    """A `Service` whose methods the broker answers (module doc). Made by `attach`; closed
    like any service (its broker session ends, none of the broker's servers stop)."""

    def __init__(self, broker: Broker, settings: Settings, *,
                 make_broker: Callable[[Settings, PendingChannel | None], Broker],
                 cells_dir: Path | None = None) -> None:
        # Not `Service.__init__`: nothing of the service's own runs in this process.
        self._broker: Broker | None = broker
        self._settings = settings
        self._make_broker = make_broker
        self._relay_cells_dir = cells_dir
        self._local: Service | None = None
        self._said: str | None = None
        self._relay_lock = threading.Lock()
        self._closed = False
        self._subscribers: list[Callable[[Report], object]] = []
        self._owed: PendingChannel | None = None
        """The local service's pending channel: what the broker's session owed this client
        when the broker went for good (its ledger's copy), then the local checks'."""

    # -- where calls go ---------------------------------------------------------------------

    @property
    def fallback(self) -> str | None:
        """Why this process checks in-process now (None: the broker answers)."""
        return self._said

    @property
    def broker_pid(self) -> int:
        return 0 if self._broker is None else self._broker.pid

    def _in_process(self, why: str | None = None) -> Service:
        with self._relay_lock:
            if self._closed:
                raise RuntimeError("this ipylsp Service is closed")
            if why is not None and self._said is None:
                self._said = why
                if self._broker is not None:
                    owed = self._broker.release_ledger()
                    self._broker.close()
                    self._broker = None
                    if owed is not None:  # what that broker owed is handed over from here
                        self._hand_over_here(owed)
            if self._local is None:
                from ipylsp.service import PendingChannel, Service

                if self._owed is None:
                    self._owed = PendingChannel()
                self._local = Service(self._settings, cells_dir=self._relay_cells_dir,
                                      pending=self._owed)
            return self._local

    def _hand_over_here(self, owed: PendingChannel) -> None:
        """What the broker that went owed: the local service's to hand over (its channel,
        or, made already, owed in its channel too)."""
        if self._owed is None:
            self._owed = owed
        else:
            self._owed.record(owed.owed())

    def _ask(self, ask: Callable[[Broker], Any]) -> tuple[bool, Any]:
        """(True, `ask(broker)`) or (False, None) when this process must answer (the broker
        is gone, refused or failed: said once, and this process answers from then on).
        `BrokerLate` when the broker took the call and did not answer in time;
        `SharedServers` for a stop or restart the broker refused for other clients."""
        broker = self._broker
        if broker is None:
            return False, None
        try:
            return True, ask(broker)
        except BrokerLate as late:  # it took the call and hangs: not asked again
            self._in_process(f"the broker did not answer ({late})")
            raise
        except BrokerError as exc:
            if exc.kind == "shared":
                raise SharedServers(int(str(exc) or 0)) from None
            # anything else (it refused, failed on its side, is closing): never worse than
            # in-process, from now on
            self._in_process(f"the broker failed ({exc.kind}: {exc})")
        except BrokerUnavailable as exc:
            self._in_process(f"no broker ({exc})")
        return False, None

    def _call(self, method: str, args: dict[str, Any] | None = None, *,
              timeout: float | None = None, progress: Callable[[str], None] | None = None,
              shared: bool = False) -> tuple[bool, Any]:
        """(True, the broker's answer, decoded) or (False, None): `_ask`."""
        budget = self._settings.wait_budget if timeout is None else timeout
        given = dict(args or {})
        types = signature(RelayedService, method)  # Service's (test_relay)
        budgeted, answer_type = "timeout" in types, types["return"]

        def sent(left: float) -> dict[str, Any]:
            """The call for `left` seconds: a method with a budget gets what is left of it
            (a retry on a new broker: `Broker.call`)."""
            if budgeted:
                given["timeout"] = share(budget, left)
            return {"method": method, "shared": shared, "args": encode_args(method, given)}

        try:
            return self._answered(method, lambda broker: broker.call(
                "service", sent, timeout=budget + ANSWER_MARGIN, progress=progress),
                lambda answer: from_wire(answer_type, answer))
        except BrokerLate:
            if method in ("check_files", "check_rest"):
                raise  # this check's budget is spent: its files are "timed out"
            return False, None  # this process answers, as it will from now on

    def _answered(self, what: str, ask: Callable[[Broker], Any],
                  read: Callable[[Any], Any]) -> tuple[bool, Any]:
        """(True, the broker's answer to `ask`, `read`) or (False, None): `_ask`. An answer
        `read` refuses (`ValueError`) leaves this process to answer, said once."""
        ok, answer = self._ask(ask)
        if not ok:
            return False, None
        try:
            return True, read(answer)
        except ValueError as exc:  # another build's answer, or our bug: never the caller's
            self._in_process(f"the broker's answer to {what} is not one ({exc})")
            return False, None

    def tool(self, name: str, arguments: dict[str, Any] | None, *, root: Path,
             max_chars: int | None = None, budget: float | None = None,
             ) -> dict[str, Any] | None:
        """An agent tool's call answered by the broker's tools for the workspace `root`, in
        this client's session (its `ToolResult.to_dict()`), where its checks are: None when
        this process must answer (`_ask`). `budget`: the seconds its waits on servers get
        (None: `wait_budget`). `BrokerLate` when the broker took it and did not answer
        within the budget."""
        waits = self._settings.wait_budget if budget is None else budget
        ok, answer = self._ask(lambda broker: broker.tool(
            name, arguments, root=root, max_chars=max_chars, timeout=waits + ANSWER_MARGIN))
        return typing.cast("dict[str, Any]", answer) if ok else None

    # -- configuration ------------------------------------------------------------------------

    @property
    def settings(self) -> Settings:
        return self._settings

    def configure(self, settings: Settings) -> Settings:
        """New settings. The client's own knobs (`CLIENT_KNOBS`: `%cd`, `%lsp off`, a
        severity) change in its session, which keeps its checked files and pending problems;
        others (another server, another timeout) make a new session in the context they
        make, whose history starts again but which owes what the old one did (its
        ledger's copy). The local service, if any, takes them as it would."""
        if settings == self._settings:
            return settings
        if self._local is not None:
            self._local.configure(settings)
        if for_servers(settings) == for_servers(self._settings):
            self._call("configure", {"settings": settings}, timeout=5.0)  # gone: the local
            self._settings = settings
            return settings
        self._settings = settings
        if self._broker is None:
            return settings  # this process answers already
        owed = self._broker.release_ledger()  # the new session owes what this one did
        try:
            new: Broker | None = self._make_broker(settings, owed)
        except (BrokerUnavailable, BrokerError) as exc:
            new = None
            if owed is not None:
                with self._relay_lock:
                    self._hand_over_here(owed)
            self._in_process(f"no broker ({exc})")
        with self._relay_lock:  # no moment without one: a call meanwhile uses the old one
            old, self._broker = self._broker, (None if self._closed else new)
        if old is not None:
            old.close()
        if new is not None and self._broker is not new:
            new.close()
        return settings

    @property
    def cells_dir(self) -> Path | None:
        return self._relay_cells_dir

    # -- servers ------------------------------------------------------------------------------

    def status(self) -> list[ServerStatus]:
        """The context's servers in the broker, and those this process started for what
        cannot cross (a caller's own `Feature`, a `trip`)."""
        ok, value = self._call("status", timeout=5.0)
        if not ok:
            return self._in_process().status()
        local = self._local
        return [*value, *(local.status() if local is not None else ())]

    def start(self, path: str | os.PathLike[str], *, timeout: float | None = None) -> list[str]:
        where = str(absolute(path))
        ok, value = self._call("start", {"path": where, "timeout": timeout}, timeout=timeout)
        return value if ok else self._in_process().start(where, timeout=timeout)

    def stop(self, server_id: str | None = None, *, shared: bool = False) -> int:
        """Stop this context's servers; `SharedServers` when other clients use them and not
        `shared` (nothing stopped)."""
        ok, value = self._call("stop", {"server_id": server_id}, shared=shared)
        if not ok:
            return self._in_process().stop(server_id)
        local = self._local  # what this process started for what cannot cross goes too
        return int(value) + (local.stop(server_id) if local is not None else 0)

    def restart(self, server_id: str | None = None, *, shared: bool = False) -> int:
        ok, value = self._call("restart", {"server_id": server_id}, shared=shared)
        if not ok:
            return self._in_process().restart(server_id)
        local = self._local
        return int(value) + (local.restart(server_id) if local is not None else 0)

    def server_pids(self) -> list[int]:
        return [row.pid for row in self.status() if row.pid is not None]

    def servers_status(self) -> StatusView:
        ok, value = self._call("servers_status", timeout=5.0)
        return value if ok else self._in_process().servers_status()

    def servers(self, *, installed_only: bool = False) -> Any:
        return self._in_process().servers(installed_only=installed_only)

    def which(self, server_id: str) -> Any:
        return self._in_process().which(server_id)

    def install(self, ids: Iterable[str] = (), *, install_all: bool = False,
                progress: InstallProgress | None = None) -> list[InstallResult]:
        # Into the data dir the broker's servers are found in: the broker restarts a server
        # whose executable changed at its next use.
        return self._in_process().install(ids, install_all=install_all, progress=progress)

    # -- checking -----------------------------------------------------------------------------

    def check(self, path: str | os.PathLike[str], *, content: str | None = None,
              before: str | None = None, timeout: float | None = None) -> Report:
        return self.check_files([FileCheck.asked(path, before=before, content=content)],
                                timeout=timeout)

    def check_files(self, files: Sequence[FileCheck], *, timeout: float | None = None,
                    progress: Callable[[str], None] | None = None, cold: float | None = None,
                    ) -> Report:
        if not files:
            return Report()
        from dataclasses import replace

        files = [f if f.path.is_absolute() else replace(f, path=absolute(f.path))
                 for f in files]
        budget = self._settings.wait_budget if timeout is None else float(timeout)
        try:
            ok, value = self._call("check_files", {"files": tuple(files), "timeout": budget,
                                                   "cold": cold},
                                   timeout=budget, progress=progress)
        except BrokerLate as late:
            value, ok = self._timed_out(files, str(late)), True
        if not ok:
            value = self._in_process().check_files(files, timeout=timeout, progress=progress,
                                                   cold=cold)
        self._publish(value)
        return typing.cast(Report, value)

    async def check_files_async(self, files: Sequence[FileCheck], *,
                                timeout: float | None = None,
                                progress: Callable[[str], None] | None = None,
                                cold: float | None = None) -> Report:
        """`check_files`, awaited on any loop: the call waits on a thread of its own (this
        process runs no loop of the service's: `event_loop`)."""
        import asyncio

        return await asyncio.to_thread(self.check_files, files, timeout=timeout,
                                       progress=progress, cold=cold)

    def event_loop(self) -> None:
        """None: this service's work runs in the broker (`check_files_async` on any loop)."""
        return None

    def _timed_out(self, files: Sequence[FileCheck], detail: str) -> Report:
        """The report of a check the broker took and did not answer: each file "timed out",
        as the service says of its own (`failed_files`)."""
        from ipylsp.service import failed_files

        return Report(files=tuple(failed_files((f.path for f in files), self._settings,
                                               UnknownReason.TIMED_OUT, detail)))

    def check_rest(self, *, timeout: float | None = None,
                   progress: Callable[[str], None] | None = None) -> Report:
        try:
            ok, value = self._call("check_rest", {"timeout": timeout}, timeout=timeout,
                                   progress=progress)
        except BrokerLate as late:  # which files were left is the broker's: none named here
            return Report(notes=(f"the files left unchecked were not checked: {late}",))
        if not ok:
            value = self._in_process().check_rest(timeout=timeout, progress=progress)
        self._publish(value)
        return typing.cast(Report, value)

    def subscribe(self, callback: Callable[[Report], object]) -> None:
        """Call `callback(report)` with every report this client's checks make here (late
        answers reach `pending`, which this process asks for at its next cell)."""
        self._subscribers.append(callback)

    def unsubscribe(self, callback: Callable[[Report], object]) -> bool:
        try:
            self._subscribers.remove(callback)
        except ValueError:
            return False
        return True

    def _publish(self, report: object) -> None:
        for callback in list(self._subscribers):
            try:
                callback(typing.cast(Report, report))
            except Exception:
                self._subscribers.remove(callback)

    def checked_files(self) -> list[Path]:
        ok, value = self._call("checked_files", timeout=5.0)
        return value if ok else self._in_process().checked_files()

    def changed_on_disk(self, paths: Iterable[Path] | None = None) -> list[Path]:
        wanted = None if paths is None else tuple(absolute(p) for p in paths)
        ok, value = self._call("changed_on_disk", {"paths": wanted})
        return value if ok else self._in_process().changed_on_disk(wanted)

    def settle_late(self, timeout: float) -> bool:
        ok, value = self._call("settle_late", {"timeout": timeout}, timeout=timeout)
        return value if ok else self._in_process().settle_late(timeout)

    def pending(self, options: FormatOptions | None = None, *,
                again: str = "ipylsp.pending()") -> ShownReport:
        """What the broker's session owes this client (a new broker's session took over what
        a killed one owed: `broker/ledger.py`); here, when the broker is gone."""
        ok, value = self._call("pending", {"options": options, "again": again})
        if not ok:
            return self._in_process().pending(options, again=again)
        return typing.cast("ShownReport", value)

    @property
    def unchecked(self) -> int:
        ok, value = self._call("unchecked", timeout=5.0)
        return value if ok else self._in_process().unchecked

    @property
    def pending_count(self) -> int:
        ok, value = self._call("pending_count", timeout=5.0)
        return value if ok else self._in_process().pending_count

    @property
    def thread_ident(self) -> int | None:
        """The local service's loop thread, once one answers here (None: no loop runs here)."""
        return None if self._local is None else self._local.thread_ident

    def error_count(self) -> int:
        ok, value = self._call("error_count", timeout=5.0)
        return value if ok else self._in_process().error_count()

    def diagnostics(self, path: str | os.PathLike[str] | None = None, *, cached: bool = False,
                    within: Callable[[Path], bool] | None = None) -> Report:
        where = None if path is None else str(absolute(path))
        if cached and where is None:
            where = os.getcwd()
        ok, value = self._call("diagnostics", {"path": where, "cached": cached})
        if not ok:
            return self._in_process().diagnostics(where, cached=cached, within=within)
        report = typing.cast(Report, value)
        if within is None:
            return report
        from dataclasses import replace

        return replace(report, files=tuple(f for f in report.files if within(f.path)))

    def store_info(self, *, clear: bool = False) -> StoreInfo:
        ok, value = self._call("store_info", {"clear": clear})
        return value if ok else self._in_process().store_info(clear=clear)

    # -- queries ------------------------------------------------------------------------------

    def feature(self, feature: Feature[Any, A], path: str | os.PathLike[str], line: int = 0,
                column: int = 0, *, timeout: float | None = None) -> FeatureResult[A]:
        """A declared feature (`HOVER`, `CALLS.given("outgoing")`...) asked by the broker's
        servers, in this client's session; a feature of the caller's own in this process. One
        the broker took and did not answer within its budget is "timed out" (its budget is
        spent), and the next query runs here."""
        from ipylsp.lsp.requests.feature import check_place

        check_place(line, column)
        where = absolute(path)
        call = feature_call(feature, where, line, column, timeout)
        if call is not None:
            budget = self._settings.wait_budget if timeout is None else float(timeout)
            def sent(left: float) -> dict[str, Any]:  # a retry gets what is left (`_call`)
                return {**call, "timeout": share(budget, left)}

            try:
                ok, value = self._answered(feature.kind, lambda broker: broker.call(
                    "feature", sent, timeout=budget + ANSWER_MARGIN), feature.result_from_wire)
            except BrokerLate as late:
                return feature.failed(UnknownReason.TIMED_OUT, str(late))
            if ok:
                return typing.cast("FeatureResult[A]", value)
        return self._in_process().feature(feature, where, line, column, timeout=timeout)

    # -- what does not cross ----------------------------------------------------------------

    def trip(self, plan: Any, *, timeout: float | None = None) -> Any:
        return self._in_process().trip(plan, timeout=timeout)

    def __enter__(self) -> RelayedService:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with self._relay_lock:
            self._closed = True
            broker, self._broker = self._broker, None
            local, self._local = self._local, None
        if broker is not None:
            broker.close()
        if local is not None:
            local.close()


def attach(settings: Settings, *, cells_dir: Path | None = None,
           budget: float = 15.0, ends_broker: bool = False) -> RelayedService | str:
    """The service of this process on the user's broker (started if none runs), or why not:
    the broker is off (`broker` knob, `IPYLSP_BROKER=0`) or cannot be had."""
    from ipylsp.broker.client import wanted

    if not wanted(settings):
        return "the broker is off (IPyLSP.broker, IPYLSP_BROKER)"

    def make(current: Settings, owed: PendingChannel | None = None) -> Broker:
        return Broker.attach(current, budget=budget, cells_dir=cells_dir,
                             ends_broker=ends_broker, ledger=True, owed=owed)

    try:
        broker = make(settings)
    except (BrokerUnavailable, BrokerError) as exc:
        return f"no broker ({exc})"
    return RelayedService(broker, settings, make_broker=make, cells_dir=cells_dir)
