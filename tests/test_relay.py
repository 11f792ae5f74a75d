"""`broker.relay.RelayedService` against a broker that fails in each way it can (units: a stub
broker, no socket): a check the broker took and did not answer is "timed out" and the kernel
checks in-process from then on, said once; a broker gone answers in-process at once; a broker
that refuses a stop of shared servers stops nothing. Queries: a declared feature crosses as its
kind and parameters, each one's answer type round trips through JSON, a caller's own feature
is asked here."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ipylsp.broker.client import ANSWER_MARGIN, BrokerError, BrokerLate, BrokerUnavailable
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

    def tool(self, name: str, arguments: Any, *, root: Path, max_chars: int | None,
             timeout: float) -> Any:
        return self.call("tool", {"name": name, "arguments": arguments, "root": str(root),
                                  "max_chars": max_chars, "timeout": timeout}, timeout=timeout)

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    """A file no server reads: a check or a query of it in this process starts none."""
    made = tmp_path / "notes.xyz"
    made.write_text("text\n")
    return made


def relayed(broker: StubBroker, tmp_path: Path) -> RelayedService:
    def no_other(settings: Settings, owed: Any = None) -> Any:
        raise AssertionError("not asked for another broker")

    return RelayedService(broker, Settings(directory=tmp_path, wait_budget=2.0),  # type: ignore[arg-type]  # a stub
                          make_broker=no_other)


LATE = "the broker did not answer within 7.0 s"


@pytest.fixture
def hung(tmp_path: Path) -> Iterator[tuple[StubBroker, RelayedService]]:
    """A relayed service whose broker takes every call and never answers it (`LATE`)."""
    broker = StubBroker(BrokerLate(LATE))
    service = relayed(broker, tmp_path)
    try:
        yield broker, service
    finally:
        service.close()


@pytest.mark.real  # the local check looks for a git HEAD baseline
def test_a_check_the_broker_took_and_never_answered_is_timed_out_then_checked_here(
    hung: tuple[StubBroker, RelayedService], notes: Path,
) -> None:
    broker, service = hung
    [late] = service.check_files([FileCheck(notes)]).files
    assert [(u.reason, u.detail) for u in late.unknown] == [(UnknownReason.TIMED_OUT, LATE)]
    assert service.fallback == f"the broker did not answer ({LATE})"
    assert broker.closed and [name for name, _ in broker.calls] == ["service"]
    [here] = service.check_files([FileCheck(notes)]).files  # in this process now
    assert (here.path, here.servers, here.unknown) == (notes, (), ())  # no server reads it
    assert len(broker.calls) == 1


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

    given: list[Any] = []

    def another(settings: Settings, owed: Any = None) -> Any:
        given.append(owed)
        made.append(StubBroker(None))
        return made[-1]

    copy = broker.ledger
    service = RelayedService(broker, Settings(directory=tmp_path), make_broker=another)  # type: ignore[arg-type]  # a stub
    try:
        moved = replace(service.settings, directory=tmp_path / "sub", severity="all")
        broker.answer = to_wire(moved)
        assert service.configure(moved) == moved
        [(name, args)] = broker.calls
        assert (name, args["method"]) == ("service", "configure") and made == []
        assert service.configure(replace(moved, wait_budget=30.0)).wait_budget == 30.0
        assert broker.closed and len(made) == 1  # a new session, in the context it makes
        assert given == [copy] and copy is not None  # which owes what the old one did
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


# -- queries: a declared feature crosses as its kind and parameters -----------------------------


def sample(kind: Any) -> Any:
    """A value of the type `kind` with every optional field set (what a round trip must keep),
    made from the declared types: a feature with a new answer type needs nothing here."""
    import dataclasses
    import enum
    import types
    import typing

    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin in (typing.Union, types.UnionType):
        return sample(next(a for a in args if a is not type(None)))
    if origin is tuple:
        return (sample(args[0]), sample(args[0])) if args[-1] is Ellipsis else tuple(
            sample(a) for a in args)
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        return list(kind)[-1]
    if dataclasses.is_dataclass(kind):
        hints = typing.get_type_hints(kind)
        return kind(**{f.name: sample(hints[f.name]) for f in dataclasses.fields(kind)
                       if f.init})
    made = {str: "é «x»", int: 3, float: 2.5, bool: True, Path: Path("/w/a.py"),
            type(None): None}
    return made[kind]


def test_every_declared_features_result_crosses_the_wire_whole() -> None:
    """Each declared feature, given parameters of its type, crosses as its kind and params,
    and its result (answer of its `answer_type`, the reasons, a store's stand-in) comes back
    equal through JSON."""
    import json

    from ipylsp.lsp.requests import FeatureResult
    from ipylsp.lsp.requests.declared import DECLARED, from_wire_form, wire_form
    from ipylsp.model.diagnostics import Cached, Unknown

    assert len(DECLARED) == 13
    for kind, declared in DECLARED.items():
        given = declared.given(sample(type(declared.params)))
        form = wire_form(given)
        assert form is not None and form["kind"] == kind
        assert from_wire_form(json.loads(json.dumps(form))) == given, kind
        result = FeatureResult(given, sample(declared.answer_type), "ty",
                               (Unknown("ruff", UnknownReason.TIMED_OUT, "late", "wait"),),
                               Cached(12.5, stale=True))
        wire = json.loads(json.dumps(result.to_wire()))
        back = given.result_from_wire(wire)
        assert (back, back.answer) == (result, result.answer), kind
        assert given.result_from_wire(FeatureResult(given).to_wire()) == FeatureResult(given)
        with pytest.raises(ValueError):  # another feature's answer is not one
            given.result_from_wire({**wire, "answer": {"nothing": "of it"}})


def test_a_feature_of_the_callers_own_is_not_a_declared_one() -> None:
    from dataclasses import replace

    from ipylsp.lsp.requests.calls import CALLS
    from ipylsp.lsp.requests.declared import from_wire_form, wire_form
    from ipylsp.lsp.requests.hover import HOVER

    assert wire_form(replace(HOVER, render=lambda answer, root: ["mine"])) is None
    assert wire_form(HOVER.given(7)) is None  # parameters of another type
    assert wire_form(CALLS.given("outgoing")) == {"kind": "calls", "params": "outgoing"}
    with pytest.raises(ValueError, match="no feature 'format_disk'"):
        from_wire_form({"kind": "format_disk", "params": None})
    with pytest.raises(ValueError):
        from_wire_form({"kind": "rename", "params": ["not", "a", "name"]})


def test_a_declared_query_is_answered_by_the_broker_in_this_clients_session(
    tmp_path: Path,
) -> None:
    """A declared feature with its parameters (calls, outgoing) goes to the broker as its kind,
    params and place (the path made absolute here); its answer is the broker's, read as the
    feature's answer type, and no service is made in this process."""
    import os

    from ipylsp.lsp.requests import FeatureResult
    from ipylsp.lsp.requests.calls import CALLS
    from ipylsp.model.answers import Symbol

    outgoing = CALLS.given("outgoing")
    answer = FeatureResult(outgoing, (Symbol("area", "method", 4, 8, 0, tmp_path / "a.py"),),
                           "ty")
    broker = StubBroker(None, answer=answer.to_wire())
    service = relayed(broker, tmp_path)
    here = os.getcwd()
    try:
        os.chdir(tmp_path)
        assert service.feature(outgoing, "a.py", 3, 4) == answer
        [(name, args)] = broker.calls
        assert (name, args) == ("feature", {
            "feature": {"kind": "calls", "params": "outgoing"},
            "path": str(tmp_path / "a.py"), "line": 3, "column": 4,
            "timeout": service.settings.wait_budget})  # all of it is left: nothing was spent
        assert service._local is None and service.fallback is None
        with pytest.raises(ValueError, match="non-negative"):  # the caller's, not the broker's
            service.feature(outgoing, "a.py", -1, 0)
        assert len(broker.calls) == 1 and service.fallback is None
    finally:
        os.chdir(here)
        service.close()


def test_a_query_the_broker_took_and_never_answered_is_timed_out_then_asked_here(
    hung: tuple[StubBroker, RelayedService], notes: Path,
) -> None:
    from ipylsp.lsp.requests.hover import HOVER

    broker, service = hung
    late = service.feature(HOVER, notes, 0, 0)
    assert (late.reason, late.error) == (UnknownReason.TIMED_OUT, LATE)
    assert service.fallback == f"the broker did not answer ({LATE})"
    here = service.feature(HOVER, notes, 0, 0)  # this process's service now
    assert (here.reason, len(broker.calls)) == (UnknownReason.NO_LANGUAGE, 1)


def test_a_feature_that_cannot_cross_or_an_answer_that_is_not_one_is_asked_here(
    tmp_path: Path, notes: Path,
) -> None:
    from dataclasses import replace

    from ipylsp.lsp.requests.hover import HOVER

    broker = StubBroker(None, answer={"answer": ["not", "a", "hover"]})
    service = relayed(broker, tmp_path)
    try:
        own = replace(HOVER, empty="(mine)")
        assert service.feature(own, notes).reason is UnknownReason.NO_LANGUAGE
        assert broker.calls == [] and service.fallback is None  # the broker still answers
        assert service.feature(HOVER, notes).reason is UnknownReason.NO_LANGUAGE
        assert (service.fallback or "").startswith("the broker's answer to hover is not one (")
    finally:
        service.close()


def test_the_broker_asks_a_relayed_query_of_the_clients_session(tmp_path: Path,
                                                                 notes: Path) -> None:
    """The broker's side: the feature found by its kind, the place read as `Service.feature`
    types it; a feature not declared, or a place it does not take, is refused."""
    from ipylsp.broker.relay import answer_feature, feature_call
    from ipylsp.lsp.requests.rename import RENAME
    from ipylsp.service import Service

    call = feature_call(RENAME.given("Box"), notes, 0, 1, 2.0)
    assert call is not None
    with Service(Settings(directory=tmp_path)) as service:
        result = RENAME.given("Box").result_from_wire(answer_feature(service, call))
        assert (result.kind, result.reason) == ("rename", UnknownReason.NO_LANGUAGE)
        for bad in ({"feature": {"kind": "shell", "params": None}}, {"line": "0"},
                    {"path": "notes.xyz"}, {"timeout": "soon"}):
            with pytest.raises(ValueError):
                answer_feature(service, {**call, **bad})


def test_an_agents_tool_on_the_brokers_service_is_answered_by_the_broker_whole(
    tmp_path: Path, notes: Path,
) -> None:
    """`Toolbox.call` where the service is the broker's (a kernel's, a Jupyter server's):
    the broker answers the call whole, for the box's root and characters, within the call's
    budget; `lsp_check_cell`, whose cells are this process's, is not sent; a call the broker
    took and never answered is a `timeout` said as the box says its own; a broker gone for
    good leaves this process to answer."""
    from ipylsp.agent.result import ToolResult
    from ipylsp.agent.toolbox import Toolbox

    answered = ToolResult(ok=True, text="the broker's answer").to_dict()
    broker = StubBroker(None, answered)
    box = Toolbox(relayed(broker, tmp_path), tmp_path, max_chars=900)
    result = box.call("lsp_status", {}, budget=3.0)
    assert result.to_dict() == answered
    [(call, args)] = broker.calls
    assert (call, args) == ("tool", {"name": "lsp_status", "arguments": {},
                                     "root": str(tmp_path.resolve()), "max_chars": 900,
                                     "timeout": 3.0 + ANSWER_MARGIN})
    box.call("lsp_check_cell", {"code": "x = 1"})  # answered here: only its check is sent
    assert [(name, args["method"]) for name, args in broker.calls[1:]] == [
        ("service", "check_files")]

    late = Toolbox(relayed(StubBroker(BrokerLate(LATE)), tmp_path), tmp_path)
    timed_out = late.call("lsp_status", {})
    assert (timed_out.ok, timed_out.error_code) == (False, "timeout")
    assert timed_out.text == f"error [timeout]: {LATE}; retry"

    gone = relayed(StubBroker(BrokerUnavailable("gone")), tmp_path)
    here = Toolbox(gone, tmp_path).call("lsp_check", {"path": str(notes)})
    assert here.text == ("error [unsupported_language]: no language server reads notes.xyz "
                         "(unknown file type)")  # this process's own answer
    assert gone.fallback is not None and "no broker" in gone.fallback
    gone.close()
