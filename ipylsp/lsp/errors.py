"""The one error a language client raises: the client and its helpers share it, so every
failure, whichever module noticed it, reaches the service as a reason it can report."""

from __future__ import annotations

from ipylsp.model.diagnostics import UnknownReason


class ClientError(Exception):
    """Why a server could not answer; becomes an `Unknown` in reports."""

    def __init__(self, reason: UnknownReason, detail: str) -> None:
        super().__init__(f"{reason.value}: {detail}")
        self.reason = reason
        self.detail = detail
