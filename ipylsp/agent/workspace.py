"""Confinement: every path a tool receives is resolved (symlinks included) and must lie inside
the agent's workspace root. Answers show paths relative to that root.

A tool argument is the only thing a model controls; server commands, environments and
settings never come from it (they come from the user's configuration, as everywhere else).
"""

from __future__ import annotations

import os
from pathlib import Path

from ipylsp.agent.errors import ToolError
from ipylsp.service import special_file


class Workspace:
    """The directory an agent may read and check files in."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(os.path.realpath(os.path.expanduser(os.fspath(root))))
        if not self.root.is_dir():
            raise ValueError(f"workspace root is not a directory: {self.root}")

    def contains(self, path: Path) -> bool:
        return path == self.root or self.root in path.parents

    def resolve(self, value: str, *, must_exist: bool = True) -> Path:
        """The real path of a tool's `path` argument (relative to the root, or absolute).

        `outside_workspace` for anything that leaves the root, through `..`, an absolute path
        or a symlink; `file_not_found` for a missing file when `must_exist` (a preflight of a
        new file needs only its directory inside)."""
        if "\x00" in value or not value.strip():
            raise ToolError("invalid_argument", f"path {value!r} is not a file path")
        given = Path(os.path.expanduser(value))
        joined = given if given.is_absolute() else self.root / given
        real = Path(os.path.realpath(joined))  # symlinks and `..` resolved
        if not self.contains(real):
            raise ToolError(
                "outside_workspace",
                f"{value} is outside the workspace {self.root}; "
                f"use a path inside it (relative paths start there)",
            )
        special = special_file(real)  # never opened: a FIFO would wait for a writer
        if special is not None:
            raise ToolError("invalid_argument", f"{special.about(self.shown(real))}; give a file")
        if must_exist and not real.is_file():
            raise ToolError(
                "file_not_found",
                f"{self.shown(real)} does not exist; lsp_symbols(query=...) finds files by "
                f"the names they define",
            )
        return real

    def shown(self, path: Path) -> str:
        """`path` relative to the root when inside it, else absolute (a library's source)."""
        real = Path(os.path.realpath(path))
        if self.contains(real):
            return real.relative_to(self.root).as_posix() or "."
        return str(path)
