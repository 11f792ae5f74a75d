"""A client's connection in the broker (`broker/connection.py`) over a socket pair, no broker
process: a check answered on the loop, anything else on the connection's thread, writes in
the order made, one call at a time, and a call's journal entries in its answer (a late answer
made meanwhile on the same loop is not the call's). tests/test_broker.py and
tests/test_broker_kernels.py serve real clients through it."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from ipylsp.broker import frames
from ipylsp.broker.connection import Answers, Connection
from ipylsp.broker.ledger import Journal, Ledger
from ipylsp.model.diagnostics import Diagnostic, FileReport, Range, Report, Severity
from ipylsp.service.outputs.pending import RECORDED

AtOnce = Callable[[dict[str, Any], Any], Awaitable[dict[str, Any]]]
Waiting = Callable[[dict[str, Any], Any], dict[str, Any]]


def report(name: str, message: str) -> Report:
    found = (Diagnostic(Range.of(0, 0, 0, 3), Severity.ERROR, message, "ty", "E1", "ty"),)
    return Report(files=(FileReport(Path("/w") / name, name, diagnostics=found, current=found,
                                    servers=("ty",)),))


async def named(message: dict[str, Any], progress: Any) -> dict[str, Any]:
    return {"ok": threading.current_thread().name}


def named_here(message: dict[str, Any], progress: Any) -> dict[str, Any]:
    return {"ok": threading.current_thread().name}


@dataclass
class Served:
    """A `Connection` on a loop of its own (`loop` thread) over a socket pair, served by its
    connection's thread; `client` is the client's end."""

    at_once: AtOnce = named
    waiting: Waiting = named_here
    journal: Journal = field(default_factory=Journal)
    late: bool | Callable[[], bool] = False
    stopping: threading.Event = field(default_factory=threading.Event)
    events: list[str] = field(default_factory=list)
    """What happened, in order: the tests' own, then "client gone" once the loop saw the
    client go and "connection ended" once the connection's thread did."""

    def __post_init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.loop_thread = threading.Thread(target=self.loop.run_forever, name="loop",
                                            daemon=True)
        self.loop_thread.start()
        self.client, theirs = socket.socketpair()
        late = self.late
        answers = Answers(on_loop=lambda m: m.get("call") == "check", at_once=self.at_once,
                          waiting=self.waiting,
                          late=lambda m, r: late() if callable(late) else late,
                          journal=self.journal, touch=lambda: None, stopping=self.stopping)
        self.connection = Connection(answers, self.loop)
        self.lost = threading.Event()
        seen = self.connection.connection_lost

        def lost(exc: Exception | None) -> None:  # asyncio's call, seen by the test
            self.events.append("client gone")
            self.lost.set()
            seen(exc)

        self.connection.connection_lost = lost  # type: ignore[method-assign]

        def serve() -> None:
            self.connection.serve(theirs, 5.0)
            self.events.append("connection ended")

        self.thread = threading.Thread(target=serve, name="connection", daemon=True)
        self.thread.start()

    def call(self, name: str, progress: bool = False, **args: Any) -> list[dict[str, Any]]:
        """A call's frames: its progress lines, then its answer."""
        frames.send(self.client, {"call": name, "args": args, "progress": progress})
        return self.read_answer()

    def read_answer(self) -> list[dict[str, Any]]:
        got = [frames.receive(self.client, time.monotonic() + 10.0)]
        while "progress" in got[-1]:
            got.append(frames.receive(self.client, time.monotonic() + 10.0))
        return got

    def settled(self) -> None:
        """Every task on the loop but the caller's has finished (the calls it answers)."""
        async def others() -> None:
            here = asyncio.current_task()
            await asyncio.gather(*(t for t in asyncio.all_tasks() if t is not here))

        asyncio.run_coroutine_threadsafe(others(), self.loop).result(10.0)

    def close(self) -> None:
        self.client.close()
        self.thread.join(10.0)
        assert not self.thread.is_alive()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.loop_thread.join(10.0)
        self.loop.close()


class Followed:
    """A journal whose ledger connection (the broker's end, written by its thread) a
    client's `Ledger` follows."""

    def __init__(self) -> None:
        self.journal, self.ledger = Journal(), Ledger()
        self.end, theirs = socket.socketpair()
        stream = self.journal.open(self.end)
        self.writer = threading.Thread(target=self.journal.serve,
                                       args=(stream, threading.Event(), lambda: None),
                                       daemon=True)
        self.writer.start()
        self.ledger.follow(theirs, pid=1)

    def copy_once_the_broker_ends(self) -> list[str]:
        """What the client's copy owes once the broker's end closed (what it wrote read to
        the end), equal to the session's channel: its problems' messages."""
        self.journal.flush()
        self.end.shutdown(socket.SHUT_RDWR)
        self.ledger.settle()
        owed = self.ledger.channel.owed()
        assert owed == self.journal.channel.owed()
        return sorted(d.message for f in owed.files for d in f.diagnostics)

    def close(self) -> None:
        with contextlib.suppress(OSError):  # shut already
            self.end.shutdown(socket.SHUT_RDWR)
        self.writer.join(10.0)
        self.end.close()
        self.ledger.close()


