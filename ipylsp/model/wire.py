"""The one JSON form of the model's values when they cross a process boundary (the broker's
socket): `to_wire` and `from_wire`, exact both ways.

A frozen dataclass is an object of its init fields, an enum its value, a `Path` its string, a
tuple or frozenset a list (a `Sequence` or an `Iterable` is read as a tuple), a mapping an
object (string keys); `from_wire` rebuilds a value from the declared types of the fields
(`typing.get_type_hints`), so a new field needs no code here.
`Any` fields (a server's settings) pass as the JSON they already are. What is not JSON-able
raises `TypeError` when sent, and what does not match its type raises `ValueError` when
received: a peer's bad message never becomes a half-built value; a key missing is the field's
default, a key not known is ignored.

How readers and writers are made: each type's reader and each class's writer once, at its
first use, and kept (`_reader`, `_writers`). A dataclass's are one function each, written for
it from its fields' declared types and compiled (`_Source`, `exec`) at its first use
(`_made_reader`, `_dataclass_writer`): each field in line, by a shortcut when the value is what
the field's type says (an exact `str`, `int`, `bool` or `float`, None; an enum's member by its
value; a path by its string; a nested dataclass by its own written function; a tuple item by
item) and else by the field's general reader, or `to_wire`, which gives the same value or raises
the same error as ever; data that is not a dict, or lacks a field's key, is read the general
way (`_general_reader`). The constructor is always called (its checks run, `__post_init__`
too), the fields by position where that binds them as keywords would (`_by_position`). The paths
read last are kept and given again (`_KeptPaths`): a path is a value, and making one costs more
than the dataclass that holds it.
Why: a check's report crosses twice per cell (the broker writes it, the kernel reads it), and a
one-error report (800 bytes of JSON, 14 dataclasses, 31 scalars) read through a closure per
field cost 0.05 ms, more than twice its constructors; read so, it costs about as much as they
do (2.4-3x faster; 1.7x when its paths are new), and it is written about 3x faster. The price
is paid once per process, at first use: 3-4 ms for a report's readers (of which compiling,
0.3 ms a class) and as much for its writers, where the closures took under 1 ms.

Plain functions over the model: no I/O, nothing above the model, nothing but the standard
library (a thin client imports this).
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import types
import typing
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar, cast

if typing.TYPE_CHECKING:
    from collections.abc import Callable

T = TypeVar("T")

_SCALARS = (str, int, float, bool, type(None))
_SEQUENCES = (tuple, frozenset, set, list, Sequence, Iterable)
"""The origins of the types read from a list."""


def to_wire(value: object) -> Any:
    """`value` as JSON-ready data (dicts, lists, strings, numbers, booleans, None)."""
    cls = type(value)
    writer = _writers.get(cls)
    if writer is None:
        writer = _writers[cls] = _writer(cls)
    return writer(value)


def from_wire(kind: Any, data: Any) -> Any:
    """The value of type `kind` (a class or a typing form) that `to_wire` made `data` from;
    `ValueError` when `data` is not one."""
    try:
        return _reader(kind)(data)
    except ValueError:
        raise
    except (TypeError, KeyError, AttributeError) as exc:
        raise ValueError(f"not a {_name(kind)} on the wire: {exc}") from None


def read(kind: type[T], data: Any) -> T:
    """`from_wire` for a class, typed."""
    return cast("T", from_wire(kind, data))


def _name(kind: Any) -> str:
    return getattr(kind, "__name__", None) or str(kind)


def _same(value: Any) -> Any:
    return value


# -- writers: one per class, made at its first value -------------------------------------------


_writers: dict[type, Callable[[Any], Any]] = {}
"""Each class's writer (`_writer`), by class."""


def _writer(cls: type, making: frozenset[type] = frozenset()) -> Callable[[Any], Any]:
    """How a value of class `cls` is written; `making`: the dataclasses whose writers are being
    made further up (`_dataclass_writer`)."""
    if issubclass(cls, enum.Enum):
        return lambda value: to_wire(value.value)
    if issubclass(cls, _SCALARS):
        return _same
    if issubclass(cls, Path):
        return str
    if dataclasses.is_dataclass(cls):
        return _dataclass_writer(cls, making)
    if issubclass(cls, Mapping):
        return _write_mapping
    if issubclass(cls, (frozenset, set)):
        return lambda value: [to_wire(item) for item in sorted(value, key=repr)]
    if issubclass(cls, (tuple, list)):
        return lambda value: [to_wire(item) for item in value]
    return _no_wire_form


