"""What a server's configuration files at its root say, as one digest.

A server answers the same text differently under other compile flags or another `[tool.ty]`
section: a stored answer is a baseline only while the files that configure its server say what
they said when it was given. Each server names its files (`ServerSpec.config_files`, relative to
its root): a whole file (`compile_flags.txt`), a TOML table (`pyproject.toml:tool.ty`: its
parsed value, so a comment or another tool's section changes nothing) or INI sections
(`setup.cfg:mypy`: `[mypy]` and `[mypy-*]`). A file that does not parse counts as its text.

`digest` costs one `stat` per named file, and nothing more while every stat is as it was: a
file is read again only when its size, mtime, ctime, inode or device changed, or when it was
changed too recently for its stat to be trusted (a write within the file system's timestamp
granularity keeps the mtime). `table` is one TOML file's parsed table, read by the same rule
(`servers/exclusions.py` reads the patterns a server excludes there).

Both run on the service's loop: only a regular file is read, opened without blocking
(`regular_file.read`); a FIFO, a socket, a device or a directory in a file's place is never
opened (opening a FIFO to read it waits for a writer, for ever, and with it every check).

Reads files; knows nothing of the store, the pool or the check that asks.
"""

from __future__ import annotations

import configparser
import functools
import hashlib
import importlib
import json
import os
import stat
import time
from pathlib import Path
from types import ModuleType
from typing import Any

from ipylsp.servers import regular_file

__all__ = ["digest", "forget", "table"]

RACY_NS = 2_000_000_000
"""A file changed less than this before it was read is read again next time: its mtime may not
move for a write within the same tick (1-2 s on some file systems)."""
MAX_CACHED = 512
"""Entries kept per cache; beyond, it starts over (rebuilt by one read per file)."""

Signature = tuple[int, int, int, int, int, int]
Place = tuple[str, str, str]  # path, name relative to the root, section

_files: dict[tuple[str, str], tuple[Signature, str]] = {}
"""(path, section) -> the file's stat and what it says, for files read out of the racy window."""
_combined: dict[tuple[str, tuple[str, ...]], tuple[tuple[Signature | None, ...], str]] = {}
"""(root, entries) -> every file's stat and the digest, when every file's part was trusted."""
_tables: dict[tuple[str, str], tuple[Signature, dict[str, Any] | None]] = {}
"""(path, section) -> the file's stat and its parsed table, for files read out of the racy
window."""


def digest(root: Path, entries: tuple[str, ...]) -> str:
    """One hex digest of what `entries` (`ServerSpec.config_files`) say at `root`; "" when
    there are none. A missing file, table or section counts as saying nothing. A file that is
    not a regular file (a FIFO, a device, a directory) is not read and counts as its stat: what
    a server makes of it (waits at it, fails, reads what a writer sends) is not what it makes
    of no file, so its answers must not be taken for those of a missing file, nor of the
    regular file that was there before; and nothing else of it can be known without opening
    it. Its stat changes when it is replaced, and a FIFO's when it is written to."""
    if not entries:
        return ""
    key = (str(root), entries)
    places, paths = _places(*key)
    stats = {path: _signature(path) for path in paths}  # a file named twice: one stat
    signatures = tuple(stats[path] for path, _, _ in places)
    cached = _combined.get(key)
    if cached is not None and cached[0] == signatures:
        return cached[1]
    parts: list[str] = []
    trusted = True
    for place, signature in zip(places, signatures, strict=True):
        found, sure = _entry_digest(place, signature)
        parts.append(f"{place[1]}:{place[2]}={found}")
        trusted = trusted and sure
    result = _hash("\0".join(parts).encode())
    if trusted:
        _remember(_combined, key, (signatures, result))
    return result


def forget() -> None:
    """Every cached digest and table dropped: the next call reads every file again."""
    _files.clear()
    _combined.clear()
    _tables.clear()


