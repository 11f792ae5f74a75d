"""JSON text in and out, the standard library's own codec without the import of `json`.

`json` imports `re` (and with it `enum`, `functools`, `collections`): about 8 ms of every thin
`ipylsp check`, the call a coding agent makes after each edit. `dumps` and `loads` call the C
codec `json` itself calls (`_json.make_encoder`, `_json.make_scanner`), set up as `json.dumps`
(compact separators, `ensure_ascii=False`) and `json.loads` set them up, so the text is the same
byte for byte; where that codec is missing (another interpreter), they are `json`'s. Only the
error path imports `json` (its `JSONDecodeError`, a `ValueError`).

Used where a process pays for each module it imports (the broker's frames, the settings files'
cache); everything else uses `json`. Owns no format of its own, and touches nothing but text.
"""

from __future__ import annotations

TYPE_CHECKING = False  # `typing.TYPE_CHECKING`, without importing typing (see ipylsp/__init__)
if TYPE_CHECKING:
    from typing import Any, NoReturn

try:
    import _json
except ImportError:  # pragma: no cover - CPython always has it
    _json = None  # type: ignore[assignment]

_WHITESPACE = " \t\n\r"
_CONSTANTS = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}


class _Decoding:
    """What `_json.make_scanner` reads from its context: `json.JSONDecoder()`'s defaults."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = _CONSTANTS.__getitem__


def _refuse(value: object) -> object:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


if _json is not None:
    _scan = _json.make_scanner(_Decoding())  # type: ignore[arg-type]  # typeshed: a context


def dumps(value: Any) -> str:
    """`json.dumps(value, ensure_ascii=False, separators=(",", ":"))`."""
    if _json is None:  # pragma: no cover
        import json

        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    if isinstance(value, str):  # the encoder takes containers and scalars but a lone str
        return str(_json.encode_basestring(value))
    encode = _json.make_encoder(  # per call, as json's: its markers catch a cycle
        {}, _refuse, _json.encode_basestring, None, ":", ",", False, False, True)
    return "".join(encode(value, 0))


def loads(text: str) -> Any:
    """`json.loads(text)`; `ValueError` (`json.JSONDecodeError`) for what is not JSON."""
    if _json is None:  # pragma: no cover
        import json

        return json.loads(text)
    start = len(text) - len(text.lstrip(_WHITESPACE))
    try:
        value, end = _scan(text, start)
    except StopIteration as stop:
        _fail("Expecting value", text, stop.value)
    rest = text[end:]
    if rest.strip(_WHITESPACE):
        _fail("Extra data", text, end + len(rest) - len(rest.lstrip(_WHITESPACE)))
    return value


def _fail(message: str, text: str, at: int) -> NoReturn:
    from json import JSONDecodeError

    raise JSONDecodeError(message, text, at) from None
