"""The broker process: the user's warm language servers, served to every client of its build.

One `Service` per client context: the client's `Settings`, its `Environment` (interpreter, the
variables servers read) and the directory of its cells, all as the client has them, so a
server's answers never depend on which client started it; clients with the same context share
one service and its servers. The agent tools run here too, one `Toolbox` per workspace root, so
an `ipylsp mcp` relays a tool call in one message.

Private: the socket is bound in the place's 0700 directory and made 0600; a connecting process
must be this user's (`SO_PEERCRED`) and send the secret (0600, new at each start) and this
build. Lifetime: it ends when no client has been connected and no call made for `--idle`
seconds, on a `stop` call, and on SIGTERM or SIGINT, closing every service first (their servers
stopped); a SIGKILLed broker's servers are killed by their watchdogs, as a kernel's are. An
adapter over the service's facade and the agent's tools.

A connection's thread reads its hello; a ledger connection's thread then writes its journal
(`ledger`); any other connection is handed to its context's loop (`connection`): a check is
answered there (`_check`), every other call on the connection's thread (`_answer`).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import hmac
import json
import logging
import os
import secrets
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ipylsp.broker import frames
from ipylsp.broker.client import _THIS_BROKER, READY, mount_namespace
from ipylsp.broker.connection import Answers, Connection
from ipylsp.broker.ledger import LATE_WITHIN, Journal
from ipylsp.broker.place import BROKER_ENV, Place, build_id, default_data
from ipylsp.model.checks import FileCheck
from ipylsp.model.environment import Environment
from ipylsp.model.settings import Settings, for_servers
from ipylsp.model.wire import from_wire, read, to_wire
from ipylsp.private import owned_dir
from ipylsp.service import STORE_ENV

if TYPE_CHECKING:
    from ipylsp.agent.toolbox import Toolbox
    from ipylsp.cells.session import CellSession
    from ipylsp.model.diagnostics import Report
    from ipylsp.model.verdict import Verdict
    from ipylsp.service import Service

log = logging.getLogger("ipylsp.broker")

HELLO_SAID_WITHIN = 5.0
"""Seconds a new connection has to say hello."""

TAKEN_WITHIN = 5.0
"""Seconds a context's loop has to take a connection once its hello is answered (a loop that
does not is wedged: the connection ends, and the client's next call makes another)."""

SWITCH_INTERVAL = 0.0005
"""The broker's `sys.setswitchinterval` (Python's default: 5 ms). A connection's thread that
has an answer ready waits for the GIL while the context's loop thread reads what servers
still send; with the default, when checks were answered on those threads, it waited 0.76 ms
(median) to send a check's answer, with this 0.09 (bench_kernels' boundary, broker side
timed). Checks are answered on the loop now (`connection`); every other call still is on a
thread. The broker's threads mostly wait on sockets and pipes: switching more often costs it
nothing measurable."""

MOUNTS = mount_namespace()
"""The broker's view of the file systems: a client in another one (a sandbox, a container
sharing the runtime directory) would name files the broker cannot see, or sees otherwise."""


@dataclass
class Context:
    """One client context's service: its servers, loop and store. Closed (its servers with
    it) once no session has used it for its settings' `idle_timeout`, as its servers would
    be."""

    key: str
    service: Service
    sessions: int = 0
    quiet_since: float = field(default_factory=time.monotonic)


@dataclass
class Session:
    """One client's view of its context (`Service(shares=...)`): its own checked files and
    pending problems, so that what its writes introduced is measured against its own last
    texts, as in a process of its own; its tools per workspace root. It ends with the
    client's last connection."""

    context: Context
    service: Service
    pid: int
    journal: Journal = field(default_factory=Journal)
    """Its pending channel (the service's), journaled to the client that keeps a copy."""
    variables: object = None
    """The client's environment as its hello sent it (`_as_the_client_has_them`)."""
    ends_broker: bool = False
    """A Jupyter server's: the broker ends once it and every other client have gone."""
    connections: int = 0
    since: float = field(default_factory=time.time)
    toolboxes: dict[tuple[str, int | None], Toolbox] = field(default_factory=dict)
    cells: CellSession | None = None
    """Its cells' session (`lsp_check_cell`), made at its first tool call."""


