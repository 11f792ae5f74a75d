"""Errors a model can act on: a fixed code and one line saying what to do next.

Codes are part of the tool contract (docs/agents.md); a tool raises
`ToolError(code, message)` and the dispatcher turns it into a failed `ToolResult`, never an
exception into the caller.
"""

from __future__ import annotations

from typing import Literal, get_args

ErrorCode = Literal[
    "missing_argument",
    "invalid_argument",
    "unknown_tool",
    "file_not_found",
    "outside_workspace",
    "unsupported_language",
    "server_unavailable",
    "timeout",
    "lsp_error",
    "server_exited",
    "symbol_not_found",
    "ambiguous_symbol",
]

CODES: tuple[ErrorCode, ...] = get_args(ErrorCode)


class ToolError(Exception):
    """A tool call that cannot be answered; `message` says what to do next."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code: ErrorCode = code
        self.message = message
