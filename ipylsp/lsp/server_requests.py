"""Server -> client traffic: what we answer a server's requests, and what its notifications
leave behind (registered pull identifiers, the latest push per document, progress, messages).

Apart from the client so that every answer we give a server can be read in one place, next to
the claims in capabilities.py, and the client sees only the state the handlers keep.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

from ipylsp.lsp import capabilities as caps
from ipylsp.lsp.documents import DocumentTable, Push, path_to_uri, uri_to_path
from ipylsp.lsp.jsonrpc import Endpoint
from ipylsp.model.server_spec import ServerSpec

log = logging.getLogger(__name__)

STATIC_PULL = "<static>"
"""The key of `ServerHandlers.pull_identifiers` for pull support declared at initialize."""

# Requests we answer with null: acknowledged, nothing to do.
_NULL_ANSWERED = (
    "window/workDoneProgress/create",
    "window/showMessageRequest",
    "workspace/semanticTokens/refresh",
    "workspace/inlayHint/refresh",
    "workspace/codeLens/refresh",
    "workspace/inlineValue/refresh",
    "workspace/foldingRange/refresh",
)


MAX_PROGRESS_CHARS = 80
"""A progress description is a status line: `%lsp status` and UNKNOWN details show it whole."""
MAX_PROGRESS_TOKENS = 100


class Progress:
    """`$/progress` work in flight: lets callers tell "indexing" from "hung".

    A status, not a log: per token only the begin's title and the latest message and percentage
    are kept (a `report` replaces the message; basedpyright sends "49 files to analyze", then
    "1 file to analyze" on one token), and `describe()` is bounded to `MAX_PROGRESS_CHARS`.
    """

    def __init__(self) -> None:
        # token -> (title, message, percentage), least recently updated first.
        self._tokens: dict[str, tuple[str, str, float | None]] = {}

    def update(self, params: Any) -> None:
        if not isinstance(params, dict):
            return
        token, value = str(params.get("token")), params.get("value")
        if not isinstance(value, dict):
            return
        kind = value.get("kind")
        if kind == "end":
            self._tokens.pop(token, None)
            return
        if kind == "begin":
            title, message, percentage = _line(value.get("title")), "", None
        elif token in self._tokens:  # a report: the latest message replaces the previous one
            title, message, percentage = self._tokens[token]
        else:  # a report without a begin (or after the end) would keep the server "busy"
            return
        self._tokens.pop(token, None)
        if "message" in value:
            message = _line(value.get("message"))
        if isinstance(value.get("percentage"), (int, float)):
            percentage = float(value["percentage"])
        self._tokens[token] = (title, message, percentage)  # now the most recent
        if len(self._tokens) > MAX_PROGRESS_TOKENS:  # a server that never ends its tokens
            del self._tokens[next(iter(self._tokens))]

    @property
    def busy(self) -> bool:
        return bool(self._tokens)

    def describe(self) -> str:
        """The most recently updated work, "(+N more)" for the others; at most 80 characters."""
        if not self._tokens:
            return ""
        text = _text(*next(reversed(self._tokens.values())))
        more = f" (+{len(self._tokens) - 1} more)" if len(self._tokens) > 1 else ""
        return _bounded(text, MAX_PROGRESS_CHARS - len(more)) + more


def _line(value: Any) -> str:
    """One line of a server's text: whitespace collapsed, length bounded."""
    return _bounded(" ".join(str(value).split()), MAX_PROGRESS_CHARS) if value else ""


def _text(title: str, message: str, percentage: float | None) -> str:
    parts = [part for part in (title, message) if part]
    if percentage is not None:
        parts.append(f"{percentage:.0f}%")
    return " ".join(parts) or "working"


