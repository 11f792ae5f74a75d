"""Where a baseline text comes from when the service does not know it (`checked_files`): the file on
disk, its git HEAD version.

The baseline of a write is the text before it: given by the caller, else the last text the
service saw for the file, else the file's git HEAD version, else empty (a new file).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

MAX_FILE_BYTES = 8 * 1024 * 1024


class TextTooLarge(Exception):
    pass


def decode(data: bytes) -> str:
    """Language servers speak Unicode; undecodable bytes become U+FFFD rather than an error."""
    return data.decode("utf-8", "replace")


def read_text(path: Path) -> str | None:
    """The file's text, or None when it does not exist (deleted)."""
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise TextTooLarge(f"{path.name} is {size} bytes (limit {MAX_FILE_BYTES})")
        return decode(path.read_bytes())
    except FileNotFoundError:
        return None


def readable_text(path: Path) -> str | None:
    """The text of a regular file, or None when it is missing, unreadable or too large (a
    place an answer points into, a stored answer's file: nothing to raise about)."""
    try:
        return read_text(path) if path.is_file() else None
    except (OSError, TextTooLarge):
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
