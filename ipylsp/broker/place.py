"""Where a build's broker lives, and which build this is.

A broker serves only clients of its own build: the ipylsp version and a digest of the package's
source files' names, sizes and modification times, so that an upgrade, or an edit in a
development checkout, never talks to a broker running older code (that one ends when idle).

Its directory is `$XDG_RUNTIME_DIR/ipylsp` when `$XDG_RUNTIME_DIR` (unset: `/run/user/<uid>`)
is this user's alone (owned, 0700, not a link: what systemd-logind makes), else
`<data dir>/run`; either is made or checked
by `private.owned_dir`, like every private path of ipylsp: a directory another user made or can
swap is refused (`NotPrivate`), never adopted. In it, per build: the socket, the secret (0600),
the lock a client holds while it starts the broker, the broker's log.

Reads the file system only (stat, the package's directory listing); starts nothing.
"""

from __future__ import annotations

import functools
import os
import stat
import zlib
from collections.abc import Callable
from pathlib import Path

from ipylsp._version import __version__
from ipylsp.private import owned_dir

RUNTIME_ENV = "XDG_RUNTIME_DIR"
SOCKET_PATH_MAX = 107
"""The longest path a Unix socket can be bound to on Linux (`sun_path` less its NUL)."""


@functools.lru_cache(maxsize=1)
def build_id() -> str:
    """`0.1.0-1a2b3c4d5e6f`: the version, and a digest of the package's source files."""
    package = Path(__file__).resolve().parent.parent
    stack = [package]
    rows: list[str] = []
    while stack:
        with os.scandir(stack.pop()) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False) and entry.name != "__pycache__":
                    stack.append(Path(entry.path))
                elif entry.name.endswith(".py"):
                    info = entry.stat()
                    rows.append(f"{entry.path}\0{info.st_size}\0{info.st_mtime_ns}")
    text = "\n".join([__version__, *sorted(rows)]).encode("utf-8", "surrogateescape")
    # two CRCs (zlib is built in; hashlib's import costs a thin client milliseconds)
    return f"{__version__}-{zlib.crc32(text):08x}{zlib.adler32(text):08x}"


class Place:
    """A build's broker: its files in one private directory. (Not a dataclass: a thin client
    does not import `dataclasses`.)"""

    __slots__ = ("build", "directory")

    def __init__(self, directory: Path, build: str) -> None:
        self.directory = directory
        self.build = build

    def _named(self, suffix: str) -> Path:
        return self.directory / f"broker-{self.build}{suffix}"

    @property
    def socket(self) -> Path:
        return self._named(".sock")

    @property
    def secret(self) -> Path:
        return self._named(".key")

    @property
    def lock(self) -> Path:
        return self._named(".lock")

    @property
    def log(self) -> Path:
        return self._named(".log")


def _runtime_dir() -> Path | None:
    """`$XDG_RUNTIME_DIR`, else `/run/user/<uid>` (what it is set to, for a process whose
    environment was cut down: an MCP client starts its servers with a few variables only),
    when it is this user's alone; None otherwise (none, or another user owns or may enter it)."""
    value = os.environ.get(RUNTIME_ENV, "") or f"/run/user/{os.geteuid()}"
    if not os.path.isabs(value):
        return None
    try:
        info = os.lstat(value)
    except OSError:
        return None
    if (not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid()
            or info.st_mode & 0o077):
        return None
    return Path(value)


def place(data: Callable[[], Path], build: str | None = None) -> Place:
    """This build's place (its directory made or checked): under the private runtime
    directory, else under the data directory `data()` gives; `NotPrivate` or `OSError` when
    there is none this user alone can write, or its socket's path would be too long."""
    runtime = _runtime_dir()
    directory = owned_dir(runtime / "ipylsp" if runtime is not None else data() / "run")
    where = Place(directory, build or build_id())
    if len(os.fsencode(where.socket)) > SOCKET_PATH_MAX:
        raise OSError(f"the broker's socket path is longer than {SOCKET_PATH_MAX} bytes: "
                         f"{where.socket}")
    return where
