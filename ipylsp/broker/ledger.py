"""The ledger: what a broker session owes its client, kept by the client as well, so that a
broker killed with SIGKILL loses nothing pending.

A session's problems wait in its pending channel in the broker until a hand-over takes them
(`%lsp pending`, `lsp_pending`): those a check introduced and those a server answered after
the check returned (late answers). The one party that outlives a killed broker is its client,
and a pending problem is owed only to a client that lives, so the client keeps the copy:

- **In the broker** (`Journal`): a session's channel is followed (`PendingChannel.follow`);
  its journal is the whole channel, then every record and hand-over, each numbered in the
  channel's order (`seq`). An entry made by a call (a check's record, a hand-over) travels
  in that call's answer (`answering`, `Journal.carry`): the client holds it when it sees the
  answer, at no cost of its own to the call. Any other entry (a late answer, made by a
  service's loop; the whole channel) is written on a connection of the client's own, its
  ledger connection, by that connection's thread as it is made, or before the answer of the
  next call, by the thread of the call's connection, whichever comes first (`Journal.flush`;
  a check answered on its service's loop leaves that blocking write to its connection's
  thread: `broker/connection.py`). So is a call's entry whose answer may
  not be read: one that failed to go out, or went out so near the client's deadline
  (`within`) that the client may have given up; a client that did not read an answer (it
  gave up, or was interrupted) asks for the whole channel again (`Ledger.resync`). A write
  to a Unix socket is in the client's receive buffer when it returns: the broker's death
  after it loses nothing.
- **In the client** (`Ledger`): the entries of answers and those its thread receives make a
  copy of the channel equal to the session's, applied in their numbers' order (one that came
  twice is applied once; the whole channel replaces every entry before it); they are read
  into it when the copy is needed (the broker replaced or let go of), not as they come. When
  the broker is replaced, the copy is read to the old connection's end, then sent in the
  hello of the new ledger connection (`owed`): the new session takes it once
  (`Journal.adopt`), and its journal's first entry (the whole channel) replaces the copy.
  Nothing is owed twice: the copy is replaced, never merged, and a session adopts once.
  Where no broker can be had any more, the copy is the pending channel of the client's own
  service (`Service(pending=...)`).

What a check pays: its entry (about 1.2 KB for a one-error report) in its answer, only when
it changed what is owed (a problem introduced or fixed in a written file; a clean write of a
file that owed nothing, and a cell's own document, which is never pending, make none). It had
been a write on the ledger connection before the answer: a second write, and a second wake
of the client, per check (bench_broker's boundary). Why not the store, nor a re-check of the
files whose checks timed out: ARCHITECTURE.md, "Nothing pending is lost".

A broker killed in a call, before its answer went out, took the call's entries with it: the
copy owes what it owed before the call, which is right for a hand-over (the client never saw
it: the new session hands it over again) and for a check (whose answer the client never had;
the retry on the new broker checks again).

Limits: an entry the broker made but had not written when it was killed (a late answer, in
the microseconds between its arrival and its write) is lost with it; a hand-over whose answer
went out and was not read (the client gave up on it, or its connection broke) is lost to a
client that never saw it: the session forgot what it handed over, and so does the copy.
"""

from __future__ import annotations

import _socket
import asyncio
import contextlib
import itertools
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
waits for the entries the ledger connection was given meanwhile (`Journal.flush`)."""

SETTLE_WITHIN = 2.0
"""Seconds a client waits for its copy to reach the end of a replaced broker's journal (the
broker is dead: the rest is in the socket's buffer, read in microseconds)."""

LATE_WITHIN = 0.25
"""Seconds before the client's deadline (a call's `within`) past which an answer's entries
are written on the ledger connection as well: the client may have given up on the answer
(entries that come twice are applied once)."""

Entry = tuple[int, str, Report]
"""A journal's entry: its number in the channel's order, its kind (`OWED`, `RECORDED`,
`TAKEN`) and its report (in the wire: a list, its report's wire form)."""

_CARRIED: dict[object, list[Entry]] = {}
"""The entries each call being answered has made (`answering`), by who answers it."""


