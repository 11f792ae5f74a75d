"""The write watcher: real writes, real child processes, a real IPython shell. No sleeps."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ipylsp.ipython import audit
from ipylsp.ipython.fswatch import InotifyTracker, TrackerUnavailable, max_user_watches
from ipylsp.ipython.skip import FileState, FileText, PathRules, is_binary, read_file
from ipylsp.ipython.watch import Write, WriteWatcher

CHILD_MODES = ["inotify", "scan"]


def _inotify_works() -> bool:
    try:
        InotifyTracker().close()
    except TrackerUnavailable:
        return False
    return True


INOTIFY = _inotify_works()


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    ws = tmp_path.resolve() / "ws"
    (ws / "src").mkdir(parents=True)
    monkeypatch.chdir(ws)
    return ws


def _watcher(root: Path, mode: str = "auto") -> WriteWatcher:
    if mode == "inotify" and not INOTIFY:
        pytest.skip("inotify unavailable here")
    return WriteWatcher(
        lambda p: p.is_relative_to(root),
        roots=lambda: [root],
        child_mode=mode,  # type: ignore[arg-type]
    )


@pytest.fixture
def watcher(root: Path) -> Iterator[WriteWatcher]:
    w = _watcher(root)
    yield w
    w.close()


@pytest.fixture(params=CHILD_MODES)
def child_watcher(request: pytest.FixtureRequest, root: Path) -> Iterator[WriteWatcher]:
    w = _watcher(root, request.param)
    yield w
    w.close()


def cell(watcher: WriteWatcher, body: Callable[[], object]) -> list[Write]:
    watcher.begin_cell()
    try:
        body()
    finally:
        writes = watcher.end_cell()
    return writes


def W(
    path: Path,
    kind: str = "kernel",
    before: str | None = None,
    *,
    known: bool = True,
    deleted: bool = False,
    dest: Path | None = None,
) -> Write:
    return Write(
        path=path,
        kind=kind,  # type: ignore[arg-type]
        before=before,
        before_known=known,
        deleted=deleted,
        destination_of=dest,
    )


def sh(script: str) -> None:
    subprocess.run(["sh", "-c", script], check=True)


# -- kernel writes -------------------------------------------------------------------------------


def test_open_modes_capture_text_before_truncation(root: Path, watcher: WriteWatcher) -> None:
    a, b, c, d = (root / "src" / n for n in ("a.py", "b.py", "c.py", "d.py"))
    a.write_text("a = 1\n")
    b.write_text("b = 1\n")
    c.write_text("c = 1\n")

    def body() -> None:
        with open(a, "w") as f:  # truncates: the before must have been read first
            f.write("a = 2\n")
        with open(b, "a") as f:
            f.write("b = 2\n")
        with open(c, "r+") as f:
            f.write("C")
        with open(d, "x") as f:
            f.write("d = 1\n")
        with open(a) as f:  # reads are not writes
            f.read()

    assert cell(watcher, body) == [
        W(a, before="a = 1\n"),
        W(b, before="b = 1\n"),
        W(c, before="c = 1\n"),
        W(d),
    ]
    assert watcher.notes == ()


def test_pathlib_os_open_and_relative_paths(root: Path, watcher: WriteWatcher) -> None:
    (root / "src" / "p.py").write_text("p\n")
    (root / "src" / "q.py").write_bytes(b"q\n")

    def body() -> None:
        Path("src/p.py").write_text("P\n")
        Path("src/q.py").write_bytes(b"Q\n")
        fd = os.open("src/o.py", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.close(fd)
        os.close(os.open("src/p.py", os.O_RDONLY))
        os.chdir(root / "src")
        Path("r.py").write_text("r\n")  # relative to the new cwd
        Path("../src/../src/s.py").write_text("s\n")

    assert cell(watcher, body) == [
        W(root / "src" / "o.py"),
        W(root / "src" / "p.py", before="p\n"),
        W(root / "src" / "q.py", before="q\n"),
        W(root / "src" / "r.py"),
        W(root / "src" / "s.py"),
    ]


def test_many_writes_one_record_with_earliest_before(root: Path, watcher: WriteWatcher) -> None:
    f = root / "src" / "m.py"
    f.write_text("v0\n")

    def body() -> None:
        for i in range(1, 5):
            f.write_text(f"v{i}\n")
        with open(f, "a") as h:
            h.write("tail\n")

    assert cell(watcher, body) == [W(f, before="v0\n")]
    assert f.read_text() == "v4\ntail\n"


def test_atomic_write_reports_the_destination(root: Path, watcher: WriteWatcher) -> None:
    dest = root / "src" / "app.py"
    dest.write_text("old\n")

    def body() -> None:
        tmp = root / "src" / ".app.py.tmp"
        with open(tmp, "w") as f:
            f.write("new\n")
        os.replace(tmp, dest)

    assert cell(watcher, body) == [W(dest, before="old\n")]


def test_rename_of_existing_file_is_a_move(root: Path, watcher: WriteWatcher) -> None:
    old, new = root / "src" / "old.py", root / "src" / "new.py"
    old.write_text("x = 1\n")
    assert cell(watcher, lambda: os.rename(old, new)) == [
        W(new, dest=old),
        W(old, before="x = 1\n", deleted=True),
    ]
    # Moving over an existing file: its own before, and a move.
    old.write_text("y\n")
    assert cell(watcher, lambda: shutil.move(old, new)) == [
        W(new, before="x = 1\n", dest=old),
        W(old, before="y\n", deleted=True),
    ]


def test_directory_rename_by_kernel(root: Path, watcher: WriteWatcher) -> None:
    pkg = root / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "a.py").write_text("a\n")
    (pkg / "sub" / "b.py").write_text("b\n")
    writes = cell(watcher, lambda: os.rename(pkg, root / "lib"))
    assert writes == [
        W(root / "lib" / "a.py", dest=pkg / "a.py"),
        W(root / "lib" / "sub" / "b.py", dest=pkg / "sub" / "b.py"),
        W(pkg / "a.py", known=False, deleted=True),
        W(pkg / "sub" / "b.py", known=False, deleted=True),
    ]


def test_shutil_copies(root: Path, watcher: WriteWatcher) -> None:
    src = root / "src" / "a.py"
    src.write_text("a\n")
    (root / "src" / "c2.py").write_text("old c2\n")
    (root / "tree").mkdir()
    (root / "tree" / "t.py").write_text("t\n")

    def body() -> None:
        shutil.copyfile(src, root / "src" / "c1.py")
        shutil.copy(src, root / "src" / "c2.py")
        shutil.copy2(src, root / "lib")
        shutil.copytree(root / "tree", root / "tree2")

    assert cell(watcher, body) == [
        W(root / "lib"),
        W(root / "src" / "c1.py"),
        W(root / "src" / "c2.py", before="old c2\n"),
        W(root / "tree2" / "t.py"),
    ]


def test_deletions(root: Path, watcher: WriteWatcher) -> None:
    (root / "src" / "a.py").write_text("a\n")
    (root / "src" / "b.py").write_text("b\n")
    (root / "gone" / "deep").mkdir(parents=True)
    (root / "gone" / "g.py").write_text("g\n")
    (root / "gone" / "deep" / "h.py").write_text("h\n")

    def body() -> None:
        os.remove(root / "src" / "a.py")
        (root / "src" / "b.py").unlink()
        shutil.rmtree(root / "gone")  # unlinks relative to directory fds

    assert cell(watcher, body) == [
        W(root / "gone" / "deep" / "h.py", before="h\n", deleted=True),
        W(root / "gone" / "g.py", before="g\n", deleted=True),
        W(root / "src" / "a.py", before="a\n", deleted=True),
        W(root / "src" / "b.py", before="b\n", deleted=True),
    ]


def test_temporary_file_created_and_removed_is_not_reported(
    root: Path, watcher: WriteWatcher
) -> None:
    def body() -> None:
        p = root / "src" / "scratch.py"
        p.write_text("x")
        p.unlink()

    assert cell(watcher, body) == []


def test_truncate_link_symlink(root: Path, watcher: WriteWatcher) -> None:
    t = root / "src" / "t.py"
    t.write_text("long text\n")

    def body() -> None:
        os.truncate(t, 4)
        os.link(t, root / "src" / "hard.py")
        os.symlink("t.py", root / "src" / "soft.py")

    assert cell(watcher, body) == [
        W(root / "src" / "hard.py"),
        W(root / "src" / "soft.py"),
        W(t, before="long text\n"),
    ]


def test_cell_that_raises_still_reports(root: Path, watcher: WriteWatcher) -> None:
    f = root / "src" / "r.py"
    f.write_text("before\n")

    def body() -> None:
        f.write_text("after\n")
        raise ZeroDivisionError

    watcher.begin_cell()
    with pytest.raises(ZeroDivisionError):
        body()
    assert watcher.end_cell() == [W(f, before="before\n")]


def test_cell_that_writes_nothing(root: Path, watcher: WriteWatcher) -> None:
    (root / "src" / "a.py").write_text("a\n")
    assert cell(watcher, lambda: (root / "src" / "a.py").read_text()) == []
    assert watcher.end_cell() == []  # no cell running
    assert audit._active == ()


def test_writes_from_threads_and_ignored_threads(root: Path, watcher: WriteWatcher) -> None:
    def write(name: str) -> None:
        (root / "src" / name).write_text(name)

    def body() -> None:
        t = threading.Thread(target=write, args=("thread.py",))
        t.start()
        t.join()
        ignored = threading.Thread(target=lambda: (ready.wait(), write("service.py")))
        ignored.start()
        assert ignored.ident is not None
        watcher.ignored_threads.add(ignored.ident)
        ready.set()
        ignored.join()

    ready = threading.Event()
    assert cell(watcher, body) == [W(root / "src" / "thread.py")]


# -- what is skipped -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "rel",
    [
        ".git/config",
        "node_modules/x/index.js",
        ".venv/lib/site.py",
        "venv/lib/site.py",
        "src/__pycache__/a.cpython-311.py",
        ".mypy_cache/x.json",
        ".ruff_cache/x",
        ".pytest_cache/v",
        ".cache/x.py",
        "build/lib/a.py",
        "dist/a.py",
        ".ipynb_checkpoints/a-checkpoint.py",
        "target/debug/a.rs",
        "myenv/lib/site.py",  # a directory with pyvenv.cfg
    ],
)
def test_skipped_directories(root: Path, watcher: WriteWatcher, rel: str) -> None:
    (root / "myenv").mkdir()
    (root / "myenv" / "pyvenv.cfg").write_text("home = /usr\n")
    target = root / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    assert cell(watcher, lambda: target.write_text("x\n")) == []


def test_root_named_like_a_skipped_directory_is_watched(tmp_path: Path) -> None:
    ws = tmp_path.resolve() / "build" / "proj"
    ws.mkdir(parents=True)
    (ws / "pyvenv.cfg").write_text("")  # `virtualenv .` in the project root
    w = _watcher(ws)
    try:
        assert cell(w, lambda: (ws / "a.py").write_text("a")) == [W(ws / "a.py")]
    finally:
        w.close()


def test_binary_files_are_skipped_latin1_is_text(root: Path, watcher: WriteWatcher) -> None:
    png = root / "src" / "img.png"
    png.write_bytes(b"\x89PNG\0\0data")
    latin = root / "src" / "latin.py"
    latin.write_bytes(b"s = '\xe9t\xe9'\n")

    def body() -> None:
        png.write_bytes(b"\x89PNG\0\0other")
        (root / "src" / "new.bin").write_bytes(b"\0\1\2")
        latin.write_bytes(b"s = 1\n")

    assert cell(watcher, body) == [W(latin, before="s = '\ufffdt\ufffd'\n")]
    assert is_binary(b"abc\0") and not is_binary(b"abc\xff")


def test_outside_the_roots_filter(root: Path, tmp_path: Path) -> None:
    outside = tmp_path.resolve() / "outside.py"
    w = WriteWatcher(lambda p: p.suffix == ".py" and p.is_relative_to(root), roots=lambda: [root])
    try:
        writes = cell(
            w,
            lambda: (
                outside.write_text("x"),
                (root / "notes.txt").write_text("n"),
                (root / "src" / "a.py").write_text("a"),
            ),
        )
        assert writes == [W(root / "src" / "a.py")]
    finally:
        w.close()


def test_large_file_before_is_unknown(root: Path, watcher: WriteWatcher) -> None:
    big = root / "src" / "big.py"
    big.write_text("x = 1\n" * 10)
    watcher.max_text_bytes = 20
    assert cell(watcher, lambda: big.write_text("y = 2\n")) == [W(big, known=False)]


def test_fifo_is_not_read_nor_reported(root: Path, watcher: WriteWatcher) -> None:
    fifo = root / "src" / "pipe"
    os.mkfifo(fifo)

    def body() -> None:
        with pytest.raises(OSError):  # ENXIO: no reader (and the watcher did not block)
            os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)

    assert cell(watcher, body) == []


def test_symlinked_root_reports_resolved_directories(tmp_path: Path) -> None:
    real = tmp_path.resolve() / "real"
    real.mkdir()
    link = tmp_path.resolve() / "link"
    link.symlink_to(real)
    w = WriteWatcher(lambda p: p.is_relative_to(real), roots=lambda: [link])
    try:
        assert cell(w, lambda: (link / "a.py").write_text("a")) == [W(real / "a.py")]
    finally:
        w.close()


def test_path_rules_and_read_file(root: Path) -> None:
    rules = PathRules([str(root)])
    assert rules.skipped(str(root / "node_modules" / "a.js"))
    assert not rules.skipped(str(root / "src" / "a.py"))
    assert rules.skipped("/elsewhere/.git/config")  # under no root: every component counts
    assert read_file(str(root / "missing"), 100).state.value == "missing"
    assert read_file(str(root), 100).state.value == "not_file"


def test_read_file_classifies_without_blocking(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each state `read_file` tells, with and without the text; a FIFO is never waited on,
    even one swapped in after the stat saw a regular file."""
    text, binary, big, big_binary = (root / n for n in ("t.py", "b.bin", "big.py", "big.bin"))
    text.write_bytes("caf\xe9 = 1\n".encode("latin-1"))
    binary.write_bytes(b"ab\0cd")
    big.write_bytes(b"x" * 200)
    big_binary.write_bytes(b"\0" * 200)
    got = {p.name: read_file(str(p), 100) for p in (text, binary, big, big_binary)}
    assert {n: (f.state, f.text, f.size) for n, f in got.items()} == {
        "t.py": (FileState.TEXT, "caf\ufffd = 1\n", 9),
        "b.bin": (FileState.BINARY, None, 5),
        "big.py": (FileState.TOO_LARGE, None, 200),
        "big.bin": (FileState.BINARY, None, 200),
    }
    assert read_file(str(big), None) == FileText(FileState.TEXT, "x" * 200, 200)
    heads = {p.name: read_file(str(p), 100, want_text=False) for p in (text, binary, big)}
    assert heads == {"t.py": FileText(FileState.TEXT, None, 9),
                     "b.bin": FileText(FileState.BINARY, None, 5),
                     "big.py": FileText(FileState.TOO_LARGE, None, 200)}
    assert read_file(str(text / "below"), 100) == FileText(FileState.MISSING)
    fifo = root / "pipe"
    os.mkfifo(fifo)
    assert read_file(str(fifo), 100) == FileText(FileState.NOT_FILE)
    real_stat = os.stat

    def stale_stat(path: str, *args: object, **kwargs: object) -> os.stat_result:
        info = real_stat(path, *args, **kwargs)  # type: ignore[arg-type]
        if os.fspath(path) != str(fifo):
            return info
        fields = list(info)
        fields[stat.ST_MODE] = stat.S_IFREG | 0o644  # a regular file when stat'ed, then a FIFO
        return os.stat_result(fields)

    monkeypatch.setattr(os, "stat", stale_stat)
    assert read_file(str(fifo), 100) == FileText(FileState.NOT_FILE)
    monkeypatch.setattr(os, "stat", real_stat)
    loop = root / "loop"
    loop.symlink_to(loop)
    assert read_file(str(loop), 100) == FileText(FileState.UNREADABLE)


