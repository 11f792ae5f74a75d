"""The store's SQLite file: WAL, a versioned schema, and a corrupt file rebuilt, not fatal.

WAL lets several kernels and the Jupyter server read while one writes; `busy_timeout` makes a
writer wait for another's short transaction instead of failing. The schema version is
`PRAGMA user_version`; `MIGRATIONS[n]` takes a file from version n to n + 1. A file that is
not a database, is truncated or fails `quick_check` is moved aside (`<name>.corrupt-<time>`)
and rebuilt, with one warning, when no connection anywhere has it open: what it held was a
cache.

Owns the database file, its WAL and shm, and `<file>.lock` (every connection holds it shared
while open, a rebuild exclusive). Never opens the database file itself (POSIX locks are the
process's: closing any descriptor of it drops them all, and another process then checkpoints
and removes the WAL under this one's connections); never used on a network file system.
Knows nothing of answers or rows (`store.py`).
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import re
import sqlite3
import stat
import threading
import time
import urllib.parse
from pathlib import Path
from typing import IO

from ipylsp.private import owned_dir

log = logging.getLogger(__name__)

BUSY_TIMEOUT_MS = 5000
STORE_ENV = "IPYLSP_STORE"
"""A store file for every process that inherits it (kernels, the Jupyter server, the CLI);
the service's side reads it (`service/answers.py`)."""

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
    """The file cannot be used now, and is not moved: locked past every retry, a newer
    ipylsp's schema, on a network file system, or damaged while another process has it
    open."""


LOCKED_FOR = 15.0
"""Seconds an open keeps retrying a file another process holds locked (SQLite reports some
locks at once instead of waiting: a writer creating the file, switching it to WAL), or waits
for another process's rebuild. Opens run on a thread of their own: no check waits for this."""

REBUILD_WAIT = 1.0
"""Seconds a damaged file is tried again while another process has it open (it may be
rebuilding it); past that the store is off for this process: the processes holding it are
long-lived (kernels), and an open must not hold up a CLI call's exit."""

NETWORK_FILE_SYSTEMS = frozenset({
    "nfs", "nfs4", "cifs", "smb3", "smbfs", "9p", "ceph", "glusterfs", "fuse.glusterfs",
    "fuse.sshfs", "sshfs", "lustre", "gpfs", "beegfs", "afs", "fuse.ceph-fuse", "fuse.s3fs",
    "fuse.gcsfuse", "fuse.rclone", "fuse.juicefs", "ocfs2", "gfs2", "panfs", "coda", "ncpfs",
})
"""File systems whose processes may sit on other hosts: WAL's shared memory does not work
across hosts, and their byte-range locks may not either (SQLite's FAQ)."""


class Connection(sqlite3.Connection):
    """A connection that holds `<store>.lock` shared until it is closed: a rebuild (which
    takes it exclusive) never moves aside a file some connection still uses."""

    _held: IO[str] | None = None

    def close(self) -> None:
        try:
            super().close()
        finally:
            held, self._held = self._held, None
            if held is not None:
                held.close()  # another file than the database: its locks are untouched


def connect(path: Path, *, check: bool = True) -> Connection:
    """An open, migrated connection, holding the store's lock shared while open; a corrupt
    file nobody else has open is moved aside and rebuilt once. `check`: run `quick_check`
    (it reads every page: once per process is enough). `StoreUnavailable` for anything else
    (a directory, no permission, a disk error, a lock held too long, a newer schema, a network
    file system, a damaged file another process still has open): such a path is never moved.

    The database file (and its WAL and shm) is never opened here but by SQLite: POSIX locks
    belong to the process, and closing any descriptor of the file would drop every lock this
    process's other connections hold on it (docs/store.md)."""
    network = network_file_system(path.parent)
    if network:
        raise StoreUnavailable(
            f"{path} is on a network file system ({network}), where SQLite cannot share it"
            f" safely between processes; set IPyLSP.store_path (or ${STORE_ENV}) to a file on"
            f" a local disk"
        )
    deadline = time.monotonic() + LOCKED_FOR
    damage: sqlite3.DatabaseError | None = None
    damaged_since: float | None = None
    while True:
        held = _lock_file(path)
        if _lock(held, fcntl.LOCK_SH, deadline):
            try:
                conn = _open_retrying(path, check, deadline)
            except sqlite3.DatabaseError as exc:
                held.close()
                _raise_unless_corrupt(path, exc)
                damage = exc
            except BaseException:
                held.close()
                raise
            else:
                conn._held = held
                return conn
            if damaged_since is None:  # another process rebuilding it takes well under this
                damaged_since = time.monotonic()
                deadline = min(deadline, damaged_since + REBUILD_WAIT)
        else:
            held.close()
            waited = REBUILD_WAIT if damaged_since is not None else LOCKED_FOR
            raise StoreUnavailable(f"{path}: another process holds its lock past {waited} s")
        # damaged: moved aside only while no connection anywhere holds the lock shared
        held = _lock_file(path)
        try:
            if _lock(held, fcntl.LOCK_EX | fcntl.LOCK_NB, None):
                _rebuild(path, check, damage)
                continue  # opened again under a shared lock, like any other open
        finally:
            held.close()
        if time.monotonic() >= deadline:
            raise StoreUnavailable(
                f"{path} is damaged ({damage}) and another ipylsp process has it open; it is"
                f" rebuilt once none has"
            )
        time.sleep(0.1)  # a retry's backoff: another process may be rebuilding it


