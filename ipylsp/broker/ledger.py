"""The ledger: what a broker session owes its client, kept by the client as well, so that a
broker killed with SIGKILL loses nothing pending.

A session's problems wait in its pending channel in the broker until a hand-over takes them
(`%lsp pending`, `lsp_pending`): those a check introduced and those a server answered after
the check returned (late answers). The one party that outlives a killed broker is its client,
and a pending problem is owed only to a client that lives, so the client keeps the copy:

- **In the broker** (`Journal`): a session's channel is followed (`PendingChannel.follow`);
  its journal (the whole channel, then every record and hand-over, in the channel's order) is
  written on a connection of the client's own, its ledger connection: by the call that made
  an entry, before its answer (so a client never shows a problem its copy does not hold), or
  by that connection's thread (a late answer, written as it arrives). A write to a Unix
  socket is in the client's receive buffer when it returns: the broker's death after it
  loses nothing.
- **In the client** (`Ledger`): a thread receives the ledger connection's entries, which
  make a copy of the channel equal to the session's; they are read into it when the copy is
  needed (the broker replaced or let go of), not as they come. When the broker is replaced, the
  copy is read to the old connection's end, then sent in the hello of the new ledger
  connection (`owed`): the new session takes it once (`Journal.adopt`), and its journal's first
  entry (the whole channel) replaces the copy. Nothing is owed twice: the copy is replaced,
  never merged, and a session adopts once. Where no broker can be had any more, the copy is
  the pending channel of the client's own service (`Service(pending=...)`).

What a check pays: one journal entry (about 1.2 KB for a one-error report), written by the
call's own thread before its answer, only when it changed what is owed (a problem introduced
or fixed in a written file; a clean write of a file that owed nothing, and a cell's own
document, which is never pending, write none). Why not the store, nor a re-check of the
files whose checks timed out: ARCHITECTURE.md, "Nothing pending is lost".

Limits: an entry the broker made but had not written when it was killed (a late answer, in
the microseconds between its arrival and its write) is lost with it; a hand-over whose entry
was written but whose answer was not is lost to a client that never saw it.
"""

from __future__ import annotations

import _socket
import contextlib
import select
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

from ipylsp import json_text
from ipylsp.broker import frames
from ipylsp.model.diagnostics import Report
from ipylsp.model.wire import read, to_wire
from ipylsp.service import OWED, PendingChannel

WRITE_WITHIN = 1.0
"""Seconds a journal entry may take to reach a client's buffer (a client that reads nothing
for that long gets no more: its ledger connection is closed, and its next one starts from
the whole channel). Well below the answer's margin (`client.ANSWER_MARGIN`): a call's answer
waits for its entries."""

SETTLE_WITHIN = 2.0
"""Seconds a client waits for its copy to reach the end of a replaced broker's journal (the
broker is dead: the rest is in the socket's buffer, read in microseconds)."""

_THREAD = threading.local()
"""Whether this thread answers a call (`answering`)."""


@contextlib.contextmanager
def answering() -> Iterator[None]:
    """This thread answers a call: the entries it makes meanwhile are written by its
    `Journal.flush` before the answer, not by the journal's thread woken for each (late
    answers, made by a service's loop, still wake it)."""
    outer = getattr(_THREAD, "answering", False)
    _THREAD.answering = True
    try:
        yield
    finally:
        _THREAD.answering = outer


