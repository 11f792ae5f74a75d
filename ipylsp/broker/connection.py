"""A client's connection once its hello is answered: its calls read, answered and written
back on its context's loop, or on the connection's own thread.

Why the loop: a kernel's check relayed through the broker had made four hand-offs between
threads and processes where a check in the kernel's own service makes two. The kernel's
socket woke the connection's thread, which handed the check to the loop and was woken again
for the answer, whose write woke the kernel. Here the loop the check runs on reads its request
and writes its answer: the kernel's write wakes the loop, the loop's write wakes the kernel.

What runs where:
- **The loop** (an `asyncio.Protocol` on the accepted socket): reading the frames; a check
  (`Answers.on_loop`) answered as a task there (`Service.check_files_async`); every write, in
  the order made (progress lines, answers). A client that does not read holds only its own
  connection, never the loop.
- **The connection's thread** (`serve`): every other call (a facade method waits on the loop,
  and must not run on it); a check's answer whose journal entries must first be written on
  the ledger connection, a blocking write (a late answer's entry made meanwhile, or the call's
  own near the client's deadline: `Journal.carry`); the session's end once the client
  closes.

One call at a time, as a client sends them: a message that arrives while one is answered waits
its turn. Touches the frames, the journal and what `Answers` gives; not the service.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import socket
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ipylsp.broker import frames
from ipylsp.broker.ledger import Entry, Journal, answering

log = logging.getLogger("ipylsp.broker")

Progress = Callable[[str], None]

PROGRESS_HELD_AT_MOST = 64 * 1024
"""Bytes a connection's writes may wait for a client that does not read before its progress
lines are dropped (a client that does not read loses its progress, never its answer)."""


@dataclass(frozen=True)
class Answers:
    """What the broker answers a connection's calls with: its session's."""

    on_loop: Callable[[dict[str, Any]], bool]
    """Whether a call is a check answered on the loop (`at_once`)."""
    at_once: Callable[[dict[str, Any], Progress | None], Awaitable[dict[str, Any]]]
    """A check's answer, awaited on the loop."""
    waiting: Callable[[dict[str, Any], Progress | None], dict[str, Any]]
    """Any other call's answer, on the connection's thread."""
    late: Callable[[dict[str, Any], float], bool]
    """Whether a call's answer goes out so near its client's deadline that its entries go on
    the ledger connection as well (`ledger.LATE_WITHIN`), given when it was received."""
    journal: Journal
    touch: Callable[[], None]
    stopping: threading.Event