def _answerer() -> object:
    """Who answers the call at hand: the task on a service's loop (a check the broker answers
    there: a late answer recorded meanwhile, by another task or callback of that loop, is not
    the call's), else the thread."""
    try:
        task = asyncio.current_task()
    except RuntimeError:  # no loop runs in this thread
        task = None
    return task if task is not None else threading.get_ident()


@contextlib.contextmanager
def answering() -> Iterator[list[Entry]]:
    """The caller (a thread, or a task on a service's loop: `_answerer`) answers a call: the
    entries it makes meanwhile gather in the list given, for its answer (`Journal.carry`),
    not for the ledger connection."""
    who = _answerer()
    outer = _CARRIED.get(who)
    carried: list[Entry] = []
    _CARRIED[who] = carried
    try:
        yield carried
    finally:
        if outer is None:
            del _CARRIED[who]
        else:
            _CARRIED[who] = outer


class _Stream:
    """The journal entries waiting for one ledger connection, and their writing (by its
    thread, or by a call's before its answer: in the order they were put, either way)."""

    def __init__(self, conn: _socket.socket, numbers: Iterator[int]) -> None:
        self.conn = conn
        self._numbers = numbers
        self._lock = threading.Lock()
        self._writing = threading.Lock()
        self._entries: deque[Entry] = deque()
        self.closed = False
        self.opened = False
        """The hello's answer went out on the connection: entries may follow it."""
        self.wake, self._waker = socket.socketpair()
        for end in (self.wake, self._waker):
            end.setblocking(False)

    def put(self, kind: str, report: Report) -> None:
        """An entry of the channel's journal, of `kind` (called under the channel's lock,
        which orders the numbers: quick), numbered; a call's (`answering`) goes in its
        answer, any other is written by the journal's thread, woken for it."""
        made = (next(self._numbers), kind, report)
        carried = _CARRIED.get(_answerer()) if _CARRIED else None
        if carried is not None:
            carried.append(made)
        else:
            self.queue([made])

    def queue(self, entries: list[Entry]) -> None:
        """`entries` for the journal's thread to write."""
        with self._lock:
            self._entries.extend(entries)
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
            for number, kind, report in entries:
                frames.send(self.conn, {kind: to_wire(report), "seq": number},
                            time.monotonic() + WRITE_WITHIN)

    def busy(self) -> bool:
        """Whether entries wait for the connection, or are being written on it."""
        return bool(self._entries) or self._writing.locked()

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
        self._numbers = itertools.count()
        """The entries' numbers, the session's whole life (across its ledger connections)."""

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
        stream = _Stream(conn, self._numbers)
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

    def carry(self, entries: list[Entry], *, late: bool, answer: object = None,
              ) -> list[list[Any]]:
        """The wire form of the entries a call made (`answering`), for its `answer` (its
        value's wire form): an entry of files the answer's report holds as they are (a
        check's record) names them by their places in it (`{"answer_files": [...]}`), not
        again; `late` (the answer may not be read: `LATE_WITHIN`) writes them on the ledger
        connection as well, before the answer."""
        if late:
            self.unread(entries)
            self.flush()
        files = answer.get("files") if isinstance(answer, dict) else None
        return [[number, kind, _in_answer(to_wire(report), files)]
                for number, kind, report in entries]

    def unread(self, entries: list[Entry]) -> None:
        """Entries whose answer did not go out: the ledger connection's to write (its client
        puts them in their place by their numbers; a newer whole channel holds them)."""
        with self._lock:
            stream = self._stream
        if stream is not None and entries:
            stream.queue(entries)

    def writing(self) -> bool:
        """Whether entries wait for the ledger connection or are being written on it: a call's
        answer then goes out after them (`flush`, a blocking write)."""
        with self._lock:
            stream = self._stream
        return stream is not None and stream.busy()

    def flush(self) -> None:
        """Write the entries waiting for the ledger connection (before a call's answer goes
        out: a late answer's, made meanwhile), on the caller's thread; at once when none wait
        or no client follows. A client that does not take them loses its ledger connection
        (its next one starts from the whole channel)."""
        with self._lock:
            stream = self._stream
        if stream is not None:
            try:
                stream.write()
            except OSError:
                stream.close()