class _Stream:
    """The journal entries waiting for one ledger connection, and their writing (by its
    thread, or by a call's before its answer: in the order they were put, either way)."""

    def __init__(self, conn: _socket.socket) -> None:
        self.conn = conn
        self._lock = threading.Lock()
        self._writing = threading.Lock()
        self._entries: deque[tuple[str, Report]] = deque()
        self.closed = False
        self.opened = False
        """The hello's answer went out on the connection: entries may follow it."""
        self.wake, self._waker = socket.socketpair()
        for end in (self.wake, self._waker):
            end.setblocking(False)

    def put(self, entry: str, report: Report) -> None:
        """An entry of the channel's journal (called under the channel's lock: quick). The
        journal's thread is woken for it unless a call made it (`answering`), whose `flush`
        writes it before its answer."""
        with self._lock:
            self._entries.append((entry, report))
        if getattr(_THREAD, "answering", False):
            return
        with contextlib.suppress(OSError):  # full: the writer is awake already
            self._waker.send(b"!")

    def write(self) -> None:
        """Write every entry put so far; `OSError` (`frames.Late` included) when the client
        does not take them within `WRITE_WITHIN`, or is gone."""
        with self._writing:
            if not self.opened:
                return  # written by `Journal.serve` once the hello's answer is out
            with self._lock:
                entries = list(self._entries)
                self._entries.clear()
            for entry, report in entries:
                frames.send(self.conn, {entry: to_wire(report)},
                            time.monotonic() + WRITE_WITHIN)

    def close(self) -> None:
        """No more entries: its thread ends (a write in progress fails)."""
        self.closed = True
        with contextlib.suppress(OSError):
            self.conn.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            self._waker.send(b"!")

    def release(self) -> None:
        self.wake.close()
        self._waker.close()


class Journal:
    """A session's pending channel and its journal to the client's ledger connection (the
    broker's side; module doc)."""

    def __init__(self) -> None:
        self.channel = PendingChannel()
        """The session's channel (`Service(pending=...)`)."""
        self._lock = threading.Lock()
        self._stream: _Stream | None = None
        self._adopted = False

    def adopt(self, owed: object) -> None:
        """What a replaced broker's session owed the client (its copy's `owed()`, wire form),
        taken once per session: a later ledger connection's copy is this session's own."""
        with self._lock:
            if self._adopted:
                return
            self._adopted = True
        if owed is not None:
            report = read(Report, owed)
            if report.files:
                self.channel.record(report)

    def open(self, conn: _socket.socket) -> _Stream:
        """The journal from now on, for the ledger connection `conn`: the whole channel
        first, then every change (made before the hello's answer goes out, so that no
        hand-over falls between what the client adopted and the journal); written once
        `serve` runs."""
        stream = _Stream(conn)
        with self._lock:
            old, self._stream = self._stream, stream
        if old is not None:
            old.close()
        self.channel.follow(stream.put)
        return stream

    def serve(self, stream: _Stream, stopping: threading.Event,
              greet: Callable[[], object]) -> None:
        """Send the hello's answer (`greet`), then write the journal (`open`) on its
        connection until the client closes it, a write fails, another ledger connection of
        the session replaces it, or the broker stops (`stopping`); the journal ends with it
        (a `greet` that fails too)."""
        conn = stream.conn
        try:
            greet()
            stream.opened = True
            waiting = select.poll()  # not `select.select`: a busy broker's fds pass 1024
            for end in (conn, stream.wake):
                waiting.register(end, select.POLLIN)
            while not stopping.is_set() and not stream.closed:
                stream.write()
                ready = {fd for fd, _ in waiting.poll(1000)}
                if conn.fileno() in ready and not conn.recv(1):
                    return  # the client closed it (it sends nothing on it)
                if stream.wake.fileno() in ready:
                    with contextlib.suppress(OSError):
                        stream.wake.recv(4096)
        finally:
            with self._lock:
                if self._stream is stream:
                    self._stream = None
                    self.channel.follow(None)
            stream.close()
            stream.release()

    def flush(self) -> None:
        """Write the entries the calls so far made (before a call's answer goes out: module
        doc), on the caller's thread; at once when none wait or no client follows. A client
        that does not take them loses its ledger connection (its next one starts from the
        whole channel)."""
        with self._lock:
            stream = self._stream
        if stream is not None:
            try:
                stream.write()
            except OSError:
                stream.close()


