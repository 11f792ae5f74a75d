"""What a check is asked: `FileCheck`, one file to check, a value every surface builds and the
broker's socket carries (`model/wire.py`). Plain values: no I/O, nothing above the model."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


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
