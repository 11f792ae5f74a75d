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

Paths are strings and `pathlib` is not imported on the way to a running broker
(`existing`): the thin `ipylsp check` an agent runs after each edit pays for each module.
Touches the file system only: stat, the package's directory listing, and `place` makes the
directory (through `private.owned_dir`); starts nothing. `existing` makes nothing: it looks
at the directory itself (ours, 0700, not a link), and what connects there checks that the
broker is this user's (`SO_PEERCRED`) and that its secret is a private file of this user's.
"""

from __future__ import annotations

import os
import stat
import zlib

from ipylsp._version import __version__

TYPE_CHECKING = False  # `typing.TYPE_CHECKING`, without importing typing (see ipylsp/__init__)
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from pathlib import Path

RUNTIME_ENV = "XDG_RUNTIME_DIR"
BROKER_ENV = "IPYLSP_BROKER"
"""`IPYLSP_BROKER=0` turns the broker off for a process and what it starts, whatever the
`broker` knob says (an agent's hook, a test suite)."""
SOCKET_PATH_MAX = 107
"""The longest path a Unix socket can be bound to on Linux (`sun_path` less its NUL)."""


_BUILD: list[str] = []
"""`build_id()`'s answer, once known (`functools.lru_cache` costs a thin client its import)."""


def build_id() -> str:
    """`0.1.0-1a2b3c4d5e6f`: the version, and a digest of the package's source files."""
    if _BUILD:
        return _BUILD[0]
    package = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    stack = [package]
    rows: list[str] = []
    while stack:
        with os.scandir(stack.pop()) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False) and entry.name != "__pycache__":
                    stack.append(entry.path)
                elif entry.name.endswith(".py"):
                    info = entry.stat()
                    rows.append(f"{entry.path}\0{info.st_size}\0{info.st_mtime_ns}")
    text = "\n".join([__version__, *sorted(rows)]).encode("utf-8", "surrogateescape")
    # two CRCs (zlib is built in; hashlib's import costs a thin client milliseconds)
    _BUILD.append(f"{__version__}-{zlib.crc32(text):08x}{zlib.adler32(text):08x}")
    return _BUILD[0]


class Place:
    """A build's broker: its files in one private directory. (Not a dataclass, and paths as
    strings: a thin client imports neither `dataclasses` nor `pathlib`.)"""

    __slots__ = ("build", "directory")

    def __init__(self, directory: str | os.PathLike[str], build: str) -> None:
        self.directory = os.fspath(directory)
        self.build = build

    def _named(self, suffix: str) -> str:
        return os.path.join(self.directory, f"broker-{self.build}{suffix}")

    @property
    def socket(self) -> str:
        return self._named(".sock")

    @property
    def secret(self) -> str:
        return self._named(".key")

    @property
    def lock(self) -> str:
        return self._named(".lock")

    @property
    def log(self) -> str:
        return self._named(".log")


def switched_off() -> bool:
    """Whether `$IPYLSP_BROKER` turns the broker off (0, off, false or no)."""
    return os.environ.get(BROKER_ENV, "").strip().lower() in ("0", "off", "false", "no")


def _runtime_dir() -> str | None:
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
    if not _private(info):
        return None
    return value


def _private(info: os.stat_result) -> bool:
    """A directory (not a link) of this user's that nobody else may enter."""
    return (stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid()
            and not info.st_mode & 0o077)


def default_data(env: Mapping[str, str] | None = None) -> str:
    """`servers.executables.data_dir()` with the default settings, as platformdirs makes it on
    Linux (`$XDG_DATA_HOME/ipylsp`, else `~/.local/share/ipylsp`), without importing it
    (tests/test_quick_check.py holds the two equal); in `env` (a client's), else this
    process's."""
    if env is None:
        env = os.environ
    base = (env.get("XDG_DATA_HOME", "").strip()
            or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".local", "share"))
    return os.path.join(base, "ipylsp")


def existing(data: Callable[[], str | os.PathLike[str]] | None = None,
             build: str | None = None) -> Place | None:
    """This build's place when it exists and is private (nothing is made): under the private
    runtime directory, else under the data directory `data()` gives (None: not looked for);
    None otherwise: `place` then makes or checks it. For the thin path to a running broker and
    status questions: what connects there still checks the broker is this user's."""
    runtime = _runtime_dir()
    if runtime is not None:
        directory = os.path.join(runtime, "ipylsp")
    elif data is not None:
        directory = os.path.join(data(), "run")
    else:
        return None
    try:
        if not _private(os.lstat(directory)):
            return None
    except OSError:
        return None
    return Place(directory, build or build_id())


def place(data: Callable[[], Path], build: str | None = None) -> Place:
    """This build's place (its directory made or checked): under the private runtime
    directory, else under the data directory `data()` gives; `NotPrivate` or `OSError` when
    there is none this user alone can write, or its socket's path would be too long."""
    from ipylsp.private import owned_dir

    runtime = _runtime_dir()
    directory = owned_dir(os.path.join(runtime, "ipylsp") if runtime is not None
                          else data() / "run")
    where = Place(directory, build or build_id())
    if len(os.fsencode(where.socket)) > SOCKET_PATH_MAX:
        raise OSError(f"the broker's socket path is longer than {SOCKET_PATH_MAX} bytes: "
                         f"{where.socket}")
    return where
