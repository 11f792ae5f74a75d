"""A client of the user's broker: reach it (starting it when none runs), then call it.

`Broker.attach(settings)` connects to this build's broker, or starts one (one client at a time,
under the place's lock: the others wait for it and attach), and says hello on each connection:
the secret, the build, and the client's context (its `Settings` and `Environment`, in their
wire form), which picks the broker's service for it. Every wait is bounded by the caller's
budget; whatever goes wrong (no private directory, a socket of another user, a broker that
died, a secret that does not match) is `BrokerUnavailable` with one sentence, and the caller
runs in-process, as without a broker.

Several threads may call at once (an MCP server's tools): each call takes an idle connection
or opens one. Every call keeps to one deadline, its retry on a new broker included (`call`).
A long-lived client keeps a copy of what its session owes it (`ledger`), which a session
in a new broker takes over. Imports `frames`, `place` and the standard library at the top;
the facade (for the data directory), the ledger and the agent's tools only on the paths that
need them.
"""

from __future__ import annotations

import _socket  # not `socket`: its import (enum, selectors) costs a thin client (see frames)
import _thread
import fcntl
import os
import select
import sys
import time

from ipylsp.broker import frames
from ipylsp.broker.place import Place, existing, place, switched_off

TYPE_CHECKING = False  # `typing.TYPE_CHECKING`, without importing typing (see ipylsp/__init__)
if TYPE_CHECKING:
    from _socket import socket
    from collections.abc import Callable
    from pathlib import Path
    from typing import Any

    from ipylsp.agent.result import ToolCaller, ToolResult
    from ipylsp.broker.ledger import Ledger
    from ipylsp.model.checks import FileCheck
    from ipylsp.model.diagnostics import Report
    from ipylsp.model.settings import Settings
    from ipylsp.model.verdict import Verdict
    from ipylsp.service import PendingChannel

    Args = dict[str, Any] | Callable[[float], dict[str, Any]]

ANSWER_MARGIN = 5.0
"""Seconds a check's answer may take beyond its own budget before the broker counts as gone
(the service answers within its budget plus its hand-over margin)."""


def share(budget: float, left: float) -> float:
    """The budget of a call's work in the broker when the call has `left` seconds: its own,
    less what the call spent before it was sent (a killed broker's attempt, a new broker's
    start), so that the answer still comes within the caller's deadline."""
    return max(0.0, min(budget, left - ANSWER_MARGIN))


START_BUDGET = 15.0
"""At most this long for a broker to start (its imports, on a loaded machine), within the
caller's own budget."""
READY = b"ready\n"
"""What a broker writes on its ready pipe once it accepts connections."""


def wanted(settings: Settings | None) -> bool:
    """Whether to use the broker: not when `$IPYLSP_BROKER` is 0, off, false or no; else the
    `broker` knob (on by default; `settings` None: the defaults)."""
    if switched_off():
        return False
    return settings is None or settings.broker


HELLO_WITHIN = 2.0
"""Seconds a broker has to answer a hello (a live one answers in milliseconds): a stopped or
wedged broker costs a client this, not its whole budget, before it runs in-process."""


class BrokerUnavailable(Exception):
    """No broker could be had; the message says why, in one sentence."""


class BrokerSilent(BrokerUnavailable):
    """A broker took the connection and did not answer its hello within `HELLO_WITHIN` (it is
    stopped, wedged or ending): asking it again in the same call would double the wait."""


class BrokerLate(BrokerUnavailable):
    """The broker took a call and did not answer it within its budget (it hangs): running
    it again in-process would double the caller's wait, so the caller says so instead."""

    def verdict(self) -> Verdict:
        """What `ipylsp check` prints and exits with then: unknown, never clean."""
        from ipylsp.model.verdict import EXIT_FAILURE, Verdict

        return Verdict("", (f"ipylsp check: {self} (`ipylsp broker status`; "
                            f"IPYLSP_BROKER=0 checks in-process)",), EXIT_FAILURE)