# -- child processes -----------------------------------------------------------------------------


@pytest.mark.real
def test_subprocess_writes(root: Path, child_watcher: WriteWatcher) -> None:
    existing = root / "src" / "e.py"
    existing.write_text("e\n")
    writes = cell(
        child_watcher,
        lambda: sh("echo x > src/new.py; echo more >> src/e.py; echo data > notes.bin.txt"),
    )
    assert writes == [
        W(root / "notes.bin.txt", "child"),
        W(existing, "child", known=False),
        W(root / "src" / "new.py", "child"),
    ]
    assert child_watcher.mode == child_watcher.child_mode
    assert child_watcher.notes == ()


@pytest.mark.real
def test_os_system_and_new_directories(root: Path, child_watcher: WriteWatcher) -> None:
    (root / "src" / "gone.py").write_text("g\n")
    writes = cell(
        child_watcher,
        lambda: os.system("mkdir -p pkg/sub && echo a > pkg/sub/a.py && rm src/gone.py"),
    )
    assert writes == [
        W(root / "pkg" / "sub" / "a.py", "child"),
        W(root / "src" / "gone.py", "child", known=False, deleted=True),
    ]
    # The new directory is watched from now on.
    writes = cell(child_watcher, lambda: sh("echo b > pkg/sub/b.py"))
    assert writes == [W(root / "pkg" / "sub" / "b.py", "child")]


