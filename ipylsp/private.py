"""What only this user can write: ipylsp's own directories, and whether a server's root is safe.

Owns two rules (ARCHITECTURE.md, "Private by construction"):

- **Our directories are ours.** `owned_dir` makes a directory (and its missing parents) with
  mode 0700, or checks one that exists: a real directory (never a symlink), owned by this user,
  below no directory where another user could swap it for their own; a mode that lets others in
  is narrowed, since the directory is ours. `fresh_dir` makes a new, unpredictably named one
  inside such a directory. Nothing is adopted from a shared place by a predictable name: a path
  that exists and is not ours raises `NotPrivate`, whose message says what is wrong.
- **A server's root has no other writer above it.** Servers read configuration from the root's
  parent directories (ruff and ty walk up for `ruff.toml`, `ty.toml`, `pyproject.toml`):
  `other_writer` names the nearest directory at or above a path that a user other than this one
  (or root) can write to, a sticky `/tmp` included, since there others can create new files.
  `seal` writes the configuration that ends those walks into a directory of ours.

Touches the file system (stat, mkdir, chmod, `tempfile.mkdtemp`, the seal file, written once
and atomically) and reads the user and group databases; knows nothing of servers, services or
surfaces.
"""

from __future__ import annotations

import contextlib
import functools
import grp
import os
import pwd
import stat
from pathlib import Path

SEAL_NAME = "pyproject.toml"
SEAL = "".join(
    f"[tool.{tool}]\n" for tool in ("ruff", "ty", "pyright", "basedpyright", "pyrefly")
)
"""A `pyproject.toml` with an (empty) section for each Python server that walks up for its
configuration: each stops at the nearest file that has its section, so nothing above a sealed
directory is read (checked with ruff, ty and basedpyright)."""


class NotPrivate(OSError):
    """A directory ipylsp would keep its files in is not only this user's."""


def _me() -> int:
    return os.geteuid()


@functools.lru_cache(maxsize=64)
def _group_has_others(gid: int, uid: int) -> bool:
    """Whether a user other than `uid` (and root) may belong to group `gid`. Only a group
    that is root's or the user's own private group (its primary group, named after the user,
    no other member) counts as theirs; every other group is shared, since its members cannot
    be listed reliably (a directory service may not enumerate them) nor quickly."""
    if gid == 0:
        return False
    try:
        user = pwd.getpwuid(uid)
        group = grp.getgrgid(gid)
    except KeyError:
        return True
    own = gid == user.pw_gid and group.gr_name == user.pw_name
    return not (own and set(group.gr_mem) <= {user.pw_name, "root"})


def _writers_besides_me(info: os.stat_result) -> bool:
    """Whether a user other than this one (root aside) can write to a directory so described."""
    me = _me()
    if info.st_uid not in (0, me):
        return True  # its owner can always make it writable
    if info.st_mode & stat.S_IWOTH:
        return True
    return bool(info.st_mode & stat.S_IWGRP) and _group_has_others(info.st_gid, me)


def _ancestors(path: Path) -> list[Path]:
    """`path` (absolute, symlinks resolved) and its parents, nearest first."""
    real = Path(os.path.realpath(path))
    return [real, *real.parents]


def other_writer(path: str | os.PathLike[str]) -> Path | None:
    """The nearest directory at or above `path` that another user (not root) can write to:
    a server rooted at `path` could read configuration planted there. None when there is none.
    A directory that cannot be read counts as written by others (nothing is known of it)."""
    for directory in _ancestors(Path(path)):
        try:
            info = os.stat(directory)
        except OSError:
            return directory
        if stat.S_ISDIR(info.st_mode) and _writers_besides_me(info):
            return directory
    return None


def _swappable(parent: Path) -> Path | None:
    """The nearest directory at or above `parent` where another user could rename or replace
    an entry of ours: writable by others and not sticky (a sticky `/tmp` keeps our entries
    ours)."""
    for directory in _ancestors(parent):
        try:
            info = os.stat(directory)
        except OSError as exc:
            raise NotPrivate(f"{directory} cannot be read: {exc.strerror}") from None
        if _writers_besides_me(info) and not (
            info.st_mode & stat.S_ISVTX and info.st_uid in (0, _me())
        ):
            return directory
    return None


def _check(path: Path, narrow: bool) -> None:
    """`path` exists: a real directory, ours; `narrow`: a mode open to others becomes 0700."""
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode):
        raise NotPrivate(f"{path} is a symbolic link; ipylsp keeps its files only in a "
                         f"directory of its own (remove it, or choose another directory)")
    if not stat.S_ISDIR(info.st_mode):
        raise NotPrivate(f"{path} is not a directory")
    if info.st_uid != _me():
        raise NotPrivate(
            f"{path} belongs to another user (uid {info.st_uid}); ipylsp never uses a "
            f"directory it does not own (remove it, or choose another directory)"
        )
    if narrow and info.st_mode & 0o077:
        os.chmod(path, 0o700)


