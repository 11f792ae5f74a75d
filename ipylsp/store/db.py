"""The store's SQLite file: WAL, a versioned schema, and a corrupt file rebuilt, not fatal.

WAL lets several kernels and the Jupyter server read while one writes; `busy_timeout` makes a
writer wait for another's short transaction instead of failing. The schema version is
`PRAGMA user_version`; `MIGRATIONS[n]` takes a file from version n to n + 1. A file that is
not a database, is truncated or fails `quick_check` is moved aside (`<name>.corrupt-<time>`)
and rebuilt, with one warning: what it held was a cache.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

from ipylsp.private import owned_dir

log = logging.getLogger(__name__)

BUSY_TIMEOUT_MS = 5000

MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE answers (
        path TEXT NOT NULL,
        text_hash TEXT NOT NULL,
        server TEXT NOT NULL,
        kind TEXT NOT NULL,
        payload TEXT NOT NULL,
        written_at REAL NOT NULL,
        used_at REAL NOT NULL,
        PRIMARY KEY (path, text_hash, server, kind)
    );
    CREATE INDEX answers_by_path ON answers (path, kind, written_at);
    CREATE INDEX answers_by_use ON answers (used_at);
    CREATE TABLE symbols (
        workspace TEXT NOT NULL,
        name TEXT NOT NULL,
        path TEXT NOT NULL,
        line INTEGER NOT NULL,
        column INTEGER NOT NULL,
        kind TEXT NOT NULL,
        PRIMARY KEY (workspace, name, path, line, column)
    );
    """,
    # 2: symbols per (file, server) as the server last answered, for outlines and names
    """
    DROP TABLE symbols;
    CREATE TABLE symbols (
        path TEXT NOT NULL,
        server TEXT NOT NULL,
        text_hash TEXT NOT NULL,
        workspace TEXT NOT NULL,
        seq INTEGER NOT NULL,
        name TEXT NOT NULL,
        kind TEXT NOT NULL,
        line INTEGER NOT NULL,
        column INTEGER NOT NULL,
        depth INTEGER NOT NULL,
        container TEXT,
        written_at REAL NOT NULL,
        PRIMARY KEY (path, server, seq)
    );
    CREATE INDEX symbols_by_name ON symbols (workspace, name);
    """,
    # 3: what a server's answer depended on besides the text (command, root, settings)
    """
    ALTER TABLE answers ADD COLUMN config TEXT NOT NULL DEFAULT '';
    """,
    # 4: the config is part of the key (what its configuration files say is in it now): a text
    # keeps one answer per configuration; older rows keep a config no check computes now
    """
    CREATE TABLE answers_by_config (
        path TEXT NOT NULL,
        text_hash TEXT NOT NULL,
        server TEXT NOT NULL,
        kind TEXT NOT NULL,
        config TEXT NOT NULL DEFAULT '',
        payload TEXT NOT NULL,
        written_at REAL NOT NULL,
        used_at REAL NOT NULL,
        PRIMARY KEY (path, text_hash, server, kind, config)
    );
    INSERT INTO answers_by_config
        SELECT path, text_hash, server, kind, config, payload, written_at, used_at FROM answers;
    DROP TABLE answers;
    ALTER TABLE answers_by_config RENAME TO answers;
    CREATE INDEX answers_by_path ON answers (path, kind, written_at);
    CREATE INDEX answers_by_use ON answers (used_at);
    """,
)
"""Step n takes a file from `user_version` n to n + 1."""

VERSION = len(MIGRATIONS)


class StoreUnavailable(Exception):
    """The file is sound but not usable now: locked past every retry, or a newer ipylsp's
    schema. Never a reason to move it aside."""


LOCKED_FOR = 15.0
"""Seconds an open keeps retrying a file another process holds locked (SQLite reports some
locks at once instead of waiting: a writer creating the file, switching it to WAL). Opens run
on a thread of their own: no check waits for this."""