@pytest.mark.real
def test_child_moves(root: Path, child_watcher: WriteWatcher) -> None:
    (root / "src" / "a.py").write_text("a\n")
    (root / "d1").mkdir()
    (root / "d1" / "x.py").write_text("x\n")
    writes = cell(child_watcher, lambda: sh("mv src/a.py src/b.py && mv d1 d2"))
    assert writes == [
        W(root / "d1" / "x.py", "child", known=False, deleted=True),
        W(root / "d2" / "x.py", "child", dest=root / "d1" / "x.py"),
        W(root / "src" / "a.py", "child", known=False, deleted=True),
        # inotify cannot tell whether b.py existed before the rename; the scan can.
        W(
            root / "src" / "b.py",
            "child",
            known=child_watcher.mode == "scan",
            dest=root / "src" / "a.py",
        ),
    ]


@pytest.mark.real
def test_child_atomic_write_sed_in_place(root: Path, child_watcher: WriteWatcher) -> None:
    f = root / "src" / "s.py"
    f.write_text("a = 1\n")
    writes = cell(child_watcher, lambda: sh("sed -i 's/1/2/' src/s.py"))
    assert writes == [W(f, "child", known=False)]
    assert f.read_text() == "a = 2\n"


@pytest.mark.real
def test_child_skips(root: Path, child_watcher: WriteWatcher) -> None:
    (root / "myenv").mkdir()
    (root / "myenv" / "pyvenv.cfg").write_text("")
    script = (
        "mkdir -p node_modules/x .git build myenv/lib src/__pycache__ && "
        "echo 1 > node_modules/x/i.js && echo 1 > .git/HEAD && echo 1 > build/a.py && "
        "echo 1 > myenv/lib/site.py && echo 1 > src/__pycache__/a.pyc && "
        "printf 'b\\000' > src/blob.bin && mkdir -p new/.venv && echo 1 > new/.venv/x.py"
    )
    assert cell(child_watcher, lambda: sh(script)) == []


