"""Where the cells' document says it lives, so that the right servers check it: the path it
names decides their root, their configuration and the project's imports. Nothing is ever
written at that path (the servers read the document from memory).

In a workspace, the kernel's working directory. Outside one (a working directory another
user can write to), a directory in `<data>/cells` that every kernel of this user working in
that directory on this host shares, private and sealed, each kernel's document under a name
of its own in it: one server root checks the cells of them all, as one does in a workspace.
Its name is predictable (the host and a digest of the working directory), which is safe only
because `cells` is private and checked, and the directory itself is checked before each use
(ours, a real directory, never a link). Owns the rule of its sweep too: a shared directory is
removed only when no process holds it (`Hold`: a shared `flock` of its lock file, held for
the kernel's life and released by its end, however it ends) and none took it for
`SHARED_KEPT`.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import stat
import time
from collections.abc import Iterable
from pathlib import Path

from ipylsp.lsp.procfs import HOST, running
from ipylsp.model.settings import WORKSPACE_MARKERS
from ipylsp.private import NotPrivate, owned_dir, seal
from ipylsp.servers import roots

SHARED_KEPT = 7 * 24 * 3600.0
"""Seconds a shared directory no process holds is kept after it was last taken or released:
a kernel restarted in the same directory finds it, and a server still rooted there (a
broker's, until it idles out) keeps its root."""

_SHARED = "-at-"
"""`<host>-at-<digest>`: a shared directory (and `.lock`, its lock file). A kernel's own
directory of earlier versions is `<host>-<pid>-<random>`."""


def document_in(directory: Path, pid: int | None = None) -> Path:
    """The path the virtual document of the kernel `pid` (this process) says it has in
    `directory`: it is checked by the servers that serve a file there (their root, their
    configuration, the project's imports). Nothing is written there: the servers read the
    document from memory."""
    return directory / f".ipylsp-cells-{os.getpid() if pid is None else pid}.py"


class Hold:
    """A kernel's use of a shared directory: a shared lock of its lock file, which the sweep
    never removes while it is held. Released by `release`, or by the process's end."""

    __slots__ = ("_fd", "directory")

    def __init__(self, directory: Path, fd: int) -> None:
        self.directory = directory
        self._fd: int | None = fd

    def release(self) -> None:
        """The directory stays for the other kernels there; it was last used now."""
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.utime(fd)
            os.close(fd)


def default_path(
    markers: Iterable[str] = WORKSPACE_MARKERS,
    private_parent: Path | None = None,
    *,
    pid: int | None = None,
) -> tuple[Path, Hold | None]:
    """Where the virtual document of the kernel `pid` (this process) says it lives, and its
    hold on the directory shared outside a workspace (None in one). In a workspace (a project,
    or a plain directory only this user can write to: `roots.workspace_gate`), the kernel's
    working directory, so the project's imports resolve the way the kernel's do (nothing is
    ever written there). Elsewhere (a directory another user can write to), the
    directory `shared_name` names in `<private_parent>/cells` (0700), made or checked, and
    sealed so that servers rooted there read no configuration from its parents (another user
    could plant theirs there); every kernel of this user in that working directory on this
    host is given the same one. Raises `OSError` (`NotPrivate` when `cells`, the directory
    or its lock file is not ours) when it cannot be had."""
    cwd = Path(os.getcwd())
    if roots.workspace_gate(cwd, markers, directory=cwd) is not None:
        return document_in(cwd, pid), None
    parent = owned_dir(_cells_parent(private_parent))
    name = shared_name(cwd)
    _sweep(parent, keep=name)
    held = _take(parent, name)
    return document_in(held.directory, pid), held


def shared_name(directory: Path) -> str:
    """The name of the shared directory for the kernels working in `directory` on this host."""
    digest = hashlib.blake2b(os.fsencode(directory), digest_size=12).hexdigest()
    return f"{HOST}{_SHARED}{digest}"


def _cells_parent(private_parent: Path | None) -> Path:
    if private_parent is None:
        from ipylsp.servers.executables import data_dir

        private_parent = data_dir()
    return private_parent / "cells"


def _open_lock(lock: Path) -> int:
    """The lock file, made (0600) or opened, never a link nor another user's file."""
    try:
        fd = os.open(lock, os.O_RDONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError:
        if os.path.islink(lock):
            raise NotPrivate(f"{lock} is a symbolic link; ipylsp never follows one in its "
                             f"directories (remove it)") from None
        raise
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
        os.close(fd)
        raise NotPrivate(f"{lock} is not a file of ours (uid {info.st_uid}); ipylsp never "
                         f"uses one it does not own (remove it)")
    return fd


def _is_current(fd: int, lock: Path) -> bool:
    """Whether `fd` is still the file at `lock` (a sweep may have removed it meanwhile)."""
    try:
        there = os.lstat(lock)
    except FileNotFoundError:
        return False
    here = os.fstat(fd)
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


def _take(parent: Path, name: str) -> Hold:
    """The shared directory `name`, held: its lock file locked shared first (so that no sweep
    removes it from then on), then the directory made or checked (`owned_dir`: made with
    `mkdir`, or checked ours and real when it exists: kernels starting together both succeed)
    and sealed (`seal`: once, atomically). The lock is waited for only while a sweep removes
    the directory (a sweep holds it exclusive for that alone); taken again when it did."""
    lock = parent / f"{name}.lock"
    for _ in range(3):  # a sweep removes a lock only when old: the next one is new
        fd = _open_lock(lock)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)
            if _is_current(fd, lock):
                os.utime(fd)  # taken now: kept `SHARED_KEPT` from now at least
                directory = owned_dir(parent / name)
                seal(directory)
                return Hold(directory, fd)
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)
    raise OSError(f"{lock} was removed each time it was taken")


def _sweep(parent: Path, keep: str = "", *, kept: float = SHARED_KEPT) -> None:
    """This host's directories nobody uses are removed, `keep` (the caller's) aside: a
    shared one no process holds and none took for `kept` seconds, a kernel's own one of
    earlier versions whose kernel is gone (a SIGKILL left it). Another host's are left alone."""
    before = time.time() - kept
    try:
        names = {entry.name.removesuffix(".lock") for entry in parent.iterdir()} - {keep}
    except OSError:
        return
    for name in sorted(names):
        host, _, rest = name.partition("-")
        if host != HOST:
            continue
        if name.startswith(f"{HOST}{_SHARED}"):
            with contextlib.suppress(OSError):
                _remove_unused(parent, name, before)
            continue
        pid = rest.partition("-")[0]
        if pid.isdigit() and not running(int(pid)):
            shutil.rmtree(parent / name, ignore_errors=True)


def _remove_unused(parent: Path, name: str, before: float) -> None:
    """The shared directory `name` and its lock file are removed when no process holds the
    lock (it is taken exclusive without waiting) and it was last taken before `before`."""
    lock = parent / f"{name}.lock"
    with contextlib.suppress(FileNotFoundError):
        if os.lstat(lock).st_mtime > before:
            return  # used lately: kept, without even opening it
    fd = _open_lock(lock)  # a directory whose lock is gone gets a new one: kept for now
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return  # a kernel holds it
        if not _is_current(fd, lock) or os.fstat(fd).st_mtime > before:
            return  # removed, or taken, meanwhile
        shutil.rmtree(parent / name, ignore_errors=True)  # never through a link
        with contextlib.suppress(FileNotFoundError):
            os.unlink(parent / name)  # a link (or a file) in its place
        lock.unlink()
    finally:
        os.close(fd)