class BrokerProcess:
    """The broker's state: contexts, connected clients, when it was last used."""

    def __init__(self, where: Place, secret: str, idle: float) -> None:
        self.place = where
        self.idle = idle
        self._secret = secret
        self._contexts: dict[str, Context] = {}
        self._sessions: dict[tuple[str, str], Session] = {}
        self._lock = threading.Lock()
        self._last_used = time.monotonic()
        self._ends_when_alone = False
        """A client that ends the broker (`Session.ends_broker`) has gone: the broker ends as
        soon as no client is left, not after `idle`."""
        self.stopping = threading.Event()
        self.started = time.time()

    # -- lifetime -----------------------------------------------------------------------------

    def touch(self) -> None:
        with self._lock:
            self._last_used = time.monotonic()

    def idle_for(self) -> float | None:
        """Seconds without a client nor a call; None while a client is connected; `idle`
        itself once a client that ends the broker has gone and no other is left."""
        with self._lock:
            if self._sessions:
                return None
            if self._ends_when_alone:
                return self.idle
            return time.monotonic() - self._last_used

    def close(self) -> None:
        with self._lock:
            contexts, self._contexts = list(self._contexts.values()), {}
            sessions, self._sessions = list(self._sessions.values()), {}
        for session in sessions:
            with contextlib.suppress(Exception):
                session.service.close()
        for context in contexts:
            with contextlib.suppress(Exception):
                context.service.close()

    # -- connections ----------------------------------------------------------------------

    def serve_connection(self, conn: socket.socket) -> None:
        """Hello, then calls, until the client closes; never raises."""
        session: Session | None = None
        try:
            if frames.peer_uid(conn) != os.geteuid():
                return
            hello = frames.receive(conn, time.monotonic() + HELLO_SAID_WITHIN)
            session, refusal = self._greet(hello)
            if session is None:
                frames.send(conn, refusal)
                return
            ledger = hello["args"].get("ledger")
            stream = None
            if isinstance(ledger, dict):  # the session's ledger connection: its journal
                session.journal.adopt(ledger.get("owed"))
                stream = session.journal.open(conn)
            # counted before the answer goes out: a client gone meanwhile leaves (`finally`)
            welcome = {"ok": {"pid": os.getpid(), "context": session.context.key,
                              "build": self.place.build}}
            if stream is not None:
                session.journal.serve(stream, self.stopping, lambda: frames.send(conn, welcome))
                return
            frames.send(conn, welcome)
            loop = session.service.event_loop()
            if loop is None:
                raise OSError("the session's service runs no loop")
            Connection(self._answers(session), loop).serve(conn, TAKEN_WITHIN)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.info("a connection ended: %r", exc)
        finally:
            if session is not None:
                self._leave(session)
            self.touch()
            conn.close()

    def _leave(self, session: Session) -> None:
        """A connection of `session` closed: the session ends with its last one."""
        with self._lock:
            session.connections -= 1
            if session.connections > 0:
                return
            for key, found in list(self._sessions.items()):
                if found is session:
                    del self._sessions[key]
            if session.ends_broker:
                self._ends_when_alone = True
            session.context.sessions -= 1
            if session.context.sessions == 0:
                session.context.quiet_since = time.monotonic()
        if session.cells is not None:
            session.cells.close()
        session.service.close()

    def reap(self) -> None:
        """Close the contexts no session has used for their `idle_timeout` (0: never)."""
        now = time.monotonic()
        with self._lock:
            quiet = [c for c in self._contexts.values()
                     if c.sessions == 0 and c.service.settings.idle_timeout > 0
                     and now - c.quiet_since > c.service.settings.idle_timeout]
            for context in quiet:
                del self._contexts[context.key]
        if quiet:  # closing stops servers (seconds): not on the loop that accepts clients
            threading.Thread(target=_close_contexts, args=(quiet,), daemon=True,
                             name="ipylsp-broker-reap").start()

    def _greet(self, hello: dict[str, Any]) -> tuple[Session | None, dict[str, Any]]:
        """The client's session for a hello that may have one, else the refusal to send."""
        args = hello.get("args")
        if hello.get("call") != "hello" or not isinstance(args, dict):
            return None, frames.error("protocol", "the first call must be hello")
        given = str(args.get("secret", "")).encode("utf-8", "replace")
        if not hmac.compare_digest(given, self._secret.encode("ascii")):
            return None, frames.error("denied", "wrong secret")
        if args.get("build") != self.place.build:
            return None, frames.error("build", f"this broker is build {self.place.build}")
        if args.get("mounts") != MOUNTS:
            return None, frames.error("mounts", "the client sees other file systems (another mount "
                                          "namespace: a sandbox, a container)")
        try:
            return self._session(args), {}
        except ValueError as exc:
            return None, frames.error("bad_context", str(exc))

    def _session(self, args: dict[str, Any]) -> Session:
        """The client's session (made at its first connection), one connection more: its own
        directory (`Settings.directory`) and cells' directory, its context's servers."""
        context, settings = self._context(args)
        cells = args.get("cells_dir")
        cells_dir = Path(cells) if isinstance(cells, str) else None
        token = str(args.get("session") or "")
        if not token:
            raise ValueError("no session")
        with self._lock:
            session = self._sessions.get((context.key, token))
            if args.get("ends_broker") is True:
                self._ends_when_alone = False  # a Jupyter server is here (again)
            if session is None:
                from ipylsp.service import Service

                journal = Journal()
                session = Session(context, Service(settings, shares=context.service,
                                                   cells_dir=cells_dir,
                                                   pending=journal.channel),
                                  int(args.get("pid") or 0), journal=journal,
                                  variables=_variables(args),
                                  ends_broker=args.get("ends_broker") is True)
                self._sessions[(context.key, token)] = session
                context.sessions += 1
            session.connections += 1
            return session

    def _context(self, args: dict[str, Any]) -> tuple[Context, Settings]:
        """The context of a client's settings and environment, and its settings as the
        client has them. Clients that differ only in their own knobs (`CLIENT_KNOBS`: the
        directory they work in, a kernel's, the server extension's root, none for the CLI;
        what they are shown) and their cells' directory share one context and its servers."""
        given = args.get("settings")
        settings = Settings() if given is None else read(Settings, given)
        raw = args.get("environment")
        if not isinstance(raw, dict):
            raise ValueError("no environment")
        # the client's whole environment: the value keeps only what servers read
        environment = read(Environment, raw)
        settings = _as_the_client_has_them(settings, _variables(args))
        shared = for_servers(settings)
        key = hashlib.sha256(json.dumps(
            [to_wire(shared), _one_path(environment).digest()], sort_keys=True,
        ).encode()).hexdigest()[:16]
        with self._lock:
            found = self._contexts.get(key)
            if found is None:
                from ipylsp.service import Service

                found = Context(key, Service(shared, environment=environment))
                self._contexts[key] = found
            return found, settings

    # -- calls ------------------------------------------------------------------------------

    def _answers(self, session: Session) -> Answers:
        """What a connection of `session` answers its calls with (`connection`)."""
        return Answers(
            on_loop=_on_loop,
            at_once=lambda message, progress: self._check(session, message, progress),
            waiting=lambda message, progress: self._answer(session, message, progress),
            late=_late, journal=session.journal, touch=self.touch, stopping=self.stopping)

    async def _check(self, session: Session, message: dict[str, Any],
                     progress: Callable[[str], None] | None) -> dict[str, Any]:
        """A check's answer (`_on_loop`), on the loop of the session's context: a relayed
        `check_files` (`relay.RelayedService`), `check_files` or a thin CLI's `check`. What
        else it raises is our bug, answered by the connection (`connection._our_bug`)."""
        from ipylsp.broker.relay import decode_args

        call, args = message.get("call"), message.get("args")
        if not isinstance(args, dict):
            return frames.error("protocol", "a call's args must be an object")
        service = session.service
        try:
            if call == "service":
                given = args.get("args")
                if not isinstance(given, dict):
                    return frames.error("bad_call", "a relayed call's args must be an object")
                decoded = {**decode_args("check_files", given), "progress": progress}
                return {"ok": to_wire(await service.check_files_async(**decoded))}
            files = from_wire(tuple[FileCheck, ...], args.get("files"))
            report = await service.check_files_async(files, timeout=_budget(service, args))
            if call == "check_files":
                return {"ok": to_wire(report)}
            return {"ok": _verdict(service, args, files, report).to_wire()}
        except ValueError as exc:
            return frames.error("bad_call", str(exc))

    def _answer(self, session: Session, message: dict[str, Any],
                progress: Callable[[str], None] | None = None) -> dict[str, Any]:
        """Any call but a check (`_check`), on its connection's thread (what else it raises:
        as `_check`)."""
        call, args = message.get("call"), message.get("args")
        if not isinstance(args, dict):
            return frames.error("protocol", "a call's args must be an object")
        try:
            if call == "service":
                return self._relayed(session, args, progress)
            if call == "feature":  # a query (`relay.feature_call`) in the client's session
                from ipylsp.broker.relay import answer_feature

                return {"ok": answer_feature(session.service, args)}
            if call == "tool":
                box = self._toolbox(session, args)
                arguments = args.get("arguments")
                budget = args.get("budget")  # what is left of the client's (`client.tool`)
                return {"ok": box.call(str(args.get("name")),
                                       arguments if isinstance(arguments, dict) else None,
                                       budget=None if budget is None else float(budget),
                                       ).to_dict()}
            if call == "status":
                return {"ok": self.status()}
            if call == "servers_status":  # `ipylsp status`'s view, as `%lsp status` prints it
                return {"ok": str(session.service.servers_status())}
            if call == "stop":
                return {"ok": True}
        except ValueError as exc:
            return frames.error("bad_call", str(exc))
        return frames.error("unknown_call", f"there is no call {call!r}")

    def _relayed(self, session: Session, args: dict[str, Any],
                 progress: Callable[[str], None] | None) -> dict[str, Any]:
        """A facade method of the client's session (`relay.RelayedService`). `stop` and
        `restart` reach the context's servers, which other clients may use: only with
        `shared`, or when no other client's session is in the context."""
        from ipylsp.broker.relay import RELAYED, call_relayed

        method, given = str(args.get("method")), args.get("args")
        if method not in RELAYED or not isinstance(given, dict):
            return frames.error("bad_call", f"{method!r} is not a relayed facade method")
        if method in ("stop", "restart") and not args.get("shared"):
            others = self._others_using(session, given.get("server_id"))
            if others > 0:
                return frames.error("shared", str(others))
        if method == "configure":  # the client's store and data directory, as at its hello
            settings = _as_the_client_has_them(read(Settings, given.get("settings")),
                                               session.variables)
            return {"ok": to_wire(session.service.configure(settings))}
        local = {"progress": progress} if method == "check_rest" else {}
        return {"ok": call_relayed(session.service, method, given, **local)}

    def _others_using(self, session: Session, server_id: object) -> int:
        """How many other client processes use the context's servers `server_id` (None:
        all) names: have checked a file, or sent a cells' document, below one's root (this
        client's own other sessions, a status asker, never count)."""
        roots = [row.root for row in session.context.service.status()
                 if server_id is None or row.server_id == server_id]
        with self._lock:
            others = [s for s in self._sessions.values()
                      if s.context is session.context and s.pid != session.pid]
        users = {s.pid for s in others
                 if any(path.is_relative_to(root) for path in s.service.checked_files()
                        for root in roots)}
        return len(users)

    def _toolbox(self, session: Session, args: dict[str, Any]) -> Toolbox:
        from ipylsp.agent.toolbox import Toolbox

        root = str(args.get("root") or "")
        if not os.path.isabs(root):
            raise ValueError("a tool call needs an absolute root")
        chars = args.get("max_chars")
        max_chars = chars if isinstance(chars, int) and not isinstance(chars, bool) else None
        with self._lock:
            box = session.toolboxes.get((root, max_chars))
            if box is None:
                box = Toolbox(session.service, Path(root), max_chars=max_chars,
                              cells=self._cells(session, Path(root)))
                session.toolboxes[(root, max_chars)] = box
            return box

    @staticmethod
    def _cells(session: Session, root: Path) -> CellSession:
        """The session's cells (`lsp_check_cell`), one for all its tools: a document named
        after its client (`cells_place.document_in` with the client's pid), in its cells'
        directory (else the root), so that two agents' cells on one root are two documents
        in their server, never one that both rewrite."""
        if session.cells is None:
            from ipylsp.cells.session import CellSession
            from ipylsp.service import cells_place, data_dir

            settings = session.service.settings
            where = session.service.cells_dir or root
            session.cells = CellSession(
                session.service, cells_place.document_in(where, pid=session.pid),
                cap=settings.cell_history, markers=settings.workspace_markers,
                private_parent=data_dir(settings))
        return session.cells

    def status(self) -> dict[str, Any]:
        """Its pid, build, clients, and each context's servers with their memory."""
        with self._lock:
            clients = [{"pid": c.pid, "context": c.context.key, "since": c.since,
                        "connections": c.connections} for c in self._sessions.values()]
            contexts = list(self._contexts.values())
        servers = []
        for context in contexts:
            for row in context.service.status():
                servers.append({**row.to_json(), "context": context.key,
                                "open_documents": row.open_documents,
                                "rss_kb": _tree_rss_kb(row.pid) if row.pid else None})
        return {"pid": os.getpid(), "build": self.place.build, "started": self.started,
                "rss_kb": _rss_kb(os.getpid()), "idle_after": self.idle,
                "clients": clients, "contexts": len(contexts), "servers": servers}


