"""Reading a file that must be a regular file, without ever blocking on what else it may be.

Opening a FIFO for reading blocks until a writer comes, and a device may act on being opened:
anyone who can write to a directory can put one where a file is expected (a `pyproject.toml`
at a server's root, a file a cell wrote). `opened` stats the path first and opens only a
regular file, with O_NONBLOCK in case it was swapped since, and checks the open file again;
`read` reads it whole. Used by the check's reader (`service/check/before_text.py`), by the
configuration files read on the service's loop (`config_files`), and by the write watcher's
reader (`ipython/skip.py`, which reads a file's head first).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from typing import BinaryIO

__all__ = ["NotRegular", "TooLarge", "opened", "read", "read_opened"]

READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC


class NotRegular(Exception):
    """The path is not a regular file (a FIFO, a socket, a device, a directory); `mode` is its
    stat's `st_mode`."""

    def __init__(self, mode: int) -> None:
        super().__init__(f"not a regular file (mode {mode:o})")
        self.mode = mode


class TooLarge(Exception):
    """The file holds more than `limit` bytes (`size`, or at least that many)."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"{size} bytes, over the {limit}-byte limit")
        self.size = size
        self.limit = limit


@contextmanager
def opened(path: str | os.PathLike[str]) -> Iterator[tuple[BinaryIO, int]]:
    """The regular file at `path`, open for reading, and its size as the open file's stat says.
    `NotRegular` when it is not a regular file (before it is opened, or once open: swapped
    since the stat); `OSError` as `os.stat` and `os.open` raise it (`FileNotFoundError` for a
    missing file)."""
    mode = os.stat(path).st_mode
    if not stat.S_ISREG(mode):
        raise NotRegular(mode)
    with open(os.open(path, READ_FLAGS), "rb") as handle:
        st = os.fstat(handle.fileno())
        if not stat.S_ISREG(st.st_mode):  # swapped since the stat
            raise NotRegular(st.st_mode)
        yield handle, st.st_size


def read(path: str | os.PathLike[str], max_bytes: int | None = None) -> bytes:
    """The bytes of the regular file at `path`, at most `max_bytes` (None: no limit).
    `NotRegular` or `TooLarge` when it is not read; `OSError` as `os.stat` and `os.open` raise
    it (`FileNotFoundError` for a missing file)."""
    with opened(path) as (handle, size):
        return read_opened(handle, size, max_bytes)


def read_opened(handle: BinaryIO, size: int, max_bytes: int | None = None) -> bytes:
    """The bytes of a file `opened` just gave, none read yet (`size`: the size it gave), at most
    `max_bytes` (None: no limit); `TooLarge` when the file holds more."""
    if max_bytes is None:
        return handle.read()
    if size > max_bytes:
        raise TooLarge(size, max_bytes)
    data = handle.read(max_bytes + 1)  # it may be growing: never more than the limit
    if len(data) > max_bytes:
        raise TooLarge(len(data), max_bytes)
    return data
