"""Wire diagnostics (JSON objects) -> model `Diagnostic`s, columns converted to code points.

Malformed entries are dropped, not raised: a server's bad output must never reach the kernel.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ipylsp.model.diagnostics import Diagnostic, Position, Range, Severity
from ipylsp.model.positions import Encoding, LineIndex

MAX_MESSAGE_CHARS = 2000


def _position(raw: Any, index: LineIndex, encoding: Encoding) -> Position | None:
    if not isinstance(raw, dict):
        return None
    line, units = raw.get("line"), raw.get("character")
    if not isinstance(line, int) or not isinstance(units, int) or line < 0:
        return None
    return Position(line, index.to_column(line, units, encoding))


def _code(raw: Any) -> str | None:
    if isinstance(raw, bool) or raw is None:
        return None
    if isinstance(raw, (int, str)):
        return str(raw)
    return None


def to_diagnostic(
    raw: Any, index: LineIndex, encoding: Encoding, server_id: str
) -> Diagnostic | None:
    if not isinstance(raw, dict):
        return None
    rng = raw.get("range")
    if not isinstance(rng, dict):
        return None
    start = _position(rng.get("start"), index, encoding)
    end = _position(rng.get("end"), index, encoding)
    if start is None:
        return None
    if end is None or end < start:
        end = start
    message = raw.get("message")
    if not isinstance(message, str):
        message = str(message)
    if len(message) > MAX_MESSAGE_CHARS:
        message = message[:MAX_MESSAGE_CHARS] + "..."
    source = raw.get("source")
    return Diagnostic(
        range=Range(start, end),
        severity=Severity.from_lsp(raw.get("severity")),
        message=message,
        source=source if isinstance(source, str) and source else None,
        code=_code(raw.get("code")),
        server_id=server_id,
    )


def to_diagnostics(
    items: Iterable[Any], text_index: LineIndex, encoding: Encoding, server_id: str
) -> tuple[Diagnostic, ...]:
    converted = (to_diagnostic(item, text_index, encoding, server_id) for item in items)
    return tuple(d for d in converted if d is not None)