@pytest.mark.real
def test_no_child_means_no_scan(root: Path, child_watcher: WriteWatcher) -> None:
    # Writes by other processes during a cell that spawns nothing are not the cell's. The
    # "other process" is started from a thread the watcher ignores, so it is not the cell's child.
    cell(child_watcher, lambda: sh("true"))  # the tracker is set up
    go = threading.Event()
    editor = threading.Thread(target=lambda: (go.wait(), sh("echo e > src/editor.py")))

    def body() -> None:
        editor.start()
        assert editor.ident is not None
        child_watcher.ignored_threads.add(editor.ident)
        go.set()
        editor.join()
        (root / "src" / "k.py").write_text("k")

    assert cell(child_watcher, body) == [W(root / "src" / "k.py")]
    assert (root / "src" / "editor.py").exists()


@pytest.mark.real
def test_kernel_write_after_child_write_has_unknown_before(
    root: Path, child_watcher: WriteWatcher
) -> None:
    both, mine = root / "src" / "both.py", root / "src" / "mine.py"
    both.write_text("0\n")
    mine.write_text("m0\n")

    def body() -> None:
        sh("echo 1 > src/both.py")
        both.write_text("2\n")  # its text now is the child's, not the text before the cell
        mine.write_text("m1\n")

    assert cell(child_watcher, body) == [
        W(both, "kernel", known=False),
        W(mine, "kernel", before="m0\n"),
    ]


