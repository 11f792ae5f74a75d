"""One daemon thread that writes the store's rows, in short batched transactions.

Callers (the service's loop, a kernel's thread) only put rows on a queue: a write never waits
on the disk or on another process's transaction. A batch that fails after the busy timeout is
retried a few times and then dropped with one log line: the store is a cache.
"""

from __future__ import annotations

import logging
import queue
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

from ipylsp.store.db import connect

log = logging.getLogger(__name__)

Write = Callable[[sqlite3.Connection], None]
"""One row's (or one maintenance step's) statements, run inside the batch's transaction."""

MAX_BATCH = 500
ATTEMPTS = 3


class Writer:
    def __init__(self, path: Path, after_batch: Write | None = None) -> None:
        self._path = path
        self._queue: queue.Queue[Write | threading.Event | None] = queue.Queue()
        self._after_batch = after_batch
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="ipylsp-store", daemon=True)
        self._thread.start()

    def put(self, write: Write) -> None:
        """Queue a write; after `close` it is dropped (a cache: nothing waits for it)."""
        if not self._closed:
            self._queue.put(write)

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until everything put before now is written (or dropped); False on timeout."""
        if self._closed or not self._thread.is_alive():
            return True
        done = threading.Event()
        self._queue.put(done)
        return done.wait(timeout)

    def close(self, timeout: float = 5.0) -> None:
        self._closed = True
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join(timeout)

    def _run(self) -> None:
        try:
            conn = connect(self._path, check=False)  # the reader's open checked it
        except Exception:
            log.exception("ipylsp: the store %s cannot be opened; nothing is stored", self._path)
            conn = None
        try:
            while True:
                item = self._queue.get()
                batch: list[Write] = []
                waiting: list[threading.Event] = []
                stop = False
                while True:
                    if item is None:
                        stop = True
                    elif isinstance(item, threading.Event):
                        waiting.append(item)
                    else:
                        batch.append(item)
                    if stop or len(batch) >= MAX_BATCH:
                        break
                    try:
                        item = self._queue.get_nowait()
                    except queue.Empty:
                        break
                if batch and conn is not None:
                    self._write(conn, batch)
                for event in waiting:
                    event.set()
                if stop:
                    return
        finally:
            if conn is not None:
                conn.close()

    def _write(self, conn: sqlite3.Connection, batch: list[Write]) -> None:
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
                    return
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
            except sqlite3.OperationalError as exc:  # locked past the busy timeout
                if attempt == ATTEMPTS - 1:
                    log.warning("ipylsp: %d store rows dropped: %s", len(batch), exc)
            except Exception as exc:  # one line, no traceback: it would land in a cell's stderr
                log.warning("ipylsp: %d store rows dropped: %r", len(batch), exc)
                return
