"""The persistent store's foundation (issue 14, in progress): the SQLite file (WAL, schema
version, migrations), exact round trips, two processes writing at once, broken files
rebuilt with one warning, least-recently-used eviction at the cap, info and clear."""

from __future__ import annotations

import logging
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from ipylsp.model.answers import Symbol
from ipylsp.model.diagnostics import Diagnostic, Position, Range, Severity
from ipylsp.store import Store, StoreInfo, text_hash
from ipylsp.store.db import VERSION, StoreUnavailable, connect

DIAGS = (
    Diagnostic(Range(Position(0, 9), Position(0, 12)), Severity.ERROR,
               'Object of type `Literal["s"]` is not assignable to `int`', "ty",
               "invalid-assignment", "ty"),
    Diagnostic(Range(Position(3, 0), Position(4, 2)), Severity.WARNING, "línea\nzwei", None,
               None, "ruff"),
)


STORE_LOGGERS = ("ipylsp.store.db", "ipylsp.store.writer",
                 "ipylsp.service.answers")
"""Whose warnings a test counts: a thread another test left (a server's exit watcher) may log
to `ipylsp` meanwhile."""


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store(tmp_path / "store.sqlite3")
    yield s
    s.close()


def test_round_trip_by_text_and_latest_with_staleness(store: Store) -> None:
    store.put_diagnostics("/w/a.py", "x: int = 's'\n", "ty", DIAGS)
    store.put_diagnostics("/w/a.py", "x: int = 1\n", "ty", ())
    assert store.flush()
    hit = store.get_diagnostics("/w/a.py", "x: int = 's'\n", "ty")
    assert hit is not None and hit.diagnostics == DIAGS
    assert hit.text_hash == text_hash("x: int = 's'\n")
    assert store.get_diagnostics("/w/a.py", "other\n", "ty") is None
    assert store.get_diagnostics("/w/a.py", "x: int = 's'\n", "ruff") is None
    latest = store.latest("/w/a.py", "ty")
    assert latest is not None and latest.diagnostics == ()
    assert latest.stale("x: int = 1\n") is False and latest.stale("changed\n") is True
    assert replace(store.info(), bytes=0) == StoreInfo(store.path, 0, rows=2, files=1,
                                                       schema=VERSION)


def test_the_file_is_wal_and_versioned(store: Store) -> None:
    conn = sqlite3.connect(store.path)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA user_version").fetchone()[0] == VERSION
    finally:
        conn.close()


