"""The documents one client has open: text and version as the server sees them.

Every version's text is kept until diagnostics for it are read, because converting a server's
UTF-16 columns needs the exact text they were computed on.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from ipylsp.model.positions import LineIndex


@functools.lru_cache(maxsize=8192)
def path_to_uri(path: Path) -> str:
    """`file://` URI of an absolute path (cached: a batch asks for each one many times)."""
    return path.as_uri()


def uri_to_path(uri: str) -> Path | None:
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    return Path(unquote(parsed.path))


@dataclass
class Push:
    """The latest publishDiagnostics for a document."""

    version: int | None
    diagnostics: list[Any]
    sequence: int
    received: float = field(default_factory=time.monotonic)


@dataclass
class OpenDocument:
    path: Path
    uri: str
    language_id: str
    version: int
    text: str
    last_used: float = field(default_factory=time.monotonic)
    push: Push | None = None
    wire: tuple[int, list[Any]] | None = None
    """(version, the diagnostics as the server sent them) for the latest version whose
    diagnostics were read: a code action request sends them back untouched (ruff keeps its
    fix in their `data`)."""
    in_memory: bool = False
    """A document that exists only in memory (the notebook's cells): never matched to a disk."""
    disk: tuple[int, int, int] | None = None
    """(inode, size, mtime) of the file when its text was last found equal to it: unchanged,
    the disk need not be read again to know the server sees it (`open_documents`)."""
    _index: LineIndex | None = None
    _index_text: str | None = None

    def index(self) -> LineIndex:
        if self._index is None or self._index_text is not self.text:
            self._index = LineIndex(self.text)
            self._index_text = self.text
        return self._index

    def touch(self) -> None:
        self.last_used = time.monotonic()


class DocumentTable:
    """Open documents by URI, with least-recently-used eviction."""

    def __init__(self) -> None:
        self._docs: dict[str, OpenDocument] = {}

    def get(self, uri: str) -> OpenDocument | None:
        return self._docs.get(uri)

    def add(self, doc: OpenDocument) -> None:
        self._docs[doc.uri] = doc

    def remove(self, uri: str) -> OpenDocument | None:
        return self._docs.pop(uri, None)

    def __len__(self) -> int:
        return len(self._docs)

    def __iter__(self) -> Iterator[OpenDocument]:
        return iter(list(self._docs.values()))

    def least_recently_used(self, count: int, keep: str) -> list[OpenDocument]:
        candidates = sorted(
            (d for d in self._docs.values() if d.uri != keep), key=lambda d: d.last_used
        )
        return candidates[:count]