@pytest.fixture
def followed() -> Iterator[Followed]:
    made = Followed()
    yield made
    made.close()


@pytest.fixture
def served() -> Iterator[Callable[..., Served]]:
    made: list[Served] = []

    def make(**given: Any) -> Served:
        made.append(Served(**given))
        return made[-1]

    yield make
    for one in made:
        one.close()


def test_a_check_is_answered_on_the_loop_and_any_other_call_on_the_connections_thread(
    served: Callable[..., Served],
) -> None:
    one = served()
    assert one.call("check") == [{"ok": "loop"}]
    assert one.call("status") == [{"ok": "connection"}]
    assert one.call("check") == [{"ok": "loop"}]


def test_progress_lines_come_before_their_answer_and_only_when_asked(
    served: Callable[..., Served],
) -> None:
    async def at_once(message: dict[str, Any], progress: Any) -> dict[str, Any]:
        if progress is not None:
            progress("starting ty")
            await asyncio.sleep(0)
            progress("indexing")
        return {"ok": "checked"}

    def waiting(message: dict[str, Any], progress: Any) -> dict[str, Any]:
        if progress is not None:
            progress("a")
            progress("b")
        return {"ok": "waited"}

    one = served(at_once=at_once, waiting=waiting)
    assert one.call("check", progress=True) == [
        {"progress": "starting ty"}, {"progress": "indexing"}, {"ok": "checked"}]
    assert one.call("status", progress=True) == [
        {"progress": "a"}, {"progress": "b"}, {"ok": "waited"}]
    assert one.call("check") == [{"ok": "checked"}]
    assert one.call("status") == [{"ok": "waited"}]


def test_calls_sent_at_once_are_answered_one_at_a_time_in_their_order(
    served: Callable[..., Served],
) -> None:
    """A check that takes a while, then a quick call, in one write: the quick one waits."""
    order: list[str] = []

    async def at_once(message: dict[str, Any], progress: Any) -> dict[str, Any]:
        order.append("check begins")
        await asyncio.sleep(0.05)  # the check's own work, not a synchronisation
        order.append("check ends")
        return {"ok": message["args"]["n"]}

    def waiting(message: dict[str, Any], progress: Any) -> dict[str, Any]:
        order.append("status")
        return {"ok": message["args"]["n"]}

    one = served(at_once=at_once, waiting=waiting)
    one.client.sendall(b"".join(frames.encode({"call": call, "args": {"n": n}})
                                for n, call in enumerate(["check", "status", "check"])))
    assert [one.read_answer() for _ in range(3)] == [[{"ok": 0}], [{"ok": 1}], [{"ok": 2}]]
    assert order == ["check begins", "check ends", "status", "check begins", "check ends"]


def test_a_checks_entries_travel_in_its_answer_not_a_late_answer_made_meanwhile_on_its_loop(
    served: Callable[..., Served], followed: Followed,
) -> None:
    """The check's record rides in its answer; a late answer another task of the same loop
    records while the check waits is the ledger connection's, as a late answer always is,
    and the client's copy gets both, once."""
    journal = followed.journal

    async def at_once(message: dict[str, Any], progress: Any) -> dict[str, Any]:
        async def late() -> None:
            journal.channel.record(report("late.py", "late"))

        await asyncio.get_running_loop().create_task(late())
        journal.channel.record(report("a.py", "mine"))
        return {"ok": {"files": []}}

    one = served(at_once=at_once, journal=journal)
    [answer] = one.call("check")
    carried = answer["journal"]
    assert [(kind, entry["files"][0]["path"]) for _, kind, entry in carried] == [
        (RECORDED, "/w/a.py")]
    followed.ledger.carry(carried, answer["ok"], broker=1)
    assert followed.copy_once_the_broker_ends() == ["late", "mine"]