class Ledger:
    """The client's copy of what its broker session owes it (module doc). Its reader keeps
    the journal's entries as they came (bytes) and the copy reads them when it is asked for
    (`channel`, `owed`, `close`: the broker replaced or let go of), or once `KEPT_RAW` wait:
    a check's entry costs the client's process a `recv`, not a parse racing the call's own
    answer for the interpreter."""

    def __init__(self, channel: PendingChannel | None = None) -> None:
        self._channel = PendingChannel() if channel is None else channel
        """The copy: `channel` when given (what another session owed the client, which the
        first session this ledger follows takes over)."""
        self.pid = 0
        """The broker whose journal the copy follows (0: none yet)."""
        self._conn: _socket.socket | None = None
        self._reader: threading.Thread | None = None
        self._raw: list[bytes] = []
        """The entries received and not yet read into the copy, in their order."""
        self._raw_lock = threading.Lock()
        self._broken = False
        """An entry that is not one: the copy stops following (the next call's ledger
        connection starts from the whole channel)."""

    @property
    def channel(self) -> PendingChannel:
        """The copy, with every entry received so far."""
        with self._raw_lock:
            self._apply()
        return self._channel

    @property
    def following(self) -> bool:
        return (self._reader is not None and self._reader.is_alive()
                and not self._broken)

    def owed(self) -> dict[str, Any]:
        """The copy in its wire form, for the hello of a ledger connection."""
        return {"owed": to_wire(self.channel.owed())}

    def follow(self, conn: _socket.socket, pid: int) -> None:
        """Read broker `pid`'s journal from `conn` (its hello answered) into the copy."""
        self._conn, self.pid, self._broken = conn, pid, False
        self._reader = threading.Thread(target=self._read, args=(conn,), daemon=True,
                                        name="ipylsp-ledger")
        self._reader.start()

    def settle(self, within: float = SETTLE_WITHIN) -> None:
        """Read the journal of the broker followed so far to its end (it was replaced: the
        rest is in the connection's buffer), waiting at most `within` seconds, then let go
        of it."""
        if self._reader is not None:
            self._reader.join(max(0.0, min(within, SETTLE_WITHIN)))
        self.close()

    def close(self) -> PendingChannel:
        """Stop following (the session ends with the connection); the copy as it stands,
        with every entry the connection had received: the reader takes them to the end
        (a shut-down Unix socket still gives what its buffer holds) before it is closed."""
        conn, reader = self._conn, self._reader
        self._conn = self._reader = None
        if conn is not None:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)  # the reader's `recv` ends after the buffer
        if reader is not None:
            reader.join(SETTLE_WITHIN)
        if conn is not None:
            conn.close()
        return self.channel

    def _read(self, conn: _socket.socket) -> None:
        """Each entry, as it came, until the connection ends."""
        while True:
            try:
                body = frames.receive_bytes(conn)
            except OSError:  # the end of the journal (frames.FrameError too)
                return
            with self._raw_lock:
                if self._broken:
                    return  # the copy follows no more (`_apply`)
                if body.startswith(_WHOLE):  # the whole channel: what came before is in it
                    self._raw.clear()
                self._raw.append(body)
                if len(self._raw) >= KEPT_RAW:
                    self._apply()

    def _apply(self) -> None:
        """Read the entries received into the copy (under `_raw_lock`)."""
        raw, self._raw = self._raw, []
        for body in raw:
            try:
                message = json_text.loads(body.decode("utf-8", "surrogatepass"))
                [(entry, value)] = message.items()
                report = read(Report, value)
            except (ValueError, AttributeError):  # not an entry: the copy follows no more
                self._broken = True  # nor reads on: what follows would apply without it
                conn = self._conn
                if conn is not None:  # the reader ends: a `settle` does not wait for it
                    with contextlib.suppress(OSError):
                        conn.shutdown(socket.SHUT_RDWR)
                return
            self._channel.replay(entry, report)


KEPT_RAW = 256
"""Entries a copy keeps unread at most (a long session's checks, none asked for)."""

_WHOLE = ('{"' + OWED + '"').encode()
"""How an entry of the whole channel begins (`frames.send` writes it with `json_text`)."""