def _close_contexts(contexts: list[Context]) -> None:
    for context in contexts:
        log.info("context %s unused: closed", context.key)
        with contextlib.suppress(Exception):
            context.service.close()


def _one_path(environment: Environment) -> Environment:
    """`environment` as its context is keyed: its interpreter's directory and its prefix
    resolved, so that one venv reached through a symlinked directory (a kernel spec naming
    `~/project/.venv`, a console script's shebang naming where it points) is one context and
    one set of servers. Only the key: the servers get the client's own paths (a venv whose
    `bin` links into another venv's is still its own). The interpreter itself is not
    resolved (a venv's `python` links to the base interpreter, another environment), nor a
    path that is not absolute."""
    executable, prefix = environment.executable, environment.prefix
    if os.path.isabs(executable):
        executable = os.path.join(os.path.realpath(os.path.dirname(executable)),
                                  os.path.basename(executable))
    if os.path.isabs(prefix):
        prefix = os.path.realpath(prefix)
    return replace(environment, executable=executable, prefix=prefix)


def _variables(hello: dict[str, Any]) -> object:
    """The client's environment variables its hello sent."""
    raw = hello.get("environment")
    return raw.get("variables") if isinstance(raw, dict) else None


def _as_the_client_has_them(settings: Settings, variables: object) -> Settings:
    """`settings` with what the client's own environment decides for it, not the broker's:
    the store's file (`$IPYLSP_STORE`) and the data directory (`$XDG_DATA_HOME`, `$HOME`)
    when the settings name none."""
    env = {str(k): str(v) for k, v in variables} if isinstance(variables, list) else {}
    changes: dict[str, Any] = {}
    if settings.store_path is None and env.get(STORE_ENV):
        changes["store_path"] = Path(env[STORE_ENV])
    if settings.data_dir is None and (env.get("XDG_DATA_HOME", "").strip() or env.get("HOME")):
        changes["data_dir"] = Path(default_data(env))
    return replace(settings, **changes) if changes else settings