@pytest.mark.real
def test_fork_child_writes(root: Path, child_watcher: WriteWatcher) -> None:
    def body() -> None:
        pid = os.fork()
        if pid == 0:  # the child must not record into the parent's cell (nor deadlock)
            try:
                (root / "src" / "forked.py").write_text("f")
            finally:
                os._exit(0)
        os.waitpid(pid, 0)

    assert cell(child_watcher, body) == [W(root / "src" / "forked.py", "child")]


@pytest.mark.real
def test_inotify_watch_limit_falls_back_to_scan(root: Path) -> None:
    if not INOTIFY:
        pytest.skip("inotify unavailable here")
    for i in range(5):
        (root / f"d{i}").mkdir()
    w = WriteWatcher(lambda p: True, roots=lambda: [root], max_watch_dirs=3)
    try:
        writes = cell(w, lambda: sh("echo x > d4/a.py"))
        assert writes == [W(root / "d4" / "a.py", "child")]
        assert w.mode == "scan"
        assert len(w.notes) == 1 and "scanning instead" in w.notes[0]
    finally:
        w.close()


@pytest.mark.real
def test_watch_limit_hit_by_a_new_directory(root: Path) -> None:
    if not INOTIFY:
        pytest.skip("inotify unavailable here")
    w = WriteWatcher(lambda p: True, roots=lambda: [root], max_watch_dirs=3)
    try:
        assert cell(w, lambda: sh("true")) == []  # watches: ws, ws/src
        writes = cell(w, lambda: sh("mkdir -p a/b/c && echo x > a/b/c/f.py && echo y > a/g.py"))
        assert W(root / "a" / "g.py", "child") in writes  # listed before the limit
        assert any("may be missing" in n for n in w.notes)
        assert any("scanning instead" in n for n in w.notes)
        assert w.mode == "scan"
        assert cell(w, lambda: sh("echo z > a/b/c/f.py")) == [
            W(root / "a" / "b" / "c" / "f.py", "child", known=False)
        ]
    finally:
        w.close()