@pytest.mark.parametrize("how", ["in time", "near its deadline", "behind ledger entries"])
def test_a_check_whose_client_went_ends_first_and_leaves_its_entries_to_the_ledger(
    served: Callable[..., Served], followed: Followed, monkeypatch: pytest.MonkeyPatch,
    how: str,
) -> None:
    """The client goes while its check runs: the check runs to its end, and the entries its
    answer carried reach the ledger connection, whether the answer was written on the loop,
    or by the connection's thread after a blocking write (near the client's deadline, or
    behind entries waiting for the ledger connection); only then does the connection's
    thread end (and with it the session's connection: its service is never closed under a
    check of its own)."""
    journal = followed.journal
    if how == "behind ledger entries":
        monkeypatch.setattr(journal, "writing", lambda: True)
    release = asyncio.Event()
    events: list[str] = []

    async def at_once(message: dict[str, Any], progress: Any) -> dict[str, Any]:
        journal.channel.record(report("a.py", "mine"))
        await release.wait()
        events.append("check done")
        return {"ok": {"files": []}}

    one = served(at_once=at_once, journal=journal, late=how == "near its deadline",
                 events=events)
    frames.send(one.client, {"call": "check", "args": {}})
    one.client.shutdown(socket.SHUT_RDWR)
    assert one.lost.wait(10.0)
    one.loop.call_soon_threadsafe(release.set)
    one.thread.join(10.0)
    assert not one.thread.is_alive()
    assert events == ["client gone", "check done", "connection ended"]
    assert followed.copy_once_the_broker_ends() == ["mine"]


def test_a_late_calls_entries_are_written_on_the_ledger_connection_before_its_answer(
    served: Callable[..., Served], followed: Followed,
) -> None:
    """An answer near the client's deadline (`Answers.late`): its entries go on the ledger
    connection first, by the connection's thread (a blocking write), and in the answer."""
    journal = followed.journal
    writes: list[str] = []
    real = journal.flush

    def flush() -> None:
        writes.append(threading.current_thread().name)
        real()

    journal.flush = flush  # type: ignore[method-assign]

    async def at_once(message: dict[str, Any], progress: Any) -> dict[str, Any]:
        journal.channel.record(report("a.py", "mine"))
        return {"ok": {"files": []}}

    one = served(at_once=at_once, journal=journal, late=True)
    [answer] = one.call("check")
    assert [kind for _, kind, _ in answer["journal"]] == [RECORDED]
    assert "connection" in writes and "loop" not in writes
    # the copy holds it though the answer's entries were never given to it
    assert followed.copy_once_the_broker_ends() == ["mine"]


def test_an_answer_the_client_has_not_taken_whole_leaves_its_entries_to_the_ledger_too(
    served: Callable[..., Served], followed: Followed,
) -> None:
    """An answer larger than the socket's buffer, to a client not reading yet: what the
    write could not hand over waits in the connection's buffer, and the entries it carries
    go on the ledger connection as well (the copy gets them without the answer's)."""
    journal = followed.journal

    async def at_once(message: dict[str, Any], progress: Any) -> dict[str, Any]:
        journal.channel.record(report("a.py", "mine"))
        return {"ok": {"files": [], "padding": "x" * (8 << 20)}}

    one = served(at_once=at_once, journal=journal)
    [answer] = one.call("check")  # read once it was written, in part, and buffered
    assert len(answer["ok"]["padding"]) == 8 << 20
    assert followed.copy_once_the_broker_ends() == ["mine"]


def test_an_answer_over_the_limit_ends_the_connection_and_leaves_its_entries_to_the_ledger(
    served: Callable[..., Served], followed: Followed, monkeypatch: pytest.MonkeyPatch,
) -> None:
    journal = followed.journal
    monkeypatch.setattr(frames, "MAX_FRAME", 64 * 1024)

    async def at_once(message: dict[str, Any], progress: Any) -> dict[str, Any]:
        journal.channel.record(report("a.py", "mine"))
        return {"ok": {"files": [], "padding": "x" * (128 * 1024)}}

    one = served(at_once=at_once, journal=journal)
    frames.send(one.client, {"call": "check", "args": {}})
    with pytest.raises(frames.FrameError, match="closed"):
        frames.receive(one.client, time.monotonic() + 10.0)
    one.thread.join(10.0)
    assert not one.thread.is_alive()
    assert followed.copy_once_the_broker_ends() == ["mine"]


def test_a_connection_the_loop_does_not_take_is_refused_in_time() -> None:
    """A context's loop that does not run (wedged, or closed): `serve` says so within its
    bound (`serve.TAKEN_WITHIN`), and the broker ends that connection."""
    idle = asyncio.new_event_loop()  # never run
    ours, theirs = socket.socketpair()
    try:
        connection = Connection(Answers(
            on_loop=lambda m: True, at_once=named, waiting=named_here, late=lambda m, r: False,
            journal=Journal(), touch=lambda: None, stopping=threading.Event()), idle)
        with pytest.raises(OSError, match="did not take"):
            connection.serve(theirs, 0.2)
    finally:
        for end in (ours, theirs):
            end.close()
        idle.close()