def connect(path: Path, *, check: bool = True) -> sqlite3.Connection:
    """An open, migrated connection; a corrupt file is moved aside and rebuilt once.
    `check`: run `quick_check` (it reads every page: once per process is enough).
    `StoreUnavailable` for anything that is not corruption (a directory, no permission, a
    disk error, a lock held too long, a newer schema): such a path is never moved.

    Every open holds `<path>.lock` shared and a rebuild holds it exclusive, so no process opens
    the file (or creates a new one and its WAL) while another moves it and its WAL aside."""
    try:
        with _path_lock(path, exclusive=False):
            return _open_retrying(path, check)
    except StoreUnavailable:
        raise
    except sqlite3.DatabaseError as exc:
        _raise_unless_corrupt(path, exc)
    with _path_lock(path, exclusive=True):  # two processes finding it corrupt: one moves it
        try:
            return _open_retrying(path, check)  # the other process rebuilt it meanwhile
        except StoreUnavailable:
            raise
        except sqlite3.DatabaseError as exc:
            _raise_unless_corrupt(path, exc)
            aside = path.with_name(f"{path.name}.corrupt-{int(time.time())}")
            log.warning("ipylsp: the store %s is unreadable (%s); moved to %s and rebuilt",
                        path, exc, aside.name)
            for suffix in ("-wal", "-shm", ""):
                with contextlib.suppress(FileNotFoundError):
                    Path(f"{path}{suffix}").replace(Path(f"{aside}{suffix}"))
        return _open_retrying(path, check)


CORRUPT = ("not a database", "malformed", "quick_check failed", "file is encrypted")


def _raise_unless_corrupt(path: Path, exc: sqlite3.DatabaseError) -> None:
    name = getattr(exc, "sqlite_errorname", "")  # Python 3.11+
    corrupt = name in ("SQLITE_CORRUPT", "SQLITE_NOTADB") or any(
        marker in str(exc).lower() for marker in CORRUPT
    )
    if not corrupt or (path.exists() and not path.is_file()):
        raise StoreUnavailable(f"{path}: {exc}") from None


@contextlib.contextmanager
def _path_lock(path: Path, *, exclusive: bool) -> Iterator[None]:
    try:
        owned_dir(path.parent, narrow=False)
        handle = os.fdopen(_private_file(f"{path}.lock"), "a")
    except OSError as exc:
        raise StoreUnavailable(f"{path}: cannot lock it: {exc}") from None
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _open_retrying(path: Path, check: bool) -> sqlite3.Connection:
    """Two processes creating the file at once: the creator's lock is one the busy handler
    does not wait for, so a locked open is tried again (briefly, for `LOCKED_FOR` s at most),
    not taken for corruption."""
    deadline = time.monotonic() + LOCKED_FOR
    attempt = 0
    while True:
        try:
            return _open(path, check)
        except sqlite3.OperationalError as exc:
            if not _locked(exc):
                raise
            if time.monotonic() >= deadline:
                raise StoreUnavailable(f"{path} stays locked: {exc}") from None
            attempt += 1
            time.sleep(min(0.05 * attempt, 0.25))  # a retry's backoff, not a synchronization


def _locked(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def _private_file(path: str | Path) -> int:
    """A file of ours opened, made 0600 (one an older ipylsp made readable to others is
    narrowed; SQLite gives its WAL and shm the file's mode), never a link planted in its
    place."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)
    info = os.fstat(fd)
    if info.st_uid == os.geteuid() and info.st_mode & 0o077:
        os.fchmod(fd, 0o600)
    return fd


def _open(path: Path, check: bool) -> sqlite3.Connection:
    try:
        owned_dir(path.parent, narrow=False)
        os.close(_private_file(path))
    except OSError as exc:  # a directory in its place, a parent not ours (NotPrivate), ...
        raise StoreUnavailable(f"{path}: {exc}") from None
    conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                           check_same_thread=False)
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA synchronous = NORMAL")  # first: creating the file fsyncs less
        conn.execute("PRAGMA journal_mode = WAL")
        if check and conn.execute("PRAGMA quick_check").fetchone()[0] != "ok":
            raise sqlite3.DatabaseError("quick_check failed")
        _migrate(conn)
    except BaseException:
        conn.close()
        raise
    return conn


def _migrate(conn: sqlite3.Connection) -> None:
    conn.execute("BEGIN IMMEDIATE")  # one process migrates; the others wait, then see it done
    try:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > VERSION:  # a newer ipylsp's file: left alone
            raise StoreUnavailable(f"schema {version} is newer than this ipylsp's {VERSION}")
        for step in range(version, VERSION):
            for statement in MIGRATIONS[step].split(";"):
                if statement.strip():
                    conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {VERSION}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