def table(path: Path, section: str = "") -> dict[str, Any] | None:
    """The TOML table `section` (dotted; "" for the whole file) of the file at `path`; None
    when there is no such file or table, or the file does not parse as TOML (nothing is known
    of what it says). A file that is not a regular file (a FIFO, a device, a directory) counts
    as absent: it is never opened, so nothing is known of what it says either."""
    signature = _signature(str(path))
    if signature is None or not stat.S_ISREG(signature[5]):
        return None
    key = (str(path), section)
    cached = _tables.get(key)
    if cached is not None and cached[0] == signature:
        return cached[1]
    read_at = time.time_ns()
    try:
        text = regular_file.read(path).decode("utf-8", "replace")
        value = _toml_table(text, section)
    except (OSError, ValueError, regular_file.NotRegular):  # gone, or swapped since the stat
        return None
    found = value if isinstance(value, dict) else None
    if read_at - max(signature[1], signature[2]) >= RACY_NS:
        _remember(_tables, key, (signature, found))
    return found


@functools.lru_cache(maxsize=256)
def _places(root: str, entries: tuple[str, ...]) -> tuple[tuple[Place, ...], tuple[str, ...]]:
    """Each entry's place, and the distinct paths among them."""
    places = []
    for entry in entries:
        name, _, section = entry.partition(":")
        places.append((os.path.join(root, name), name, section))
    return tuple(places), tuple(dict.fromkeys(path for path, _, _ in places))


def _signature(path: str) -> Signature | None:
    """(size, mtime, ctime, inode, device, mode), None when there is no such file."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino, info.st_dev,
            info.st_mode)


def _entry_digest(place: Place, signature: Signature | None) -> tuple[str, bool]:
    """What one file (or its section) says, and whether its stat may stand for it next time."""
    if signature is None:
        return "", True
    if not stat.S_ISREG(signature[5]):  # never opened: its stat is all that is known (`digest`)
        return "special:" + _hash(repr(signature).encode()), True
    path, name, section = place
    cached = _files.get((path, section))
    if cached is not None and cached[0] == signature:
        return cached[1], True
    read_at = time.time_ns()
    try:
        data = regular_file.read(path)
    except (OSError, regular_file.NotRegular):  # gone, or swapped since the stat
        return "", False
    found = _section_digest(name, data, section) if section else _hash(data)
    if read_at - max(signature[1], signature[2]) < RACY_NS:
        return found, False
    _remember(_files, (path, section), (signature, found))
    return found, True


def _remember(cache: dict[Any, Any], key: Any, value: Any) -> None:
    if len(cache) >= MAX_CACHED:
        cache.clear()
    cache[key] = value


def _section_digest(name: str, data: bytes, section: str) -> str:
    text = data.decode("utf-8", "replace")
    try:
        value = (_toml_table(text, section) if name.endswith(".toml")
                 else _ini_sections(text, section))
    except ValueError:  # does not parse (or no TOML reader): what it says is all of it
        return _hash(data)
    if value is None:
        return ""
    return _hash(json.dumps(value, sort_keys=True, default=str).encode())


def _toml_table(text: str, dotted: str) -> Any:
    reader = _toml()
    if reader is None:
        raise ValueError("no TOML reader (tomllib or tomli)")
    try:
        value: Any = reader.loads(text)
    except Exception as exc:  # tomllib.TOMLDecodeError, or tomli's
        raise ValueError(str(exc)) from None
    for key in dotted.split(".") if dotted else ():
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return value


def _toml() -> ModuleType | None:
    for module in ("tomllib", "tomli"):  # tomllib: 3.11+
        try:
            return importlib.import_module(module)
        except ImportError:
            continue
    return None


def _ini_sections(text: str, prefix: str) -> dict[str, dict[str, str]] | None:
    parser = configparser.RawConfigParser(strict=False, interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error as exc:
        raise ValueError(str(exc)) from None
    found = {
        name: dict(parser.items(name))
        for name in parser.sections()
        if name == prefix or name.startswith(f"{prefix}-")
    }
    return found or None


def _hash(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=8).hexdigest()