def test_a_message_over_the_limit_ends_the_connection(served: Callable[..., Served]) -> None:
    one = served()
    one.client.sendall(struct.pack(">I", frames.MAX_FRAME + 1))
    one.thread.join(10.0)
    assert not one.thread.is_alive()
    assert one.client.recv(1) == b""


@pytest.mark.parametrize("call", ["check", "status"])
def test_a_call_that_raises_is_answered_failed_with_its_entries_and_the_next_is_answered(
    served: Callable[..., Served], call: str,
) -> None:
    """Our bug in a check (on the loop) or another call (on the connection's thread): the
    client gets one line, and the entries the call made before it raised, in its answer."""
    journal = Journal()

    async def at_once(message: dict[str, Any], progress: Any) -> dict[str, Any]:
        if message["args"].get("fail"):
            journal.channel.record(report("a.py", "mine"))
            raise RuntimeError("our bug")
        return {"ok": "checked"}

    def waiting(message: dict[str, Any], progress: Any) -> dict[str, Any]:
        if message["args"].get("fail"):
            journal.channel.record(report("a.py", "mine"))
            raise RuntimeError("our bug")
        return {"ok": "waited"}

    journal.open(socket.socketpair()[0])  # followed: the channel journals its records
    one = served(at_once=at_once, waiting=waiting, journal=journal)
    [answer] = one.call(call, fail=True)
    assert answer["error"] == {"kind": "failed", "message": "RuntimeError('our bug')"}
    assert [(kind, entry["files"][0]["path"]) for _, kind, entry in answer["journal"]] == [
        (RECORDED, "/w/a.py")]
    assert one.call(call) == [{"ok": "checked" if call == "check" else "waited"}]


@pytest.mark.parametrize("call", ["check", "status"])
def test_a_call_that_fails_unanswered_ends_its_connection_alone(
    served: Callable[..., Served], call: str,
) -> None:
    """Our bug past a call's answer (here its lateness cannot be told), on the loop or the
    connection's thread: that connection ends (the client sees it closed, as a broker gone:
    `Broker.call` retries on a new connection), and its thread with it; the loop carries
    on."""
    def late() -> bool:
        raise RuntimeError("our bug")

    async def at_once(message: dict[str, Any], progress: Any) -> dict[str, Any]:
        journal.channel.record(report("a.py", "mine"))  # an entry: its lateness is asked
        return {"ok": "checked"}

    def waiting(message: dict[str, Any], progress: Any) -> dict[str, Any]:
        journal.channel.record(report("a.py", "mine"))
        return {"ok": "waited"}

    journal = Journal()
    journal.open(socket.socketpair()[0])
    failing = served(at_once=at_once, waiting=waiting, journal=journal, late=late)
    frames.send(failing.client, {"call": call, "args": {}})
    with pytest.raises(frames.FrameError, match="closed"):
        frames.receive(failing.client, time.monotonic() + 10.0)
    failing.thread.join(10.0)
    assert not failing.thread.is_alive()
    assert failing.events == ["client gone", "connection ended"]
    assert asyncio.run_coroutine_threadsafe(asyncio.sleep(0, "alive"), failing.loop).result(
        10.0) == "alive"


def test_a_stop_call_stops_the_broker_once_its_answer_is_written(
    served: Callable[..., Served],
) -> None:
    one = served()
    assert not one.stopping.is_set()
    assert one.call("stop") == [{"ok": "connection"}]
    assert one.stopping.wait(10.0)


def test_unframing_takes_messages_as_their_bytes_arrive() -> None:
    data = b"".join(frames.encode(m) for m in ({"a": 1}, {"b": "\u00e9"}, {"c": []}))
    unframing = frames.Unframing()
    got = []
    for byte in data:
        unframing.feed(bytes([byte]))
        while (message := unframing.next()) is not None:
            got.append(message)
    assert got == [{"a": 1}, {"b": "\u00e9"}, {"c": []}]
    assert unframing.next() is None
    refused = frames.Unframing()
    refused.feed(struct.pack(">I", frames.MAX_FRAME + 1))
    with pytest.raises(frames.FrameError, match="over"):
        refused.next()
    not_one = frames.Unframing()
    not_one.feed(struct.pack(">I", 3) + b"[1]")
    with pytest.raises(frames.FrameError, match="not a message"):
        not_one.next()