SCRUBBED = ("GIT_", STORE_ENV, BROKER_ENV)
"""What the broker drops from its own environment, which it got from whichever client started
it: git's (`GIT_DIR`, `GIT_INDEX_FILE`: the git HEAD a baseline is read from) and ipylsp's
choices that are each client's own. A client's servers run in its `Environment` over what
remains (`Environment.spawn_environ`)."""


def _scrub() -> None:
    for name in list(os.environ):
        if name.startswith(SCRUBBED):
            del os.environ[name]


def _budget(service: Service, args: dict[str, Any]) -> float:
    """A check call's `timeout`: the client's (0.0 when nothing is left of it: `client.share`),
    else the service's `wait_budget`."""
    given = args.get("timeout")
    return service.settings.wait_budget if given is None else float(given)


def _on_loop(message: dict[str, Any]) -> bool:
    """Whether a call is a check, answered on the loop of its context (`connection`)."""
    call, args = message.get("call"), message.get("args")
    if call in ("check", "check_files"):
        return True
    return call == "service" and isinstance(args, dict) and args.get("method") == "check_files"


def _verdict(service: Service, args: dict[str, Any], files: tuple[FileCheck, ...],
             report: Report) -> Verdict:
    """`ipylsp check`'s verdict for a thin client: its `report` rendered here, with the
    client's severity and hint."""
    from ipylsp.analysis.report import FormatOptions
    from ipylsp.analysis.report.verdict import verdict

    severity = args.get("severity") or service.settings.severity
    shown = from_wire(Settings, {**to_wire(service.settings), "severity": severity})
    options = FormatOptions.from_settings(shown, more_hint=str(args.get("more_hint") or ""))
    return verdict(report, [f.path for f in files], options, as_json=bool(args.get("json")))


