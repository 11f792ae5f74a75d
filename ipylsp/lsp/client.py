"""One language-server process: lifecycle, documents and versions, diagnostics per version.

Freshness rule: diagnostics are always obtained *for a document version*. A pull is attributed
to the version that was current when it was sent, and a document's lock keeps any change from
being sent while a pull for it is outstanding, so a pull can never be answered for another
version than the one it is credited to. A push counts only when it carries the awaited version
(or, for servers that send no version, when it arrived after the change was sent; a server
that names versions is asked again after a push without one: diagnostics.py).

The client keeps the process (run in its client's `Environment`), its state machine and the
order of the steps; the initialize exchange is in handshake.py, document sync in sync.py, the
server->client handlers in server_requests.py, the waiting for a version's diagnostics in
diagnostics.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ipylsp.lsp.convert import to_diagnostics
from ipylsp.lsp.diagnostics import VERSIONLESS_SETTLE, DiagnosticsWaiter
from ipylsp.lsp.documents import DocumentTable, path_to_uri
from ipylsp.lsp.errors import ClientError
from ipylsp.lsp.handshake import initialize
from ipylsp.lsp.jsonrpc import (
    ConnectionLost,
    Endpoint,
    RequestTimeout,
    ResponseError,
    current_deadline,
    deadline_scope,
)
from ipylsp.lsp.process import ServerProcess, spawn
from ipylsp.lsp.server_requests import STATIC_PULL, Progress, ServerHandlers
from ipylsp.lsp.sync import DocumentSync
from ipylsp.model.diagnostics import Diagnostic, UnknownReason
from ipylsp.model.environment import Environment
from ipylsp.model.positions import Encoding
from ipylsp.model.server_spec import ServerSpec
from ipylsp.model.status import ServerState

__all__ = [  # the client's API, wherever it is defined
    "FILE_CHANGED", "FILE_CREATED", "FILE_DELETED", "STATIC_PULL", "VERSIONLESS_SETTLE",
    "ClientError", "LanguageClient", "Progress",
]

log = logging.getLogger(__name__)

EXIT_GRACE = 0.4
"""Seconds a server that answered `shutdown` gets to exit after `exit` before it is killed:
with the kill, a server that ignores `exit` costs a stop at most 0.5 s (real servers exit in
milliseconds)."""

# FileChangeType of workspace/didChangeWatchedFiles.
FILE_CREATED, FILE_CHANGED, FILE_DELETED = 1, 2, 3


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
        environment: Environment | None = None,
    ) -> None:
        """`environment`: the client's, which the server runs in (None: this process's)."""
        self.spec = spec
        self.root = root
        self.command = command
        self.environment = environment
        self.request_timeout = request_timeout
        self.shutdown_grace = shutdown_grace
        self.max_message_bytes = max_message_bytes
        self.state = ServerState.STOPPED
        self.state_detail = ""
        self.encoding: Encoding = "utf-16"
        self.server_capabilities: dict[str, Any] = {}
        self.server_info: dict[str, Any] = {}
        self.progress = Progress()
        self.documents = DocumentTable()
        self.started_at: float | None = None
        self.last_used = time.monotonic()
        self._process: ServerProcess | None = None
        self._endpoint: Endpoint | None = None
        self._exit_task: asyncio.Task[None] | None = None
        self._server = ServerHandlers(spec, root, self.documents, self.progress)
        self._waiter = DiagnosticsWaiter(
            self._server, self._require_endpoint, self._exit_description
        )
        self._sync = DocumentSync(
            self.documents, self._send, max_open_documents, lambda: self._server.push_sequence
        )
        self.crashed = False

    # -- public state -------------------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def alive(self) -> bool:
        return self.state is ServerState.RUNNING and not self._dead()

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
        return bool(self._server.pull_identifiers)

    @property
    def max_open_documents(self) -> int:
        return self._sync.max_open_documents

    @max_open_documents.setter
    def max_open_documents(self, value: int) -> None:
        self._sync.max_open_documents = value

    async def trim_documents(self) -> None:
        """Close the least recently used documents beyond `max_open_documents` (a batch
        raises the cap while it runs; the server analyzes every open file)."""
        if not self._dead():
            with contextlib.suppress(ClientError):
                await self._sync.trim()

    @property
    def messages(self) -> list[str]:
        """The server's last `window/showMessage` texts (at most 10)."""
        return self._server.messages

    # -- lifecycle ----------------------------------------------------------------------------

    async def start(self, timeout: float) -> None:
        """Spawn and initialize. Raises `ClientError`; leaves no process behind on failure."""
        self.state = ServerState.STARTING
        self.state_detail = "starting"
        try:
            self._process = await spawn(
                self.command, cwd=self.root, env=self.spec.env, environment=self.environment
            )
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
        self._server.register(endpoint)
        endpoint.start()
        self._exit_task = asyncio.get_running_loop().create_task(self._watch_exit())
        self.started_at = time.monotonic()
        try:
            hello = await initialize(endpoint, self.spec, self.root, timeout)
        except RequestTimeout:
            await self._abort(f"initialize got no answer within {timeout:.1f} s")
            raise ClientError(UnknownReason.TIMED_OUT, self.state_detail) from None
        except ConnectionLost as exc:
            await self._abort(self._exit_description(str(exc)))
            raise ClientError(UnknownReason.CRASHED, self.state_detail) from None
        except ResponseError as exc:
            await self._abort(f"initialize failed: {exc}")
            raise ClientError(UnknownReason.FAILED, self.state_detail) from None
        except (TypeError, ValueError, AttributeError) as exc:  # a malformed initialize answer
            await self._abort(f"initialize answer unusable: {exc}")
            raise ClientError(UnknownReason.FAILED, self.state_detail) from None
        except asyncio.CancelledError:
            await asyncio.shield(self._abort("start cancelled"))
            raise
        self.server_capabilities, self.server_info = hello.capabilities, hello.info
        self.encoding = hello.encoding
        if hello.declares_pull:
            self._server.pull_identifiers[STATIC_PULL] = hello.pull_identifier
        self.state = ServerState.RUNNING
        self.state_detail = "running"
        log.info("started %s for %s (pid %s)", self.spec.id, self.root, self.pid)

    def _set_broken(self, detail: str) -> None:
        self.state = ServerState.BROKEN
        self.state_detail = detail

    async def _abort(self, detail: str) -> None:
        self._set_broken(detail)
        await self._kill()

    def exit_reason(self) -> str:
        """Why a client that is no longer alive stopped (even before its exit watcher ran)."""
        if self.crashed or self.state is ServerState.BROKEN:
            return self.state_detail
        return "crashed: " + self._exit_description("connection lost")

    def _exit_description(self, fallback: str) -> str:
        process = self._process
        if process is None:
            return fallback
        code = process.returncode
        tail = process.stderr_tail(600)
        endpoint = self._endpoint
        if code is None and endpoint is not None and endpoint.close_reason:
            fallback = endpoint.close_reason  # alive but unusable: say why the stream ended
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
        if self.state in (ServerState.RUNNING, ServerState.STARTING):
            self.crashed = True
            self.state = ServerState.STOPPED
            if process.returncode is None:  # a protocol error: the stream is unusable
                self.state_detail = f"crashed: {endpoint.close_reason}"
                await process.kill()
            else:
                self.state_detail = "crashed: " + self._exit_description("exited")
            log.warning("%s %s", self.spec.id, self.state_detail)
        await endpoint.close(self.state_detail or "server exited")
        self._server.wake()

    async def stop(self) -> None:
        """shutdown + exit, then kill the process tree (helpers included, see process.py).

        A server gets `shutdown_grace` to answer `shutdown` (a busy server may still be
        finishing work it wants to save) and `EXIT_GRACE` to exit after it answered; one that
        does not answer is wedged or not reading, so `exit` could not help: it is killed at once.
        """
        if self._process is None:
            self.state = ServerState.STOPPED
            return
        was_running = self.state is ServerState.RUNNING
        self.state = ServerState.STOPPING
        endpoint = self._endpoint
        try:
            if was_running and endpoint is not None and not self._dead():
                await self._shutdown(endpoint, self._process)
        finally:  # cancelled or not, nothing is left running
            await self._kill()
        self.state = ServerState.STOPPED
        self.state_detail = "stopped"

    async def _shutdown(self, endpoint: Endpoint, process: ServerProcess) -> None:
        try:
            await endpoint.request("shutdown", timeout=self.shutdown_grace)
        except ResponseError:
            pass  # an error is an answer: the server reads and may still honour `exit`
        except Exception:
            return  # no answer: killed at once
        deadline = time.monotonic() + EXIT_GRACE
        with contextlib.suppress(Exception):
            await asyncio.wait_for(endpoint.notify("exit"), EXIT_GRACE)
        await process.wait(max(0.0, deadline - time.monotonic()))

    async def _kill(self) -> None:
        if self._process is not None:
            await self._process.kill()
        if self._endpoint is not None:
            await self._endpoint.close("stopped")
        if self._exit_task is not None and not self._exit_task.done():
            self._exit_task.cancel()
        self._server.wake()

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
        except RequestTimeout:  # the pipe stayed full until the caller's deadline
            raise ClientError(
                UnknownReason.TIMED_OUT, "sending: the server is not reading its input"
            ) from None

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

    async def sync_document(
        self,
        path: Path,
        text: str,
        language_id: str,
        *,
        save: bool = False,
        in_memory: bool = False,
        deadline: float | None = None,
    ) -> int:
        """Make the server see `text` without waiting for diagnostics; returns the version.

        `in_memory`: a document with no file (the notebook's cells), never matched to a disk.
        `deadline` (default: the enclosing `deadline_scope`'s) bounds the lock and the write."""
        uri = path_to_uri(path)
        with deadline_scope(deadline):
            deadline = current_deadline()
            async with self._sync.locked(uri, deadline):
                doc = await self._sync.open_or_change(path, text, language_id,
                                                      in_memory=in_memory)
                if save:
                    await self._sync.save(doc, self.server_capabilities)
                return doc.version

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
        in_memory: bool = False,
    ) -> tuple[int, tuple[Diagnostic, ...]]:
        """Diagnostics of `text` as the document's current version: (version, diagnostics).

        `fresh`: the answer must be computed now even if `text` is what the server already has
        (another document changed). A pull always is. A push-only server would leave its last
        push standing, and a change to the same text is not enough: clangd neither rebuilds nor
        publishes for a text it has built, nor for a version it skipped. So it first builds the
        text with one more newline (its diagnostics awaited and dropped), then the text again.

        Nothing here waits past `deadline`: the document's lock, writes to the server and the
        answer are all bounded by it.
        """
        uri = path_to_uri(path)
        with deadline_scope(deadline):
            async with self._sync.locked(uri, deadline):
                self.last_used = time.monotonic()
                known = self.documents.get(uri)
                server = self._server
                pull = bool(server.pull_identifiers)
                if fresh and not pull and known is not None and known.text == text:
                    doc = await self._sync.open_or_change(path, text + "\n", language_id,
                                                          in_memory=in_memory)
                    await self._waiter.items(
                        doc, doc.version, self._sync.mark(uri), deadline, self.request_timeout,
                        functools.partial(self._sync.resend, doc),
                    )
                doc = await self._sync.open_or_change(path, text, language_id,
                                                      in_memory=in_memory)
                if save:
                    await self._sync.save(doc, self.server_capabilities)
                items = await self._waiter.items(
                    doc, doc.version, self._sync.mark(uri), deadline, self.request_timeout,
                    functools.partial(self._sync.resend, doc),
                )
                return doc.version, to_diagnostics(
                    items, doc.index(), self.encoding, self.spec.id
                )

    # -- other requests -----------------------------------------------------------------------

    async def request(self, method: str, params: Mapping[str, Any], timeout: float) -> Any:
        """A feature request (hover, definition, ...) with `ClientError` for every failure."""
        self.last_used = time.monotonic()  # features count as use for the idle reaper
        try:
            return await self._require_endpoint().request(method, dict(params), timeout=timeout)
        except RequestTimeout:
            raise ClientError(UnknownReason.TIMED_OUT, f"{method}: no answer") from None
        except ResponseError as exc:
            raise ClientError(UnknownReason.FAILED, f"{method}: {exc}") from None
        except ConnectionLost:
            raise ClientError(UnknownReason.CRASHED, self._exit_description("lost")) from None