def test_a_file_from_before_the_schema_is_migrated(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    sqlite3.connect(path).close()  # an empty database at user_version 0
    conn = connect(path)
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == VERSION
        assert conn.execute("SELECT count(*) FROM answers").fetchone()[0] == 0
    finally:
        conn.close()


def test_answers_under_two_configs_of_one_text_are_both_kept(store: Store) -> None:
    text = "x: int = 's'\n"
    store.put_diagnostics("/w/a.py", text, "ty", DIAGS[:1], config="flags-a")
    store.put_diagnostics("/w/a.py", text, "ty", DIAGS[1:], config="flags-b")
    assert store.flush()
    a = store.get_diagnostics("/w/a.py", text, "ty", "flags-a")
    b = store.get_diagnostics("/w/a.py", text, "ty", "flags-b")
    assert a is not None and a.diagnostics == DIAGS[:1] and a.config == "flags-a"
    assert b is not None and b.diagnostics == DIAGS[1:] and b.config == "flags-b"
    assert store.get_diagnostics("/w/a.py", text, "ty", "flags-c") is None
    latest = store.get_diagnostics("/w/a.py", text, "ty")  # any config: the latest
    assert latest is not None and latest.config == "flags-b"


def test_a_file_of_schema_3_keeps_its_answers_under_their_config(tmp_path: Path) -> None:
    from ipylsp.store.db import MIGRATIONS

    path = tmp_path / "v3.sqlite3"
    conn = sqlite3.connect(path)
    for step in MIGRATIONS[:3]:
        conn.executescript(step)
    conn.execute("PRAGMA user_version = 3")
    conn.execute("INSERT INTO answers VALUES ('/w/a.py', ?, 'ty', 'diagnostics', '[]', 1, 1,"
                 " 'old')", (text_hash("x\n"),))
    conn.commit()
    conn.close()
    store = Store(path)
    try:
        assert store.info().schema == VERSION == 4
        found = store.get_diagnostics("/w/a.py", "x\n", "ty", "old")
        assert found is not None and (found.diagnostics, found.config) == ((), "old")
        store.put_diagnostics("/w/a.py", "x\n", "ty", DIAGS, config="new")
        assert store.flush() and store.info().rows == 2
    finally:
        store.close()


@pytest.mark.parametrize("damage", ["truncated", "garbage"])
def test_a_broken_file_is_rebuilt_with_one_warning(
    tmp_path: Path, damage: str, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "store.sqlite3"
    first = Store(path)
    for n in range(200):
        first.put_diagnostics(f"/w/{n}.py", "x\n", "ty", DIAGS)
    first.flush()
    first.close()
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 3] if damage == "truncated" else b"\x00garbage" * 999)
    with caplog.at_level(logging.WARNING, logger="ipylsp"):
        store = Store(path)
    try:
        warnings = [r for r in caplog.records
                    if r.levelno >= logging.WARNING and r.name in STORE_LOGGERS]
        assert len(warnings) == 1 and "rebuilt" in warnings[0].getMessage()
        assert store.get_diagnostics("/w/1.py", "x\n", "ty") is None  # a cache: gone
        store.put_diagnostics("/w/new.py", "y\n", "ty", DIAGS)
        assert store.flush()
        assert store.info().rows == 1
        assert len(list(tmp_path.glob("store.sqlite3.corrupt-*"))) == 1
    finally:
        store.close()