@pytest.mark.real
def test_workspace_too_large_is_said_not_hidden(root: Path) -> None:
    for i in range(5):
        (root / f"f{i}.py").write_text("")
    w = WriteWatcher(lambda p: True, roots=lambda: [root], child_mode="scan", max_scan_files=3)
    try:
        assert cell(w, lambda: sh("echo x > f0.py")) == []
        assert w.mode == "off"
        assert "not detected" in w.notes[0] and "more than 3 files" in w.notes[0]
        # The kernel's own writes are still found.
        assert cell(w, lambda: (root / "k.py").write_text("k")) == [W(root / "k.py")]
    finally:
        w.close()


@pytest.mark.real
def test_child_mode_off(root: Path) -> None:
    w = WriteWatcher(lambda p: True, roots=lambda: [root], child_mode="off")
    try:
        assert cell(w, lambda: sh("echo x > a.py")) == []
        assert w.mode == "off"
        assert w.notes == ("child-process writes are not detected: disabled",)
    finally:
        w.close()


@pytest.mark.real
def test_directory_created_between_cells_is_watched(
    root: Path, child_watcher: WriteWatcher
) -> None:
    cell(child_watcher, lambda: sh("true"))  # inotify: the watches exist from now on
    (root / "later" / "deeper").mkdir(parents=True)  # between cells, by "someone else"
    writes = cell(child_watcher, lambda: sh("echo x > later/deeper/l.py"))
    assert writes == [W(root / "later" / "deeper" / "l.py", "child")]