def _late(message: dict[str, Any], received: float) -> bool:
    """Whether a call's answer goes out so near the client's deadline (its `within`, seconds
    from when it was received) that the client may not read it (`ledger.LATE_WITHIN`)."""
    within = message.get("within")
    if not isinstance(within, (int, float)):
        return True  # a client that does not say: as if it may not read it
    return time.monotonic() > received + within - LATE_WITHIN


def _tree_rss_kb(pid: int) -> int | None:
    """The resident memory of a server and its descendants (basedpyright's node runs below
    its launcher), in KiB."""
    from ipylsp.service import descendants

    sizes = [_rss_kb(p) for p in [pid, *descendants(pid)]]
    known = [size for size in sizes if size is not None]
    return sum(known) if known else None


def _rss_kb(pid: int) -> int | None:
    with contextlib.suppress(OSError, ValueError), open(
            f"/proc/{pid}/status", encoding="ascii", errors="replace") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return None


def _write_secret(where: Place) -> str:
    """A new secret, in a file only this user can read (made under a name of its own, then
    moved into place)."""
    secret = secrets.token_hex(32)
    temporary = os.path.join(where.directory,
                             f".{os.path.basename(where.secret)}.{os.getpid()}")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, secret.encode("ascii"))
    finally:
        os.close(fd)
    os.replace(temporary, where.secret)
    return secret


