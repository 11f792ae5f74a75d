"""The model's wire form (`model/wire.py`): each dataclass's written reader and writer give what
reading and writing field by field gave (the same JSON, the same values, the same errors), and
take the general way where they do not apply (a key missing, a dict or str of a subclass, a
class whose `__init__` is its own). The broker's tests (tests/test_broker.py) round-trip every
model value through JSON; these hold the edges."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from ipylsp.model import wire
from ipylsp.model.checks import FileCheck
from ipylsp.model.diagnostics import (
    Cached,
    Diagnostic,
    FileReport,
    Position,
    Range,
    Report,
    Severity,
    Unknown,
    UnknownReason,
)
from ipylsp.model.environment import Environment
from ipylsp.model.wire import from_wire, read, to_wire


def _diagnostic(line: int, **extra: Any) -> Diagnostic:
    return Diagnostic(Range(Position(line, 9), Position(line, 14)), Severity.ERROR,
                      f"problem {line}", **extra)


REPORT = Report(
    files=(FileReport(
        path=Path("/x/a.py"), display_path="a.py",
        diagnostics=(_diagnostic(0, source="ty", code="invalid-assignment", server_id="ty"),),
        current=(_diagnostic(0, cached=Cached(1.5, stale=True)), _diagnostic(3)),
        unknown=(Unknown("ruff", UnknownReason.TIMED_OUT, "after 1.0 s"),),
        servers=("ty", "ruff"), cell=7, cell_id="c-1",
    ),),
    root=Path("/x"), notes=("a note",),
)

DIAGNOSTIC_WIRE = {
    "range": {"start": {"line": 3, "column": 9}, "end": {"line": 3, "column": 14}},
    "severity": 1, "message": "problem 3", "source": None, "code": None, "server_id": "",
    "cached": None, "ran_without_error": False,
}


def test_a_report_is_written_as_ever_and_read_back() -> None:
    data = to_wire(REPORT)
    assert json.dumps(data) == (
        '{"files": [{"path": "/x/a.py", "display_path": "a.py", "diagnostics": [{"range": '
        '{"start": {"line": 0, "column": 9}, "end": {"line": 0, "column": 14}}, "severity": 1, '
        '"message": "problem 0", "source": "ty", "code": "invalid-assignment", "server_id": '
        '"ty", "cached": null, "ran_without_error": false}], "current": [{"range": {"start": '
        '{"line": 0, "column": 9}, "end": {"line": 0, "column": 14}}, "severity": 1, "message": '
        '"problem 0", "source": null, "code": null, "server_id": "", "cached": {"written_at": '
        '1.5, "stale": true}, "ran_without_error": false}, ' + json.dumps(DIAGNOSTIC_WIRE)
        + '], "fixed": [], "unknown": [{"server_id": "ruff", "reason": "timed out", "detail": '
        '"after 1.0 s", "hint": ""}], "servers": ["ty", "ruff"], "elsewhere": false, "cell": 7, '
        '"cell_id": "c-1"}], "root": "/x", "notes": ["a note"], "unknown": []}')
    back = read(Report, json.loads(json.dumps(data)))
    assert back == REPORT
    assert type(back.files[0].diagnostics) is tuple
    assert type(back.files[0].current[0].severity) is Severity
    assert to_wire(back) == data


def test_a_value_whose_field_holds_another_class_is_written_by_that_class() -> None:
    """A field's declared type only picks the shortcut: an int for an enum, a list for a tuple,
    a str for a path are written as `to_wire` writes them."""
    odd = Diagnostic(Range(Position(0, 1), Position(0, 2)), 2, "m",  # type: ignore[arg-type]
                     cached=Cached(True, stale=1))  # type: ignore[arg-type]
    assert to_wire(odd)["severity"] == 2
    assert to_wire(odd)["cached"] == {"written_at": True, "stale": 1}
    listed = FileReport(path="/a", display_path="a",  # type: ignore[arg-type]
                        servers=["ty", Severity.HINT],  # type: ignore[arg-type]
                        diagnostics=[odd])  # type: ignore[arg-type]
    data = to_wire(listed)
    assert (data["path"], data["servers"], data["diagnostics"]) == (
        "/a", ["ty", 4], [to_wire(odd)])
    with pytest.raises(TypeError, match="object has no wire form"):
        to_wire(FileReport(Path("/a"), "a", servers=(object(),)))  # type: ignore[arg-type]


def test_keys_absent_are_left_to_the_defaults_and_extra_keys_are_ignored() -> None:
    assert read(FileCheck, {"path": "/a"}) == FileCheck(Path("/a"))
    assert read(FileCheck, {"path": "/a", "virtual": True, "new": 1}) == FileCheck(
        Path("/a"), virtual=True)
    short = {key: value for key, value in DIAGNOSTIC_WIRE.items()
             if key in ("range", "severity", "message")}
    assert read(Diagnostic, short) == _diagnostic(3)
    assert read(Report, {}) == Report()
    with pytest.raises(ValueError, match=r"missing 1 required positional argument: 'column'"):
        read(Position, {"line": 1})


@pytest.mark.parametrize(("kind", "data", "error"), [
    (Position, {"line": "0", "column": 1}, "expected int, got str"),
    (Position, {"line": 0, "column": True}, "expected an int, got a bool"),
    (Position, {"line": 0, "column": 1.0}, "expected int, got float"),
    (Cached, {"written_at": True}, "expected float, got bool"),
    (Cached, {"written_at": 1.0, "stale": 0}, "expected bool, got int"),
    (Diagnostic, {**DIAGNOSTIC_WIRE, "severity": 99}, "99 is not a valid Severity"),
    (Diagnostic, {**DIAGNOSTIC_WIRE, "severity": "1"}, "'1' is not a valid Severity"),
    (Diagnostic, {**DIAGNOSTIC_WIRE, "severity": [1]}, r"\[1\] is not a valid Severity"),
    (Diagnostic, {**DIAGNOSTIC_WIRE, "message": None}, "expected str, got NoneType"),
    (Diagnostic, {**DIAGNOSTIC_WIRE, "source": 3},
     r"^3 is none of str \| None: expected str, got int$"),
    (Diagnostic, {**DIAGNOSTIC_WIRE, "cached": {"stale": True}},
     r"^\{'stale': True\} is none of ipylsp.model.diagnostics.Cached \| None: .*missing 1 "
     r"required positional argument: 'written_at'$"),
    (Diagnostic, {**DIAGNOSTIC_WIRE, "range": [1, 2]}, "expected an object for Range"),
    (Unknown, {"server_id": "ty", "reason": "bored"}, "'bored' is not a valid UnknownReason"),
    (Report, None, "expected an object for Report"),
    (Report, {"files": [1]}, "expected an object for FileReport"),
    (Report, {"files": {}}, "expected a list for tuple, got dict"),
    (Report, {"root": 1},  # (`pathlib._local` from Python 3.13)
     r"^1 is none of pathlib\.(_local\.)?Path \| None: expected a path string, got int$"),
    (Report, {"notes": ["a", 1]}, "expected str, got int"),
    (FileReport, {"path": "/a", "display_path": "a", "cell": "3"},
     r"^'3' is none of int \| None: expected int, got str$"),
    (Environment, {"executable": "p", "prefix": "/", "variables": [["PATH"]]},
     "expected 2 items, got 1"),
    (Environment, {"executable": "p", "prefix": "/", "variables": [["PATH", "/a", "/b"]]},
     "expected 2 items, got 3"),
    (tuple[FileCheck, ...], [{"path": "/a"}, {"before": "x"}],
     "missing 1 required positional argument: 'path'"),
])
def test_malformed_data_says_what_is_wrong(kind: Any, data: Any, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        from_wire(kind, data)


def test_optional_fields_read_none_or_their_value() -> None:
    data = {"path": "/a", "display_path": "a", "cell": None, "cell_id": "c"}
    assert read(FileReport, data) == FileReport(Path("/a"), "a", cell_id="c")
    assert read(FileReport, {**data, "cell": 3, "cell_id": None}).cell == 3
    cached = read(Diagnostic, {**DIAGNOSTIC_WIRE, "cached": {"written_at": 2}}).cached
    assert cached == Cached(2.0) and type(cached.written_at) is float
    assert read(Report, {"root": None}).root is None


def test_subclasses_of_dict_and_str_are_read_the_general_way() -> None:
    class Object(dict[str, Any]):
        pass

    class Text(str):
        __slots__ = ()

    read_back = read(Diagnostic, Object({**DIAGNOSTIC_WIRE, "message": Text("problem 3")}))
    assert read_back == _diagnostic(3)
    assert type(read_back.message) is Text  # as it was given: the reader checks, not copies
    assert read(FileReport, {"path": Text("/a"), "display_path": "a"}).path == Path("/a")


@dataclass(frozen=True)
class Node:
    """A dataclass that holds itself, in a union and in a tuple."""

    name: str
    parent: Node | None = None
    children: tuple[Node, ...] = ()
    weight: float = 1.0
    anything: Any = None


def test_a_dataclass_that_holds_itself_is_read_and_written() -> None:
    tree = Node("root", children=(
        Node("a", parent=Node("up"), children=(Node("a1", weight=2.5),)),
        Node("b", anything={"raw": [1, None]}),
    ))
    data = json.loads(json.dumps(to_wire(tree)))
    assert data["children"][0] == {
        "name": "a", "parent": {"name": "up", "parent": None, "children": [], "weight": 1.0,
                                "anything": None},
        "children": [{"name": "a1", "parent": None, "children": [], "weight": 2.5,
                      "anything": None}],
        "weight": 1.0, "anything": None}
    assert read(Node, data) == tree
    with pytest.raises(ValueError, match="expected str, got int"):
        read(Node, {"name": "r", "children": [{"name": "a", "children": [{"name": 1}]}]})
    with pytest.raises(ValueError) as raised:
        read(Node, {"name": "r", "parent": {"name": "p", "parent": {"name": None}}})
    assert str(raised.value) == (
        "{'name': 'p', 'parent': {'name': None}} is none of tests.test_wire.Node | None: "
        "{'name': None} is none of tests.test_wire.Node | None: expected str, got NoneType")


def test_any_is_the_data_itself() -> None:
    raw = {"nested": [1, {"x": None}]}
    assert read(Node, {"name": "n", "anything": raw}).anything is raw


@dataclass(frozen=True)
class Checked:
    """A dataclass whose `__post_init__` refuses a value: reading still calls it."""

    count: int

    def __post_init__(self) -> None:
        if self.count < 0:
            raise ValueError(f"a negative count: {self.count}")


@dataclass(frozen=True)
class Reordered:
    """A dataclass with an `__init__` of its own, its parameters in another order: it is given
    its fields by keyword, as ever."""

    first: int
    second: str

    def __init__(self, second: str, first: int) -> None:
        object.__setattr__(self, "first", first)
        object.__setattr__(self, "second", second)


@dataclass(frozen=True)
class Keywords:
    """A field only by keyword between two others."""

    a: int
    b: int = field(default=2, kw_only=True)
    c: str = "c"


def test_constructors_run_with_the_fields_they_name() -> None:
    assert read(Checked, {"count": 2}) == Checked(2)
    with pytest.raises(ValueError, match="a negative count: -1"):
        read(Checked, {"count": -1})
    assert read(Reordered, {"first": 1, "second": "s"}) == Reordered(second="s", first=1)
    assert read(Keywords, {"a": 1, "b": 5, "c": "x"}) == Keywords(1, b=5, c="x")
    assert to_wire(Keywords(1, b=5)) == {"a": 1, "b": 5, "c": "c"}


def test_fields_are_given_by_position_only_where_that_binds_them_as_by_keyword() -> None:
    assert wire._by_position(Position, ["line", "column"]) == 2
    assert wire._by_position(Keywords, ["a", "b", "c"]) == 1
    assert wire._by_position(Reordered, ["first", "second"]) == 0


@dataclass(frozen=True)
class Unresolved:
    """A field whose type names what is not defined at run time (an import only for checks)."""

    value: Undefined  # type: ignore[name-defined]  # noqa: F821


@dataclass(frozen=True)
class HoldsUnresolved:
    maybe: Unresolved | None = None
    many: tuple[Unresolved, ...] = ()


def test_a_type_that_does_not_resolve_fails_only_the_reading_of_its_values() -> None:
    assert read(HoldsUnresolved, {"maybe": None, "many": []}) == HoldsUnresolved()
    with pytest.raises(NameError, match="Undefined"):
        read(HoldsUnresolved, {"many": [{"value": 1}]})
    with pytest.raises(ValueError, match="expected an object for Unresolved"):
        read(Unresolved, 1)
    assert to_wire(HoldsUnresolved(many=(Unresolved(Path("/p")),))) == {
        "maybe": None, "many": [{"value": "/p"}]}


def test_paths_read_are_kept_a_few_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wire, "_KEPT_PATHS", 2)
    kept = wire._kept_paths(Path)
    kept.clear()
    names = [f"/w/{n}.py" for n in range(5)]
    reports = [read(FileReport, {"path": name, "display_path": "x"}) for name in names * 2]
    assert [r.path for r in reports] == [Path(name) for name in names * 2]
    assert len(kept) <= 2
    assert read(Report, {"root": "/w/4.py"}).root is reports[-1].path
