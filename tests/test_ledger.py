"""The ledger's two ends (`broker/ledger.py`) over a socket pair, no broker process: the
client's copy follows the session's journal (records made by calls, late ones written by the
connection's thread, hand-overs), keeps it when the broker's end dies, and a new session
takes it over once. tests/test_broker_owed.py does it with real brokers, SIGKILLed."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ipylsp.broker import frames
from ipylsp.broker.ledger import Journal, Ledger
from ipylsp.model.diagnostics import Diagnostic, FileReport, Range, Report, Severity
from ipylsp.model.wire import read, to_wire


def report(name: str, *messages: str) -> Report:
    found = tuple(Diagnostic(Range.of(n, 0, n, 3), Severity.ERROR, m, "ty", "E1", "ty")
                  for n, m in enumerate(messages))
    return Report(files=(FileReport(Path("/w") / name, name, diagnostics=found, current=found,
                                    servers=("ty",)),))


def messages(channel_report: Report) -> list[str]:
    return [d.message for f in channel_report.files for d in f.diagnostics]


class Broker:
    """A journal served on one end of a socket pair, the ledger following the other; its
    session takes over the ledger's copy first, as at the ledger connection's hello."""

    def __init__(self, journal: Journal, ledger: Ledger, pid: int) -> None:
        journal.adopt(ledger.owed()["owed"])
        self.journal = journal
        self.ledger = ledger
        self.stopping = threading.Event()
        self.end, theirs = socket.socketpair()
        stream = journal.open(self.end)
        self.thread = threading.Thread(target=journal.serve,
                                       args=(stream, self.stopping, lambda: None), daemon=True)
        self.thread.start()
        # its first entry (the whole channel) says the journal is followed: read here, so
        # that what the test does next is journaled; then the ledger reads the rest
        [(entry, value)] = frames.receive(theirs, time.monotonic() + 5.0).items()
        ledger.channel.replay(entry, read(Report, value))
        ledger.follow(theirs, pid)

    def die(self) -> None:
        """What a SIGKILL leaves: the entries written so far, then the end of the connection
        (the copy read to it)."""
        self.journal.flush()
        self.end.shutdown(socket.SHUT_RDWR)
        self.ledger.settle()
        self.thread.join(5.0)
        self.end.close()


def until(condition: Callable[[], bool], within: float = 30.0) -> None:
    """Wait for `condition` (another thread's doing), failing after `within` seconds."""
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, "not within the deadline"
        time.sleep(0.005)


@pytest.fixture
def ledger() -> Iterator[Ledger]:
    made = Ledger()
    yield made
    made.close()


def test_the_copy_follows_records_late_answers_and_hand_overs_and_outlives_the_broker(
    ledger: Ledger,
) -> None:
    first = Broker(Journal(), ledger, pid=1)
    channel = first.journal.channel
    channel.record(report("a.py", *(f"a{n}" for n in range(12))))  # a check's
    first.journal.flush()  # before the check's answer
    channel.record(report("late.py", "late"))  # a late answer: the thread writes it
    until(lambda: "late" in messages(ledger.channel.owed()))  # no flush: the thread's write
    taken, left = channel.take()
    assert left == 2  # a.py's two beyond the 10 a hand-over takes
    first.die()
    assert ledger.channel.owed() == channel.owed()
    assert len(ledger.channel) == 2

    second = Broker(Journal(), ledger, pid=2)
    # the copy is the new session's now (its journal's first entry): owed once, not twice
    second.journal.adopt(to_wire(report("again.py", "twice")))  # a session adopts once
    second.die()
    assert ledger.channel.owed() == second.journal.channel.owed()
    rest, left = second.journal.channel.take()
    assert left == 0
    assert sorted(messages(taken) + messages(rest)) == sorted(
        [*(f"a{n}" for n in range(12)), "late"])


def test_a_released_copy_holds_every_entry_the_connection_had_received(
    ledger: Ledger,
) -> None:
    """`close` (a broker let go of: `Broker.release_ledger`) reads what the connection holds
    to its end before closing it: 300 entries written, then the broker's end closed, and all
    300 are in the copy however far the reader had got."""
    from ipylsp.service.outputs.pending import RECORDED

    end, theirs = socket.socketpair()
    ledger.follow(theirs, pid=1)
    for n in range(300):
        frames.send(end, {RECORDED: to_wire(report(f"f{n}.py", f"m{n}"))},
                    time.monotonic() + 30.0)
    end.close()
    copy = ledger.close()
    assert sorted(messages(copy.owed())) == sorted(f"m{n}" for n in range(300))


def test_a_copy_stops_at_an_entry_that_is_not_one(ledger: Ledger) -> None:
    """A frame that is no entry: the copy keeps what came before it, applies nothing after it
    (it would apply without what the bad one said), follows no more (the next call's ledger
    connection starts from the whole channel), and its reader ends, so that letting go of it
    waits for nothing."""
    from ipylsp.service.outputs.pending import RECORDED

    end, theirs = socket.socketpair()
    ledger.follow(theirs, pid=1)
    deadline = time.monotonic() + 30.0
    frames.send(end, {RECORDED: to_wire(report("a.py", "before"))}, deadline)
    frames.send(end, {RECORDED: {"files": "not a report"}}, deadline)
    frames.send(end, {RECORDED: to_wire(report("b.py", "after"))}, deadline)
    until(lambda: len(ledger._raw) == 3)
    assert messages(ledger.channel.owed()) == ["before"]
    assert not ledger.following
    reader = ledger._reader
    assert reader is not None
    reader.join(30.0)
    assert not reader.is_alive()
    assert messages(ledger.close().owed()) == ["before"]
    end.close()