class BrokerError(Exception):
    """The broker answered a call with an error (`kind`: what went wrong)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class Broker:
    """Connections to this build's broker for one client context."""

    def __init__(self, where: Place, secret: str, hello: dict[str, Any], *, restart: bool,
                 idle: float | None) -> None:
        self.place = where
        self.pid = 0
        """The broker's process (its hello's answer says)."""
        self._secret = secret
        self._hello = hello
        self._idle_s = idle
        """The `broker_idle` a broker this client starts gets (None: the default)."""
        self._restart = restart
        """Start a new broker when this one is gone (not for `start=False` clients)."""
        self._idle: list[tuple[socket, int]] = []
        """Connections not in a call, each with the broker it reaches (its hello's pid)."""
        self._lock = _thread.allocate_lock()  # `threading.Lock`, without its import
        self._ledger: Ledger | None = None
        """The copy of what this client's session owes it (`attach(ledger=True)`)."""
        self._ledger_lock = _thread.allocate_lock()

    @classmethod
    def attach(
        cls, settings: Settings | None, *, budget: float, cells_dir: Path | None = None,
        start: bool = True, where: Place | None = None, ends_broker: bool = False,
        ledger: bool = False, owed: PendingChannel | None = None,
    ) -> Broker:
        """A broker for this context, started if none runs and `start`; `BrokerUnavailable`.
        `settings` None: the defaults (a thin client that read no settings file sends none);
        the environment is this process's (the broker keeps what its servers read). `where`:
        a place already found (`place.existing`). `ends_broker`: the
        broker ends once this client and every other one have gone (a Jupyter server, whose
        users' kernels go with it: nothing of theirs outlives it for `broker_idle`).
        `ledger`: keep a copy of what the session owes this client (a long-lived one: a
        kernel, a Jupyter server, `ipylsp mcp`), taken over by its session in the broker that
        replaces a killed one (`broker/ledger.py`); `owed`: what another session owed this
        client (its settings changed), taken over by this one."""
        deadline = time.monotonic() + budget
        if where is None:
            try:
                where = place(lambda: _data_dir(settings))
            except OSError as exc:
                raise BrokerUnavailable(f"no private place for it: {exc}") from None
        wire = None
        if settings is not None:
            from ipylsp.model.wire import to_wire

            wire = to_wire(settings)
        hello = {"build": where.build, "pid": os.getpid(), "session": os.urandom(8).hex(),
                 "mounts": mount_namespace(),
                 "settings": wire,
                 "environment": {"executable": sys.executable, "prefix": sys.prefix,
                                 "variables": sorted(os.environ.items())},
                 "cells_dir": None if cells_dir is None else str(cells_dir),
                 "ends_broker": ends_broker}
        found = _existing(where, deadline)
        if found is None:
            if not start:
                raise BrokerUnavailable("none runs")
            found = _start(where, deadline, _idle(settings))
        for attempt in (1, 2):
            sock, secret = found
            broker = cls(where, secret, hello, restart=start, idle=_idle(settings))
            try:
                answer = broker._hello_on(sock, min(deadline, time.monotonic() + HELLO_WITHIN))
            except BrokerSilent:
                sock.close()
                raise
            except BrokerUnavailable:
                sock.close()
                if not start or attempt == 2:
                    raise
                # It closed the connection unanswered: it was ending (idle, or stopped). A new
                # one is started under the lock, or the one another client started is used.
                found = _start(where, deadline, _idle(settings))
                continue
            except BaseException:
                sock.close()
                raise
            broker.pid = int(answer.get("pid") or 0)
            broker._idle.append((sock, broker.pid))
            if ledger:
                from ipylsp.broker.ledger import Ledger

                broker._ledger = Ledger(owed)
                try:
                    broker._follow(broker.pid, deadline)
                except BaseException:
                    broker.close()
                    raise
            return broker
        raise AssertionError("unreachable")

    def call(self, name: str, args: Args, *, timeout: float,
             progress: Callable[[str], None] | None = None) -> Any:
        """One call's answer (its wire form), within `timeout` seconds; `progress` is called
        with each line the broker sends while the call waits (servers starting: a relayed
        check's `progress`), and asks it to send them;
        `BrokerUnavailable` when the broker could not be reached or did not answer in time,
        `BrokerError` when it answered with an error. A connection the broker closed (it
        ended, or was killed, idle or in this very call) is replaced once, by a new broker
        when the old one is gone, within the same `timeout`: `args` may be a function of the
        seconds left when the call is sent, which gives the broker's side what is left of a
        budget (`share`)."""
        deadline = time.monotonic() + timeout
        ledger = self._ledger
        if ledger is not None and not ledger.following:
            try:  # the broker closed it (a client slow to read): a new one, the session kept
                self._follow(self.pid, min(deadline, time.monotonic() + START_BUDGET))
            except BrokerUnavailable:
                self._drop_idle()  # gone: a new broker's session takes the copy over
        for attempt in (1, 2):
            sock, reached = self._take(min(deadline, time.monotonic() + START_BUDGET))
            try:
                left = deadline - time.monotonic()
                sent = args(left) if callable(args) else args
                frames.send(sock, {"call": name, "args": sent,
                                   "progress": progress is not None, "within": left}, deadline)
                answer = frames.receive(sock, deadline)
                while "progress" in answer and progress is not None:
                    _said(progress, str(answer["progress"]))
                    answer = frames.receive(sock, deadline)
            except frames.Late:
                self._unanswered(sock, reached)
                raise BrokerLate(f"the broker did not answer within {timeout:.1f} s") from None
            except OSError as exc:  # frames.FrameError included
                self._unanswered(sock, reached)
                if attempt == 1:
                    self._drop_idle()  # its other idle connections went with it
                    continue
                raise BrokerUnavailable(f"the broker did not answer: {exc}") from None
            except BaseException:  # an interrupt too
                self._unanswered(sock, reached)
                raise
            if "journal" in answer:  # what the call made the session owe
                kept = self._ledger
                if kept is not None:
                    kept.carry(answer["journal"], answer.get("ok"), broker=reached)
            with self._lock:
                self._idle.append((sock, reached))
            return _result(answer)
        raise AssertionError("unreachable")

    # -- the calls, typed -----------------------------------------------------------------

    def check_files(self, files: list[FileCheck], *, timeout: float) -> Report:
        """`Service.check_files` in the broker's service for this context."""
        from ipylsp.model.diagnostics import Report
        from ipylsp.model.wire import read, to_wire

        wire = to_wire(files)
        answer = self.call("check_files", lambda left: {"files": wire,
                                                        "timeout": share(timeout, left)},
                           timeout=timeout + ANSWER_MARGIN)
        try:
            return read(Report, answer)
        except ValueError as exc:
            raise BrokerUnavailable(f"the broker's answer is not a report: {exc}") from None

    def check(self, files: list[dict[str, Any]], *, timeout: float, severity: str | None,
              as_json: bool, more_hint: str) -> Verdict:
        """`ipylsp check`'s verdict, rendered by the broker (`analysis.report.verdict`):
        `files` in `FileCheck`'s wire form, so that a thin client imports no model."""
        from ipylsp.model.verdict import Verdict

        answer = self.call("check", lambda left: {
            "files": files, "timeout": share(timeout, left), "severity": severity,
            "json": as_json, "more_hint": more_hint}, timeout=timeout + ANSWER_MARGIN)
        try:
            return Verdict.from_wire(answer)
        except ValueError as exc:
            raise BrokerUnavailable(f"the broker's answer is not a verdict: {exc}") from None

    def tool(self, name: str, arguments: dict[str, Any] | None, *, root: Path,
             max_chars: int | None, timeout: float) -> dict[str, Any]:
        """An agent tool's `ToolResult.to_dict()` for the workspace `root`, within `timeout`
        (its waits on servers get that less `ANSWER_MARGIN`; a retry, what is left)."""
        budget = max(0.0, timeout - ANSWER_MARGIN)
        answer = self.call("tool", lambda left: {
            "name": name, "arguments": arguments, "root": str(root), "max_chars": max_chars,
            "budget": share(budget, left)}, timeout=timeout)
        if not isinstance(answer, dict):
            raise BrokerUnavailable("the broker's answer is not a tool result")
        return answer

    def status(self, *, timeout: float = 5.0) -> dict[str, Any]:
        """The broker's own view: its pid, build, clients, services and their servers."""
        answer = self.call("status", {}, timeout=timeout)
        if not isinstance(answer, dict):
            raise BrokerUnavailable("the broker's answer is not a status")
        return answer

    def stop(self, *, timeout: float = 10.0) -> None:
        """End the broker (its servers stopped first)."""
        self.call("stop", {}, timeout=timeout)

    def close(self) -> None:
        """Close every connection (the session ends with them, its ledger's too)."""
        self._drop_idle()
        with self._ledger_lock:
            if self._ledger is not None:
                self._ledger.close()

    def release_ledger(self) -> PendingChannel | None:
        """The copy of what the session owes this client, no longer following the broker (it
        is gone, or hangs): for this process's own service to hand over (None: no ledger)."""
        with self._ledger_lock:
            ledger, self._ledger = self._ledger, None
        return None if ledger is None else ledger.close()

    def _drop_idle(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for sock, _ in idle:
            sock.close()

    def _unanswered(self, sock: socket, reached: int) -> None:
        """A call on `sock` to broker `reached` whose answer this client did not read (late,
        interrupted, the broker gone): the connection goes (no answer left half read), and
        the entries the answer may have carried are not in the copy, which follows that
        broker's journal no more; the next call's ledger connection starts from the whole
        channel (`Ledger.resync`). The copy is left as it is when it follows another broker
        already (another thread's call replaced it)."""
        sock.close()
        ledger = self._ledger
        if ledger is not None and ledger.pid == reached:
            ledger.resync()

    def __enter__(self) -> Broker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- connections ------------------------------------------------------------------------

    def _take(self, deadline: float) -> tuple[socket, int]:
        """An idle connection, or a new one, to a new broker if need be; and the broker it
        reaches."""
        with self._lock:
            if self._idle:
                return self._idle.pop()
        found = _existing(self.place, deadline)
        if found is None:
            if not self._restart:
                raise BrokerUnavailable("the broker is gone")
            found = _start(self.place, deadline, self._idle_s)
        sock, self._secret = found
        try:
            answer = self._hello_on(sock, min(deadline, time.monotonic() + HELLO_WITHIN))
            self.pid = reached = int(answer.get("pid") or 0)
            if self._ledger is not None:
                self._follow(self.pid, deadline)
        except BaseException:
            sock.close()
            raise
        return sock, reached

    def _follow(self, pid: int, deadline: float) -> None:
        """The ledger follows broker `pid`'s journal of this session: when it followed
        another (killed) broker, its copy is read to that one's end and handed to this one's
        session in the hello of a new ledger connection (`broker/ledger.py`)."""
        with self._ledger_lock:
            ledger = self._ledger
            if ledger is None or (ledger.pid == pid and ledger.following):
                return
            ledger.settle(deadline - time.monotonic())
            found = _existing(self.place, deadline)
            if found is None:
                raise BrokerUnavailable("the broker is gone")
            sock, self._secret = found
            try:
                answer = self._hello_on(sock, min(deadline, time.monotonic() + HELLO_WITHIN),
                                        ledger=ledger.owed())
            except BaseException:
                sock.close()
                raise
            ledger.follow(sock, int(answer.get("pid") or 0))

    def _hello_on(self, sock: socket, deadline: float,
                  ledger: dict[str, Any] | None = None) -> dict[str, Any]:
        """The hello's answer; `ledger`: the connection is the session's ledger connection,
        with the copy a new session takes over."""
        hello = {**self._hello, "secret": self._secret}
        if ledger is not None:
            hello["ledger"] = ledger
        try:
            frames.send(sock, {"call": "hello", "args": hello}, deadline)
            answer = frames.receive(sock, deadline)
        except frames.Late as exc:
            raise BrokerSilent(f"the broker did not answer: {exc}") from None
        except OSError as exc:
            raise BrokerUnavailable(f"the broker did not answer: {exc}") from None
        try:
            value = _result(answer)
        except BrokerError as exc:
            raise BrokerUnavailable(f"the broker refused: {exc}") from None
        if not isinstance(value, dict):
            raise BrokerUnavailable("the broker's hello is not an object")
        return value


def _said(progress: Callable[[str], None], line: str) -> None:
    """`progress(line)`: what it raises is the caller's, never the end of the call (nor a
    connection left half read). `contextlib` is not imported here: the thin client pays."""
    try:
        progress(line)
    except Exception:  # see the docstring
        return


def mount_namespace() -> str:
    """This process's mount namespace (`mnt:[4026531841]`; "" where /proc does not say): a
    broker serves only clients that see the same files."""
    try:
        return os.readlink("/proc/self/ns/mnt")
    except OSError:
        return ""


def _result(answer: dict[str, Any]) -> Any:
    if "error" in answer:
        error = answer["error"] if isinstance(answer["error"], dict) else {}
        raise BrokerError(str(error.get("kind", "failed")), str(error.get("message", "")))
    return answer.get("ok")


def _connect(where: Place, deadline: float) -> socket | None:
    """A connection to the broker at `where`, checked to be this user's; None when nothing
    listens there (no socket, or a dead broker's)."""
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(max(0.05, deadline - time.monotonic()))
        sock.connect(os.fspath(where.socket))
        if frames.peer_uid(sock) != os.geteuid():
            raise BrokerUnavailable(f"{where.socket} is another user's")
    except (FileNotFoundError, ConnectionRefusedError):
        sock.close()
        return None
    except OSError as exc:
        sock.close()
        raise BrokerUnavailable(f"cannot connect to {where.socket}: {exc}") from None
    except BaseException:
        sock.close()
        raise
    return sock


def _secret(where: Place) -> str | None:
    """The broker's secret, read only from a regular file of this user's that no one else
    can read; None when there is none (a broker removes it as it ends)."""
    try:
        fd = os.open(where.secret, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise BrokerUnavailable(f"cannot read the broker's secret: {exc.strerror}") from None
    try:
        info = os.fstat(fd)
        import stat

        if (not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid()
                or info.st_mode & 0o077):
            raise BrokerUnavailable(f"{where.secret} is not a private file of this user's")
        return os.read(fd, 4096).decode("ascii", "replace").strip()
    finally:
        os.close(fd)


def _existing(where: Place, deadline: float) -> tuple[socket, str] | None:
    """A connection to the running broker and its secret; None when none runs, or the one
    that answered is ending (its secret already gone: the next one is started)."""
    sock = _connect(where, deadline)
    if sock is None:
        return None
    try:
        secret = _secret(where)
    except BaseException:
        sock.close()
        raise
    if secret is None:
        sock.close()
        return None
    return sock, secret


def _data_dir(settings: Settings | None) -> Path:
    from ipylsp.service import data_dir

    return data_dir(settings)


def _idle(settings: Settings | None) -> float | None:
    """The `broker_idle` a broker this client starts gets (None: the default)."""
    return None if settings is None else settings.broker_idle


def _start(where: Place, deadline: float, idle: float | None) -> tuple[socket, str]:
    """Start this build's broker, one client at a time: under the place's lock, a broker
    another client started meanwhile is used instead."""
    deadline = min(deadline, time.monotonic() + START_BUDGET)
    try:
        lock = os.open(where.lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise BrokerUnavailable(f"cannot open {where.lock}: {exc.strerror}") from None
    try:
        _lock(lock, deadline)
        found = _existing(where, deadline)
        if found is not None:
            return found
        _spawn(where, deadline, idle, lock)
        found = _existing(where, deadline)
        if found is None:
            raise BrokerUnavailable("the broker started but does not listen")
        return found
    finally:
        os.close(lock)  # the lock goes with it


def _lock(fd: int, deadline: float) -> None:
    """The place's start lock, waited for until `deadline` (another client is starting the
    broker: a bounded wait, then that broker is used)."""
    pause = 0.005
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() + pause > deadline:
                raise BrokerUnavailable("another process is starting the broker") from None
            time.sleep(pause)
            pause = min(pause * 2, 0.1)


def _spawn(where: Place, deadline: float, idle: float | None, lock: int) -> None:
    """Start the broker in a session of its own, with this interpreter and this package (its
    directory first on `PYTHONPATH`), and wait for its ready line. It inherits the start lock
    (`lock`) and holds it until it listens: a client that gives up waiting meanwhile does not
    let the next one start a second broker over it."""
    package_parent = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.realpath(__file__))))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (package_parent, env.get("PYTHONPATH", "")) if p)
    ready_read, ready_write = os.pipe()
    try:
        log = os.open(where.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW
                      | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        os.close(ready_read)
        os.close(ready_write)
        raise BrokerUnavailable(f"cannot open {where.log}: {exc.strerror}") from None
    import subprocess

    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "ipylsp.broker", "--ready-fd", str(ready_write),
             "--directory", os.fspath(where.directory), "--build", where.build,
             "--lock-fd", str(lock),
             *(() if idle is None else ("--idle", repr(float(idle))))],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, pass_fds=(ready_write, lock),
            start_new_session=True, env=env, cwd="/",
        )
    except OSError as exc:
        os.close(ready_read)
        raise BrokerUnavailable(f"cannot start the broker: {exc.strerror}") from None
    finally:
        os.close(ready_write)
        os.close(log)
    # Reaped when it ends, so that a long-lived client (an MCP server) keeps no zombie.
    import threading

    threading.Thread(target=process.wait, name="ipylsp-broker-reaper", daemon=True).start()
    try:
        line = _read_ready(ready_read, deadline)
    finally:
        os.close(ready_read)
    if line != READY:
        raise BrokerUnavailable(
            f"the broker did not start ({_last_line(where.log) or 'no message'}); "
            f"its log: {where.log}")