def _write_mapping(value: Mapping[Any, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, item in value.items():
        if not isinstance(key, str):
            raise TypeError(f"a mapping's key must be a str on the wire, not {key!r}")
        out[key] = to_wire(item)
    return out


def _no_wire_form(value: Any) -> Any:
    raise TypeError(f"{type(value).__name__} has no wire form")


# -- readers: one per type, made at its first reading ------------------------------------------


@functools.cache
def _reader(kind: Any) -> Callable[[Any], Any]:
    """How `data` of `kind` is read (`ValueError`, `TypeError`... when it is not one)."""
    if kind is Any or kind is object:
        return _same
    origin = typing.get_origin(kind)
    args = typing.get_args(kind)
    if origin is typing.Union or origin is types.UnionType:
        return _union_reader(kind, args)
    if origin is typing.Literal:
        def literal(data: Any) -> Any:
            if data in args:
                return data
            raise ValueError(f"{data!r} is not one of {args}")
        return literal
    if origin in _SEQUENCES or kind in (tuple, list):
        return _sequence_reader(kind, origin, args)
    if kind is dict or (isinstance(origin, type) and issubclass(origin, Mapping)):
        value_reader = _reader(args[1]) if len(args) == 2 else _same

        def mapping(data: Any) -> Any:
            if not isinstance(data, dict):
                raise ValueError(f"expected an object for {_name(kind)}")
            return {str(k): value_reader(v) for k, v in data.items()}
        return mapping
    if isinstance(kind, type):
        if issubclass(kind, enum.Enum):
            return kind
        if issubclass(kind, Path):
            kept = _kept_paths(kind)

            def path(data: Any) -> Any:
                if not isinstance(data, str):
                    raise ValueError(f"expected a path string, got {type(data).__name__}")
                return kept[data] if type(data) is str else kind(data)
            return path
        if dataclasses.is_dataclass(kind):
            return _dataclass_reader(kind)
        if kind is float:
            return _float
        if kind in _SCALARS:
            return _scalar_reader(kind)

    def none(data: Any) -> Any:
        raise TypeError(f"{_name(kind)} has no wire form")
    return none


def _union_reader(kind: Any, args: tuple[Any, ...]) -> Callable[[Any], Any]:
    optional = type(None) in args
    choices = [_reader(arg) for arg in args if arg is not type(None)]

    def union(data: Any) -> Any:
        if data is None and optional:
            return None
        errors = []
        for choice in choices:
            try:
                return choice(data)
            except (ValueError, TypeError, KeyError) as exc:
                errors.append(str(exc))
        raise ValueError(f"{data!r} is none of {_name(kind)}: {'; '.join(errors)}")
    return union


def _sequence_reader(kind: Any, origin: Any, args: tuple[Any, ...]) -> Callable[[Any], Any]:
    if _fixed(origin, args):
        readers = [_reader(a) for a in args]

        def fixed(data: Any) -> Any:
            if not isinstance(data, list):
                raise ValueError(f"expected a list for {_name(kind)}, got {type(data).__name__}")
            if len(readers) != len(data):
                raise ValueError(f"expected {len(readers)} items, got {len(data)}")
            return tuple(r(d) for r, d in zip(readers, data, strict=True))
        return fixed
    item = _reader(args[0]) if args else _same
    made = _made_of_items(origin)

    def sequence(data: Any) -> Any:
        if not isinstance(data, list):
            raise ValueError(f"expected a list for {_name(kind)}, got {type(data).__name__}")
        return made([item(d) for d in data])
    return sequence


def _fixed(origin: Any, args: tuple[Any, ...]) -> bool:
    """A tuple of so many items, each of its own type (`tuple[str, int]`)."""
    return origin is tuple and bool(args) and not (len(args) == 2 and args[1] is Ellipsis)


def _made_of_items(origin: Any) -> Callable[[list[Any]], Any]:
    """What the list of a sequence's read items becomes, by the type's origin."""
    return frozenset if origin is frozenset else _same if origin is list else tuple


def _items_of(kind: Any) -> tuple[Any, Callable[[list[Any]], Any]] | None:
    """The item type of a sequence of any length (`tuple[X, ...]`, `Sequence[X]`...) and what
    the list of its read items becomes (as `_sequence_reader` reads it); None for any other
    type (a fixed tuple, a bare `tuple`)."""
    origin = typing.get_origin(kind)
    args = typing.get_args(kind)
    if origin not in _SEQUENCES or not args or _fixed(origin, args):
        return None
    return args[0], _made_of_items(origin)


def _float(data: Any) -> float:
    if isinstance(data, (int, float)) and not isinstance(data, bool):
        return float(data)
    raise ValueError(f"expected float, got {type(data).__name__}")


def _scalar_reader(kind: type) -> Callable[[Any], Any]:
    def scalar(data: Any) -> Any:
        if kind is int and isinstance(data, bool):
            raise ValueError("expected an int, got a bool")
        if not isinstance(data, kind):
            raise ValueError(f"expected {kind.__name__}, got {type(data).__name__}")
        return data
    return scalar


class _KeptPaths(dict[str, Any]):
    """The paths of one class last read, by their strings (a path's reader gives a kept one; one
    missing is made and kept). A path is a value (immutable), making one (2-3 µs on Python 3.11)
    costs more than the dataclass that holds it, and the reports a client reads name the same
    few paths again and again (its root, its files). At most `_KEPT_PATHS`: all are forgotten
    when full."""

    def __init__(self, kind: type) -> None:
        super().__init__()
        self.kind = kind

    def __missing__(self, text: str) -> Any:
        if len(self) >= _KEPT_PATHS:
            self.clear()
        made = self[text] = self.kind(text)
        return made


_KEPT_PATHS = 1024
_kept_paths_by_class: dict[type, _KeptPaths] = {}


def _kept_paths(kind: type) -> _KeptPaths:
    kept = _kept_paths_by_class.get(kind)
    if kept is None:
        kept = _kept_paths_by_class[kind] = _KeptPaths(kind)
    return kept


# -- dataclasses: a reader and a writer each, written at its first use -------------------------
# (the module docstring says how and why; `_made_reader` and `_dataclass_writer` show one)


class _Source:
    """The text of one function being written (`def made(...)`), and the values its code names:
    its globals, each named once, by what it is and a number (`read3`, `cls0`)."""

    def __init__(self, title: str) -> None:
        self.title = title
        self.lines: list[str] = []
        self.names: dict[str, Any] = {}
        self.named: dict[int, str] = {}  # by the value's id: it is in `names` for good
        self.locals = 0

    def name(self, value: Any, what: str) -> str:
        name = self.named.get(id(value))
        if name is None:
            name = self.named[id(value)] = f"{what}{len(self.names)}"
            self.names[name] = value
        return name

    def local(self) -> str:
        """A new local name (a comprehension's item)."""
        self.locals += 1
        return f"x{self.locals}"

    def add(self, line: str) -> None:
        self.lines.append(line)

    def function(self) -> Callable[[Any], Any]:
        code = compile("\n".join(self.lines), f"<{__name__}: {self.title}>", "exec")
        exec(code, self.names)
        return cast("Callable[[Any], Any]", self.names["made"])


def _choose(source: _Source, shortcuts: list[tuple[str | None, str]], v: str,
            otherwise: Callable[[Any], Any], what: str) -> str:
    """An expression: the value of the first (test, value) shortcut whose test holds (None:
    always), else `otherwise` (named `what`) of `v`."""
    tested = ""
    for test, value in shortcuts:
        if test is None:
            return tested + value
        tested += f"{value} if {test} else "
    return f"{tested}{source.name(otherwise, what)}({v})"


def _plain(names: list[str]) -> bool:
    """Names the written code can spell as attributes and keywords: a dataclass's fields always
    are (a class body or `make_dataclass` takes no other), this says so."""
    return all(name.isidentifier() for name in names)


# Readers.

_made_readers: dict[type, Callable[[Any], Any]] = {}
"""Each dataclass's written reader (`_made_reader`), by class."""


def _dataclass_reader(kind: type) -> Callable[[Any], Any]:
    """`_reader`'s for a dataclass: `_made_reader`'s, made at its first reading, not here (its
    fields' types are read then: a dataclass may hold itself)."""
    made: Callable[[Any], Any] | None = None

    def dataclass(data: Any) -> Any:
        nonlocal made
        if made is None:
            if not isinstance(data, dict):  # said before the fields' types are read, as ever
                raise _not_an_object(kind)
            made = _made_reader(kind, frozenset())
        return made(data)
    return dataclass


def _not_an_object(kind: type) -> ValueError:
    return ValueError(f"expected an object for {kind.__name__}")


def _general_reader(kind: type, fields: list[tuple[str, Callable[[Any], Any]]]
                    ) -> Callable[[Any], Any]:
    """A dataclass read field by field, each by its reader, its keys absent left to the
    constructor's defaults: what its written reader does with data it does not take whole (not a
    dict, a key missing)."""
    def general(data: Any) -> Any:
        if not isinstance(data, dict):
            raise _not_an_object(kind)
        return kind(**{name: reader(data[name]) for name, reader in fields if name in data})
    return general


def _made_reader(kind: type, making: frozenset[type]) -> Callable[[Any], Any]:
    """`kind`'s reader written as one function, made once and kept: given a dict with a key for
    each init field, each field's value read by a shortcut when its test holds, else by the
    field's reader (`_read_shortcuts`), then the constructor called (never bypassed: its checks
    run); given anything else, `_general_reader`'s. `Position`'s, for one:

        def made(data, /):
            if type(data) is not dict:
                return general1(data)
            try:
                v0 = data['line']
                v1 = data['column']
            except KeyError:
                return general1(data)
            v0 = v0 if type(v0) is int else read2(v0)
            v1 = v1 if type(v1) is int else read2(v1)
            return cls0(v0, v1)

    `making`: the dataclasses whose readers are being written further up; this one reads them
    by their `_reader`s, which call their written readers once they are made (a dataclass may
    hold itself)."""
    made = _made_readers.get(kind)
    if made is not None:
        return made
    hints = typing.get_type_hints(kind)
    fields = [f.name for f in dataclasses.fields(kind) if f.init]
    readers = {name: _reader(hints[name]) for name in fields}
    general = _general_reader(kind, list(readers.items()))
    if not _plain(fields):
        made = _made_readers[kind] = general
        return made
    source = _Source(f"read {kind.__qualname__}")
    cls, fallback = source.name(kind, "cls"), source.name(general, "general")
    source.add("def made(data, /):")
    source.add("    if type(data) is not dict:")
    source.add(f"        return {fallback}(data)")
    if fields:
        source.add("    try:")
        source.lines += [f"        v{i} = data[{name!r}]" for i, name in enumerate(fields)]
        source.add("    except KeyError:")
        source.add(f"        return {fallback}(data)")
    making |= {kind}
    for i, name in enumerate(fields):
        if readers[name] is not _same:  # `Any`: the value as it is
            shortcuts = _read_shortcuts(source, hints[name], f"v{i}", making, raises=True)
            read = _choose(source, shortcuts, f"v{i}", readers[name], "read")
            source.add(f"    v{i} = {read}")
    by_position = _by_position(kind, fields)
    arguments = [f"v{i}" if i < by_position else f"{name}=v{i}" for i, name in enumerate(fields)]
    source.add(f"    return {cls}({', '.join(arguments)})")
    made = _made_readers[kind] = source.function()
    return made


def _read_shortcuts(source: _Source, kind: Any, v: str, making: frozenset[type], *,
                    raises: bool) -> list[tuple[str | None, str]]:
    """(test, value) pairs that read `v` (a name in the written code) as a `kind` exactly as
    `kind`'s reader would when the test holds; none when only the reader can tell. `raises`:
    also those that may raise the error the reader would (not in a union: a choice's error is
    the union's to say)."""
    if kind in (str, int, bool, float):  # a float: one with a point (an int is the reader's)
        return [(f"type({v}) is {kind.__name__}", v)]
    if kind is type(None):
        return [(f"{v} is None", v)]
    origin = typing.get_origin(kind)
    if origin is typing.Union or origin is types.UnionType:
        args = typing.get_args(kind)
        others = [arg for arg in args if arg is not type(None)]
        if len(others) != 1 or len(args) != 2:  # only an optional one: the union tries in turn
            return []
        return [(f"{v} is None", v), *_read_shortcuts(source, others[0], v, making, raises=False)]
    items = _items_of(kind)
    if items is not None:
        if not raises:
            return []
        item, made = items
        x = source.local()
        each = _choose(source, _read_shortcuts(source, item, x, making, raises=True), x,
                       _reader(item), "read")
        listed = f"[{each} for {x} in {v}]"  # made: the list, a tuple or a frozenset
        if made is not _same:
            listed = f"{made.__name__}({listed})"
        empty = "[]" if made is _same else "()" if made is tuple else "frozenset()"
        return [(f"type({v}) is list", f"({listed} if {v} else {empty})")]  # (no call when empty)
    if not isinstance(kind, type) or origin is not None:  # (`list[int]` is a type on 3.10)
        return []
    if issubclass(kind, enum.Enum):  # by value, where `kind(v)` looks first (`Enum.__new__`)
        value_types = {type(member.value) for member in kind.__members__.values()}
        if value_types not in ({str}, {int}):
            return []
        members = source.name({m.value: m for m in kind.__members__.values()}, "members")
        return [(f"type({v}) is {value_types.pop().__name__} and {v} in {members}",
                 f"{members}[{v}]")]
    if issubclass(kind, Path):
        return [(f"type({v}) is str", f"{source.name(_kept_paths(kind), 'paths')}[{v}]")]
    if dataclasses.is_dataclass(kind) and raises:  # its written reader takes anything
        try:  # its own fields' types may not resolve: then reading one says so, as ever
            reader = _reader(kind) if kind in making else _made_reader(kind, making)
        except Exception:
            reader = _reader(kind)
        return [(None, f"{source.name(reader, 'read')}({v})")]
    return []


def _by_position(kind: type, fields: list[str]) -> int:
    """How many of `fields` (its init fields, in order) `kind(...)` is given by position, which
    binds them exactly as by keyword: the leading ones its `__init__`, a plain function (the one
    `dataclass` wrote), names in that order as its first parameters, when no `__new__` or
    metaclass of its own sees the arguments too. (A call by keyword costs half as much again:
    the arguments become a dict and back.)"""
    code = getattr(getattr(kind, "__init__", None), "__code__", None)
    if (code is None or code.co_posonlyargcount or getattr(kind, "__new__", None) is not
            object.__new__ or type(kind).__call__ is not type.__call__):
        return 0
    parameters = code.co_varnames[1:code.co_argcount]  # after `self`
    count = 0
    while count < min(len(fields), len(parameters)) and fields[count] == parameters[count]:
        count += 1
    return count


# Writers.


def _dataclass_writer(cls: type, making: frozenset[type]) -> Callable[[Any], Any]:
    """`cls`'s writer written as one function: each init field read and written in turn, by a
    shortcut when its value's class is one its declared type names (`_write_shortcuts`), else by
    `to_wire`; then the object. Writing needs no declared types: when they do not resolve, each
    field is written by `to_wire`. `Position`'s, for one:

        def made(value, /):
            v0 = value.line
            v0 = v0 if type(v0) is int else to_wire0(v0)
            v1 = value.column
            v1 = v1 if type(v1) is int else to_wire0(v1)
            return {'line': v0, 'column': v1}

    `making`: the dataclasses whose writers are being written further up (a dataclass may hold
    itself); this one writes them by `to_wire`."""
    fields = [f.name for f in dataclasses.fields(cls) if f.init]
    if not _plain(fields):
        return lambda value: {name: to_wire(getattr(value, name)) for name in fields}
    try:
        hints = typing.get_type_hints(cls)
    except Exception:
        hints = {}
    source = _Source(f"write {cls.__qualname__}")
    making |= {cls}
    source.add("def made(value, /):")
    for i, name in enumerate(fields):
        shortcuts = _write_shortcuts(source, hints.get(name, Any), f"v{i}", making)
        source.add(f"    v{i} = value.{name}")
        source.add(f"    v{i} = {_choose(source, shortcuts, f'v{i}', to_wire, 'to_wire')}")
    source.add(f"    return {{{', '.join(f'{name!r}: v{i}' for i, name in enumerate(fields))}}}")
    return source.function()


def _write_shortcuts(source: _Source, kind: Any, v: str, making: frozenset[type]
                     ) -> list[tuple[str | None, str]]:
    """(test, value) pairs that write `v` (a name in the written code) exactly as `to_wire`
    would when the test holds: its class is one `kind` names."""
    origin = typing.get_origin(kind)
    if origin is typing.Union or origin is types.UnionType:
        return [shortcut for arg in typing.get_args(kind)
                for shortcut in _write_shortcuts(source, arg, v, making)]
    if origin in (tuple, Sequence, Iterable) and _items_of(kind) is not None:  # a tuple
        x = source.local()
        each = _choose(source, _write_shortcuts(source, typing.get_args(kind)[0], x, making), x,
                       to_wire, "to_wire")
        return [(f"type({v}) is tuple", f"([{each} for {x} in {v}] if {v} else [])")]
    if (not isinstance(kind, type) or origin is not None  # (`list[int]` is a type on 3.10)
            or kind in making or kind is Any or kind is object):
        return []
    if kind is Path:  # its values are the platform's class
        kind = type(Path())
    writer = _writers.get(kind)
    if writer is None:
        writer = _writers[kind] = _writer(kind, making)
    test: str = (f"{v} is None" if kind is type(None) else
            f"type({v}) is {kind.__name__}" if kind in (str, int, float, bool) else
            f"type({v}) is {source.name(kind, 'cls')}")
    if writer is _same:
        return [(test, v)]
    if writer is str:
        return [(test, f"str({v})")]
    if issubclass(kind, enum.Enum):
        values = {member: member.value for member in kind.__members__.values()}
        if all(type(value) in _SCALARS for value in values.values()):  # `to_wire`: the same
            return [(test, f"{source.name(values, 'values')}[{v}]")]
    return [(test, f"{source.name(writer, 'write')}({v})")]
