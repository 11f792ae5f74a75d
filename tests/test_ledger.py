"""The ledger's two ends (`broker/ledger.py`) over a socket pair, no broker process: the
client's copy follows the session's journal (records made by calls, late ones written by the
connection's thread, hand-overs), keeps it when the broker's end dies, and a new session
takes it over once. tests/test_broker_owed.py does it with real brokers, SIGKILLed."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ipylsp.broker import frames
from ipylsp.broker.ledger import Entry, Journal, Ledger, answering
from ipylsp.model.diagnostics import Diagnostic, FileReport, Range, Report, Severity
from ipylsp.model.wire import to_wire


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
        ledger.follow(theirs, pid)

    def die(self) -> None:
        """What a SIGKILL leaves: the entries written so far, then the end of the connection
        (the copy read to it)."""
        self.journal.flush()
        self.end.shutdown(socket.SHUT_RDWR)
        self.ledger.settle()
        self.thread.join(5.0)
        self.end.close()


def checked_by_a_call(journal: Journal, name: str, message: str) -> list[Entry]:
    """The entries a call (`answering`) made whose check of `name` found `message`."""
    with answering() as made:
        journal.channel.record(report(name, message))
    return made


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
        frames.send(end, {RECORDED: to_wire(report(f"f{n}.py", f"m{n}")), "seq": n},
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
    frames.send(end, {RECORDED: to_wire(report("a.py", "before")), "seq": 0}, deadline)
    frames.send(end, {RECORDED: {"files": "not a report"}, "seq": 1}, deadline)
    frames.send(end, {RECORDED: to_wire(report("b.py", "after")), "seq": 2}, deadline)
    until(lambda: len(ledger._raw) == 3)
    assert messages(ledger.channel.owed()) == ["before"]
    assert not ledger.following
    reader = ledger._reader
    assert reader is not None
    reader.join(30.0)
    assert not reader.is_alive()
    assert messages(ledger.close().owed()) == ["before"]
    end.close()


def frames_read(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """The frames the ledger's reader receives on its connection, as it receives them."""
    seen: list[bytes] = []
    receive = frames.receive_bytes

    def counted(sock: socket.socket, deadline: float | None = None) -> bytes:
        body = receive(sock, deadline)
        seen.append(body)
        return body

    monkeypatch.setattr(frames, "receive_bytes", counted)
    return seen


