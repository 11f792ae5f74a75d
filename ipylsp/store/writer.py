"""One daemon thread that writes the store's rows, in short batched transactions.

Callers (the service's loop, a kernel's thread) only put rows on a queue: a write never waits
on the disk or on another process's transaction. A batch that fails after the busy timeout is
retried a few times and then dropped with one log line: the store is a cache. `flush` tells
the truth about what it waited for: a dropped row (a batch, a bad row, a store that could not
open, a put after `close`) makes it say False.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import sqlite3
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)

Write = Callable[[sqlite3.Connection], None]
"""One row's (or one maintenance step's) statements, run inside the batch's transaction."""

MAX_BATCH = 500
ATTEMPTS = 3


class _Flush:
    """A `flush` waiting in the queue: set once every write put before it is written or
    dropped; `written` False when any of them was dropped."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.written = True


class Writer:
    """`connect` opens the writer's own connection, on its thread."""

    def __init__(self, connect: Callable[[], sqlite3.Connection],
                 after_batch: Write | None = None) -> None:
        self._connect = connect
        self._queue: queue.Queue[Write | _Flush | None] = queue.Queue()
        self._after_batch = after_batch
        self._closed = False
        self._dropped = False
        """A write was dropped since the last flush the thread answered (thread's own)."""
        self._dropped_after_close = False
        self._thread = threading.Thread(target=self._run, name="ipylsp-store", daemon=True)
        self._thread.start()

    def put(self, write: Write) -> None:
        """Queue a write; after `close` it is dropped (a cache: nothing waits for it), and the
        next `flush` says so."""
        if self._closed:
            self._dropped_after_close = True
        else:
            self._queue.put(write)

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until everything put before now is written; False on timeout, or when any
        write put since the previous flush was dropped."""
        if self._closed or not self._thread.is_alive():
            dropped, self._dropped_after_close = self._dropped_after_close, False
            return not dropped
        flush = _Flush()
        self._queue.put(flush)
        return flush.done.wait(timeout) and flush.written

    def close(self, timeout: float = 5.0) -> None:
        self._closed = True
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join(timeout)

    def _run(self) -> None:
        conn: sqlite3.Connection | None
        try:
            conn = self._connect()
        except Exception as exc:  # one line, no traceback: it would land in a cell's stderr
            log.warning("ipylsp: the store cannot be opened for writing (%s); nothing is stored",
                        exc)
            conn = None
        try:
            while True:
                item = self._queue.get()
                batch: list[Write] = []
                waiting: list[_Flush] = []
                stop = False
                while True:
                    if item is None:
                        stop = True
                    elif isinstance(item, _Flush):
                        waiting.append(item)
                    else:
                        batch.append(item)
                    if stop or len(batch) >= MAX_BATCH:
                        break
                    try:
                        item = self._queue.get_nowait()
                    except queue.Empty:
                        break
                if batch and not (conn is not None and self._write(conn, batch)):
                    self._dropped = True
                for flush in waiting:  # each covers every write before it: this batch's too
                    flush.written = not self._dropped
                    flush.done.set()
                if waiting:
                    self._dropped = False
                if stop:
                    return
        finally:
            if conn is not None:
                conn.close()

    def _write(self, conn: sqlite3.Connection, batch: list[Write]) -> bool:
        """The batch in one transaction; False when any of it was not written."""
        for attempt in range(ATTEMPTS):
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    failed = 0
                    for write in batch:  # one bad row never costs the others
                        conn.execute("SAVEPOINT row")
                        try:
                            write(conn)
                        except (sqlite3.IntegrityError, sqlite3.InterfaceError, ValueError,
                                UnicodeError):
                            conn.execute("ROLLBACK TO row")
                            failed += 1
                        conn.execute("RELEASE row")
                    if failed:
                        log.warning("ipylsp: %d store rows could not be written", failed)
                    if self._after_batch is not None:
                        self._after_batch(conn)
                    conn.execute("COMMIT")
                    return not failed
                except BaseException:
                    with contextlib.suppress(sqlite3.Error):  # SQLite may have rolled back
                        conn.execute("ROLLBACK")
                    raise
            except sqlite3.OperationalError as exc:  # locked past the busy timeout
                if attempt == ATTEMPTS - 1:
                    log.warning("ipylsp: %d store rows dropped: %s", len(batch), exc)
            except Exception as exc:  # one line, no traceback: it would land in a cell's stderr
                log.warning("ipylsp: %d store rows dropped: %r", len(batch), exc)
                return False
        return False
