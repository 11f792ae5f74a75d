"""`broker.relay.RelayedService` against a broker that fails in each way it can (units: a stub
broker, no socket): a check the broker took and did not answer is "timed out" and the kernel
checks in-process from then on, said once; a broker gone answers in-process at once; a broker
that refuses a stop of shared servers stops nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ipylsp.broker.client import BrokerError, BrokerLate, BrokerUnavailable
from ipylsp.broker.relay import RelayedService, SharedServers, decode_args, encode_args
from ipylsp.model.checks import FileCheck
from ipylsp.model.diagnostics import UnknownReason
from ipylsp.model.settings import Settings
from ipylsp.service import PendingChannel


class StubBroker:
    """Answers every call by raising `failure` (None: with `answer`)."""

    def __init__(self, failure: Exception | None, answer: Any = None) -> None:
        self.failure = failure
        self.answer = answer
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.closed = False
        self.pid = 4242
        self.ledger: PendingChannel | None = PendingChannel()
        """The copy of what the session owes (`Broker.release_ledger`)."""

    def release_ledger(self) -> PendingChannel | None:
        ledger, self.ledger = self.ledger, None
        return ledger

    def call(self, name: str, args: Any, *, timeout: float, progress: Any = None) -> Any:
        self.calls.append((name, args(timeout) if callable(args) else args))
        if self.failure is not None:
            raise self.failure
        return self.answer

    def close(self) -> None:
        self.closed = True


def relayed(broker: StubBroker, tmp_path: Path) -> RelayedService:
    def no_other(settings: Settings) -> Any:
        raise AssertionError("not asked for another broker")

    return RelayedService(broker, Settings(directory=tmp_path, wait_budget=2.0),  # type: ignore[arg-type]  # a stub
                          make_broker=no_other)


@pytest.mark.real  # the local check looks for a git HEAD baseline
def test_a_check_the_broker_took_and_never_answered_is_timed_out_then_checked_here(
    tmp_path: Path,
) -> None:
    notes = tmp_path / "notes.xyz"  # no server reads it: the local check starts none
    notes.write_text("text\n")
    broker = StubBroker(BrokerLate("the broker did not answer within 7.0 s"))
    service = relayed(broker, tmp_path)
    try:
        [late] = service.check_files([FileCheck(notes)]).files
        assert [(u.reason, u.detail) for u in late.unknown] == [
            (UnknownReason.TIMED_OUT, "the broker did not answer within 7.0 s")]
        assert service.fallback == ("the broker did not answer (the broker did not answer "
                                    "within 7.0 s)")
        assert broker.closed and [name for name, _ in broker.calls] == ["service"]
        [here] = service.check_files([FileCheck(notes)]).files  # in this process now
        assert (here.path, here.servers, here.unknown) == (notes, (), ())  # no server reads it
        assert len(broker.calls) == 1
    finally:
        service.close()


def test_a_broker_gone_for_good_answers_in_process_at_once_and_says_so(tmp_path: Path) -> None:
    broker = StubBroker(BrokerUnavailable("the broker is gone"))
    service = relayed(broker, tmp_path)
    try:
        assert service.status() == []  # this process's: nothing started
        assert service.fallback == "no broker (the broker is gone)"
        assert service.pending_count == 0 and len(broker.calls) == 1
    finally:
        service.close()


def test_shared_servers_are_not_stopped_without_shared(tmp_path: Path) -> None:
    broker = StubBroker(BrokerError("shared", "2"))
    service = relayed(broker, tmp_path)
    try:
        with pytest.raises(SharedServers, match="shared with 2 other clients"):
            service.restart("ty")
        [(name, args)] = broker.calls
        assert (name, args["method"], args["shared"], args["args"]) == (
            "service", "restart", False, {"server_id": "ty"})
        assert service.fallback is None  # a refusal of this call, not of the broker
    finally:
        service.close()


def test_a_relayed_call_reads_its_arguments_against_the_facades_signature() -> None:
    files = (FileCheck(Path("/w/a.py"), before="x = 1\n"),)
    wire = encode_args("check_files", {"files": files, "timeout": 3.0})
    assert decode_args("check_files", wire) == {"files": files, "timeout": 3.0}
    with pytest.raises(ValueError, match="takes no 'shell'"):
        decode_args("check_files", {"shell": "rm -rf /"})
    with pytest.raises(ValueError):
        decode_args("restart", {"server_id": 7})
    with pytest.raises(ValueError, match="not a relayed facade method"):
        decode_args("close", {})


def test_every_member_of_the_facade_is_the_relayed_services_own() -> None:
    """`RelayedService` is a `Service` to its callers without inheriting its code: every
    public member is its own, and a relayed one reads its answer as `Service` types it."""
    import inspect

    from ipylsp.broker.relay import RELAYED, hints, signature
    from ipylsp.service import Service

    public = {name for name in vars(Service) if not name.startswith("_")}
    assert public - set(vars(RelayedService)) == set()
    for name in sorted(public):
        ours, theirs = vars(RelayedService)[name], vars(Service)[name]
        assert isinstance(ours, property) == isinstance(theirs, property), name
        if not isinstance(theirs, property):
            assert list(inspect.signature(theirs).parameters) <= list(
                inspect.signature(ours).parameters), name  # a relayed one may add `shared`
    for name in RELAYED:
        assert signature(RelayedService, name)["return"] == hints(name)["return"], name


@pytest.mark.real
def test_a_kernels_relayed_service_imports_none_of_the_services_machinery() -> None:
    import subprocess
    import sys

    code = ("import sys; import ipylsp.ipython.extension, ipylsp.broker.relay;"
            "print(sorted(m for m in sys.modules if m.startswith(('ipylsp.service.',"
            " 'ipylsp.lsp', 'ipylsp.store'))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "[]"


def test_a_broker_that_fails_a_call_leaves_this_process_to_answer_said_once(
    tmp_path: Path,
) -> None:
    broker = StubBroker(BrokerError("failed", "RuntimeError('this ipylsp Service is closed')"))
    service = relayed(broker, tmp_path)
    try:
        assert service.error_count() == 0  # answered here, not raised into the caller
        assert service.fallback == (
            "the broker failed (failed: RuntimeError('this ipylsp Service is closed'))")
        assert service.status() == [] and len(broker.calls) == 1
    finally:
        service.close()


def test_a_hung_check_rest_is_a_note_not_an_exception(tmp_path: Path) -> None:
    service = relayed(StubBroker(BrokerLate("no answer within 12.0 s")), tmp_path)
    try:
        report = service.check_rest()
        assert (report.files, report.notes) == (
            (), ("the files left unchecked were not checked: no answer within 12.0 s",))
    finally:
        service.close()


def test_a_closed_relayed_service_starts_nothing(tmp_path: Path) -> None:
    service = relayed(StubBroker(None, answer=[]), tmp_path)
    service.close()
    with pytest.raises(RuntimeError, match="closed"):
        service.status()


def test_the_clients_own_knobs_change_in_its_session_others_make_a_new_one(
    tmp_path: Path,
) -> None:
    from dataclasses import replace

    from ipylsp.model.wire import to_wire

    broker = StubBroker(None)
    made: list[StubBroker] = []

    def another(settings: Settings) -> Any:
        made.append(StubBroker(None))
        return made[-1]

    service = RelayedService(broker, Settings(directory=tmp_path), make_broker=another)  # type: ignore[arg-type]  # a stub
    try:
        moved = replace(service.settings, directory=tmp_path / "sub", severity="all")
        broker.answer = to_wire(moved)
        assert service.configure(moved) == moved
        [(name, args)] = broker.calls
        assert (name, args["method"]) == ("service", "configure") and made == []
        assert service.configure(replace(moved, wait_budget=30.0)).wait_budget == 30.0
        assert broker.closed and len(made) == 1  # a new session, in the context it makes
    finally:
        service.close()


def test_an_answer_that_is_not_one_leaves_this_process_to_answer(tmp_path: Path) -> None:
    service = relayed(StubBroker(None, answer={"not": "a list of statuses"}), tmp_path)
    try:
        assert service.status() == []  # this process's
        assert (service.fallback or "").startswith("the broker's answer to status is not one (")
    finally:
        service.close()


def test_what_a_broker_owed_is_handed_over_here_once_it_fails(tmp_path: Path) -> None:
    """Problems the broker's session owed (its ledger's copy, `broker/ledger.py`), not yet
    handed over when the broker fails, are handed over by this process (then its own)."""
    from ipylsp.model.diagnostics import (
        Diagnostic,
        FileReport,
        Position,
        Range,
        Report,
        Severity,
    )

    bad = tmp_path / "bad.py"
    problem = Diagnostic(Range(Position(0, 0), Position(0, 1)), Severity.ERROR, "boom", "ty",
                         "E1", "ty")
    broker = StubBroker(BrokerUnavailable("the broker is gone"))
    assert broker.ledger is not None
    broker.ledger.record(Report(files=(FileReport(bad, "bad.py", diagnostics=(problem,),
                                                  current=(problem,), servers=("ty",)),)))
    service = relayed(broker, tmp_path)
    try:
        assert str(service.pending()) == (
            '<diagnostics file="bad.py">\nERROR [1:1] boom [E1] (ty)\n</diagnostics>')
        assert service.fallback == "no broker (the broker is gone)"
        assert str(service.pending()) == "nothing pending"
        assert broker.ledger is None  # released once
    finally:
        service.close()