def test_a_calls_entries_travel_in_its_answer_and_take_their_place_among_the_late_ones(
    ledger: Ledger, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A check's record and a hand-over, made by calls (`answering`), reach the copy in
    their answers (`carry`), not on the ledger connection, which carries the whole channel
    and the late answer made between them; delivered in the wrong order, the copy applies
    them in the channel's, so that it owes what the session owes."""
    received = frames_read(monkeypatch)
    first = Broker(Journal(), ledger, pid=1)
    channel = first.journal.channel
    with answering() as checked:
        channel.record(report("a.py", *(f"a{n}" for n in range(12))))
    check_answer = first.journal.carry(checked, late=False)
    channel.record(report("late.py", "late"))  # a server's late answer: the thread writes it
    with answering() as handed:
        _, left = channel.take()
    assert left == 2
    hand_over_answer = first.journal.carry(handed, late=False)
    assert [number for number, _, _ in check_answer + hand_over_answer] == [1, 3]
    ledger.carry(hand_over_answer, broker=1)  # the hand-over's answer read first
    ledger.carry(check_answer, broker=1)
    first.die()
    assert [json.loads(body)["seq"] for body in received] == [0, 2]  # none of the calls'
    assert ledger.channel.owed() == channel.owed()
    assert sorted(messages(ledger.channel.owed())) == ["a10", "a11"]


def test_entries_the_client_may_not_read_in_an_answer_go_on_the_ledger_as_well_once(
    ledger: Ledger, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An answer sent near the client's deadline (`late`) carries its entries and the
    ledger connection writes them too; one whose sending failed (`unread`) has them written
    there only. Either way the copy applies each once: a record applied twice would owe
    its problems twice."""
    received = frames_read(monkeypatch)
    first = Broker(Journal(), ledger, pid=1)
    channel = first.journal.channel
    late = checked_by_a_call(first.journal, "late_call.py", "near the deadline")
    ledger.carry(first.journal.carry(late, late=True), broker=1)
    first.journal.unread(checked_by_a_call(first.journal, "unsent.py", "never answered"))
    first.die()
    assert [json.loads(body)["seq"] for body in received] == [0, 1, 2]
    assert ledger.channel.owed() == channel.owed()
    assert len(ledger.channel) == len(channel) == 2


def test_an_entry_waits_for_the_one_before_it_when_the_copy_reads_as_they_come(
    ledger: Ledger, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Read as they come (`KEPT_RAW` of 1: at every entry), a hand-over that arrives before
    the record it took waits for it: applied first, it would take nothing, and the record
    after it would owe what was handed over."""
    from ipylsp.broker import ledger as ledger_module
    from ipylsp.service.outputs.pending import OWED, RECORDED, TAKEN

    monkeypatch.setattr(ledger_module, "KEPT_RAW", 1)
    end, theirs = socket.socketpair()
    ledger.follow(theirs, pid=1)
    deadline = time.monotonic() + 30.0
    frames.send(end, {OWED: to_wire(Report()), "seq": 0}, deadline)
    checked = report("a.py", "handed over")
    ledger.carry([[2, TAKEN, to_wire(checked)]], broker=1)
    until(lambda: not ledger._raw and ledger._next == 1)  # the whole channel read
    assert ledger._held.keys() == {2}  # its turn has not come
    ledger.carry([[1, RECORDED, to_wire(checked)]], broker=1)
    assert not ledger._held and ledger._next == 3
    assert len(ledger.close()) == 0
    end.close()


def test_a_checks_entry_names_its_answers_files_instead_of_sending_them_again(
    ledger: Ledger,
) -> None:
    """A check's record holds files of its answer's report as they are: it travels as their
    places in the answer, which the copy reads them from; an entry of other files (a
    hand-over's, in the answer of a tool) travels whole; places the answer does not have
    stop the copy."""
    journal = Journal()
    end, theirs = socket.socketpair()
    journal.open(end)  # followed (its first entry, the whole channel, is number 0)
    checked = report("a.py", "introduced")
    answer = to_wire(Report(files=(report("clean.py").files[0], *checked.files)))
    with answering() as made:
        journal.channel.record(checked)
    carried = journal.carry(made, late=False, answer=answer)
    assert carried == [[1, "recorded", {"answer_files": [1]}]]
    assert journal.carry(made, late=False, answer={"text": "a tool's"}) == [
        [1, "recorded", to_wire(checked)]]
    ledger.carry(carried, answer, broker=0)
    assert ledger.channel.owed() == journal.channel.owed()
    assert messages(ledger.channel.owed()) == ["introduced"]
    ledger.carry([[2, "recorded", {"answer_files": [5]}]], answer, broker=0)
    assert messages(ledger.channel.owed()) == ["introduced"]
    assert ledger._broken  # read when the copy is: it follows no more
    end.close()
    theirs.close()


def test_an_answer_near_the_clients_deadline_counts_as_one_it_may_not_read() -> None:
    """`serve._late`: within `LATE_WITHIN` of the `within` the request said (counted from
    when it was received), or from a client that does not say, the answer's entries go on
    the ledger connection as well."""
    from ipylsp.broker import serve
    from ipylsp.broker.ledger import LATE_WITHIN

    now = time.monotonic()
    assert not serve._late({"within": 30.0}, now)
    assert serve._late({"within": LATE_WITHIN / 2}, now)
    assert serve._late({"within": 30.0}, now - 30.0)
    assert serve._late({}, now)
    assert serve._late({"within": "30"}, now)


def test_an_answer_not_read_makes_the_copy_ask_for_the_whole_channel_again(
    ledger: Ledger,
) -> None:
    """A call whose answer the client did not read (it gave up, was interrupted): what the
    answer carried is not in the copy, which follows no more (`resync`) and keeps what it
    had; the session's next ledger connection starts from the whole channel, which holds
    it."""
    first = Broker(Journal(), ledger, pid=1)
    channel = first.journal.channel
    read_one = checked_by_a_call(first.journal, "a.py", "read")
    ledger.carry(first.journal.carry(read_one, late=False), broker=1)
    unread = checked_by_a_call(first.journal, "b.py", "never read")
    first.journal.carry(unread, late=False)  # an answer that goes nowhere
    ledger.resync()
    assert not ledger.following
    assert messages(ledger.channel.owed()) == ["read"]
    again = Broker(first.journal, ledger, pid=1)  # the next call's ledger connection
    again.die()
    assert ledger.channel.owed() == channel.owed()
    assert sorted(messages(ledger.channel.owed())) == ["never read", "read"]
    first.thread.join(30.0)  # its stream was replaced: its thread ended
    assert not first.thread.is_alive()
    first.end.close()


def test_an_answer_of_a_broker_the_copy_no_longer_follows_is_not_applied(
    ledger: Ledger,
) -> None:
    """Another thread's call replaced a killed broker while this one's answer, read from the
    old one, was not yet carried: the old session's copy went to the new one without it, and
    its number is the new session's. Applied, it would take the place of the new session's
    own entry of that number."""
    Broker(Journal(), ledger, pid=1).die()
    second = Broker(Journal(), ledger, pid=2)
    made = checked_by_a_call(second.journal, "new.py", "the new session's")
    ledger.carry([[1, "recorded", to_wire(report("old.py", "the old broker's"))]], broker=1)
    ledger.carry(second.journal.carry(made, late=False), broker=2)
    second.die()
    assert messages(ledger.channel.owed()) == ["the new session's"]


def test_entries_that_wait_too_long_for_one_that_never_came_are_applied_and_resynced(
    ledger: Ledger, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`WAITING_AT_MOST` entries wait for one that never came (an answer lost on its way):
    they are applied in their order, and the copy asks for the whole channel again."""
    from ipylsp.broker import ledger as ledger_module
    from ipylsp.service.outputs.pending import OWED, RECORDED

    monkeypatch.setattr(ledger_module, "WAITING_AT_MOST", 3)
    monkeypatch.setattr(ledger_module, "KEPT_RAW", 1)  # read at every entry
    end, theirs = socket.socketpair()
    ledger.follow(theirs, pid=1)
    frames.send(end, {OWED: to_wire(Report()), "seq": 0}, time.monotonic() + 30.0)
    until(lambda: not ledger._raw and ledger._next == 1)
    for number in (2, 3):
        ledger.carry([[number, RECORDED, to_wire(report(f"f{number}.py", f"m{number}"))]],
                     broker=1)
    assert ledger.following and len(ledger._held) == 2  # waiting for 1
    ledger.carry([[4, RECORDED, to_wire(report("f4.py", "m4"))]], broker=1)
    assert not ledger.following
    assert sorted(messages(ledger.close().owed())) == ["m2", "m3", "m4"]
    end.close()


@pytest.mark.parametrize("how", ["late", "interrupted"])
def test_a_call_whose_answer_the_client_does_not_read_makes_its_copy_resync(
    ledger: Ledger, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str,
) -> None:
    """`Broker.call` that gives up on an answer (its deadline passed) or is interrupted
    while it waits (a kernel's interrupt): its connection is closed, and whatever the answer
    carried is not in the copy, which follows no more, so that the next call's ledger
    connection starts from the whole channel."""
    from ipylsp.broker.client import Broker, BrokerLate
    from ipylsp.broker.place import Place

    end, theirs = socket.socketpair()
    ledger.follow(theirs, pid=7)
    client = Broker(Place(tmp_path, "build"), "secret", {}, restart=False, idle=None)
    client._ledger = ledger
    silent, broker_end = socket.socketpair()  # a broker that takes the call and says nothing
    client._idle.append((silent, 7))
    if how == "interrupted":
        def interrupted(sock: socket.socket, deadline: float | None = None) -> Any:
            raise KeyboardInterrupt
        monkeypatch.setattr(frames, "receive", interrupted)
    with pytest.raises(BrokerLate if how == "late" else KeyboardInterrupt):
        client.call("check_files", {}, timeout=0.2)
    assert not ledger.following
    assert silent.fileno() == -1  # closed: no connection left half read
    monkeypatch.undo()
    assert frames.receive(broker_end, time.monotonic() + 5.0)["call"] == "check_files"
    for made in (end, broker_end):
        made.close()


def test_a_resync_still_takes_what_the_connection_holds(
    ledger: Ledger, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A call fails because its broker was killed, just after the broker wrote a late
    answer's entry on the ledger connection, and before the client's reader read it: the
    copy asks for the whole channel again (`resync`), and still takes that entry, which the
    killed broker's session owed and the next broker's takes over."""
    from ipylsp.service.outputs.pending import OWED, RECORDED

    gate = threading.Event()
    receive = frames.receive_bytes

    def held_back(sock: socket.socket, deadline: float | None = None) -> bytes:
        assert gate.wait(30.0)  # the reader waits for the interpreter meanwhile
        return receive(sock, deadline)

    monkeypatch.setattr(frames, "receive_bytes", held_back)
    end, theirs = socket.socketpair()
    ledger.follow(theirs, pid=1)
    deadline = time.monotonic() + 30.0
    frames.send(end, {OWED: to_wire(Report()), "seq": 0}, deadline)
    frames.send(end, {RECORDED: to_wire(report("late.py", "late answer")), "seq": 1}, deadline)
    end.close()  # SIGKILLed
    ledger.resync()
    assert not ledger.following
    gate.set()
    ledger.settle()
    assert messages(ledger.channel.owed()) == ["late answer"]


def test_what_a_bad_entry_left_waiting_is_not_applied_as_the_next_brokers(
    ledger: Ledger,
) -> None:
    """After an entry that is not one, what came after it waits, never applied (it would
    apply without the bad one); following a new broker, whose session numbers its entries
    from 0 again, it must not take the place of the new session's entry of its number."""
    from ipylsp.service.outputs.pending import RECORDED

    end, theirs = socket.socketpair()
    ledger.follow(theirs, pid=1)
    deadline = time.monotonic() + 30.0
    frames.send(end, {RECORDED: to_wire(report("a.py", "before")), "seq": 0}, deadline)
    frames.send(end, {RECORDED: {"files": "not a report"}, "seq": 1}, deadline)
    end.close()
    until(lambda: len(ledger._raw) == 2)
    assert messages(ledger.channel.owed()) == ["before"]  # read: the bad one stops it
    ledger.carry([[3, RECORDED, to_wire(report("old.py", "after the bad one"))]], broker=1)
    ledger.settle()
    assert messages(ledger.channel.owed()) == ["before"]
    second = Broker(Journal(), ledger, pid=2)
    for n in range(4):  # the new session's entries 1-4 (its whole channel is 0)
        journal_entry = checked_by_a_call(second.journal, f"n{n}.py", f"new {n}")
        ledger.carry(second.journal.carry(journal_entry, late=False), broker=2)
    second.die()
    assert ledger.channel.owed() == second.journal.channel.owed()
    assert "after the bad one" not in messages(ledger.channel.owed())
