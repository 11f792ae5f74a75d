"""The one JSON form of the model's values when they cross a process boundary (the broker's
socket): `to_wire` and `from_wire`, exact both ways.

A frozen dataclass is an object of its init fields, an enum its value, a `Path` its string, a
tuple or frozenset a list (a `Sequence` or an `Iterable` is read as a tuple), a mapping an
object (string keys); `from_wire` rebuilds a value from
the declared types of the fields (`typing.get_type_hints`), so a new field needs no code here.
Each type's reader and writer is made once, at its first use, and kept (`_reader`, `_writer`):
a check's report crosses twice per cell, and reading the annotations each time cost most of
what the socket adds to it.
`Any` fields (a server's settings) pass as the JSON they already are. What is not JSON-able
raises `TypeError` when sent, and what does not match its type raises `ValueError` when
received: a peer's bad message never becomes a half-built value.

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


def _writer(cls: type) -> Callable[[Any], Any]:
    if issubclass(cls, enum.Enum):
        return lambda value: to_wire(value.value)
    if issubclass(cls, _SCALARS):
        return _same
    if issubclass(cls, Path):
        return str
    if dataclasses.is_dataclass(cls):
        names = tuple(f.name for f in dataclasses.fields(cls) if f.init)
        return lambda value: {name: to_wire(getattr(value, name)) for name in names}
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
    if origin in (tuple, frozenset, set, list, Sequence, Iterable) or kind in (tuple, list):
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
            def path(data: Any) -> Any:
                if not isinstance(data, str):
                    raise ValueError(f"expected a path string, got {type(data).__name__}")
                return kind(data)
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
    if origin is tuple and args and not (len(args) == 2 and args[1] is Ellipsis):
        readers = [_reader(a) for a in args]

        def fixed(data: Any) -> Any:
            if not isinstance(data, list):
                raise ValueError(f"expected a list for {_name(kind)}, got {type(data).__name__}")
            if len(readers) != len(data):
                raise ValueError(f"expected {len(readers)} items, got {len(data)}")
            return tuple(r(d) for r, d in zip(readers, data, strict=True))
        return fixed
    item = _reader(args[0]) if args else _same
    made: Callable[[list[Any]], Any] = (
        frozenset if origin is frozenset else _same if origin is list else tuple)

    def sequence(data: Any) -> Any:
        if not isinstance(data, list):
            raise ValueError(f"expected a list for {_name(kind)}, got {type(data).__name__}")
        return made([item(d) for d in data])
    return sequence


def _dataclass_reader(kind: type) -> Callable[[Any], Any]:
    """Its init fields' readers are made at its first reading, not here: a dataclass may
    hold itself."""
    fields: list[tuple[str, Callable[[Any], Any]]] | None = None

    def dataclass(data: Any) -> Any:
        nonlocal fields
        if not isinstance(data, dict):
            raise ValueError(f"expected an object for {kind.__name__}")
        if fields is None:
            hints = typing.get_type_hints(kind)
            fields = [(f.name, _reader(hints[f.name])) for f in dataclasses.fields(kind)
                      if f.init]
        return kind(**{name: reader(data[name]) for name, reader in fields if name in data})
    return dataclass


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