def run_together(script: str, argvs: list[list[str]], timeout: float
                 ) -> list[tuple[int, str, str]]:
    """`script` in one process per argv, released at once (each reads a line from stdin
    first); (exit code, stdout, stderr) of each."""
    processes = [
        subprocess.Popen([sys.executable, "-c", script, *argv], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for argv in argvs
    ]
    for process in processes:
        assert process.stdin is not None
        process.stdin.write("go\n")
        process.stdin.flush()
    outputs = [process.communicate(timeout=timeout) for process in processes]
    return [(p.returncode, out, err) for p, (out, err) in zip(processes, outputs, strict=True)]


WRITER = """
import sys
from pathlib import Path
from ipylsp.model.answers import Symbol
from ipylsp.model.diagnostics import Diagnostic, Position, Range, Severity
from ipylsp.store import Store
d = (Diagnostic(Range(Position(0, 0), Position(0, 1)), Severity.ERROR, "m", "s", "c", "srv"),)
store = Store(Path(sys.argv[1]))
sys.stdin.readline()  # both processes start writing together
for n in range(int(sys.argv[3])):
    store.put_diagnostics(f"/w/{sys.argv[2]}/{n}.py", str(n), "ty", d)
assert store.flush(30)
store.close()
print("ok")
"""


@pytest.mark.real
def test_two_processes_writing_at_once_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite3"
    n = 1500
    results = run_together(WRITER, [[str(path), name, str(n)] for name in ("a", "b")], 120)
    assert results == [(0, "ok\n", ""), (0, "ok\n", "")]
    store = Store(path)
    try:
        assert store.info().rows == 2 * n
    finally:
        store.close()


def test_eviction_at_the_cap_keeps_the_recently_used(tmp_path: Path) -> None:
    store = Store(tmp_path / "store.sqlite3", max_bytes=256 * 1024)
    try:
        big = DIAGS * 20
        store.put_diagnostics("/w/keep.py", "keep\n", "ty", big)
        assert store.flush()
        for n in range(400):
            if n % 10 == 0:  # used again and again: never the least recently used
                assert store.get_diagnostics("/w/keep.py", "keep\n", "ty") is not None
            store.put_diagnostics(f"/w/{n}.py", str(n), "ty", big)
            store.flush()
        info = store.info()
        assert info.bytes <= 256 * 1024 + 64 * 1024  # at most one batch over the cap
        assert 0 < info.rows < 401
        assert store.get_diagnostics("/w/keep.py", "keep\n", "ty") is not None
        assert store.get_diagnostics("/w/0.py", "0", "ty") is None  # the oldest went
    finally:
        store.close()


def test_clear(store: Store) -> None:
    store.put_diagnostics("/w/a.py", "a", "ty", DIAGS)
    store.flush()
    store.clear()
    assert store.info().rows == 0


def test_non_utf8_names_and_messages_are_stored_and_spoil_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A latin-1 file name (as os.fsdecode gives it) and a message with a lone surrogate:
    SQLite refuses such strings; they are stored escaped, and the rest of the batch too. A
    lookup marks the answer used (eviction's order) without a failed write."""
    store = Store(tmp_path / "store.sqlite3")
    try:
        odd = "/w/caf\udce9.py"
        message = "bad \ud800 message"
        bad = (Diagnostic(Range(Position(0, 0), Position(0, 1)), Severity.ERROR, message, "ty",
                          None, "ty"),)
        assert store.get_diagnostics(odd, "x", "ty") is None  # a miss, not an exception
        store.put_diagnostics("/w/good.py", "x", "ty", DIAGS)
        store.put_diagnostics(odd, "x", "ty", bad)
        assert store.flush()
        assert store.get_diagnostics("/w/good.py", "x", "ty") is not None
        with caplog.at_level(logging.WARNING, logger="ipylsp"):
            found = store.get_diagnostics(odd, "x", "ty")
            assert store.flush()
        assert found is not None and found.diagnostics[0].message == message
        assert [r.getMessage() for r in caplog.records if r.name in STORE_LOGGERS] == []
        conn = sqlite3.connect(store.path)
        try:
            (written, used), = conn.execute(
                "SELECT written_at, used_at FROM answers WHERE path LIKE '%caf%'").fetchall()
        finally:
            conn.close()
        assert used > written  # touched by the lookup
    finally:
        store.close()


def test_a_directory_at_the_store_path_is_never_moved(tmp_path: Path) -> None:
    folder = tmp_path / "mydata"
    folder.mkdir()
    (folder / "keep.txt").write_text("mine")
    with pytest.raises(StoreUnavailable):
        Store(folder)
    assert (folder / "keep.txt").read_text() == "mine"
    assert list(tmp_path.glob("*.corrupt-*")) == []


OPENER = """
import sys
from pathlib import Path
from ipylsp.store.db import connect
sys.stdin.readline()  # both processes open the corrupt file together
conn = connect(Path(sys.argv[1]))
conn.execute("INSERT INTO answers (path, text_hash, server, kind, payload, written_at, used_at)"
             " VALUES (?, 'h', 's', 'diagnostics', '[]', 0, 0)", (sys.argv[2],))
conn.close()
print("ok")
"""


@pytest.mark.real
def test_two_processes_finding_a_corrupt_file_rebuild_it_once(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite3"
    path.write_bytes(b"\x00not a database" * 5000)
    results = run_together(OPENER, [[str(path), name] for name in ("a", "b")], 60)
    assert [(code, out) for code, out, _ in results] == [(0, "ok\n"), (0, "ok\n")], results
    assert sum("moved to" in err for _, _, err in results) == 1  # one warning, one move
    assert len(list(tmp_path.glob("store.sqlite3.corrupt-*"))) == 1
    conn = sqlite3.connect(path)
    try:
        assert sorted(r[0] for r in conn.execute("SELECT path FROM answers")) == ["a", "b"]
    finally:
        conn.close()


def test_eviction_covers_outlines_too(tmp_path: Path) -> None:
    store = Store(tmp_path / "store.sqlite3", max_bytes=512 * 1024)
    try:
        for f in range(200):
            store.put_symbols(f"/w/f{f}.py", "t", "ty", "/w",
                              [Symbol(f"name_{i}_padding_padding", "function", i, 0)
                               for i in range(100)])
        assert store.flush()
        for f in range(20):  # later answers still find room
            store.put_diagnostics(f"/w/f{f}.py", "t", "ty", DIAGS)
            assert store.flush()
        info = store.info()
        assert info.rows == 20 and info.bytes <= 2 * 512 * 1024
        assert store.outline("/w/f199.py") is not None  # the newest outline stays
        assert store.outline("/w/f0.py") is None  # the oldest went
    finally:
        store.close()


def test_no_open_overlaps_a_rebuild_moving_the_file_aside(tmp_path: Path) -> None:
    """A rebuild holds `<store>.lock` exclusive while it moves the file and its WAL aside; an
    open meanwhile would create a fresh file and WAL that the move then splits (a lost row,
    found by a review). Opens wait for the lock; a negative window, never a false failure."""
    import fcntl
    import threading

    from ipylsp.store import db

    path = tmp_path / "store.sqlite3"
    opened = threading.Event()
    conns: list[sqlite3.Connection] = []

    def open_it() -> None:
        conns.append(connect(path))
        opened.set()

    held = db._lock_file(path)
    try:
        assert db._lock(held, fcntl.LOCK_EX, None)
        thread = threading.Thread(target=open_it)
        thread.start()
        assert not opened.wait(0.3)  # held off while the "rebuild" runs
        assert not path.exists()
    finally:
        held.close()
    assert opened.wait(30)
    thread.join()
    conns[0].close()


def test_a_connection_holds_the_lock_shared_until_closed(tmp_path: Path) -> None:
    """So no rebuild can take it exclusive while the file is in use, here or elsewhere."""
    import fcntl

    from ipylsp.store import db

    path = tmp_path / "store.sqlite3"
    conn = connect(path)
    probe = db._lock_file(path)
    try:
        assert not db._lock(probe, fcntl.LOCK_EX, None)
        assert db._lock(probe, fcntl.LOCK_SH, None)  # other opens share it
        fcntl.flock(probe, fcntl.LOCK_UN)
        conn.close()
        assert db._lock(probe, fcntl.LOCK_EX, None)
    finally:
        probe.close()


def test_the_database_file_is_never_opened_by_ipylsp_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Closing any descriptor of the database file drops every POSIX lock this process's
    connections hold on it (the cause of issue 28's losses): only SQLite opens it."""
    import builtins

    path = tmp_path / "store.sqlite3"
    opened: list[str] = []
    real_os_open, real_open = os.open, builtins.open

    def os_open(file: str | os.PathLike[str], *args: object, **kwargs: object) -> int:
        opened.append(os.fspath(file))
        return real_os_open(file, *args, **kwargs)  # type: ignore[arg-type]

    def open_(file: object, *args: object, **kwargs: object) -> object:
        opened.append(str(file))
        return real_open(file, *args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(os, "open", os_open)
    monkeypatch.setattr(builtins, "open", open_)
    for _ in range(2):  # creating it, then opening it as it is
        store = Store(path)
        store.put_diagnostics("/w/a.py", "a", "ty", DIAGS)
        assert store.flush()
        store.close()
    monkeypatch.undo()
    database = {str(path), f"{path}-wal", f"{path}-shm"}
    assert [name for name in opened if name in database] == []
    assert {oct(os.stat(f"{path}{s}").st_mode & 0o777) for s in ("", ".lock")} == {"0o600"}


@pytest.mark.real
def test_a_damaged_file_another_process_has_open_is_not_moved(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Its store goes off for this process (after `REBUILD_WAIT`, not the 15 s a lock may
    take), said in one sentence; once the other process closes it, the next open rebuilds
    it."""
    path = tmp_path / "store.sqlite3"
    Store(path).close()
    holder = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("store_worker.py")), "hold", str(path),
         "-"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "ready\n"
        plain = sqlite3.connect(path)  # everything into the file, the WAL emptied
        try:
            assert plain.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0] == 0
        finally:
            plain.close()
        path.write_bytes(b"\x00not a database" * (path.stat().st_size // 16))
        with pytest.raises(StoreUnavailable, match="another ipylsp process has it open"):
            Store(path)
        assert list(tmp_path.glob("*.corrupt-*")) == []
    finally:
        holder.communicate("stop\n", timeout=60)
    assert holder.returncode == 0
    with caplog.at_level(logging.WARNING, logger="ipylsp"):
        store = Store(path)
    store.close()
    assert len(list(tmp_path.glob("store.sqlite3.corrupt-*"))) == 1
    assert ["rebuilt" in r.getMessage() for r in caplog.records if r.name in STORE_LOGGERS
            ] == [True]


MOUNTINFO = """\
22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
40 22 0:40 / /home rw,relatime shared:2 - nfs4 server:/export/home rw,vers=4.2
41 40 8:2 / /home/local\\040disk rw shared:3 - xfs /dev/sdb1 rw
"""


@pytest.mark.parametrize(("directory", "kind"), [
    ("/home/u/.local/share/ipylsp", "nfs4"), ("/home", "nfs4"), ("/homework", ""),
    ("/home/local disk/ipylsp", ""), ("/var/lib", ""),
])
def test_a_network_file_system_is_recognised(directory: str, kind: str) -> None:
    from ipylsp.store import db

    assert db.network_file_system(Path(directory), MOUNTINFO) == kind


def test_a_store_on_a_network_file_system_stays_off_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """WAL cannot be shared across hosts: the file is never opened there (so never
    corrupted), and the sentence names the knob."""
    from ipylsp.store import db

    monkeypatch.setattr(db, "network_file_system", lambda directory, mountinfo=None: "nfs4")
    with pytest.raises(StoreUnavailable) as raised:
        Store(tmp_path / "store.sqlite3")
    assert str(raised.value) == (
        f"{tmp_path / 'store.sqlite3'} is on a network file system (nfs4), where SQLite cannot"
        " share it safely between processes; set IPyLSP.store_path (or $IPYLSP_STORE) to a"
        " file on a local disk"
    )
    assert list(tmp_path.iterdir()) == []


def test_flush_says_false_when_a_row_was_dropped(tmp_path: Path) -> None:
    """A caller can know what was kept: a bad row, or a put after close, is not acknowledged;
    the next flush speaks only for what was put since."""
    store = Store(tmp_path / "store.sqlite3")
    try:
        def missing_table(conn: sqlite3.Connection) -> None:
            conn.execute("INSERT INTO nowhere VALUES (1)")

        store._writer.put(missing_table)
        assert store.flush() is False  # an OperationalError drops the batch
        store.put_diagnostics("/w/a.py", "a", "ty", DIAGS)
        assert store.flush() is True
        store._writer.put(lambda conn: (_ for _ in ()).throw(ValueError("bad row")))
        store.put_diagnostics("/w/b.py", "b", "ty", DIAGS)
        assert store.flush() is False  # one bad row: the others written, the flush says no
        assert store.get_diagnostics("/w/b.py", "b", "ty") is not None
    finally:
        store.close()
    store.put_diagnostics("/w/c.py", "c", "ty", DIAGS)
    assert store.flush() is False


def test_a_drop_is_told_to_every_thread_whose_window_holds_it(tmp_path: Path) -> None:
    """Another thread's flush does not use up a drop: the thread that put the lost row hears
    of it too (a flush answers for every write since its own thread's previous flush). A
    clear answers for itself, whatever else was dropped."""
    import threading

    store = Store(tmp_path / "store.sqlite3")
    try:
        answers: list[bool] = []

        def other_thread() -> None:
            answers.append(store.flush())

        store._writer.put(lambda conn: (_ for _ in ()).throw(ValueError("bad row")))
        thread = threading.Thread(target=other_thread)
        thread.start()
        thread.join()
        assert answers == [False]  # its window holds the drop
        assert store.flush() is False  # and so does this thread's: told again, not used up
        assert store.flush() is True  # nothing put since
        store._writer.put(lambda conn: (_ for _ in ()).throw(ValueError("bad row")))
        assert store.clear() is True
        assert store.flush() is False
    finally:
        store.close()


def test_the_default_file_is_not_the_one_an_older_ipylsp_opens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An ipylsp from before issue 28 drops its own locks on `store.sqlite3`: it must never
    share a file with this one."""
    from ipylsp.model.settings import Settings
    from ipylsp.service.answers import store_file

    monkeypatch.delenv("IPYLSP_STORE", raising=False)
    assert store_file(Settings(data_dir=tmp_path)) == tmp_path / "store.v2.sqlite3"


def test_the_service_says_once_why_a_network_store_is_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from ipylsp.model.settings import Settings
    from ipylsp.service.answers import Answers
    from ipylsp.store import db

    monkeypatch.setattr(db, "network_file_system", lambda directory, mountinfo=None: "nfs4")
    with caplog.at_level(logging.WARNING, logger="ipylsp"):
        answers = Answers(Settings(store_path=tmp_path / "store.sqlite3"))
        assert answers.store(wait=30) is None
        answers.put(tmp_path / "a.py", "a", "ty", DIAGS)  # a cache: dropped, never raised
        answers.close()
    warnings = [r.getMessage() for r in caplog.records if r.name in STORE_LOGGERS]
    assert len(warnings) == 1 and "network file system (nfs4)" in warnings[0], warnings
    assert "set IPyLSP.store_path (or $IPYLSP_STORE) to a file on a local disk" in answers.problem


def test_a_stored_outline_is_stale_past_the_read_limit(tmp_path: Path) -> None:
    """Whether a stored answer still fits its file is read within `max_file_mb`, the one
    limit of every read (a file the check would refuse is not read here either)."""
    from dataclasses import replace as changed

    from ipylsp.model.settings import Settings
    from ipylsp.service.answers import Answers

    source = tmp_path / "big.py"
    source.write_text("def f():\n    pass\n" + "#" * 3000 + "\n")
    answers = Answers(Settings(store_path=tmp_path / "store.sqlite3"))
    try:
        answers.put_symbols(source, source.read_text(), "ty", tmp_path,
                            [Symbol("f", "function", 0, 4)])
        assert answers.reader() is not None  # written
        found = answers.outline(source)
        assert found is not None and found[1].stale is False
        answers.settings = changed(answers.settings, max_file_mb=0.001)  # 1,048 bytes
        found = answers.outline(source)
        assert found is not None and found[1].stale is True
    finally:
        answers.close()


def test_a_changed_store_max_mb_reaches_the_open_store(tmp_path: Path) -> None:
    """`Service.configure` with another `store_max_mb` (the same file): the open store evicts
    to the new cap from its next write on, without being reopened."""
    from dataclasses import replace as changed

    from ipylsp.model.settings import Settings
    from ipylsp.service.state import ServiceState

    state = ServiceState(Settings(store_path=tmp_path / "store.sqlite3"))
    try:
        store = state.answers.reader()
        assert store is not None and store.max_bytes == 64 * 1024 * 1024
        for n in range(40):  # about 192 KiB, far below 64 MiB: nothing goes
            store.put_diagnostics(f"/w/{n}.py", str(n), "ty", DIAGS * 20)
        assert store.flush() and store.info().rows == 40
        state.configure(changed(state.settings, store_max_mb=0.125))
        assert state.answers.store() is store and store.max_bytes == 128 * 1024
        store.put_diagnostics("/w/new.py", "new", "ty", DIAGS * 20)
        assert store.flush()
        assert store.info().rows < 41  # over the new cap: the least recently used went
        assert store.get_diagnostics("/w/new.py", "new", "ty") is not None
    finally:
        state.close()
