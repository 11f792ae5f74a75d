"""Waiting for one document version's diagnostics: a pull of every registered identifier
(retrying ContentModified / ServerCancelled), or the push for that version, or — for servers
that push without versions — the latest push once they have gone quiet.

A server that names the version in its pushes (`ServerSpec.versioned_push`, gopls) is answered
only by a push naming a version of the awaited text: its pushes without one are about the file
on disk. gopls diagnoses its workspace from the disk when it starts and publishes that for a
document just opened with another text; gopls 0.5 then publishes the opened text's own answer
only when it differs from that one, so after such a push the text is sent again as a new
version (the same text), which it always answers.

Apart from the client because this is where the freshness rule (client.py's docstring) is
kept: the client decides *which* version is current, this module only accepts answers for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from typing import Any

from ipylsp.lsp.documents import OpenDocument
from ipylsp.lsp.errors import ClientError
from ipylsp.lsp.jsonrpc import ConnectionLost, Endpoint, RequestTimeout, ResponseError
from ipylsp.lsp.server_requests import ServerHandlers
from ipylsp.model.diagnostics import UnknownReason

VERSIONLESS_SETTLE = 0.2
"""Seconds without a new push after which a versionless push counts as the last for a change."""


def _kept(doc: OpenDocument, version: int, items: list[Any]) -> list[Any]:
    doc.wire = (version, items)
    return items


class DiagnosticsWaiter:
    """Obtains diagnostics for a version from one server's pulls or pushes.

    `require_endpoint` raises `ClientError` once the server is gone; `exit_description` says
    why it went.
    """

    def __init__(
        self,
        server: ServerHandlers,
        require_endpoint: Callable[[], Endpoint],
        exit_description: Callable[[str], str],
    ) -> None:
        self._server = server
        self._require_endpoint = require_endpoint
        self._exit_description = exit_description

    async def items(
        self,
        doc: OpenDocument,
        version: int,
        push_mark: int,
        deadline: float,
        request_timeout: float,
        resend: Callable[[], Awaitable[int]] | None = None,
    ) -> list[Any]:
        """Wire diagnostics for `version` of `doc`, also kept as `doc.wire`; `push_mark` is the
        push sequence number before the change was sent (a versionless push only counts when
        newer). `resend` sends the same text again as a new version and returns it: for a
        server with `versioned_push`, once, after a push without a version; a push naming any
        version from `version` to the one sent again answers."""
        oldest = version
        while True:
            changed = self._server.changed
            self._require_endpoint()
            if self._server.pull_identifiers:
                return _kept(doc, version, await self._pull(doc, deadline, request_timeout))
            push = doc.push
            if push is not None and push.version is not None and oldest <= push.version <= version:
                return _kept(doc, version, push.diagnostics)
            if push is not None and push.version is None and push.sequence > push_mark:
                if not self._server.spec.versioned_push:
                    return _kept(doc, version, await self._settled_versionless(doc, deadline))
                if resend is not None:  # the disk's answer: ask for the text's own
                    version, resend = await resend(), None
            await self._wait(changed, deadline)

    async def _settled_versionless(self, doc: OpenDocument, deadline: float) -> list[Any]:
        """A server that pushes without versions may push several rounds for one change
        (typescript-language-server: `[]`, then the real list). Nothing says which
        is the last, so take the latest push once the document has had no new one for
        `VERSIONLESS_SETTLE` seconds (or at the deadline)."""
        while True:
            push = doc.push
            assert push is not None
            quiet_until = min(push.received + VERSIONLESS_SETTLE, deadline)
            remaining = quiet_until - time.monotonic()
            if remaining <= 0:
                return push.diagnostics
            changed = self._server.changed
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(changed.wait(), remaining)
            self._require_endpoint()

    async def _wait(self, event: asyncio.Event, deadline: float) -> None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise self._timeout_error()
        try:
            await asyncio.wait_for(event.wait(), remaining)
        except asyncio.TimeoutError:
            raise self._timeout_error() from None

    def _timeout_error(self) -> ClientError:
        # The detail continues the reason in reports: "timed out waiting for diagnostics".
        detail = "waiting for diagnostics"
        progress = self._server.progress
        if progress.busy:
            detail += f" while the server was busy ({progress.describe()})"
        return ClientError(UnknownReason.TIMED_OUT, detail)

    async def _pull(
        self, doc: OpenDocument, deadline: float, request_timeout: float
    ) -> list[Any]:
        """Pull every registered identifier, retrying ContentModified / ServerCancelled."""
        items: list[Any] = []
        for identifier in list(dict.fromkeys(self._server.pull_identifiers.values())):
            items.extend(await self._pull_one(doc, identifier, deadline, request_timeout))
        return items

    async def _pull_one(
        self, doc: OpenDocument, identifier: str | None, deadline: float, request_timeout: float
    ) -> list[Any]:
        params: dict[str, Any] = {"textDocument": {"uri": doc.uri}}
        if identifier is not None:
            params["identifier"] = identifier
        delay = 0.01
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise self._timeout_error()
            try:
                result = await self._require_endpoint().request(
                    "textDocument/diagnostic", params, timeout=min(remaining, request_timeout)
                )
            except ResponseError as exc:
                if not exc.retryable:
                    raise ClientError(UnknownReason.FAILED, f"diagnostic pull: {exc}") from None
                # Backoff between retries of a refused pull, bounded by the deadline.
                await asyncio.sleep(min(delay, max(deadline - time.monotonic(), 0)))
                delay = min(delay * 2, 0.5)
                continue
            except RequestTimeout:
                raise self._timeout_error() from None
            except ConnectionLost:
                raise ClientError(
                    UnknownReason.CRASHED, self._exit_description("connection lost")
                ) from None
            if isinstance(result, dict) and isinstance(result.get("items"), list):
                return list(result["items"])
            return []
