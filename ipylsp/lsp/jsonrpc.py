"""A JSON-RPC 2.0 endpoint over an asyncio stream pair.

Requests carry a timeout; a request that times out (or whose caller is cancelled) is followed by
`$/cancelRequest`. Requests from the server are dispatched to registered handlers and always
answered (MethodNotFound when nobody handles them), because several servers stall until their
requests are answered.

Writes never wait past the caller's deadline (`deadline_scope`, or a request's timeout): a server
that does not read its input costs a caller its budget at most, and the connection ends only
after `WRITE_TIMEOUT` seconds without progress.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import itertools
import json
import logging
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

from ipylsp.lsp.framing import DEFAULT_MAX_BODY_BYTES, FramingError, encode_message, read_frame

log = logging.getLogger(__name__)

METHOD_NOT_FOUND = -32601
INTERNAL_ERROR = -32603
REQUEST_CANCELLED = -32800
CONTENT_MODIFIED = -32801
SERVER_CANCELLED = -32802

WRITE_TIMEOUT = 5.0
"""Seconds a server may leave its input pipe full before the connection counts as wedged."""

RequestHandler = Callable[[Any], Awaitable[Any]]
NotificationHandler = Callable[[Any], None]

_send_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "ipylsp_send_deadline", default=None
)


def current_deadline() -> float | None:
    """The deadline of the innermost `deadline_scope` (None outside any)."""
    return _send_deadline.get()


@contextlib.contextmanager
def deadline_scope(deadline: float | None) -> Iterator[None]:
    """Writes made in this context (and tasks it starts) give up at `deadline` (monotonic),
    or at the enclosing scope's deadline when that is earlier (None: the enclosing one)."""
    outer = _send_deadline.get()
    if deadline is None or (outer is not None and outer < deadline):
        deadline = outer
    token = _send_deadline.set(deadline)
    try:
        yield
    finally:
        _send_deadline.reset(token)


class RpcError(Exception):
    """Base of everything a request can fail with."""


class ResponseError(RpcError):
    """The server answered with an error object."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{message} (code {code})")
        self.code = code
        self.message = message
        self.data = data

    @property
    def retryable(self) -> bool:
        return self.code in (CONTENT_MODIFIED, SERVER_CANCELLED)


class RequestTimeout(RpcError):
    """No answer within the request's timeout; the request was cancelled."""


class ConnectionLost(RpcError):
    """The stream closed or broke while the request was pending."""


def _expire(future: asyncio.Future[Any]) -> None:
    if not future.done():
        future.set_exception(asyncio.TimeoutError())