def _in_answer(value: dict[str, Any], files: object) -> dict[str, Any]:
    """An entry's report (`value`, wire form) as the places of its files in an answer's
    report's `files`, when that holds every one of them as they are (an entry counts only by
    its files: `PendingChannel.replay`); else `value`."""
    if not isinstance(files, list):
        return value
    places: dict[object, int] = {}  # by path: one pass over the answer's files, not one each
    for place, file in enumerate(files):
        if isinstance(file, dict):
            places.setdefault(file.get("path"), place)
    found = []
    for file in value["files"]:
        where = places.get(file.get("path"))
        if where is None or files[where] != file:
            return value  # not in the answer as it is
        found.append(where)
    return {ANSWER_FILES: found}


def _from_answer(value: object, answer: object) -> object:
    """An entry's report as `_in_answer` carried it, with the answer's files in place of
    their places; `ValueError` when they are not the answer's."""
    if not (isinstance(value, dict) and ANSWER_FILES in value):
        return value
    files = answer.get("files") if isinstance(answer, dict) else None
    places = value[ANSWER_FILES]
    if not isinstance(files, list) or not isinstance(places, list):
        raise ValueError("an entry names an answer's files, and there are none")
    try:
        return {"files": [files[place] for place in places]}
    except (IndexError, TypeError):
        raise ValueError(f"an entry names files the answer does not have: {places}") from None


ANSWER_FILES = "answer_files"
"""How a carried entry names its answer's files (`_in_answer`)."""


