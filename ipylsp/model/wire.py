"""The one JSON form of the model's values when they cross a process boundary (the broker's
socket): `to_wire` and `from_wire`, exact both ways.

A frozen dataclass is an object of its init fields, an enum its value, a `Path` its string, a
tuple or frozenset a list (a `Sequence` or an `Iterable` is read as a tuple), a mapping an
object (string keys); `from_wire` rebuilds a value from
the declared types of the fields (`typing.get_type_hints`), so a new field needs no code here.
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

T = TypeVar("T")

_SCALARS = (str, int, float, bool, type(None))


def to_wire(value: object) -> Any:
    """`value` as JSON-ready data (dicts, lists, strings, numbers, booleans, None)."""
    if isinstance(value, enum.Enum):
        return to_wire(value.value)
    if isinstance(value, _SCALARS):
        return value
    if isinstance(value, Path):
        return str(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_wire(getattr(value, f.name))
                for f in dataclasses.fields(value) if f.init}
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"a mapping's key must be a str on the wire, not {key!r}")
            out[key] = to_wire(item)
        return out
    if isinstance(value, (tuple, list, frozenset, set)):
        items = sorted(value, key=repr) if isinstance(value, (frozenset, set)) else value
        return [to_wire(item) for item in items]
    raise TypeError(f"{type(value).__name__} has no wire form")


def from_wire(kind: Any, data: Any) -> Any:
    """The value of type `kind` (a class or a typing form) that `to_wire` made `data` from;
    `ValueError` when `data` is not one."""
    try:
        return _read(kind, data)
    except ValueError:
        raise
    except (TypeError, KeyError, AttributeError) as exc:
        raise ValueError(f"not a {_name(kind)} on the wire: {exc}") from None


def read(kind: type[T], data: Any) -> T:
    """`from_wire` for a class, typed."""
    return cast("T", from_wire(kind, data))


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _name(kind: Any) -> str:
    return getattr(kind, "__name__", None) or str(kind)


def _read(kind: Any, data: Any) -> Any:
    if kind is Any or kind is object:
        return data
    origin = typing.get_origin(kind)
    args = typing.get_args(kind)
    if origin is typing.Union or origin is types.UnionType:
        if data is None and type(None) in args:
            return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _read(arg, data)
            except (ValueError, TypeError, KeyError) as exc:
                errors.append(str(exc))
        raise ValueError(f"{data!r} is none of {_name(kind)}: {'; '.join(errors)}")
    if origin is typing.Literal:
        if data in args:
            return data
        raise ValueError(f"{data!r} is not one of {args}")
    if origin in (tuple, frozenset, set, list, Sequence, Iterable) or kind in (tuple, list):
        if not isinstance(data, list):
            raise ValueError(f"expected a list for {_name(kind)}, got {type(data).__name__}")
        if origin is tuple and args and not (len(args) == 2 and args[1] is Ellipsis):
            if len(args) != len(data):
                raise ValueError(f"expected {len(args)} items, got {len(data)}")
            return tuple(_read(a, d) for a, d in zip(args, data, strict=True))
        item = args[0] if args else Any
        items = [_read(item, d) for d in data]
        if origin is frozenset:
            return frozenset(items)
        return items if origin is list else tuple(items)
    if kind is dict or (isinstance(origin, type) and issubclass(origin, Mapping)):
        if not isinstance(data, dict):
            raise ValueError(f"expected an object for {_name(kind)}")
        value_kind = args[1] if len(args) == 2 else Any
        return {str(k): _read(value_kind, v) for k, v in data.items()}
    if isinstance(kind, type):
        if issubclass(kind, enum.Enum):
            return kind(data)
        if kind is Path or issubclass(kind, Path):
            if not isinstance(data, str):
                raise ValueError(f"expected a path string, got {type(data).__name__}")
            return Path(data)
        if dataclasses.is_dataclass(kind):
            if not isinstance(data, dict):
                raise ValueError(f"expected an object for {kind.__name__}")
            hints = _hints(kind)
            given = {}
            for f in dataclasses.fields(kind):
                if f.init and f.name in data:
                    given[f.name] = _read(hints[f.name], data[f.name])
            return kind(**given)
        if kind is float and isinstance(data, (int, float)) and not isinstance(data, bool):
            return float(data)
        if kind in _SCALARS:
            if kind is int and isinstance(data, bool):
                raise ValueError("expected an int, got a bool")
            if not isinstance(data, kind):
                raise ValueError(f"expected {kind.__name__}, got {type(data).__name__}")
            return data
    raise TypeError(f"{_name(kind)} has no wire form")
