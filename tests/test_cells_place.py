"""Where the cells' document says it lives (`ipylsp.servers.cells_place`), on the file system.

Outside a workspace (a working directory another user can write to), the kernels of this user
working in one directory on this host share one sealed directory in `<data>/cells`, each
kernel's document its own name in it; another directory gets another one. Kernels starting
together make and seal it once, atomically; a directory or link another user planted by its
predictable name is refused; the sweep removes it only when no kernel holds it and it went
unused for `SHARED_KEPT`. "Kernels" are pids passed to `default_path`; the real kernels are in
tests/test_cells_kernel.py. Acting as another user needs root (CI runs as root): without it
the tests that plant another user's files fail, not skip.
"""

from __future__ import annotations

import fcntl
import os
import pwd
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ipylsp import private
from ipylsp.lsp.procfs import HOST
from ipylsp.private import NotPrivate
from ipylsp.servers import cells_place

NOBODY = pwd.getpwnam("nobody").pw_uid
WEEK_AGO = time.time() - cells_place.SHARED_KEPT - 60


def others_can_write(directory: Path) -> Path:
    """`directory`, made world-writable and sticky (as `/tmp`, or a group's shared directory):
    a working directory that is no workspace."""
    directory.mkdir(parents=True)
    directory.chmod(0o1777)
    return directory


