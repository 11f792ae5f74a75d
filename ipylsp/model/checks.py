"""What a check is asked: `FileCheck`, one file to check, a value every surface builds and the
broker's socket carries (`model/wire.py`). Plain values: no I/O, nothing above the model."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


def absolute(path: str | os.PathLike[str]) -> Path:
    """The file a caller names: `~` expanded, made absolute against this process's working
    directory (a broker's client resolves it before sending: the broker's is `/`).
    `TypeError` for what is not a path, `ValueError` for an empty one or one with a NUL."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike, not {type(path).__name__}")
    text = os.fspath(path)
    if not text or "\x00" in text:
        raise ValueError(f"invalid path: {text!r}")
    return Path(os.path.abspath(os.path.expanduser(text)))


@dataclass(frozen=True, slots=True)
class FileCheck:
    """One file to check: `before` is its text before the write (None: what the service knows)."""

    path: Path
    before: str | None = None
    content: str | None = None
    virtual: bool = False
    """`content` is a document that exists only in memory (the notebook's cells): never read
    from or saved to disk, no file events, kept as known like a written file."""
    preflight: bool = False
    """With `virtual`: a text checked before it runs (a cell's preflight); the known baseline
    stays the last text that ran. (A file's `content` is always a preflight.)"""

    @classmethod
    def asked(cls, path: str | os.PathLike[str], *, before: str | None = None,
              content: str | None = None) -> FileCheck:
        """The check a caller asks for one file (`Service.check`): its path made `absolute`;
        `TypeError` for a `before` or `content` that is not a str."""
        if content is not None and not isinstance(content, str):
            raise TypeError("content must be a str")
        if before is not None and not isinstance(before, str):
            raise TypeError("before must be a str")
        return cls(absolute(path), before=before, content=content)