class Connection(asyncio.Protocol):
    """One client connection on its context's loop (module doc). Made by the connection's
    thread, which then runs `serve` until the client closes it."""

    def __init__(self, answers: Answers, loop: asyncio.AbstractEventLoop) -> None:
        self._answers = answers
        self._loop = loop
        self._unframing = frames.Unframing()
        self._calls: deque[tuple[dict[str, Any], float]] = deque()
        self._busy = False
        self._transport: asyncio.Transport | None = None
        self._work: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._checking: asyncio.Task[None] | None = None
        self._lost = False
        """The client closed it (`connection_lost`)."""

    # -- the connection's thread --------------------------------------------------------------

    def serve(self, conn: socket.socket, within: float) -> None:
        """Hand `conn` to the loop (within `within` seconds), then do what the loop gives this
        thread until the client closes it (module doc); `OSError` when the loop did not
        take it."""
        conn.setblocking(False)
        take = self._loop.connect_accepted_socket(lambda: self, sock=conn)
        try:
            taking = asyncio.run_coroutine_threadsafe(take, self._loop)
        except RuntimeError as exc:  # the loop closed
            take.close()
            raise OSError(f"the loop did not take the connection: {exc!r}") from None
        try:
            taking.result(within)
        except Exception as exc:  # the loop is wedged (or failed to take it)
            if taking.cancel():  # never started: it never will
                take.close()
            raise OSError(f"the loop did not take the connection: {exc!r}") from None
        while (job := self._work.get()) is not None:
            try:
                job()
            except Exception:  # our bug: this call is not answered, its connection ends
                log.exception("a call failed on its connection's thread")
                try:
                    self._loop.call_soon_threadsafe(self._failed)
                except RuntimeError:  # the loop closed: nothing more comes
                    return
        # the client closed it and no call of it is in flight (`connection_lost`): the
        # session's connection ends (`serve.BrokerProcess._leave`) after its last call

    # -- the loop -----------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost = True
        if not self._busy:  # else once the call in flight is done (`_done`)
            self._work.put(None)

    def data_received(self, data: bytes) -> None:
        self._unframing.feed(data)
        try:
            while (message := self._unframing.next()) is not None:
                self._calls.append((message, time.monotonic()))
        except frames.FrameError as exc:
            log.info("a connection ended: %r", exc)
            self._close()
            return
        self._next()

    def _next(self) -> None:
        """Answer the next call, unless one is being answered."""
        if self._busy or not self._calls or self._closing():
            return
        self._busy = True
        message, received = self._calls.popleft()
        self._answers.touch()
        if self._answers.on_loop(message):  # held: the loop keeps only a weak reference
            self._checking = self._loop.create_task(self._check(message, received))
        else:
            self._work.put(lambda: self._wait_for(message, received))

    async def _check(self, message: dict[str, Any], received: float) -> None:
        try:
            journal = self._answers.journal
            answer, carried = await self._answered(
                message, self._answers.at_once(message, self._progress(message, here=True)))
            late = bool(carried) and self._answers.late(message, received)
            if late or journal.writing():  # a blocking write first: not on the loop
                self._work.put(lambda: self._finish(message, answer, carried, late))
                return
            self._write_answer(message, self._encoded(answer, carried, late), carried)
        except Exception:  # our bug: this call is not answered, its connection ends
            log.exception("a check failed on its connection's loop")
            self._failed()

    @staticmethod
    async def _answered(message: dict[str, Any], answering_it: Awaitable[dict[str, Any]],
                        ) -> tuple[dict[str, Any], list[Entry]]:
        """A check's answer and the journal entries it made (`answering`: this task's)."""
        with answering() as carried:
            try:
                answer = await answering_it
            except Exception as exc:
                answer = _our_bug(message, exc)
        return answer, carried

    def _wait_for(self, message: dict[str, Any], received: float) -> None:
        """A call that is not a check, on the connection's thread."""
        with answering() as carried:
            try:
                answer = self._answers.waiting(message, self._progress(message, here=False))
            except Exception as exc:
                answer = _our_bug(message, exc)
        late = bool(carried) and self._answers.late(message, received)
        self._finish(message, answer, carried, late)

    def _finish(self, message: dict[str, Any], answer: dict[str, Any], carried: list[Entry],
                late: bool) -> None:
        """On the connection's thread: the entries waiting for the ledger connection written
        first (`Journal.flush`), then the answer, handed to the loop to write."""
        self._answers.journal.flush()
        data = self._encoded(answer, carried, late)
        self._loop.call_soon_threadsafe(self._write_answer, message, data, carried)

    def _encoded(self, answer: dict[str, Any], carried: list[Entry], late: bool,
                 ) -> bytes | None:
        """The answer's frame, with the entries the call made (`Journal.carry`: a `late`
        call's are written on the ledger connection first); None when it cannot be sent."""
        if carried:
            answer["journal"] = self._answers.journal.carry(
                carried, late=late, answer=answer.get("ok"))
        try:
            return frames.encode(answer)
        except frames.FrameError as exc:
            log.info("an answer was not sent: %r", exc)
            return None

    def _write_answer(self, message: dict[str, Any], data: bytes | None,
                      carried: list[Entry]) -> None:
        """On the loop: write an answer, then answer the next call. Entries of an answer that
        did not reach the client's buffer whole are the ledger connection's to write too
        (`Journal.unread`: a client applies an entry once)."""
        transport = self._transport
        if data is None or transport is None or transport.is_closing():
            self._answers.journal.unread(carried)
            self._close()
        else:
            transport.write(data)
            if transport.get_write_buffer_size():
                self._answers.journal.unread(carried)
        self._answers.touch()
        if message.get("call") == "stop":
            self._answers.stopping.set()
        self._done()

    def _failed(self) -> None:
        """On the loop: a call that failed without an answer; the connection ends."""
        self._close()
        self._done()

    def _done(self) -> None:
        """On the loop: the call in flight is done; the next one, or the connection's end
        once the client closed it (its thread then ends the session's connection, never
        under a call of it still running)."""
        self._busy = False
        if self._lost:
            self._work.put(None)
        else:
            self._next()

    def _progress(self, message: dict[str, Any], *, here: bool) -> Progress | None:
        """What writes a call's progress lines, when it asked for them: called on the loop
        (`here`) or on the connection's thread."""
        if message.get("progress") is not True:
            return None

        def say(line: str) -> None:
            data = frames.encode({"progress": line})
            if here:
                self._write_progress(data)
            else:
                self._loop.call_soon_threadsafe(self._write_progress, data)

        return say

    def _write_progress(self, data: bytes) -> None:
        transport = self._transport
        if (transport is not None and not transport.is_closing()
                and transport.get_write_buffer_size() < PROGRESS_HELD_AT_MOST):
            transport.write(data)

    def _closing(self) -> bool:
        return self._transport is None or self._transport.is_closing()

    def _close(self) -> None:
        if self._transport is not None:
            self._transport.close()


def _our_bug(message: dict[str, Any], exc: Exception) -> dict[str, Any]:
    """The answer to a call that raised `exc` (our bug, logged): one line for the client,
    which still gets the entries the call made; the broker carries on."""
    log.exception("call %s failed", message.get("call"), exc_info=exc)
    return frames.error("failed", repr(exc))
