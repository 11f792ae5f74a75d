"""One language-server process: lifecycle, documents and versions, diagnostics per version.

Freshness rule: diagnostics are always obtained *for a document version*. A pull is attributed
to the version that was current when it was sent, and a document's lock keeps any change from
being sent while a pull for it is outstanding, so a pull can never be answered for another
version than the one it is credited to. A push counts only when it carries the awaited version
(or, for servers that send no version, when it arrived after the change was sent).
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ipylsp.analysis.model import Diagnostic, UnknownReason
from ipylsp.analysis.positions import Encoding, choose_encoding
from ipylsp.lsp import capabilities as caps
from ipylsp.lsp.convert import to_diagnostics
from ipylsp.lsp.documents import DocumentTable, OpenDocument, Push, path_to_uri, uri_to_path
from ipylsp.lsp.jsonrpc import ConnectionLost, Endpoint, RequestTimeout, ResponseError
from ipylsp.lsp.process import ServerProcess, spawn
from ipylsp.lsp.spec import ServerSpec

log = logging.getLogger(__name__)

STATIC_PULL = "<static>"
VERSIONLESS_SETTLE = 0.2
"""Seconds without a new push after which a versionless push counts as the last for a change."""

# FileChangeType of workspace/didChangeWatchedFiles.
FILE_CREATED, FILE_CHANGED, FILE_DELETED = 1, 2, 3


class ClientState(enum.Enum):
    STOPPED = "stopped"
    STARTING = "starting"
    RUNNING = "running"
    STOPPING = "stopping"
    BROKEN = "broken"


class ClientError(Exception):
    """Why a server could not answer; becomes an `Unknown` in reports."""

    def __init__(self, reason: UnknownReason, detail: str) -> None:
        super().__init__(f"{reason.value}: {detail}")
        self.reason = reason
        self.detail = detail


class Progress:
    """`$/progress` work in flight: lets callers tell "indexing" from "hung"."""

    def __init__(self) -> None:
        self.active: dict[str, str] = {}

    def update(self, params: Any) -> None:
        if not isinstance(params, dict):
            return
        token, value = str(params.get("token")), params.get("value")
        if not isinstance(value, dict):
            return
        kind = value.get("kind")
        if kind == "end":
            self.active.pop(token, None)
            return
        title = value.get("title") or self.active.get(token, "")
        parts = [str(title)] if title else []
        if value.get("message"):
            parts.append(str(value["message"]))
        if isinstance(value.get("percentage"), (int, float)):
            parts.append(f"{value['percentage']:.0f}%")
        self.active[token] = " ".join(parts) or "working"

    @property
    def busy(self) -> bool:
        return bool(self.active)

    def describe(self) -> str:
        return "; ".join(self.active.values())


class LanguageClient:
    """A started server for one (spec, root). Not thread-safe: use it from its event loop."""

    def __init__(
        self,
        spec: ServerSpec,
        root: Path,
        command: tuple[str, ...],
        *,
        request_timeout: float = 10.0,
        shutdown_grace: float = 2.0,
        max_open_documents: int = 50,
        max_message_bytes: int = 64 * 1024 * 1024,
    ) -> None:
        self.spec = spec
        self.root = root
        self.command = command
        self.request_timeout = request_timeout
        self.shutdown_grace = shutdown_grace
        self.max_open_documents = max_open_documents
        self.max_message_bytes = max_message_bytes
        self.state = ClientState.STOPPED
        self.state_detail = ""
        self.encoding: Encoding = "utf-16"
        self.server_capabilities: dict[str, Any] = {}
        self.server_info: dict[str, Any] = {}
        self.progress = Progress()
        self.documents = DocumentTable()
        self.messages: list[str] = []
        self.started_at: float | None = None
        self.last_used = time.monotonic()
        self._process: ServerProcess | None = None
        self._endpoint: Endpoint | None = None
        self._exit_task: asyncio.Task[None] | None = None
        self._pull_identifiers: dict[str, str | None] = {}
        self._push_sequence = 0
        self._changed = asyncio.Event()
        self._locks: dict[str, asyncio.Lock] = {}
        self.crashed = False

    # -- public state -------------------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def alive(self) -> bool:
        return self.state is ClientState.RUNNING and not self._dead()

    def _dead(self) -> bool:
        endpoint, process = self._endpoint, self._process
        return (
            endpoint is None
            or endpoint.closed.is_set()
            or process is None
            or process.returncode is not None
        )

    @property
    def uses_pull(self) -> bool:
        return bool(self._pull_identifiers)

    def _wake(self) -> None:
        """Wake every waiter; each waiter grabbed the event before checking its condition."""
        old, self._changed = self._changed, asyncio.Event()
        old.set()

    # -- lifecycle ----------------------------------------------------------------------------

    async def start(self, timeout: float) -> None:
        """Spawn and initialize. Raises `ClientError`; leaves no process behind on failure."""
        self.state = ClientState.STARTING
        self.state_detail = "starting"
        try:
            self._process = await spawn(self.command, cwd=self.root, env=self.spec.env)
        except (FileNotFoundError, PermissionError, NotADirectoryError) as exc:
            self._set_broken(f"cannot run {self.command[0]}: {exc.strerror or exc}")
            raise ClientError(UnknownReason.NOT_INSTALLED, self.state_detail) from None
        except OSError as exc:
            self._set_broken(f"cannot start {self.command[0]}: {exc}")
            raise ClientError(UnknownReason.FAILED, self.state_detail) from None
        proc = self._process.proc
        assert proc.stdout is not None and proc.stdin is not None
        endpoint = Endpoint(
            proc.stdout, proc.stdin, name=self.spec.id, max_body=self.max_message_bytes
        )
        self._endpoint = endpoint
        self._register_handlers(endpoint)
        endpoint.start()
        self._exit_task = asyncio.get_running_loop().create_task(self._watch_exit())
        self.started_at = time.monotonic()
        try:
            result = await endpoint.request(
                "initialize",
                caps.initialize_params(self.root, self.spec.initialization_options),
                timeout=timeout,
            )
            if not isinstance(result, dict):
                raise ResponseError(-32603, "initialize returned no result object")
            self.server_capabilities = dict(result.get("capabilities") or {})
            self.server_info = dict(result.get("serverInfo") or {})
            self.encoding = choose_encoding(self.server_capabilities.get("positionEncoding"))
            declares_pull, identifier = caps.static_pull(self.server_capabilities)
            if declares_pull:
                self._pull_identifiers[STATIC_PULL] = identifier
            await endpoint.notify("initialized", {})
            if self.spec.settings:
                await endpoint.notify(
                    "workspace/didChangeConfiguration", {"settings": dict(self.spec.settings)}
                )
        except RequestTimeout:
            await self._abort(f"initialize got no answer within {timeout:.1f} s")
            raise ClientError(UnknownReason.TIMED_OUT, self.state_detail) from None
        except ConnectionLost as exc:
            await self._abort(self._exit_description(str(exc)))
            raise ClientError(UnknownReason.CRASHED, self.state_detail) from None
        except ResponseError as exc:
            await self._abort(f"initialize failed: {exc}")
            raise ClientError(UnknownReason.FAILED, self.state_detail) from None
        except asyncio.CancelledError:
            await asyncio.shield(self._abort("start cancelled"))
            raise
        self.state = ClientState.RUNNING
        self.state_detail = "running"
        log.info("started %s for %s (pid %s)", self.spec.id, self.root, self.pid)

    def _set_broken(self, detail: str) -> None:
        self.state = ClientState.BROKEN
        self.state_detail = detail

    async def _abort(self, detail: str) -> None:
        self._set_broken(detail)
        await self._kill()

    def exit_reason(self) -> str:
        """Why a client that is no longer alive stopped (even before its exit watcher ran)."""
        if self.crashed or self.state is ClientState.BROKEN:
            return self.state_detail
        return "crashed: " + self._exit_description("connection lost")

    def _exit_description(self, fallback: str) -> str:
        process = self._process
        if process is None:
            return fallback
        code = process.returncode
        tail = process.stderr_tail(600)
        head = f"exited with code {code}" if code is not None else fallback
        return f"{head}: {tail}" if tail else head

    async def _watch_exit(self) -> None:
        """A dead process or a broken stream ends the client: waiters wake with the reason."""
        process, endpoint = self._process, self._endpoint
        if process is None or endpoint is None:
            return
        exited = asyncio.ensure_future(process.proc.wait())
        broken = asyncio.ensure_future(endpoint.closed.wait())
        await asyncio.wait({exited, broken}, return_when=asyncio.FIRST_COMPLETED)
        for waiter in (exited, broken):
            waiter.cancel()
        if self.state in (ClientState.RUNNING, ClientState.STARTING):
            self.crashed = True
            self.state = ClientState.STOPPED
            if process.returncode is None:  # a protocol error: the stream is unusable
                self.state_detail = f"crashed: {endpoint.close_reason}"
                await process.kill()
            else:
                self.state_detail = "crashed: " + self._exit_description("exited")
            log.warning("%s %s", self.spec.id, self.state_detail)
        await endpoint.close(self.state_detail or "server exited")
        self._wake()

    async def stop(self) -> None:
        """shutdown + exit, then kill the process tree after the grace period."""
        if self._process is None:
            self.state = ClientState.STOPPED
            return
        was_running = self.state is ClientState.RUNNING
        self.state = ClientState.STOPPING
        endpoint = self._endpoint
        if was_running and endpoint is not None and not self._dead():
            with contextlib.suppress(Exception):
                await endpoint.request("shutdown", timeout=self.shutdown_grace)
                await endpoint.notify("exit")
        await self._process.wait(self.shutdown_grace)
        await self._kill()
        self.state = ClientState.STOPPED
        self.state_detail = "stopped"

    async def _kill(self) -> None:
        if self._process is not None:
            await self._process.kill()
        if self._endpoint is not None:
            await self._endpoint.close("stopped")
        if self._exit_task is not None and not self._exit_task.done():
            self._exit_task.cancel()
        self._wake()

    # -- server -> client ---------------------------------------------------------------------

    def _register_handlers(self, endpoint: Endpoint) -> None:
        endpoint.on_request("workspace/configuration", self._on_configuration)
        endpoint.on_request("client/registerCapability", self._on_register)
        endpoint.on_request("client/unregisterCapability", self._on_unregister)
        endpoint.on_request("workspace/diagnostic/refresh", self._on_refresh)
        endpoint.on_request("workspace/workspaceFolders", self._on_workspace_folders)
        endpoint.on_request("workspace/applyEdit", self._on_apply_edit)
        endpoint.on_request("window/showDocument", self._on_show_document)
        for method in (
            "window/workDoneProgress/create",
            "window/showMessageRequest",
            "workspace/semanticTokens/refresh",
            "workspace/inlayHint/refresh",
            "workspace/codeLens/refresh",
            "workspace/inlineValue/refresh",
            "workspace/foldingRange/refresh",
        ):
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
                self._pull_identifiers[str(registration.get("id"))] = (
                    identifier if isinstance(identifier, str) else None
                )
        self._wake()

    async def _on_unregister(self, params: Any) -> None:
        # The spec's field really is spelled "unregisterations".
        entries = params.get("unregisterations", []) if isinstance(params, dict) else []
        for entry in entries:
            if isinstance(entry, dict):
                self._pull_identifiers.pop(str(entry.get("id")), None)
        self._wake()

    async def _on_refresh(self, params: Any) -> None:
        self._wake()

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
        self._push_sequence += 1
        doc.push = Push(
            version if isinstance(version, int) else None,
            items if isinstance(items, list) else [],
            self._push_sequence,
        )
        self._wake()

    def _on_progress(self, params: Any) -> None:
        self.progress.update(params)

    def _on_show_message(self, params: Any) -> None:
        if isinstance(params, dict) and params.get("message"):
            self.messages = [*self.messages[-9:], str(params["message"])[:500]]

    def _on_log_message(self, params: Any) -> None:
        if isinstance(params, dict):
            log.debug("%s: %s", self.spec.id, str(params.get("message"))[:500])

    # -- documents ----------------------------------------------------------------------------

    def _require_endpoint(self) -> Endpoint:
        if self._endpoint is None or self._dead():
            detail = self.state_detail if self.crashed else "server is not running"
            raise ClientError(UnknownReason.CRASHED, detail)
        return self._endpoint

    async def _send(self, method: str, params: Any) -> None:
        try:
            await self._require_endpoint().notify(method, params)
        except ConnectionLost:
            raise ClientError(UnknownReason.CRASHED, self._exit_description("lost")) from None

    async def _open_or_change(self, path: Path, text: str, language_id: str) -> OpenDocument:
        """Make the server see `text` for `path`; a new text gets a new version."""
        uri = path_to_uri(path)
        doc = self.documents.get(uri)
        if doc is None:
            await self._evict(keep=uri)
            doc = OpenDocument(path=path, uri=uri, language_id=language_id, version=1, text=text)
            self.documents.add(doc)
            await self._send(
                "textDocument/didOpen",
                {"textDocument": {"uri": uri, "languageId": language_id, "version": 1,
                                  "text": text}},
            )
        elif doc.text != text:
            doc.version += 1
            doc.text = text
            await self._send(
                "textDocument/didChange",
                {"textDocument": {"uri": uri, "version": doc.version},
                 "contentChanges": [{"text": text}]},
            )
        doc.touch()
        return doc

    async def _save(self, doc: OpenDocument) -> None:
        send, include_text = caps.wants_save(self.server_capabilities)
        if not send:
            return
        params: dict[str, Any] = {"textDocument": {"uri": doc.uri}}
        if include_text:
            params["text"] = doc.text
        await self._send("textDocument/didSave", params)

    async def _evict(self, keep: str) -> None:
        excess = len(self.documents) - self.max_open_documents + 1
        if excess <= 0:
            return
        for doc in self.documents.least_recently_used(excess, keep):
            lock = self._locks.get(doc.uri)
            if lock is not None and lock.locked():
                continue
            self._locks.pop(doc.uri, None)
            self.documents.remove(doc.uri)
            await self._send("textDocument/didClose", {"textDocument": {"uri": doc.uri}})

    async def close_document(self, path: Path) -> None:
        doc = self.documents.remove(path_to_uri(path))
        if doc is not None and not self._dead():
            with contextlib.suppress(ClientError):
                await self._send("textDocument/didClose", {"textDocument": {"uri": doc.uri}})

    async def files_changed(self, events: list[tuple[Path, int]]) -> None:
        """Files created, changed or deleted on disk (workspace/didChangeWatchedFiles): what
        imports in the open documents resolve to may have changed. Pyright, for one, keeps
        resolving a deleted module (and not a created one) until told."""
        if events:
            changes = [{"uri": path_to_uri(path), "type": kind} for path, kind in events]
            await self._send("workspace/didChangeWatchedFiles", {"changes": changes})

    def recent_paths(self, count: int) -> list[Path]:
        """Open documents, most recently used first."""
        docs = sorted(self.documents, key=lambda d: d.last_used, reverse=True)
        return [doc.path for doc in docs[:count]]

    async def sync_document(self, path: Path, text: str, language_id: str) -> int:
        """Make the server see `text` without waiting for diagnostics; returns the version."""
        lock = self._locks.setdefault(path_to_uri(path), asyncio.Lock())
        async with lock:
            return (await self._open_or_change(path, text, language_id)).version

    # -- diagnostics --------------------------------------------------------------------------

    async def diagnostics(
        self,
        path: Path,
        text: str,
        language_id: str,
        *,
        deadline: float,
        save: bool = False,
        fresh: bool = False,
    ) -> tuple[int, tuple[Diagnostic, ...]]:
        """Diagnostics of `text` as the document's current version: (version, diagnostics).

        `fresh`: the answer must be computed now even if `text` is what the server already has
        (another document changed). A pull always is. A push-only server would leave its last
        push standing, and a change to the same text is not enough: clangd neither rebuilds nor
        publishes for a text it has built, nor for a version it skipped. So it first builds the
        text with one more newline (its diagnostics awaited and dropped), then the text again.
        """
        uri = path_to_uri(path)
        lock = self._locks.setdefault(uri, asyncio.Lock())
        async with lock:
            self.last_used = time.monotonic()
            known = self.documents.get(uri)
            if fresh and not self._pull_identifiers and known is not None and known.text == text:
                push_mark = self._push_sequence
                doc = await self._open_or_change(path, text + "\n", language_id)
                await self._await_items(doc, doc.version, push_mark, deadline)
            push_mark = self._push_sequence
            doc = await self._open_or_change(path, text, language_id)
            if save:
                await self._save(doc)
            items = await self._await_items(doc, doc.version, push_mark, deadline)
            return doc.version, to_diagnostics(items, doc.index(), self.encoding, self.spec.id)

    async def _await_items(
        self, doc: OpenDocument, version: int, push_mark: int, deadline: float
    ) -> list[Any]:
        while True:
            changed = self._changed
            self._require_endpoint()
            if self._pull_identifiers:
                return await self._pull(doc, deadline)
            push = doc.push
            if push is not None and push.version == version:
                return push.diagnostics
            if push is not None and push.version is None and push.sequence > push_mark:
                return await self._settled_versionless(doc, deadline)
            await self._wait(changed, deadline)

    async def _settled_versionless(self, doc: OpenDocument, deadline: float) -> list[Any]:
        """A server that pushes without versions may push several rounds for one change
        (typescript-language-server: `[]`, then the real list ~60 ms later). Nothing says which
        is the last, so take the latest push once the document has had no new one for
        `VERSIONLESS_SETTLE` seconds (or at the deadline)."""
        while True:
            push = doc.push
            assert push is not None
            quiet_until = min(push.received + VERSIONLESS_SETTLE, deadline)
            remaining = quiet_until - time.monotonic()
            if remaining <= 0:
                return push.diagnostics
            changed = self._changed
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
        if self.progress.busy:
            detail += f" while the server was busy ({self.progress.describe()})"
        return ClientError(UnknownReason.TIMED_OUT, detail)

    async def _pull(self, doc: OpenDocument, deadline: float) -> list[Any]:
        """Pull every registered identifier, retrying ContentModified / ServerCancelled."""
        items: list[Any] = []
        for identifier in list(dict.fromkeys(self._pull_identifiers.values())):
            items.extend(await self._pull_one(doc, identifier, deadline))
        return items

    async def _pull_one(
        self, doc: OpenDocument, identifier: str | None, deadline: float
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
                    "textDocument/diagnostic", params, timeout=min(remaining, self.request_timeout)
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

    # -- other requests -----------------------------------------------------------------------

    async def request(self, method: str, params: Mapping[str, Any], timeout: float) -> Any:
        """A feature request (hover, definition, ...) with `ClientError` for every failure."""
        try:
            return await self._require_endpoint().request(method, dict(params), timeout=timeout)
        except RequestTimeout:
            raise ClientError(UnknownReason.TIMED_OUT, f"{method}: no answer") from None
        except ResponseError as exc:
            raise ClientError(UnknownReason.FAILED, f"{method}: {exc}") from None
        except ConnectionLost:
            raise ClientError(UnknownReason.CRASHED, self._exit_description("lost")) from None
