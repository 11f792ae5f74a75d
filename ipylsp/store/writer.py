"""One daemon thread that writes the store's rows, in short batched transactions.

Callers (the service's loop, a kernel's thread) only put rows on a queue: a write never waits
on the disk or on another process's transaction. A batch that fails after the busy timeout is
retried a few times and then dropped with one log line: the store is a cache. `flush` tells
the truth about what it answers for: every write put since the calling thread's previous
flush, by any thread. A dropped write among them (a failed batch, a bad row, a store that could
not open, a put after `close`) makes it say False; a write that one thread's flush already
answered for is never answered for again by that thread, and a drop is reported to every
thread whose window holds it.
"""

from __future__ import annotations

import bisect
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
    dropped."""

    def __init__(self) -> None:
        self.done = threading.Event()


class Writer:
    """`connect` opens the writer's own connection, on its thread. Each write gets a sequence
    number when put; the numbers of dropped writes are kept (they are rare), so a flush can
    say whether any write of its window was lost."""

    def __init__(self, connect: Callable[[], sqlite3.Connection],
                 after_batch: Write | None = None) -> None:
        self._connect = connect
        self._queue: queue.Queue[tuple[int, Write] | _Flush | None] = queue.Queue()
        self._after_batch = after_batch
        self._lock = threading.Lock()
        """Guards the numbers below, and makes a put and `close` exclusive."""
        self._closed = False
        self._seq = 0
        """The last sequence number given to a write."""
        self._dropped: list[int] = []
        """Sequence numbers of dropped writes, ascending."""
        self._flushed: dict[int, int] = {}
        """Per thread: the last sequence number its previous flush answered for."""
        self._thread = threading.Thread(target=self._run, name="ipylsp-store", daemon=True)
        self._thread.start()

    def put(self, write: Write) -> int:
        """Queue a write; its sequence number. After `close` it is dropped (a cache: nothing
        waits for it), and the next `flush` says so."""
        with self._lock:
            self._seq += 1
            if self._closed:
                self._dropped.append(self._seq)
            else:
                self._queue.put((self._seq, write))
            return self._seq

    def flush(self, timeout: float = 5.0, *, only: int | None = None) -> bool:
        """Wait until every write put before now is written or dropped. True when every write
        put since this thread's previous flush is in the file (`only`: that one write, by its
        sequence number); False when one was dropped, or on timeout."""
        thread = threading.get_ident()
        with self._lock:
            if only is None:
                start, end = self._flushed.get(thread, 0), self._seq
                self._flushed[thread] = end
            else:
                start, end = only - 1, only
            closed = self._closed
            flush = _Flush()
            if not closed:
                self._queue.put(flush)
        if closed:  # everything put before `close` is written before the thread ends
            self._thread.join(timeout)
            if self._thread.is_alive():
                return False
        elif not flush.done.wait(timeout):
            return False
        with self._lock:
            return bisect.bisect_right(self._dropped, end) == bisect.bisect_right(
                self._dropped, start)

    def close(self, timeout: float = 5.0) -> None:
        """Everything put before it is written (up to `timeout`), then the connection closed."""
        with self._lock:
            self._closed = True
            alive = self._thread.is_alive()
            if alive:
                self._queue.put(None)
        if alive:
            self._thread.join(timeout)

    def _drop(self, seqs: list[int]) -> None:
        with self._lock:
            for seq in seqs:
                bisect.insort(self._dropped, seq)

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
                batch: list[tuple[int, Write]] = []
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
                if batch:
                    failed = (self._write(conn, batch) if conn is not None
                              else [seq for seq, _ in batch])
                    if failed:
                        self._drop(failed)
                for flush in waiting:  # each covers every write put before it
                    flush.done.set()
                if stop:
                    return
        finally:
            if conn is not None:
                conn.close()

    def _write(self, conn: sqlite3.Connection, batch: list[tuple[int, Write]]) -> list[int]:
        """The batch in one transaction; the sequence numbers of the writes not written."""
        for attempt in range(ATTEMPTS):
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    failed = []
                    for seq, write in batch:  # one bad row never costs the others
                        conn.execute("SAVEPOINT row")
                        try:
                            write(conn)
                        except (sqlite3.IntegrityError, sqlite3.InterfaceError, ValueError,
                                UnicodeError):
                            conn.execute("ROLLBACK TO row")
                            failed.append(seq)
                        conn.execute("RELEASE row")
                    if failed:
                        log.warning("ipylsp: %d store rows could not be written", len(failed))
                    if self._after_batch is not None:
                        self._after_batch(conn)
                    conn.execute("COMMIT")
                    return failed
                except BaseException:
                    with contextlib.suppress(sqlite3.Error):  # SQLite may have rolled back
                        conn.execute("ROLLBACK")
                    raise
            except sqlite3.OperationalError as exc:  # locked past the busy timeout
                if attempt == ATTEMPTS - 1:
                    log.warning("ipylsp: %d store rows dropped: %s", len(batch), exc)
            except Exception as exc:  # one line, no traceback: it would land in a cell's stderr
                log.warning("ipylsp: %d store rows dropped: %r", len(batch), exc)
                break
        return [seq for seq, _ in batch]