@pytest.fixture
def plain(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The working directory: plain, and others can write to it."""
    where = others_can_write(tmp_path / "plain")
    monkeypatch.chdir(where)
    return where


@pytest.fixture
def data(tmp_path: Path) -> Iterator[Path]:
    """The private parent of `cells`; every hold taken in it released after the test."""
    taken: list[cells_place.Hold] = []
    original = cells_place._take

    def take(parent: Path, name: str) -> cells_place.Hold:
        taken.append(original(parent, name))
        return taken[-1]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cells_place, "_take", take)
        yield tmp_path / "data"
    for hold in taken:
        hold.release()


def place(data: Path, pid: int) -> tuple[Path, cells_place.Hold]:
    document, hold = cells_place.default_path(private_parent=data, pid=pid)
    assert hold is not None
    return document, hold


def lock_of(directory: Path) -> Path:
    return directory.with_name(directory.name + ".lock")


def age(directory: Path, when: float = WEEK_AGO) -> None:
    """The shared directory was last taken or released at `when`."""
    os.utime(lock_of(directory), (when, when))


def test_two_kernels_in_one_directory_share_one_sealed_place_each_its_own_document(
    plain: Path, data: Path
) -> None:
    first, _ = place(data, 101)
    second, _ = place(data, 102)
    shared = first.parent
    assert second.parent == shared == data / "cells" / cells_place.shared_name(plain)
    assert (first.name, second.name) == (".ipylsp-cells-101.py", ".ipylsp-cells-102.py")
    assert private.is_sealed(shared) and stat.S_IMODE(os.stat(shared).st_mode) == 0o700
    assert os.listdir(shared) == [private.SEAL_NAME]  # the documents are never written
    assert os.listdir(plain) == []  # nor anything in the user's directory


def test_another_directory_gets_another_place(tmp_path: Path, data: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    places = []
    for name in ("one", "two"):
        monkeypatch.chdir(others_can_write(tmp_path / name))
        places.append(place(data, 101)[0].parent)
    assert places[0] != places[1] and places[0].parent == places[1].parent
    assert all(private.is_sealed(p) for p in places)


def test_in_a_workspace_or_a_private_directory_the_documents_are_there(
    tmp_path: Path, data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the servers may be rooted (a project; a plain directory only the user can write
    to), the documents say they are in the working directory: its servers check them all."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    private_plain = tmp_path / "mine"
    private_plain.mkdir(mode=0o700)
    for where in (project, private_plain):
        monkeypatch.chdir(where)
        for pid in (101, 102):
            assert cells_place.default_path(private_parent=data, pid=pid) == (
                cells_place.document_in(where, pid), None)
    assert not data.exists()


def test_kernels_starting_together_make_and_seal_one_place(plain: Path, data: Path) -> None:
    kernels = 8
    start = threading.Barrier(kernels)
    documents: dict[int, Path] = {}
    failed: list[BaseException] = []

    def kernel(pid: int) -> None:
        start.wait()
        try:
            documents[pid] = place(data, pid)[0]
        except BaseException as exc:
            failed.append(exc)

    threads = [threading.Thread(target=kernel, args=(pid,)) for pid in range(kernels)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failed == []
    assert {d.parent for d in documents.values()} == {data / "cells" /
                                                       cells_place.shared_name(plain)}
    assert len(set(documents.values())) == kernels
    shared = documents[0].parent
    assert os.listdir(shared) == [private.SEAL_NAME] and private.is_sealed(shared)


def test_a_seal_as_written_is_left_alone_and_another_is_replaced_whole(tmp_path: Path) -> None:
    """A second kernel's seal does not touch the first's (a server rooted there sees no
    change); a seal not as written is replaced by a rename, never rewritten in place (a
    reader never finds it empty)."""
    directory = private.owned_dir(tmp_path / "sealed")
    private.seal(directory)
    seal = directory / private.SEAL_NAME
    first = os.stat(seal)
    private.seal(directory)
    assert (os.stat(seal).st_ino, os.stat(seal).st_mtime_ns) == (first.st_ino, first.st_mtime_ns)
    seal.write_text("[tool.ruff]\n")
    private.seal(directory)
    assert os.stat(seal).st_ino != first.st_ino and private.is_sealed(directory)
    assert os.listdir(directory) == [private.SEAL_NAME]


def test_the_sweep_removes_a_shared_place_only_when_nobody_holds_it_a_week(
    plain: Path, data: Path
) -> None:
    _, hold = place(data, 101)
    shared = hold.directory
    cells = shared.parent
    age(shared)
    cells_place._sweep(cells)
    assert private.is_sealed(shared)  # held: kept, however old
    hold.release()  # the kernel ends: last used now
    cells_place._sweep(cells)
    assert private.is_sealed(shared)  # unused for less than a week: kept
    age(shared)
    cells_place._sweep(cells, keep=shared.name)
    assert private.is_sealed(shared)  # the caller's own: kept
    cells_place._sweep(cells)
    assert not shared.exists() and not lock_of(shared).exists()
    # a kernel that comes back makes it again
    assert private.is_sealed(place(data, 102)[0].parent)


def test_the_sweep_leaves_other_hosts_and_live_kernels_and_removes_dead_kernels_own(
    plain: Path, data: Path
) -> None:
    cells = private.owned_dir(data / "cells")
    names = [f"other_host-at-{'0' * 24}", f"{HOST}-{os.getpid()}-live",
             f"{HOST}-999999999-dead"]  # a kernel's own (earlier versions): by its pid
    for name in names:
        (cells / name).mkdir()
    other_lock = cells / f"{names[0]}.lock"
    other_lock.touch()
    os.utime(other_lock, (WEEK_AGO, WEEK_AGO))
    cells_place._sweep(cells)
    assert sorted(os.listdir(cells)) == sorted([*names[:2], other_lock.name])


def test_a_place_removed_while_a_kernel_waited_for_it_is_taken_again(
    plain: Path, data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sweep removes the directory between the kernel's open of its lock file and its
    lock: the kernel's lock is on a file no longer there, so it takes the new one."""
    _, old = place(data, 101)
    shared = old.directory
    old.release()
    age(shared)
    real = fcntl.flock
    shares: list[int] = []

    def flock(fd: int, operation: int) -> None:
        if operation == fcntl.LOCK_SH:
            shares.append(fd)
            if len(shares) == 1:  # the sweep wins the race
                cells_place._sweep(shared.parent)
                assert not shared.exists()
        real(fd, operation)

    monkeypatch.setattr(cells_place.fcntl, "flock", flock)
    document, hold = place(data, 102)
    assert len(shares) == 2 and document.parent == hold.directory == shared
    assert private.is_sealed(shared)
    lock = lock_of(shared)
    assert lock.exists() and os.stat(lock).st_mtime > WEEK_AGO
    monkeypatch.setattr(cells_place.fcntl, "flock", real)
    age(shared)
    cells_place._sweep(shared.parent)
    assert private.is_sealed(shared)  # held on the file that is there: never removed


def test_a_place_or_lock_another_user_planted_is_refused(
    tmp_path: Path, plain: Path, data: Path
) -> None:
    """Its name is predictable: in the private `cells`, a directory another user made (only
    root could), a link (even ours) or a lock file not ours is refused, never adopted, and
    nothing is written through it."""
    assert os.geteuid() == 0, "acting as another user needs root (CI runs as root)"
    cells = private.owned_dir(data / "cells")
    name = cells_place.shared_name(plain)
    theirs = cells / name
    theirs.mkdir()
    os.chown(theirs, NOBODY, NOBODY)
    with pytest.raises(NotPrivate, match="belongs to another user"):
        place(data, 101)
    assert os.listdir(theirs) == []
    theirs.rmdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    theirs.symlink_to(elsewhere)
    with pytest.raises(NotPrivate, match="is a symbolic link"):
        place(data, 101)
    assert os.listdir(elsewhere) == []
    age(theirs)
    cells_place._sweep(cells)  # a link in its place: removed, never followed
    assert not os.path.lexists(theirs) and elsewhere.is_dir()

    lock = lock_of(theirs)
    target = tmp_path / "target"
    target.write_text("x")
    lock.symlink_to(target)
    with pytest.raises(NotPrivate, match="is a symbolic link"):
        place(data, 101)
    lock.unlink()
    lock.touch()
    os.chown(lock, NOBODY, NOBODY)
    with pytest.raises(NotPrivate, match="not a file of ours"):
        place(data, 101)
    assert target.read_text() == "x" and not theirs.exists()
