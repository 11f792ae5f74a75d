"""The store's facade: put a server's answer for a text, get it back, evict, inspect."""

from __future__ import annotations

import functools
import hashlib
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ipylsp.model.answers import Symbol
from ipylsp.model.diagnostics import Diagnostic
from ipylsp.store.codec import decode, encode
from ipylsp.store.db import VERSION, connect
from ipylsp.store.writer import Writer

DIAGNOSTICS = "diagnostics"
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
EVICT_FRACTION = 0.2
"""Over the cap, the least recently used fifth of the answers goes (not one row per write)."""


@functools.lru_cache(maxsize=16)
def text_hash(text: str) -> str:
    """A check hashes the same text once per server and lookup: the last few are kept."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def safe(text: str) -> str:
    """`text` as SQLite can take it: a lone surrogate (a non-UTF-8 file name, a message
    decoded with surrogateescape) is written as `\\udcXX` instead of failing the statement."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


@dataclass(frozen=True, slots=True)
class StoreInfo:
    """What `ipylsp cache info` shows of the store: its file (None: the store is off, or
    cannot be used, and `problem` says why), size, rows and files."""

    path: Path | None
    bytes: int = 0
    rows: int = 0
    files: int = 0
    schema: int = 0
    problem: str = ""

    def summary(self, *, cleared: bool = False) -> str:
        """`ipylsp cache info|clear`'s line (and `%lsp cache`'s) for an open store."""
        what = f"{self.rows} answers for {self.files} files"
        size = f"{self.bytes / 1e6:.1f} MB"
        if cleared:
            return f"cleared {what} ({size}) from {self.path}"
        return f"{self.path}: {what}, {size} (schema {self.schema})"


@dataclass(frozen=True, slots=True)
class Stored:
    """A server's stored answer: for the text whose hash is `text_hash`, under `config`, at
    `written_at`."""

    diagnostics: tuple[Diagnostic, ...]
    text_hash: str
    written_at: float
    config: str = ""

    def stale(self, current_text: str | None) -> bool:
        return current_text is None or text_hash(current_text) != self.text_hash


@dataclass(frozen=True, slots=True)
class StoredSymbols:
    """Symbols from stored outlines: each with the hash of the text it was read from
    (`hashes[path]`), the oldest answer's time."""

    symbols: tuple[Symbol, ...]
    hashes: dict[str, str]
    written_at: float

    def stale(self, read: Callable[[str], str | None]) -> bool:
        """Any of their files' text (`read(path)`) changed since."""
        for path, hashed in self.hashes.items():
            text = read(path)
            if text is None or text_hash(text) != hashed:
                return True
        return False


_SYMBOL_ROWS = ("SELECT name, kind, line, column, depth, container, path, text_hash, written_at"
                " FROM symbols")
"""The columns `_symbols` reads, in its order."""


def _symbols(rows: list[tuple[Any, ...]], *, with_path: bool) -> StoredSymbols | None:
    if not rows:
        return None
    symbols = tuple(
        Symbol(str(name), str(kind), int(line), int(column), int(depth),
               Path(path) if with_path else None, container)
        for name, kind, line, column, depth, container, path, _, _ in rows
    )
    hashes = {str(row[6]): str(row[7]) for row in rows}
    return StoredSymbols(symbols, hashes, min(float(row[8]) for row in rows))


_ANSWER_ROW = "SELECT payload, text_hash, written_at, config FROM answers"
"""The columns `Store._stored` reads, in its order."""