@pytest.mark.real
def test_inotify_queue_overflow_falls_back_to_mtimes(root: Path) -> None:
    from ipylsp.ipython.fswatch import IN_Q_OVERFLOW

    w = _watcher(root, "inotify")
    try:
        w.begin_cell()
        sh("echo x > src/o.py")
        tracker = w.tracker
        assert isinstance(tracker, InotifyTracker)
        real = tracker._drain_raw

        def overflow(files: bool = True) -> list[tuple[int, int, int, str]]:
            real(files)
            return [(-1, IN_Q_OVERFLOW, 0, "")]

        tracker._drain_raw = overflow  # type: ignore[method-assign]
        writes = w.end_cell()
        del tracker._drain_raw  # the class's method again
        assert writes == [W(root / "src" / "o.py", "child", known=False)]
        assert len(w.notes) == 1 and "overflowed" in w.notes[0]
        # The watches are rebuilt at the next child; events are exact again.
        assert cell(w, lambda: sh("echo y > src/p.py")) == [W(root / "src" / "p.py", "child")]
        assert w.notes == ()
    finally:
        w.close()


@pytest.mark.real
def test_giving_up_is_per_roots(root: Path, tmp_path: Path) -> None:
    small = tmp_path.resolve() / "small"
    small.mkdir()
    current = [root]
    for i in range(5):
        (root / f"f{i}.py").write_text("")
    w = WriteWatcher(lambda p: True, roots=lambda: current, child_mode="scan", max_scan_files=3)
    try:
        assert cell(w, lambda: sh("true")) == []
        assert w.mode == "off"
        current[:] = [small]  # e.g. %cd elsewhere
        assert cell(w, lambda: sh(f"echo s > {small}/s.py")) == [W(small / "s.py", "child")]
        assert w.mode == "scan" and w.notes == ()
    finally:
        w.close()


def test_prepare_sets_inotify_up(root: Path) -> None:
    w = _watcher(root, "inotify")
    try:
        assert w.mode == "pending"
        assert w.prepare() is None
        assert w.mode == "inotify"
        assert isinstance(w.tracker, InotifyTracker)
        assert w.tracker.watched_dirs == 2  # ws and ws/src
    finally:
        w.close()
    assert w.tracker is None


def test_begin_cell_twice_discards_the_first(root: Path, watcher: WriteWatcher) -> None:
    watcher.begin_cell()
    (root / "first.py").write_text("1")
    watcher.begin_cell()
    (root / "second.py").write_text("2")
    assert watcher.end_cell() == [W(root / "second.py")]
    assert audit._active == ()


def test_foreign_open_audit_event_is_harmless(root: Path, watcher: WriteWatcher) -> None:
    def body() -> None:
        sys.audit("open", "not", "ours")  # too few arguments, wrong types
        sys.audit("open", root / "x.py", "w", "flags")
        sys.audit("os.rename", 1, 2, 3, 4)

    assert cell(watcher, body) == []