def _read_ready(fd: int, deadline: float) -> bytes:
    got = b""
    while not got.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0:
            return got
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            return got
        chunk = os.read(fd, 64)
        if not chunk:
            return got
        got += chunk
    return got


def _last_line(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as log:
            lines = log.read().strip().splitlines()
    except OSError:
        return ""
    return lines[-1][-300:] if lines else ""



_THIS_BROKER: list[Callable[[], dict[str, Any]]] = []
"""In the broker's own process: its status (`serve` puts it here), so that a status asked in
it (a relayed `lsp_status`) does not connect to itself."""


def running(settings: Settings | None, *, budget: float = 2.0) -> dict[str, Any] | None:
    """The status of this build's broker (`Broker.status`), or None when none runs, it does
    not answer within `budget`, or the broker is turned off (`wanted`); asking never starts
    one, nor makes its place."""
    if _THIS_BROKER:
        return _THIS_BROKER[0]()
    broker = running_broker(settings, budget=budget)
    if broker is None:
        return None
    try:
        with broker:
            return broker.status(timeout=budget)
    except (BrokerUnavailable, BrokerError):
        return None


def running_broker(settings: Settings | None, *, budget: float = 2.0) -> Broker | None:
    """This build's running broker, attached; None when none runs, it does not answer its
    hello within `budget`, or the broker is turned off (`wanted`). Never starts one, nor makes
    its place: for status questions."""
    if not wanted(settings):
        return None
    where = existing(lambda: _data_dir(settings))
    if where is None:
        return None
    try:
        return Broker.attach(settings, budget=budget, start=False, where=where)
    except (BrokerUnavailable, BrokerError):
        return None


def summary(info: dict[str, Any]) -> str:
    """One line for people: `broker: pid 123 (build ...), 2 clients, 1 context; servers: ty
    running 41 MB, ruff running 23 MB; itself 60 MB; ...`, from `Broker.status`'s answer (the
    asking connection is a client of its own, not counted)."""
    servers = ", ".join(
        f"{row.get('server')} {row.get('state')}"
        + (f" {row['rss_kb'] // 1024} MB" if isinstance(row.get("rss_kb"), int) else "")
        for row in info.get("servers", []) if isinstance(row, dict))
    clients = max(0, len(info.get("clients", [])) - 1)
    own = info.get("rss_kb")
    return (f"broker: pid {info.get('pid')} (build {info.get('build')}), {clients} other "
            f"client{'s' if clients != 1 else ''}, {info.get('contexts', 0)} context(s); "
            f"servers: {servers or 'none'}; itself "
            f"{own // 1024 if isinstance(own, int) else '?'} MB; ends after "
            f"{info.get('idle_after', 0):.0f} s idle (`ipylsp broker stop` ends it now)")


class RelayedTools:
    """The broker's agent tools for one workspace, called like a `Toolbox` (`ToolCaller`):
    one message a call, a killed broker replaced by a new one within the call. Never raises.
    Where no broker can be had any more (it hangs, it cannot start), the tools of this process
    (`local`, made once, said once on stderr) answer this call and every later one, as an
    `ipylsp mcp` without a broker does; a call the broker took and never answered is a failed
    result (its budget is spent), and the next one is answered here."""

    def __init__(self, broker: Broker, root: Path, *, max_chars: int | None,
                 timeout: float, local: Callable[[], ToolCaller] | None = None) -> None:
        self._broker = broker
        self._root = root
        self._max_chars = max_chars
        self._timeout = timeout
        self._make_local = local
        self._local: ToolCaller | None = None
        self._local_lock = _thread.allocate_lock()

    def call(self, name: str, arguments: dict[str, Any] | None = None) -> ToolResult:
        from ipylsp.agent.errors import ToolError
        from ipylsp.agent.result import ToolResult

        if self._local is not None:
            return self._local.call(name, arguments)
        try:
            answer = self._broker.tool(name, arguments, root=self._root,
                                       max_chars=self._max_chars, timeout=self._timeout)
        except (BrokerUnavailable, BrokerError) as exc:
            local = self._in_process(exc)
            if local is not None and not isinstance(exc, BrokerLate):
                return local.call(name, arguments)
            return ToolResult.failure(ToolError(
                "server_unavailable", f"ipylsp's broker did not answer ({exc}); retry"))
        return ToolResult.from_dict(answer)

    def _in_process(self, why: Exception) -> ToolCaller | None:
        """This process's tools from now on (made once, however many calls failed at once:
        the ledger's copy goes to one service), said once; the broker let go of."""
        if self._make_local is None:
            return None
        with self._local_lock:
            if self._local is None:
                print(f"ipylsp mcp: the broker is gone ({why}); serving in-process",
                      file=sys.stderr)
                self._local = self._make_local()  # takes the ledger's copy first
                self._broker.close()
            return self._local
