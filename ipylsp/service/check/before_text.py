"""Where a baseline text comes from when the service does not know it (`known_files`): the file on
disk, its git HEAD version; and how a file on disk is read as a document at all.

The baseline of a write is the text before it: given by the caller, else the last text the
service saw for the file, else the file's git HEAD version, else empty (a new file).

A file is read only when it is a regular file of at most `Settings.max_file_bytes`: the path is
stat'ed first, so a FIFO, a device, a socket or a directory is never opened (opening a FIFO
blocks until a writer comes; a device may act on being opened), and it is opened without
blocking in case it was swapped meanwhile (`servers/regular_file.py`, which the configuration
files' reader shares). Anything else is `FileRefused`, which says why in one sentence.
"""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

from ipylsp.model.settings import MB, Settings
from ipylsp.servers import regular_file

MAX_FILE_BYTES = Settings().max_file_bytes
"""The default limit (`Settings.max_file_mb`), for readers that are given no settings."""

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


class FileRefused(Exception):
    """A path that is not read as a document: not a regular file, over the size limit, or not
    readable. `sentence(shown)` is the one line a report says about it."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why

    def about(self, shown: str) -> str:
        """`app.py is a FIFO, not a regular file`, with the path as shown (a query's error)."""
        return f"{shown} {self.why}"

    def sentence(self, shown: str) -> str:
        """`not checked: app.py is a FIFO, not a regular file` (a check's note)."""
        return f"not checked: {self.about(shown)}"


def _megabytes(size: int) -> str:
    mb = size / MB
    return f"{mb:.3g} MB" if mb < 999.5 else f"{mb:,.0f} MB"


def _not_regular(mode: int) -> FileRefused:
    kind = next((name for test, name in _KINDS if test(mode)), "a special file")
    return FileRefused(f"is {kind}, not a regular file")


def _too_large(size: int, limit: int) -> FileRefused:
    """`is 9 MB, over the 8 MB limit`: megabytes to 3 significant digits, unless the two would
    read the same (a file just over the limit: `is 8 MB, over the 8 MB limit`) or the limit is
    under 1 MB (0.001 MB is 1,048 bytes: `0.000999 MB`); then bytes, which always differ."""
    shown, of_limit = _megabytes(size), _megabytes(limit)
    if shown == of_limit or limit < MB:
        shown, of_limit = f"{size:,} bytes", f"{limit:,}-byte"
    return FileRefused(f"is {shown}, over the {of_limit} limit (IPyLSP.max_file_mb)")


def special_file(path: Path) -> FileRefused | None:
    """Why `path` is not read when it exists and is not a regular file (a FIFO, a device, a
    socket, a directory), from a stat alone; None otherwise."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    return None if stat.S_ISREG(mode) else _not_regular(mode)


def decode(data: bytes) -> str:
    """Language servers speak Unicode; undecodable bytes become U+FFFD rather than an error."""
    return data.decode("utf-8", "replace")


def read_text(path: Path, max_bytes: int | None = MAX_FILE_BYTES) -> str | None:
    """The file's text, or None when it does not exist (deleted). `FileRefused` when it is not a
    regular file, is larger than `max_bytes` (None: no limit) or cannot be read."""
    try:
        return _read(path, max_bytes)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:  # permission denied, a symlink loop, an I/O error
        raise FileRefused(f"cannot be read ({exc.strerror or exc})") from None


def _read(path: Path, max_bytes: int | None) -> str:
    try:
        return decode(regular_file.read(path, max_bytes))
    except regular_file.NotRegular as exc:
        raise _not_regular(exc.mode) from None
    except regular_file.TooLarge as exc:
        raise _too_large(exc.size, exc.limit) from None


def readable_text(path: Path, max_bytes: int | None = MAX_FILE_BYTES) -> str | None:
    """The text of a regular file, or None when it is missing, unreadable or refused (a place
    an answer points into, a stored answer's file: nothing to raise about)."""
    try:
        return read_text(path, max_bytes)
    except FileRefused:
        return None


def git_head_text(path: Path, timeout: float = 2.0) -> str | None:
    """The file's text at git HEAD, or None when it is not tracked (or git is unavailable)."""
    try:
        top = subprocess.run(
            ["git", "-C", str(path.parent), "rev-parse", "--show-toplevel"],
            capture_output=True,
            timeout=timeout,
            check=False,
        )
        if top.returncode != 0:
            return None
        root = Path(top.stdout.decode().strip())
        relative = path.relative_to(root).as_posix()
        shown = subprocess.run(
            ["git", "-C", str(root), "show", f"HEAD:{relative}"],
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except (OSError, ValueError, subprocess.SubprocessError):
        return None
    if shown.returncode != 0:
        return None
    return decode(shown.stdout)