class Endpoint:
    """One JSON-RPC connection. Start it with `start()`; it closes on EOF or a framing error."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        *,
        name: str = "server",
        max_body: int = DEFAULT_MAX_BODY_BYTES,
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._name = name
        self._max_body = max_body
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._request_handlers: dict[str, RequestHandler] = {}
        self._notification_handlers: dict[str, NotificationHandler] = {}
        self._drain: asyncio.Task[None] | None = None
        self._wedge_timer: asyncio.TimerHandle | None = None
        self._reader_task: asyncio.Task[None] | None = None
        self._handler_tasks: set[asyncio.Task[None]] = set()
        self.closed = asyncio.Event()
        self.close_reason: str | None = None
        self.bad_messages = 0

    # -- registration -------------------------------------------------------------------------

    def on_request(self, method: str, handler: RequestHandler) -> None:
        self._request_handlers[method] = handler

    def on_notification(self, method: str, handler: NotificationHandler) -> None:
        self._notification_handlers[method] = handler

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self) -> None:
        self._reader_task = asyncio.get_running_loop().create_task(self._read_loop())

    async def close(self, reason: str = "closed by client") -> None:
        self._mark_closed(reason)
        if self._reader_task is not None and not self._reader_task.done():
            self._reader_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reader_task
        for task in list(self._handler_tasks):
            task.cancel()
        with contextlib.suppress(Exception):
            self._writer.close()

    def _mark_closed(self, reason: str) -> None:
        if self.closed.is_set():
            return
        if self._wedge_timer is not None:
            self._wedge_timer.cancel()
        if self._drain is not None and not self._drain.done():
            self._drain.cancel()  # writers waiting for the pipe wake up to ConnectionLost
        self.close_reason = reason
        self.closed.set()
        for future in self._pending.values():
            if not future.done():
                future.set_exception(ConnectionLost(reason))
        self._pending.clear()

    # -- outgoing -----------------------------------------------------------------------------

    async def _send(self, message: dict[str, Any], deadline: float | None = None) -> None:
        """Write one frame and wait until the pipe takes it, at most until the deadline (the
        caller's, else the context's): `RequestTimeout` then, the frame stays queued. A pipe
        that takes nothing for `WRITE_TIMEOUT` seconds ends the connection (`ConnectionLost`)."""
        if self.closed.is_set():
            raise ConnectionLost(self.close_reason or "closed")
        message["jsonrpc"] = "2.0"
        try:
            # A whole frame goes into the transport's buffer at once: frames never interleave,
            # so no lock is held while waiting for the pipe (a lock would make every later
            # writer wait for the earliest one's deadline).
            self._writer.write(encode_message(message))
        except (ConnectionError, RuntimeError, OSError) as exc:
            self._mark_closed(f"write failed: {exc}")
            raise ConnectionLost(self.close_reason or "write failed") from None
        drain = self._drain
        if drain is None or drain.done():
            if not self._pipe_full():
                return
            drain = self._drain = asyncio.get_running_loop().create_task(self._drain_pipe())
        context = _send_deadline.get()
        if deadline is None or (context is not None and context < deadline):
            deadline = context
        wait = None if deadline is None else max(deadline - time.monotonic(), 0.0)
        # `asyncio.wait` leaves the shared drain running when this caller gives up.
        await asyncio.wait({drain}, timeout=wait)
        if self.closed.is_set():
            raise ConnectionLost(self.close_reason or "closed")
        if not drain.done():
            raise RequestTimeout("the server is not reading its input")

    def _pipe_full(self) -> bool:
        """Whether a drain would wait: the transport holds more than its high-water mark."""
        transport = self._writer.transport
        return transport.get_write_buffer_size() > transport.get_write_buffer_limits()[1]

    async def _drain_pipe(self) -> None:
        """One drain at a time, shared by every writer; the wedge timer runs while it waits."""
        loop = asyncio.get_running_loop()
        self._wedge_timer = loop.call_later(WRITE_TIMEOUT, self._wedged)
        try:
            await self._writer.drain()
        except (ConnectionError, RuntimeError, OSError) as exc:
            self._mark_closed(f"write failed: {exc}")
        finally:
            self._wedge_timer.cancel()
            self._wedge_timer = None

    def _wedged(self) -> None:
        # A server that stops reading its input is wedged: no later message gets through
        # either, so the connection ends here instead of every check waiting.
        self._mark_closed(f"server stopped reading its input ({WRITE_TIMEOUT:g} s)")

    async def notify(self, method: str, params: Any = None) -> None:
        message: dict[str, Any] = {"method": method}
        if params is not None:  # typescript-go rejects "params": null
            message["params"] = params
        await self._send(message)

    async def request(self, method: str, params: Any = None, *, timeout: float) -> Any:
        """The result of `method`, or a `ResponseError`/`RequestTimeout`/`ConnectionLost`."""
        request_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        message: dict[str, Any] = {"id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        deadline = time.monotonic() + max(timeout, 0.0)
        # A timer that fails the future, rather than `wait_for` (a task per request: batches
        # send hundreds).
        timer = asyncio.get_running_loop().call_at(
            asyncio.get_running_loop().time() + max(deadline - time.monotonic(), 0.0),
            _expire, future,
        )
        try:
            await self._send(message, deadline)
            return await future
        except asyncio.TimeoutError:
            await self._cancel(request_id)
            raise RequestTimeout(f"{method} got no answer within {timeout:.1f} s") from None
        except asyncio.CancelledError:
            await asyncio.shield(self._cancel(request_id))
            raise
        finally:
            timer.cancel()
            self._pending.pop(request_id, None)

    async def _cancel(self, request_id: int) -> None:
        if request_id in self._pending and not self.closed.is_set():
            with contextlib.suppress(RpcError):
                await self.notify("$/cancelRequest", {"id": request_id})

    # -- incoming -----------------------------------------------------------------------------

    async def _read_loop(self) -> None:
        reason = "server closed its output"
        try:
            while True:
                body = await read_frame(self._reader, max_body=self._max_body)
                if body is None:
                    break
                try:
                    message = json.loads(body)
                except (ValueError, RecursionError) as exc:  # RecursionError: absurd nesting
                    self.bad_messages += 1
                    log.warning("%s sent a frame that is not JSON: %s", self._name, exc)
                    continue
                if not isinstance(message, dict):
                    self.bad_messages += 1
                    continue
                self._dispatch(message)
        except FramingError as exc:
            reason = f"protocol error: {exc}"
            log.warning("%s: %s", self._name, reason)
        except (ConnectionError, OSError) as exc:
            reason = f"read failed: {exc}"
        except asyncio.CancelledError:
            reason = "closed by client"
            raise
        finally:
            self._mark_closed(reason)

    def _dispatch(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        if method is None:
            self._on_response(message)
        elif "id" in message:
            task = asyncio.get_running_loop().create_task(
                self._answer(message["id"], method, message.get("params"))
            )
            self._handler_tasks.add(task)
            task.add_done_callback(self._handler_tasks.discard)
        else:
            handler = self._notification_handlers.get(method)
            if handler is not None:
                try:
                    handler(message.get("params"))
                except Exception:
                    log.exception("notification handler for %s failed", method)

    def _on_response(self, message: dict[str, Any]) -> None:
        request_id = message.get("id")
        future = self._pending.get(request_id) if isinstance(request_id, int) else None
        if future is None or future.done():
            return
        error = message.get("error")
        if isinstance(error, dict):
            code = error.get("code")
            future.set_exception(
                ResponseError(
                    code if isinstance(code, int) else INTERNAL_ERROR,
                    str(error.get("message", "")),
                    error.get("data"),
                )
            )
        else:
            future.set_result(message.get("result"))

    async def _answer(self, request_id: Any, method: str, params: Any) -> None:
        handler = self._request_handlers.get(method)
        response: dict[str, Any] = {"id": request_id}
        if handler is None:
            response["error"] = {"code": METHOD_NOT_FOUND, "message": f"unhandled: {method}"}
        else:
            try:
                response["result"] = await handler(params)
            except Exception as exc:
                log.exception("request handler for %s failed", method)
                response["error"] = {"code": INTERNAL_ERROR, "message": str(exc)}
        with contextlib.suppress(RpcError):
            await self._send(response)