def _bounded(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


class ServerHandlers:
    """Answers one server's requests and keeps what its notifications say.

    `changed` is replaced on every `wake()`: anything waiting for a push, a registration or the
    end of the connection grabs the current event *before* checking its condition.
    """

    def __init__(
        self, spec: ServerSpec, root: Path, documents: DocumentTable, progress: Progress
    ) -> None:
        self.spec = spec
        self.root = root
        self.documents = documents
        self.progress = progress
        self.pull_identifiers: dict[str, str | None] = {}
        self.push_sequence = 0
        self.messages: list[str] = []
        self.changed = asyncio.Event()

    def wake(self) -> None:
        """Wake every waiter; each waiter grabbed the event before checking its condition."""
        old, self.changed = self.changed, asyncio.Event()
        old.set()

    def register(self, endpoint: Endpoint) -> None:
        endpoint.on_request("workspace/configuration", self._on_configuration)
        endpoint.on_request("client/registerCapability", self._on_register)
        endpoint.on_request("client/unregisterCapability", self._on_unregister)
        endpoint.on_request("workspace/diagnostic/refresh", self._on_refresh)
        endpoint.on_request("workspace/workspaceFolders", self._on_workspace_folders)
        endpoint.on_request("workspace/applyEdit", self._on_apply_edit)
        endpoint.on_request("window/showDocument", self._on_show_document)
        for method in _NULL_ANSWERED:
            endpoint.on_request(method, self._answer_null)
        endpoint.on_notification("textDocument/publishDiagnostics", self._on_publish)
        endpoint.on_notification("$/progress", self._on_progress)
        endpoint.on_notification("window/showMessage", self._on_show_message)
        endpoint.on_notification("window/logMessage", self._on_log_message)

    async def _answer_null(self, params: Any) -> None:
        return None

    async def _on_configuration(self, params: Any) -> list[Any]:
        items = params.get("items", []) if isinstance(params, dict) else []
        return [
            caps.lookup_section(self.spec.settings, (item or {}).get("section"))
            for item in items
        ]

    async def _on_register(self, params: Any) -> None:
        registrations = params.get("registrations", []) if isinstance(params, dict) else []
        for registration in registrations:
            if not isinstance(registration, dict):
                continue
            if registration.get("method") == "textDocument/diagnostic":
                options = registration.get("registerOptions") or {}
                identifier = options.get("identifier") if isinstance(options, dict) else None
                self.pull_identifiers[str(registration.get("id"))] = (
                    identifier if isinstance(identifier, str) else None
                )
        self.wake()

    async def _on_unregister(self, params: Any) -> None:
        # The spec's field really is spelled "unregisterations".
        entries = params.get("unregisterations", []) if isinstance(params, dict) else []
        for entry in entries:
            if isinstance(entry, dict):
                self.pull_identifiers.pop(str(entry.get("id")), None)
        self.wake()

    async def _on_refresh(self, params: Any) -> None:
        self.wake()

    async def _on_workspace_folders(self, params: Any) -> list[dict[str, str]]:
        return [{"uri": self.root.as_uri(), "name": self.root.name or str(self.root)}]

    async def _on_apply_edit(self, params: Any) -> dict[str, Any]:
        return {"applied": False, "failureReason": "ipylsp does not apply edits"}

    async def _on_show_document(self, params: Any) -> dict[str, Any]:
        return {"success": False}

    def _on_publish(self, params: Any) -> None:
        if not isinstance(params, dict):
            return
        doc = self.documents.get(str(params.get("uri")))
        if doc is None:
            path = uri_to_path(str(params.get("uri")))
            doc = self.documents.get(path_to_uri(path)) if path is not None else None
        if doc is None:
            return
        items = params.get("diagnostics")
        version = params.get("version")
        self.push_sequence += 1
        doc.push = Push(
            version if isinstance(version, int) else None,
            items if isinstance(items, list) else [],
            self.push_sequence,
        )
        self.wake()

    def _on_progress(self, params: Any) -> None:
        self.progress.update(params)

    def _on_show_message(self, params: Any) -> None:
        if isinstance(params, dict) and params.get("message"):
            self.messages = [*self.messages[-9:], str(params["message"])[:500]]

    def _on_log_message(self, params: Any) -> None:
        if isinstance(params, dict):
            log.debug("%s: %s", self.spec.id, str(params.get("message"))[:500])
