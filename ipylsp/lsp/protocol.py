"""The protocol's vocabulary from lsprotocol, imported lazily.

lsprotocol (the LSP's official Python types) is slow to import (benchmarks/README.md,
bench_features.py) and its converter structures every answer through cattrs: worth it for the
feature requests (hover, definition, symbols, ...), where it replaces hand-written tables and
dict walking, and kept off the diagnostics path, which parses its few fields by hand
(`convert`) at wire speed. Nothing is imported until the first feature request.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, TypeVar

from ipylsp.lsp.errors import ClientError
from ipylsp.model.diagnostics import UnknownReason

if TYPE_CHECKING:
    from types import ModuleType

    import cattrs

T = TypeVar("T")


@functools.cache
def types() -> ModuleType:
    """`lsprotocol.types`, imported on first use."""
    import lsprotocol.types

    return lsprotocol.types


@functools.cache
def _converter() -> cattrs.Converter:
    from lsprotocol.converters import get_converter

    return get_converter()


def loaded() -> bool:
    """Whether lsprotocol and its converter are ready (then `warm` costs nothing)."""
    return _converter.cache_info().currsize > 0


def warm() -> None:
    """Import lsprotocol and build its converter (slow: call it on a worker thread)."""
    types()
    _converter()


def params(value: Any) -> dict[str, Any]:
    """An lsprotocol params object as the wire's JSON (camelCase, no None fields)."""
    result = _converter().unstructure(value)
    if not isinstance(result, dict):  # every params type is a structure
        raise TypeError(f"not a params object: {type(value).__name__}")
    return result


def answer(method: str, result: Any, response: type[Any]) -> Any:
    """A request's `result` structured as lsprotocol's `response.result`; `ClientError` when
    the server's answer does not fit the protocol (never an exception from cattrs)."""
    try:
        return (
            _converter().structure({"jsonrpc": "2.0", "id": 0, "result": result}, response).result
        )
    except Exception as exc:  # cattrs raises several types (ClassValidationError, ...)
        raise ClientError(
            UnknownReason.FAILED, f"{method}: malformed answer ({type(exc).__name__})"
        ) from None


def enum_name(enum: type[Any], value: object) -> str | None:
    """A protocol enum's value as a readable word (SymbolKind 12 -> "function")."""
    try:
        member = enum(value)
    except (ValueError, TypeError):
        return None
    words: list[str] = []
    for char in str(member.name):
        if char.isupper() and words:
            words.append(" ")
        words.append(char.lower())
    return "".join(words)
