"""An asyncio event loop on a daemon thread, callable from any other thread.

The kernel's own thread never runs language-server I/O: it hands a coroutine over and waits
for the result at most a given number of seconds.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def _shorter(a: float | None, b: float | None) -> float | None:
    if a is None:
        return b
    return a if b is None else min(a, b)


class LoopTimeout(Exception):
    """The coroutine did not finish in time; it was cancelled."""


class BackgroundLoop:
    def __init__(self, name: str = "ipylsp-loop") -> None:
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()
        self._ready.wait()

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.call_soon(self._ready.set)
        self._loop.run_forever()

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return self._loop

    @property
    def running(self) -> bool:
        return self._thread.is_alive() and not self._loop.is_closed()

    @property
    def thread_ident(self) -> int | None:
        return self._thread.ident

    def in_loop_thread(self) -> bool:
        return threading.current_thread() is self._thread

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        return asyncio.run_coroutine_threadsafe(coro, self._loop)

    def run(
        self,
        coro: Coroutine[Any, Any, T],
        timeout: float | None = None,
        *,
        on_wait: Callable[[], None] | None = None,
        first_wait: float = 0.5,
        every: float = 0.25,
    ) -> T:
        """Run `coro` on the loop and wait for it; cancel it and raise `LoopTimeout` on timeout.

        `on_wait` is called from the waiting thread after `first_wait` seconds without a result
        and every `every` seconds after that (to show progress on long waits)."""
        if self.in_loop_thread():
            coro.close()
            raise RuntimeError("BackgroundLoop.run called from the loop's own thread")
        future = self.submit(coro)
        end = None if timeout is None else time.monotonic() + timeout
        step = first_wait if on_wait is not None else timeout
        while True:
            remaining = None if end is None else max(end - time.monotonic(), 0.0)
            try:
                return future.result(_shorter(step, remaining))
            except concurrent.futures.TimeoutError:
                if end is not None and time.monotonic() >= end:
                    future.cancel()
                    raise LoopTimeout(f"no result within {timeout} s") from None
            if on_wait is not None:
                on_wait()
                step = every

    def stop(self, timeout: float = 5.0) -> None:
        if not self.running:
            return
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout)
        if not self._thread.is_alive():
            self._loop.close()