# -- the hook itself -----------------------------------------------------------------------------


def test_hook_is_installed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    audit.install()
    assert audit.installed()

    def fail(hook: object) -> None:
        raise AssertionError("installed twice")

    monkeypatch.setattr(sys, "addaudithook", fail)
    audit.install()
    w = WriteWatcher(lambda p: True)
    w.begin_cell()  # another watcher reuses the hook
    assert len(audit._active) == 1
    assert w.end_cell() == []
    assert audit._active == ()


def test_two_watchers_at_once(root: Path) -> None:
    w1, w2 = _watcher(root), _watcher(root)
    try:
        w1.begin_cell()
        w2.begin_cell()
        (root / "a.py").write_text("a")
        w2_writes = w2.end_cell()
        (root / "b.py").write_text("b")
        assert w1.end_cell() == [W(root / "a.py"), W(root / "b.py")]
        assert w2_writes == [W(root / "a.py")]
    finally:
        w1.close()
        w2.close()


@pytest.mark.real
def test_watch_modules_do_not_import_ipython() -> None:
    code = (
        "import sys, ipylsp.ipython.watch, ipylsp.ipython.audit, ipylsp.ipython.fswatch;"
        "assert 'IPython' not in sys.modules, 'IPython imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_max_user_watches_is_readable() -> None:
    if sys.platform.startswith("linux"):
        assert (max_user_watches() or 0) > 0


# -- through a real IPython shell ----------------------------------------------------------------


@pytest.fixture
def ipython_cells(root: Path, watcher: WriteWatcher) -> Iterator[Callable[[str], list[Write]]]:
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    shell = InteractiveShell.instance(config=config)
    results: list[list[Write]] = []

    def pre(info: object) -> None:
        watcher.begin_cell()

    def post(result: object) -> None:
        results.append(watcher.end_cell())

    shell.events.register("pre_run_cell", pre)
    shell.events.register("post_run_cell", post)

    def run(source: str) -> list[Write]:
        shell.run_cell(source)
        return results.pop()

    try:
        yield run
    finally:
        shell.events.unregister("pre_run_cell", pre)
        shell.events.unregister("post_run_cell", post)
        InteractiveShell.clear_instance()


def test_ipython_writefile(root: Path, ipython_cells: Callable[[str], list[Write]]) -> None:
    app = root / "src" / "app.py"
    assert ipython_cells("%%writefile src/app.py\nx: int = 1\n") == [W(app)]
    assert ipython_cells("%%writefile src/app.py\nx: int = 'a'\n") == [
        W(app, before="x: int = 1\n")
    ]
    assert ipython_cells("%%writefile -a src/app.py\ny = 2\n") == [W(app, before="x: int = 'a'\n")]
    assert app.read_text() == "x: int = 'a'\ny = 2\n"


@pytest.mark.real
def test_ipython_shell_escapes(root: Path, ipython_cells: Callable[[str], list[Write]]) -> None:
    assert ipython_cells("!echo hi > f.py") == [W(root / "f.py", "child")]
    assert ipython_cells("!echo again > f.py") == [W(root / "f.py", "child", known=False)]
    assert ipython_cells("%%bash\necho b > src/g.py\nrm f.py\n") == [
        W(root / "f.py", "child", known=False, deleted=True),
        W(root / "src" / "g.py", "child"),
    ]
    assert ipython_cells("%%sh\necho s > src/h.py\n") == [W(root / "src" / "h.py", "child")]


def test_ipython_cell_that_raises_and_cell_without_writes(
    root: Path, ipython_cells: Callable[[str], list[Write]]
) -> None:
    (root / "src" / "r.py").write_text("r0\n")
    source = "open('src/r.py', 'w').write('r1\\n')\n1 / 0\n"
    assert ipython_cells(source) == [W(root / "src" / "r.py", before="r0\n")]
    assert ipython_cells("x = 1\nprint(open('src/r.py').read())") == []
