"""Document sync: didOpen, didChange (a new version for every new text), didSave, and
didClose for the least recently used documents beyond the cap; one lock per document.

Apart from the client because the versions the freshness rule is stated in are made here, and
the lock is what keeps a change from being sent while a pull for that document is outstanding.
Each sent text also notes the push sequence number at that moment (`mark`): a versionless push
counts for the text only when newer, however long after the send its diagnostics are awaited.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from ipylsp.lsp import capabilities as caps
from ipylsp.lsp.documents import DocumentTable, OpenDocument, path_to_uri
from ipylsp.lsp.errors import ClientError
from ipylsp.model.diagnostics import UnknownReason

Send = Callable[[str, Any], Awaitable[None]]
"""Sends one notification to the server (raising `ClientError` when it is gone)."""


class DocumentSync:
    """Makes one server see documents' texts. Hold `lock(uri)` around every use."""

    def __init__(
        self,
        documents: DocumentTable,
        send: Send,
        max_open_documents: int,
        push_sequence: Callable[[], int] = lambda: 0,
    ) -> None:
        self.documents = documents
        self.max_open_documents = max_open_documents
        self._send = send
        self._push_sequence = push_sequence
        self._locks: dict[str, asyncio.Lock] = {}
        self._marks: dict[str, int] = {}

    def lock(self, uri: str) -> asyncio.Lock:
        return self._locks.setdefault(uri, asyncio.Lock())

    @contextlib.asynccontextmanager
    async def locked(self, uri: str, deadline: float | None) -> AsyncIterator[None]:
        """Hold the document's lock; `ClientError` (timed out) when it is not free by
        `deadline` (another check's pull holds it)."""
        lock = self.lock(uri)
        if deadline is None or not lock.locked():  # free: taken at once, no timer needed
            await lock.acquire()
        else:
            try:
                await asyncio.wait_for(lock.acquire(), max(deadline - time.monotonic(), 0.0))
            except asyncio.TimeoutError:
                raise ClientError(
                    UnknownReason.TIMED_OUT, "waiting for diagnostics (document busy)"
                ) from None
        try:
            yield
        finally:
            lock.release()

    def mark(self, uri: str) -> int:
        """The push sequence number when the document's current text was sent."""
        return self._marks.get(uri, 0)

    async def open_or_change(self, path: Path, text: str, language_id: str, *,
                             in_memory: bool = False) -> OpenDocument:
        """Make the server see `text` for `path`; a new text gets a new version. `in_memory`:
        a document with no file (the cells), never matched to a disk."""
        uri = path_to_uri(path)
        doc = self.documents.get(uri)
        if doc is None:
            await self._evict(keep=uri)
            doc = OpenDocument(path=path, uri=uri, language_id=language_id, version=1, text=text)
            self.documents.add(doc)
            self._marks[uri] = self._push_sequence()
            await self._send(
                "textDocument/didOpen",
                {"textDocument": {"uri": uri, "languageId": language_id, "version": 1,
                                  "text": text}},
            )
        elif doc.text != text:
            doc.version += 1
            doc.text = text
            doc.disk = None
            self._marks[uri] = self._push_sequence()
            await self._send(
                "textDocument/didChange",
                {"textDocument": {"uri": uri, "version": doc.version},
                 "contentChanges": [{"text": text}]},
            )
        doc.in_memory = in_memory
        doc.touch()
        return doc

    async def resend(self, doc: OpenDocument) -> int:
        """The document's text again, as a new version (a server that publishes a version's
        diagnostics only when they changed: `DiagnosticsWaiter.items`); the new version."""
        doc.version += 1
        self._marks[doc.uri] = self._push_sequence()
        await self._send(
            "textDocument/didChange",
            {"textDocument": {"uri": doc.uri, "version": doc.version},
             "contentChanges": [{"text": doc.text}]},
        )
        return doc.version

    async def save(self, doc: OpenDocument, server_capabilities: Mapping[str, Any]) -> None:
        send, include_text = caps.wants_save(server_capabilities)
        if not send:
            return
        params: dict[str, Any] = {"textDocument": {"uri": doc.uri}}
        if include_text:
            params["text"] = doc.text
        await self._send("textDocument/didSave", params)

    async def trim(self) -> None:
        """Close the least recently used documents beyond the cap (after a batch raised it)."""
        await self._evict(keep="", room=0)

    async def _evict(self, keep: str, room: int = 1) -> None:
        excess = len(self.documents) - self.max_open_documents + room
        if excess <= 0:
            return
        for doc in self.documents.least_recently_used(excess, keep):
            lock = self._locks.get(doc.uri)
            if lock is not None and lock.locked():
                continue
            # The lock object stays: a waiter woken by its last release must find the same
            # lock as a newcomer, or two tasks could send for one document at once.
            self.documents.remove(doc.uri)
            self._marks.pop(doc.uri, None)
            await self._send("textDocument/didClose", {"textDocument": {"uri": doc.uri}})
