"""Workspace roots: where a server for a file should be rooted, and whether a file is in a project.

- `find_worktree(path)`: the top of the git worktree holding ``path`` (nearest ``.git`` directory
  or file above it), or None.
- `find_root(path, markers)`: the nearest directory at or above the file that contains one of a
  server's root markers, never above the git worktree top; without a marker, the worktree top;
  without a worktree, the file's own directory.
- `workspace_gate(path, directory=...)`: the workspace a file belongs to (git worktree or
  project marker; else the directory the user works in, when the file is below it), or None.
  A home directory or the filesystem root is never a project, so editing ``~/notes.py`` from
  elsewhere does not spawn daemons rooted at ``~``; a notebook *in* ``~`` works in it.

Walks go upward only (``Path.parent`` of an absolute, normalized path: no symlink is followed while
walking, so no loop is possible), are capped at `MAX_DEPTH` levels, and treat any `OSError`
(permission denied, symlink loop, vanished directory) as "marker absent".

Results are cached and validated by the modification times of the directories that were looked at:
creating or deleting a marker changes its directory's mtime, so a cached answer is never stale,
and a hit costs one ``stat`` per directory instead of one per marker per directory. Answers that
involve a directory modified in the last two seconds are not cached (mtimes have a coarse clock,
the "racy git" problem).
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable
from pathlib import Path

from ipylsp.model.settings import WORKSPACE_MARKERS
from ipylsp.private import other_writer
from ipylsp.servers.dircache import DirCache

MAX_DEPTH = 64
"""Most directory levels a walk climbs."""

GIT_MARKER = ".git"

__all__ = ["WORKSPACE_MARKERS"]

_cache: DirCache[str | None] = DirCache(limit=4096)


def clear_cache() -> None:
    """Forget every cached answer (tests; never needed for correctness)."""
    _cache.clear()


def _start_dir(path: str | os.PathLike[str]) -> str:
    """The absolute, normalized directory a walk starts from (the file's directory)."""
    absolute = os.path.abspath(os.fspath(path))
    try:
        if os.path.isdir(absolute):
            return absolute
    except (OSError, ValueError):
        pass
    return os.path.dirname(absolute)


def _ancestors(start: str) -> list[str]:
    """``start`` and its parents, nearest first, at most `MAX_DEPTH` of them."""
    out = [start]
    current = start
    while len(out) < MAX_DEPTH:
        parent = os.path.dirname(current)
        if parent == current:
            break
        out.append(parent)
        current = parent
    return out


def _exists(path: str) -> bool:
    try:
        os.stat(path)
    except (OSError, ValueError):  # permission denied, symlink loop, NUL in name, ...
        return False
    return True


def _split_markers(markers: Iterable[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    plain: list[str] = []
    globs: list[str] = []
    for marker in markers:
        (globs if any(c in marker for c in "*?[") else plain).append(marker)
    return tuple(plain), tuple(globs)


def _has_marker(directory: str, plain: tuple[str, ...], globs: tuple[str, ...]) -> bool:
    for marker in plain:
        if _exists(os.path.join(directory, marker)):
            return True
    if globs:
        try:
            names = os.listdir(directory)
        except OSError:
            return False
        return any(fnmatch.fnmatchcase(name, g) for g in globs for name in names)
    return False


def _worktree_of(start: str) -> tuple[str | None, list[str]]:
    """(worktree top or None, directories inspected)."""
    dirs = _ancestors(start)
    for i, directory in enumerate(dirs):
        if _exists(os.path.join(directory, GIT_MARKER)):
            return directory, dirs[: i + 1]
    return None, dirs


def find_worktree(path: str | os.PathLike[str]) -> Path | None:
    """Top of the git worktree containing ``path`` (a ``.git`` directory or file), or None."""
    start = _start_dir(path)
    key: tuple[object, ...] = ("worktree", start)
    hit, value = _cache.get(key)
    if not hit:
        value, dirs = _worktree_of(start)
        _cache.put(key, value, dirs)
    return Path(value) if value is not None else None


def _is_within(child: str, parent: str) -> bool:
    if child == parent:
        return True
    prefix = parent if parent.endswith(os.sep) else parent + os.sep
    return child.startswith(prefix)


def find_root(
    path: str | os.PathLike[str],
    markers: Iterable[str],
    *,
    git_worktree: Path | None = None,
) -> Path:
    """The workspace root a server should use for ``path``.

    The nearest directory at or above the file that contains one of ``markers`` (names, or glob
    patterns such as ``*.cabal``), never above the git worktree top (``git_worktree``, detected
    when not given). Without a marker: the worktree top; without a worktree: the file's directory.
    """
    start = _start_dir(path)
    marker_tuple = tuple(markers)
    given = os.path.abspath(os.fspath(git_worktree)) if git_worktree is not None else None
    key: tuple[object, ...] = ("root", start, marker_tuple, given)
    hit, value = _cache.get(key)
    if hit and value is not None:
        return Path(value)

    looked: list[str] = []
    if given is not None and _is_within(start, given):
        worktree: str | None = given
    elif given is not None:
        worktree = None  # the file is outside the worktree it was given: no ceiling applies
    else:
        worktree, looked = _worktree_of(start)

    plain, globs = _split_markers(marker_tuple)
    found: str | None = None
    for directory in _ancestors(start):
        looked.append(directory)
        if (plain or globs) and _has_marker(directory, plain, globs):
            found = directory
            break
        if worktree is not None and directory == worktree:
            break
    if found is None:
        found = worktree if worktree is not None else start
    _cache.put(key, found, looked)
    return Path(found)


def _home() -> str | None:
    try:
        return os.path.abspath(str(Path.home()))
    except (RuntimeError, KeyError, OSError):
        return None


def workspace_gate(
    path: str | os.PathLike[str],
    markers: Iterable[str] = WORKSPACE_MARKERS,
    *,
    home: str | os.PathLike[str] | None = None,
    directory: str | os.PathLike[str] | None = None,
) -> Path | None:
    """The workspace ``path`` belongs to, or None when it is in none.

    A workspace is the git worktree holding the file, else the nearest directory above it that
    holds a project marker. The home directory and the filesystem root never qualify (a dotfiles
    repository at ``~`` does not make every file under ``~`` a workspace); below them, markers
    still count. In no project, a file at or below `directory` (`Settings.directory`, the
    directory the user works in: the notebook's) belongs to it, the home directory included,
    unless it is the filesystem root or another user can write at or above it (servers would
    read what they put there): a plain directory, see `in_project`.
    """
    found = _gate(path, markers, home)
    if found is not None or directory is None:
        return found
    opened = os.path.abspath(os.fspath(directory))
    start = _start_dir(path)
    if os.path.dirname(opened) == opened or not _is_within(start, opened):
        return None
    return Path(opened) if other_writer(opened) is None else None


def in_project(path: str | os.PathLike[str], markers: Iterable[str] = WORKSPACE_MARKERS) -> bool:
    """Whether `path` is in a project (git or marker), not only in the plain directory the
    user works in, where servers discover no files of their own (`ServerSpec.plain`)."""
    return _gate(path, markers, None) is not None


def _gate(
    path: str | os.PathLike[str],
    markers: Iterable[str],
    home: str | os.PathLike[str] | None,
) -> Path | None:
    """The project ``path`` belongs to (`workspace_gate` without the user's directory)."""
    start = _start_dir(path)
    home_dir = os.path.abspath(os.fspath(home)) if home is not None else _home()
    marker_tuple = tuple(markers)
    key: tuple[object, ...] = ("gate", start, marker_tuple, home_dir)
    hit, value = _cache.get(key)
    if hit:
        return Path(value) if value is not None else None

    def forbidden(directory: str) -> bool:
        return directory == home_dir or os.path.dirname(directory) == directory

    worktree, looked = _worktree_of(start)
    result: str | None = None
    if worktree is not None and not forbidden(worktree):
        result = worktree
    else:
        plain, globs = _split_markers(marker_tuple)
        for directory in _ancestors(start):
            if forbidden(directory):
                break
            looked.append(directory)
            if _has_marker(directory, plain, globs):
                result = directory
                break
    _cache.put(key, result, looked)
    return Path(result) if result is not None else None
