"""What the write watcher ignores, and how it reads the text of a file.

Decisions:

- **Skipped directories** are matched by name on the components *below the workspace root* (a
  workspace that itself lives in a folder called ``build`` is still watched). A directory that
  holds a ``pyvenv.cfg`` is a virtual environment and is skipped whatever its name, unless it is
  a root itself (``virtualenv .`` in a project root would otherwise hide the whole project).
- **Binary** means a NUL byte in the first 8 KiB (git's and grep's heuristic). UTF-16 and UTF-32
  files therefore count as binary; no language server here reads them.
- **Text** is decoded as UTF-8 with ``errors="replace"``: the service decodes the same way
  (``ipylsp.service.check.before_text.decode``), language servers need valid Unicode, and a
  Latin-1 file keeps one character per byte, so the columns of its diagnostics still line up.
  Undecodable UTF-8 is not treated as binary.
- **Size**: a text over `IPyLSP.max_file_mb` (`Settings.max_file_bytes`, the check's own limit)
  is not read: its text before the cell is unknown, and the check says in one line that it
  did not check it.
- **Not a file**: a path is stat'ed before it is opened, so a FIFO, a device or a socket is
  never opened (opening a FIFO waits for a writer; a device may act on being opened): the
  check's own reader, `servers/regular_file.py`.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Collection, Iterable
from dataclasses import dataclass

from ipylsp.model.settings import Settings
from ipylsp.service import regular_file

SKIP_DIRS: frozenset[str] = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "node_modules",
        ".venv",
        "venv",
        "__pycache__",
        ".mypy_cache",
        ".ruff_cache",
        ".pytest_cache",
        ".cache",
        "build",
        "dist",
        ".ipynb_checkpoints",
        "target",
        ".tox",
        ".nox",
    }
)
"""Directory names never watched nor reported (below a workspace root)."""

VENV_MARKER = "pyvenv.cfg"
SNIFF_BYTES = 8192
DEFAULT_MAX_TEXT_BYTES: int | None = Settings().max_file_bytes
"""`IPyLSP.max_file_mb`'s default, in bytes (None: no limit)."""


def is_binary(head: bytes) -> bool:
    """True when the bytes look binary: a NUL in the first `SNIFF_BYTES`."""
    return b"\0" in head[:SNIFF_BYTES]


def decode_text(data: bytes) -> str:
    """The text of a (non-binary) file: UTF-8, undecodable bytes as U+FFFD."""
    return data.decode("utf-8", "replace")


class FileState(enum.Enum):
    MISSING = "missing"  # no such file (or a parent is not a directory)
    TEXT = "text"
    BINARY = "binary"
    TOO_LARGE = "too_large"  # a regular file over the size cap: text unknown
    NOT_FILE = "not_file"  # a directory, FIFO, device, socket
    UNREADABLE = "unreadable"  # permission denied, I/O error, symlink loop


@dataclass(frozen=True, slots=True)
class FileText:
    state: FileState
    text: str | None = None  # only for TEXT (and only when the text was asked for)
    size: int = 0


def read_file(path: str, max_bytes: int | None, *, want_text: bool = True) -> FileText:
    """Classify `path` and, for a text file of at most `max_bytes` (None: any size), return
    its text.

    Opens only a regular file, never waiting on what else it may be (`regular_file.opened`:
    stat'ed first, opened with O_NONBLOCK; should it have been swapped for a FIFO meanwhile,
    it is reported NOT_FILE). With `want_text=False` only the first `SNIFF_BYTES` are read
    (enough to tell text from binary).
    """
    try:
        with regular_file.opened(path) as (handle, size):
            too_large = max_bytes is not None and size > max_bytes
            if not want_text or too_large:
                if is_binary(handle.read(SNIFF_BYTES)):
                    return FileText(FileState.BINARY, None, size)
                return FileText(FileState.TOO_LARGE if too_large else FileState.TEXT, None, size)
            data = regular_file.read_opened(handle, size, max_bytes)
    except regular_file.NotRegular:
        return FileText(FileState.NOT_FILE)
    except regular_file.TooLarge as exc:  # it grew since its stat
        return FileText(FileState.TOO_LARGE, None, exc.size)
    except (FileNotFoundError, NotADirectoryError):
        return FileText(FileState.MISSING)
    except IsADirectoryError:
        return FileText(FileState.NOT_FILE)
    except OSError:
        return FileText(FileState.UNREADABLE)
    if is_binary(data):
        return FileText(FileState.BINARY, None, len(data))
    return FileText(FileState.TEXT, decode_text(data), len(data))


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root if root.endswith("/") else root + "/")


class PathRules:
    """Decides whether a canonical absolute path is skipped, given the workspace roots.

    One instance per cell: it caches the ``pyvenv.cfg`` look-ups of the directories it saw.
    """

    __slots__ = ("_roots", "_skip_dirs", "_venv")

    def __init__(self, roots: Iterable[str], skip_dirs: Collection[str] = SKIP_DIRS) -> None:
        # Longest first, so the innermost root wins.
        self._roots = sorted(set(roots), key=len, reverse=True)
        self._skip_dirs = frozenset(skip_dirs)
        self._venv: dict[str, bool] = {}

    @property
    def roots(self) -> list[str]:
        return list(self._roots)

    @property
    def skip_dirs(self) -> frozenset[str]:
        return self._skip_dirs

    def root_of(self, path: str) -> str | None:
        for root in self._roots:
            if _within(path, root):
                return root
        return None

    def skipped(self, path: str) -> bool:
        """True when a directory between the path's root and the path is skipped."""
        root = self.root_of(path)
        parent = os.path.dirname(path)
        if root is None:  # under no scan root: every ancestor counts
            names = [n for n in parent.split("/") if n]
            dirs = _ancestors(parent, "/")
        else:
            if parent == root or not _within(parent, root):
                return False
            rel = parent[len(root) :].strip("/")
            names = rel.split("/")
            dirs = _ancestors(parent, root)
        if any(n in self._skip_dirs for n in names):
            return True
        return any(self.is_venv(d) for d in dirs)

    def is_venv(self, directory: str) -> bool:
        known = self._venv.get(directory)
        if known is None:
            known = os.path.isfile(os.path.join(directory, VENV_MARKER))
            self._venv[directory] = known
        return known


def _ancestors(directory: str, stop: str) -> list[str]:
    """`directory` and its parents, strictly below `stop`."""
    out: list[str] = []
    current = directory
    while current != stop and current not in ("/", ""):
        out.append(current)
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    return out