def _rebuild(path: Path, check: bool, damage: sqlite3.DatabaseError) -> None:
    """Under the exclusive lock: the file as another process may have rebuilt it meanwhile,
    else moved aside (its WAL first) with one warning."""
    try:
        _open(path, check).close()
        return  # the other process rebuilt it
    except StoreUnavailable:
        raise
    except sqlite3.DatabaseError as exc:
        _raise_unless_corrupt(path, exc)
    aside = path.with_name(f"{path.name}.corrupt-{int(time.time())}-{os.getpid()}")
    log.warning("ipylsp: the store %s is unreadable (%s); moved to %s and rebuilt",
                path, damage, aside.name)
    for suffix in ("-wal", "-shm", ""):
        with contextlib.suppress(FileNotFoundError):
            Path(f"{path}{suffix}").replace(Path(f"{aside}{suffix}"))


CORRUPT = ("not a database", "malformed", "quick_check failed", "file is encrypted")


def _raise_unless_corrupt(path: Path, exc: sqlite3.DatabaseError) -> None:
    name = getattr(exc, "sqlite_errorname", "")  # Python 3.11+
    corrupt = name in ("SQLITE_CORRUPT", "SQLITE_NOTADB") or any(
        marker in str(exc).lower() for marker in CORRUPT
    )
    if not corrupt or (path.exists() and not path.is_file()):
        raise StoreUnavailable(f"{path}: {exc}") from None


def network_file_system(directory: Path, mountinfo: str | None = None) -> str:
    """The type of the network file system `directory` is on ("" when local or not known):
    the longest mount point above it in `mountinfo` (this process's, by default)."""
    if mountinfo is None:
        try:
            mountinfo = Path("/proc/self/mountinfo").read_text("utf-8", errors="replace")
        except OSError:
            return ""
    mounts = mountinfo
    real = os.path.realpath(directory)
    best, kind = "", ""
    for line in mounts.splitlines():
        fields, _, rest = line.partition(" - ")
        parts = fields.split()
        if len(parts) < 5 or not rest:
            continue
        point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), parts[4])
        inside = real == point or real.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best):
            best, kind = point, rest.split()[0]
    return kind if kind in NETWORK_FILE_SYSTEMS else ""


def _lock_file(path: Path) -> IO[str]:
    try:
        owned_dir(path.parent, narrow=False)
        return os.fdopen(_private_file(f"{path}.lock"), "a")
    except OSError as exc:
        raise StoreUnavailable(f"{path}: cannot lock it: {exc}") from None


def _lock(held: IO[str], how: int, deadline: float | None) -> bool:
    """`flock` of the lock file; blocking ones retried until `deadline` (never forever: a
    process stopped while it holds the lock exclusive must not hang every open)."""
    while True:
        try:
            fcntl.flock(held, how | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if deadline is None or time.monotonic() >= deadline:
                return False
            time.sleep(0.02)  # a retry's backoff, not a synchronization


def _open_retrying(path: Path, check: bool, deadline: float) -> Connection:
    """Two processes creating the file at once: the creator's lock is one the busy handler
    does not wait for, so a locked open is tried again (until `deadline`), not taken for
    corruption."""
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
    """A file of ours opened, made 0600, never a link planted in its place. Only for files
    no connection opens (the lock file, a new database's first name)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)
    info = os.fstat(fd)
    if info.st_uid == os.geteuid() and info.st_mode & 0o077:
        os.fchmod(fd, 0o600)
    return fd


def _ensure_private(path: Path) -> None:
    """The database file exists, 0600, a regular file of ours (not a link), without this
    process ever holding a descriptor of it: a new one is made under a name of its own and
    linked into place (a link never replaces a file another process made meanwhile); an
    existing one (and its WAL and shm: SQLite gives them the file's mode) is narrowed by path.
    Where the file system has no hard links, a new file is created in place (`O_EXCL`) and
    closed at once: nothing has opened it before the store's first connection does.
    """
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        fresh = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.new")
        with contextlib.suppress(FileNotFoundError):
            fresh.unlink()
        os.close(_private_file(fresh))
        try:
            os.link(fresh, path)
        except FileExistsError:
            pass  # another process made it first
        except OSError:  # no hard links here: made in place, new, so nobody holds it yet
            with contextlib.suppress(FileExistsError):
                os.close(os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                                 0o600))
        finally:
            fresh.unlink()
        info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode):
        raise StoreUnavailable(f"{path} is a symbolic link; the store is never kept behind one")
    if not stat.S_ISREG(info.st_mode):
        raise StoreUnavailable(f"{path} is not a regular file")
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            side = os.lstat(f"{path}{suffix}")
            if (stat.S_ISREG(side.st_mode) and side.st_uid == os.geteuid()
                    and side.st_mode & 0o077):
                os.chmod(f"{path}{suffix}", 0o600)


def _open(path: Path, check: bool) -> Connection:
    try:
        owned_dir(path.parent, narrow=False)
        _ensure_private(path)
    except OSError as exc:  # a parent not ours (NotPrivate), no permission, ...
        raise StoreUnavailable(f"{path}: {exc}") from None
    uri = f"file:{urllib.parse.quote(str(path))}?mode=rw"  # never created by SQLite
    conn = sqlite3.connect(uri, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                           check_same_thread=False, uri=True, factory=Connection)
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