def owned_dir(path: str | os.PathLike[str], *, narrow: bool = True) -> Path:
    """`path` as a directory of this user's (see the module doc): made with its missing
    parents (0700 each), or checked. `narrow`: the directory is ipylsp's own, so a mode that
    lets others in becomes 0700; else (a directory the user chose, such as the store's) it is
    left as it is, and only refused when another user can write to it. Raises `NotPrivate`
    with what is wrong."""
    target = Path(os.path.abspath(path))
    _links_are_ours(target)
    missing: list[Path] = []
    current = target
    while not os.path.lexists(current) and current.parent != current:
        missing.append(current)
        current = current.parent
    exposed = _swappable(current.parent if not missing else current)
    if exposed is None and not missing:  # its parent cannot be swapped: check it, then use it
        _check(target, narrow)
        exposed = _swappable(target)
    if exposed is not None:
        raise NotPrivate(
            f"another user can write to {exposed}, so they could replace {target}; "
            f"choose a directory below one only you can write to"
        )
    for directory in reversed(missing):
        with contextlib.suppress(FileExistsError):  # made meanwhile: checked like any
            os.mkdir(directory, 0o700)
        _check(directory, narrow=True)
    return target


def _links_are_ours(path: Path) -> None:
    """Every symbolic link on the way to `path`, as written, is this user's (or root's), in a
    directory no other user can change: another user's link, which they may point elsewhere at
    any time, is never followed (`NotPrivate`)."""
    for step in [path, *path.parents]:
        try:
            info = os.lstat(step)
        except OSError:
            continue
        if not stat.S_ISLNK(info.st_mode):
            continue
        if info.st_uid not in (0, _me()):
            raise NotPrivate(
                f"{step} is a symbolic link of another user's (uid {info.st_uid}), who may "
                f"point it elsewhere at any time; choose a path without it")
        exposed = _swappable(step.parent)
        if exposed is not None:
            raise NotPrivate(
                f"another user can write to {exposed}, so they could replace the link {step}; "
                f"choose a path without it")


def fresh_dir(parent: str | os.PathLike[str], prefix: str) -> Path:
    """A new directory with an unpredictable name inside `owned_dir(parent)` (0700)."""
    import tempfile  # here: a thin client that only checks a directory does not pay for it

    return Path(tempfile.mkdtemp(prefix=prefix, dir=owned_dir(parent)))


def scratch_dir(prefix: str, *fallbacks: str | os.PathLike[str]) -> Path:
    """A new directory (0700) for workspaces made on the fly (the quickstart's, the tests',
    the benchmarks'), below no directory another user can write to, so that servers may be
    rooted in it: in the temp dir when it is such a place (`$TMPDIR` set to one), else in the
    user's cache dir, else in the cache dir of the user's home as the user database gives it
    (`$HOME` may be a fresh directory in /tmp), else in the first of `fallbacks` that is. A
    shared `/tmp` never is."""
    import tempfile

    import platformdirs

    places = [Path(tempfile.gettempdir()), Path(platformdirs.user_cache_dir("ipylsp")) / "tmp"]
    with contextlib.suppress(KeyError):
        places.append(Path(pwd.getpwuid(_me()).pw_dir) / ".cache" / "ipylsp" / "tmp")
    places += [Path(f) for f in fallbacks]
    for place in places:
        existing = Path(os.path.abspath(place))
        while not os.path.lexists(existing) and existing.parent != existing:
            existing = existing.parent
        if other_writer(existing) is None:
            with contextlib.suppress(NotPrivate):
                return Path(tempfile.mkdtemp(prefix=prefix, dir=owned_dir(place, narrow=False)))
    raise NotPrivate(
        "every candidate directory (" + ", ".join(map(str, places)) + ") has another user "
        "able to write above it: set TMPDIR to a directory only you can write to"
    )


def seal(directory: Path) -> None:
    """Write `SEAL` into `directory` (ours), once: servers rooted there read no configuration
    from its parents. Processes may seal one directory at the same moment (kernels starting
    together in one directory: `cells_place`): a seal already as written is left alone (a
    server rooted there sees no change), else one is written under a name of its own and
    renamed into place, so that no reader ever finds it empty or half written (an empty
    `pyproject.toml` would end no walk)."""
    import tempfile  # here: a thin client that only checks a directory does not pay for it

    target = directory / SEAL_NAME
    with contextlib.suppress(OSError):
        info = os.lstat(target)
        if stat.S_ISREG(info.st_mode) and info.st_size == len(SEAL.encode()) and (
                target.read_text(encoding="utf-8") == SEAL):
            return
    fd, fresh = tempfile.mkstemp(prefix=f".{SEAL_NAME}.", suffix=".new", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(SEAL)
        os.replace(fresh, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(fresh)
        raise


def is_sealed(directory: Path) -> bool:
    """Whether `directory` is one of ours that `seal` closed: owned by this user, private, with
    the seal in it as written."""
    try:
        info = os.lstat(directory)
        if stat.S_ISLNK(info.st_mode) or info.st_uid != _me() or info.st_mode & 0o077:
            return False
        if _swappable(directory.parent) is not None:
            return False
        return (directory / SEAL_NAME).read_text(encoding="utf-8") == SEAL
    except OSError:
        return False