class Store:
    """Reads on the caller's thread (indexed lookups); writes on the writer thread."""

    def __init__(self, path: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self._read = connect(path)  # also creates or rebuilds the file, before the writer
        self._lock = threading.Lock()
        self._writer = Writer(lambda: connect(path, check=False), after_batch=self._evict)

    def put_diagnostics(
        self, path: str, text: str, server: str, diagnostics: Sequence[Diagnostic],
        config: str = "",
    ) -> None:
        """`config`: what else the answer depends on (the server's command, root, settings,
        configuration files), part of the key: a baseline is taken only from an answer of the
        same config. Stamped now, in the order of the puts, whenever the writer gets to it."""
        now = time.time()
        row = (safe(path), text_hash(text), server, DIAGNOSTICS, config, encode(diagnostics), now,
               now)

        def write(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT OR REPLACE INTO answers (path, text_hash, server, kind, config, payload,"
                " written_at, used_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", row,
            )

        self._writer.put(write)

    def get_diagnostics(
        self, path: str, text: str, server: str, config: str | None = None
    ) -> Stored | None:
        """The server's answer for exactly this text under `config`, or None; with no
        `config`, the latest under any."""
        found = self._query(
            f"{_ANSWER_ROW} WHERE path = ? AND text_hash = ? AND server = ? AND kind = ?"
            + (" ORDER BY written_at DESC LIMIT 1" if config is None else " AND config = ?"),
            (safe(path), text_hash(text), server, DIAGNOSTICS,
             *(() if config is None else (config,))),
        )
        return self._stored(path, server, found)

    def latest(self, path: str, server: str) -> Stored | None:
        """The server's most recent answer for the file, whatever its text was."""
        found = self._query(
            f"{_ANSWER_ROW} WHERE path = ? AND server = ? AND kind = ?"
            " ORDER BY written_at DESC LIMIT 1",
            (safe(path), server, DIAGNOSTICS),
        )
        return self._stored(path, server, found)

    def latest_by_server(self, path: str) -> dict[str, Stored]:
        """Every server's most recent answer for the file."""
        rows = self._query_all(
            "SELECT server, payload, text_hash, max(written_at), config FROM answers"
            " WHERE path = ? AND kind = ? GROUP BY server ORDER BY server",
            (safe(path), DIAGNOSTICS),
        )
        found: dict[str, Stored] = {}
        for server, payload, hashed, written_at, config in rows:
            stored = self._stored(path, server, (payload, hashed, written_at, config))
            if stored is not None:
                found[server] = stored
        return found

    def paths(self, under: str = "", limit: int = 1000) -> list[str]:
        """Files with stored diagnostics, `under` a directory (all when ""), sorted."""
        prefix = safe(under.rstrip("/") + "/") if under else ""
        rows = self._query_all(
            "SELECT DISTINCT path FROM answers WHERE kind = ? AND substr(path, 1, ?) = ?"
            " ORDER BY path LIMIT ?",
            (DIAGNOSTICS, len(prefix), prefix, limit),
        )
        return [str(row[0]) for row in rows]

    def put_symbols(
        self, path: str, text: str, server: str, workspace: str, symbols: Sequence[Symbol]
    ) -> None:
        """A file's outline as `server` answered it for `text` (it replaces the last one)."""
        hashed, now, path = text_hash(text), time.time(), safe(path)
        rows = [(path, server, hashed, safe(workspace), seq, safe(s.name), safe(s.kind), s.line,
                 s.column, s.depth, None if s.container is None else safe(s.container), now)
                for seq, s in enumerate(symbols)]

        def write(conn: sqlite3.Connection) -> None:
            conn.execute("DELETE FROM symbols WHERE path = ? AND server = ?", (path, server))
            conn.executemany(
                "INSERT INTO symbols VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows
            )

        self._writer.put(write)

    def outline(self, path: str) -> StoredSymbols | None:
        """The file's last stored outline (of the server that answered last)."""
        rows = self._query_all(
            f"{_SYMBOL_ROWS} WHERE path = ? AND server ="
            " (SELECT server FROM symbols WHERE path = ? ORDER BY written_at DESC LIMIT 1)"
            " ORDER BY seq",
            (safe(path), safe(path)),
        )
        return _symbols(rows, with_path=False)

    def symbols_named(
        self, workspace: str, name: str, *, prefix: bool = False, limit: int = 100
    ) -> StoredSymbols | None:
        """Symbols of the workspace's stored outlines called `name` (or starting with it)."""
        args: tuple[object, ...]
        if prefix:
            sql_name, args = "substr(name, 1, ?) = ?", (len(name), safe(name))
        else:
            sql_name, args = "name = ?", (safe(name),)
        rows = self._query_all(
            f"{_SYMBOL_ROWS} WHERE workspace = ? AND {sql_name}"
            " ORDER BY path, line, column LIMIT ?",
            (safe(workspace), *args, limit),
        )
        return _symbols(rows, with_path=True)

    def info(self) -> StoreInfo:
        found = self._query("SELECT count(*), count(DISTINCT path) FROM answers", ())
        rows, files = found if found is not None else (0, 0)
        with self._lock:
            used = self._used_bytes(self._read)
        return StoreInfo(self.path, used, rows, files, VERSION)

    def clear(self) -> bool:
        """Every row gone; False when the writer did not get to it in time."""
        def clear_all(conn: sqlite3.Connection) -> None:
            conn.execute("DELETE FROM answers")
            conn.execute("DELETE FROM symbols")

        return self._writer.flush(only=self._writer.put(clear_all))

    def flush(self, timeout: float = 5.0) -> bool:
        """Everything put before now is written; True when every put since this thread's
        previous flush (by any thread) is in the file, False when one was dropped, or on
        timeout."""
        return self._writer.flush(timeout)

    def close(self) -> None:
        self._writer.close()
        with self._lock:
            self._read.close()

    # -- inside ----------------------------------------------------------------------------------

    def _query(self, sql: str, args: tuple[Any, ...]) -> tuple[Any, ...] | None:
        with self._lock:
            try:
                row = self._read.execute(sql, args).fetchone()
            except (sqlite3.Error, UnicodeError):
                return None  # a cache miss, never an exception into a cell
        return tuple(row) if row is not None else None

    def _query_all(self, sql: str, args: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        with self._lock:
            try:
                return [tuple(row) for row in self._read.execute(sql, args).fetchall()]
            except (sqlite3.Error, UnicodeError):
                return []

    def _stored(self, path: str, server: str, found: tuple[Any, ...] | None) -> Stored | None:
        if found is None:
            return None
        payload, hashed, written_at, config = found
        try:
            diagnostics = decode(payload)
        except ValueError:
            return None
        def touch(conn: sqlite3.Connection) -> None:  # least recently *used* goes first
            conn.execute(
                "UPDATE answers SET used_at = ? WHERE path = ? AND text_hash = ? AND server = ?"
                " AND kind = ? AND config = ?",
                (time.time(), safe(path), hashed, server, DIAGNOSTICS, config),
            )

        self._writer.put(touch)
        return Stored(diagnostics, hashed, float(written_at), str(config))

    @staticmethod
    def _used_bytes(conn: sqlite3.Connection) -> int:
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        free = conn.execute("PRAGMA freelist_count").fetchone()[0]
        size = conn.execute("PRAGMA page_size").fetchone()[0]
        return int((pages - free) * size)

    def _evict(self, conn: sqlite3.Connection) -> None:
        """After a batch: over the cap, the least recently used answers go."""
        if self.max_bytes <= 0 or self._used_bytes(conn) <= self.max_bytes:
            return
        # the least recently used fifth of everything kept: answers by their last use, a
        # file's outline (whole, never half of one) by when it was written
        oldest = conn.execute(
            "SELECT 'answer', rowid, used_at FROM answers UNION ALL"
            " SELECT 'outline', path, max(written_at) FROM symbols GROUP BY path"
            " ORDER BY 3 LIMIT max(1, ((SELECT count(*) FROM answers)"
            " + (SELECT count(DISTINCT path) FROM symbols)) * ? / 100)",
            (int(EVICT_FRACTION * 100),),
        ).fetchall()
        conn.executemany("DELETE FROM answers WHERE rowid = ?",
                         [(key,) for kind, key, _ in oldest if kind == "answer"])
        conn.executemany("DELETE FROM symbols WHERE path = ?",
                         [(key,) for kind, key, _ in oldest if kind == "outline"])