def _bind(where: Place) -> socket.socket:
    """The listening socket at `where.socket` (a dead broker's left there is replaced: the
    caller holds the start lock, and nothing answered on it)."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(where.socket)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        listener.bind(os.fspath(where.socket))
    finally:
        os.umask(old)
    os.chmod(where.socket, 0o600)
    listener.listen(64)
    return listener


def run(where: Place, idle: float, ready_fd: int | None, lock_fd: int | None = None) -> int:
    """Serve until the end (see the module doc). `lock_fd`: the start lock the starting
    client holds, inherited: released once this broker listens (a dead broker's socket is
    replaced only under it)."""
    # Imported before it says it is ready: a hello (a new context is a new Service) is then
    # answered in milliseconds, within the client's `HELLO_WITHIN`, however loaded the machine.
    from ipylsp.agent.toolbox import Toolbox
    from ipylsp.service import Service

    del Toolbox, Service

    sys.setswitchinterval(SWITCH_INTERVAL)
    _sweep(where)
    secret = _write_secret(where)
    listener = _bind(where)
    bound = os.stat(where.socket).st_ino
    broker = BrokerProcess(where, secret, idle)
    _THIS_BROKER.append(broker.status)

    def on_signal(signum: int, frame: object) -> None:
        broker.stopping.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    if lock_fd is not None:
        os.close(lock_fd)
    if ready_fd is not None:
        os.write(ready_fd, READY)
        os.close(ready_fd)
    log.info("broker %s listening at %s", where.build, where.socket)
    try:
        while not broker.stopping.is_set():
            broker.reap()
            quiet = broker.idle_for()
            if quiet is not None and quiet >= idle:
                log.info("idle for %.0f s: ending", quiet)
                break
            listener.settimeout(1.0 if quiet is None else max(0.05, min(1.0, idle - quiet)))
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                if broker.stopping.is_set():
                    break
                raise
            broker.touch()
            threading.Thread(target=broker.serve_connection, args=(conn,),
                             name="ipylsp-broker-client", daemon=True).start()
    finally:
        with contextlib.suppress(OSError):  # only our own: a newer broker's stay
            if os.stat(where.socket).st_ino == bound:
                # the secret first: while the socket is there, no new broker can start
                if _read(where.secret) == secret:
                    os.unlink(where.secret)
                os.unlink(where.socket)
        listener.close()
        broker.close()
    return 0


def _read(path: str) -> str:
    with open(path, encoding="ascii", errors="replace") as file:
        return file.read().strip()


OLD_BUILDS_AFTER = 7 * 86400.0
"""Seconds after which another build's secret and log, with no broker of that build running,
are removed when a broker starts (each upgrade or edit is a build)."""


def _sweep(where: Place) -> None:
    """Other builds' secrets and logs, long unused, whose broker no longer runs. Their locks
    stay: a client of that build may be starting one under it."""
    now = time.time()
    with contextlib.suppress(OSError), os.scandir(where.directory) as entries:
        for entry in entries:
            name = entry.name
            if not (name.startswith("broker-") and name.endswith((".key", ".log"))):
                continue
            build = name[len("broker-"):-len(".key")]
            if build == where.build or os.path.lexists(Place(where.directory, build).socket):
                continue
            with contextlib.suppress(OSError):
                if now - entry.stat(follow_symlinks=False).st_mtime > OLD_BUILDS_AFTER:
                    os.unlink(entry.path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ipylsp.broker")
    parser.add_argument("--ready-fd", type=int, default=None)
    parser.add_argument("--lock-fd", type=int, default=None)
    parser.add_argument("--directory", type=Path, required=True)
    parser.add_argument("--build", default=None)
    parser.add_argument("--idle", type=float, default=None)
    args = parser.parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=logging.INFO,
                        format="%(asctime)s ipylsp broker %(process)d: %(message)s")
    build = build_id()
    if args.build is not None and args.build != build:
        print(f"this package is build {build}, not {args.build}", file=sys.stderr)
        return 2
    _scrub()
    where = Place(owned_dir(args.directory), build)
    idle = args.idle if args.idle is not None else Settings().broker_idle
    return run(where, idle, args.ready_fd, args.lock_fd)

