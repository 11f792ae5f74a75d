"""Diagnostics as compact JSON rows and back, exactly (the store's payload)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from ipylsp.model.diagnostics import Diagnostic, Position, Range, Severity


def encode(diagnostics: Sequence[Diagnostic]) -> str:
    rows = [
        [d.range.start.line, d.range.start.column, d.range.end.line, d.range.end.column,
         int(d.severity), d.message, d.source, d.code, d.server_id]
        for d in diagnostics
    ]
    # ASCII: a lone surrogate in a message is escaped, not an error at the database
    return json.dumps(rows, ensure_ascii=True, separators=(",", ":"))


def decode(payload: str) -> tuple[Diagnostic, ...]:
    """The diagnostics of `payload`; ValueError when it is not what `encode` wrote."""
    try:
        rows = json.loads(payload)
        return tuple(
            Diagnostic(Range(Position(int(a), int(b)), Position(int(c), int(d))),
                       Severity(int(sev)), str(message), source, code, str(server))
            for a, b, c, d, sev, message, source, code, server in rows
        )
    except (TypeError, ValueError) as exc:
        raise ValueError(f"not a stored diagnostics payload: {exc}") from None
