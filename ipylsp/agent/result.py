"""`ToolResult`: what every tool call returns, on every surface (in-kernel loops, MCP, HTTP)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from ipylsp.agent.errors import CODES, ErrorCode, ToolError


@dataclass(frozen=True, slots=True)
class ToolResult:
    """`text` is written for the model; `data` is the same answer structured (the versioned
    diagnostics schema for checks); a failure has `ok=False` and an `error_code` (`CODES`)
    whose `text` says what to do next."""

    ok: bool
    text: str
    data: dict[str, Any] = field(default_factory=dict)
    error_code: ErrorCode | None = None

    @classmethod
    def failure(cls, error: ToolError) -> ToolResult:
        return cls(
            ok=False,
            text=f"error [{error.code}]: {error.message}",
            data={"error": {"code": error.code, "message": error.message}},
            error_code=error.code,
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (HTTP routes, logs, the broker's answer to a relayed call)."""
        return {"ok": self.ok, "text": self.text, "data": self.data, "error_code": self.error_code}

    @classmethod
    def from_dict(cls, answer: dict[str, Any]) -> ToolResult:
        """Back from `to_dict` (a tool the broker ran); what is not of its type is dropped."""
        data, code = answer.get("data"), answer.get("error_code")
        return cls(ok=answer.get("ok") is True, text=str(answer.get("text", "")),
                   data=data if isinstance(data, dict) else {},
                   error_code=next((known for known in CODES if known == code), None))

    def __str__(self) -> str:
        return self.text


class ToolCaller(Protocol):
    """What answers tool calls: a `Toolbox` in this process, or the broker's, relayed
    (`broker.client.RelayedTools`). Never raises."""

    def call(self, name: str, arguments: dict[str, Any] | None = None) -> ToolResult: ...