class Ledger:
    """The client's copy of what its broker session owes it (module doc). The entries that
    come (an answer's, `carry`; the ledger connection's, as bytes its reader keeps) wait
    unread; the copy reads them in their numbers' order when it is asked for (`channel`,
    `owed`, `close`: the broker replaced or let go of), or once `KEPT_RAW` wait: an entry
    costs the client nothing while its call's answer is read."""

    def __init__(self, channel: PendingChannel | None = None) -> None:
        self._channel = PendingChannel() if channel is None else channel
        """The copy: `channel` when given (what another session owed the client, which the
        first session this ledger follows takes over)."""
        self.pid = 0
        """The broker whose journal the copy follows (0: none yet)."""
        self._conn: _socket.socket | None = None
        self._reader: threading.Thread | None = None
        self._raw: list[bytes] = []
        """The ledger connection's entries received and not yet read, in their order."""
        self._answered: list[Any] = []
        """The entries answers carried (their wire form) not yet read."""
        self._held: dict[int, tuple[str, Any]] = {}
        """Entries read whose turn has not come (one before them has not arrived yet)."""
        self._next = 0
        """The number of the next entry the copy applies."""
        self._lock = threading.Lock()
        """Guards the entries waiting (`_raw`, `_answered`, `_held`), the copy's turn
        (`_next`) and the broker followed (`pid`, `_conn`)."""
        self._broken = False
        """An entry that is not one: the copy stops following (the next call's ledger
        connection starts from the whole channel), and takes nothing after it."""
        self._stale = False
        """An answer was not read (`resync`): the copy stops following once its connection
        is read to the end; the next call's ledger connection starts from the whole
        channel."""

    @property
    def channel(self) -> PendingChannel:
        """The copy, with every entry received so far."""
        with self._lock:
            self._apply(final=True)
        return self._channel

    @property
    def following(self) -> bool:
        return (self._reader is not None and self._reader.is_alive()
                and not self._broken and not self._stale)

    def owed(self) -> dict[str, Any]:
        """The copy in its wire form, for the hello of a ledger connection."""
        return {"owed": to_wire(self.channel.owed())}

    def carry(self, entries: object, answer: object = None, *, broker: int) -> None:
        """The entries a call's answer carried (`Journal.carry`), in the copy's turn;
        `answer`: the answer's value (wire form), whose files they may name; `broker`: the
        broker that answered. An answer of a broker the copy no longer follows (another
        thread's call replaced it meanwhile) is too late: its session's copy went to the new
        one without these, and the new one's numbers are not its."""
        try:
            if not isinstance(entries, list):
                raise ValueError("not a list of entries")
            entries = [[number, entry, _from_answer(value, answer)]
                       for number, entry, value in entries]
        except (ValueError, TypeError):
            entries = [None]  # not entries: `_apply` stops the copy at it
        with self._lock:
            if broker != self.pid:
                return
            self._answered.extend(entries)
            if len(self._raw) + len(self._answered) >= KEPT_RAW:
                self._apply(final=False)

    def resync(self) -> None:
        """A call's answer was not read, and what it carried with it: the copy follows no
        more, and the next call's ledger connection starts from the whole channel (which
        holds it). Its connection is shut, not dropped: the reader still takes what the
        socket holds (a late answer's entry, written just before a broker's death), which
        the next `settle` or `close` applies."""
        with self._lock:
            self._stale = True
            self._shut()

    def follow(self, conn: _socket.socket, pid: int) -> None:
        """Read broker `pid`'s journal from `conn` (its hello answered) into the copy: its
        session's entries, numbered from its first (the whole channel)."""
        with self._lock:
            self._apply(final=True)  # what the last connection said, before it
            self._held.clear()  # (what a bad entry left: another session's numbers)
            self._next = 0
            self._conn, self.pid = conn, pid
            self._broken = self._stale = False
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
            with self._lock:
                if self._broken:
                    return  # the copy follows no more (`_apply`)
                self._raw.append(body)
                if len(self._raw) + len(self._answered) >= KEPT_RAW:
                    self._apply(final=False)

    def _apply(self, *, final: bool) -> None:
        """Read the entries received into the copy, in their numbers' order (under `_lock`):
        the newest whole channel replaces what came before it, an entry that came twice
        counts once, and one whose turn has not come waits for those before it, unless
        `final` (the connection ended: what never came is lost with the broker) or
        `WAITING_AT_MOST` wait (one never came: the copy asks for the whole channel again).
        An entry that is not one stops the copy too: what came in its turn before it is
        applied, nothing after it (it would apply without what the bad one said)."""
        raw, self._raw = self._raw, []
        answered, self._answered = self._answered, []
        broken = False
        for body in raw:
            try:
                message = json_text.loads(body.decode("utf-8", "surrogatepass"))
                number = message.pop("seq")
                [(entry, value)] = message.items()
                self._hold(number, entry, value)
            except (ValueError, TypeError, KeyError, AttributeError):
                broken = True
        for item in answered:
            try:
                number, entry, value = item
                self._hold(number, entry, value)
            except (ValueError, TypeError):
                broken = True
        too_many = len(self._held) >= WAITING_AT_MOST
        past_gaps = (final or too_many) and not (broken or self._broken)
        whole = max((n for n, (e, _) in self._held.items() if e == OWED), default=None)
        if whole is not None and whole >= self._next:
            self._next = whole
        for number in sorted(self._held):
            if number < self._next:
                del self._held[number]  # in the whole channel, or applied already
            elif number == self._next or past_gaps:
                entry, value = self._held.pop(number)
                try:
                    report = read(Report, value)
                except ValueError:
                    broken = True
                    break
                self._channel.replay(entry, report)
                self._next = number + 1
            else:
                break
        if broken:  # the copy follows no more, and its reader ends at once
            self._held.clear()  # (they would apply without the bad one)
            self._broken = True
            self._shut()
        elif too_many:  # the whole channel again, as after an answer not read (`resync`)
            self._stale = True
            self._shut()

    def _shut(self) -> None:
        """Shut the ledger connection (under `_lock`): the reader's `recv` ends after what
        the socket holds (unless the copy is `_broken`: then at once), and the next call's
        ledger connection starts from the whole channel."""
        conn = self._conn
        if conn is not None:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

    def _hold(self, number: object, entry: object, value: object) -> None:
        if not isinstance(number, int) or not isinstance(entry, str):
            raise ValueError(f"not an entry: {number!r}, {entry!r}")
        self._held.setdefault(number, (entry, value))


KEPT_RAW = 256
"""Entries a copy keeps unread at most (a long session's checks, none asked for)."""

WAITING_AT_MOST = 1024
"""Entries read that may wait for one before them: more, and that one never came (an
answer lost on its way): the copy follows no more, and the next call's ledger connection
starts from the whole channel."""
