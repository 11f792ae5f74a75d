"""What a server's configuration files at its root say, as one digest.

A server answers the same text differently under other compile flags or another `[tool.ty]`
section: a stored answer is a baseline only while the files that configure its server say what
they said when it was given. Each server names its files (`ServerSpec.config_files`, relative to
its root): a whole file (`compile_flags.txt`), a TOML table (`pyproject.toml:tool.ty`: its
parsed value, so a comment or another tool's section changes nothing) or INI sections
(`setup.cfg:mypy`: `[mypy]` and `[mypy-*]`). A file that does not parse counts as its text.

`digest` costs one `stat` per named file: a file is read again only when its size, mtime,
ctime, inode or device changed, or when it was changed too recently for its mtime to be
trusted (a write within the file system's timestamp granularity keeps the mtime).

Reads files; knows nothing of the store, the pool or the check that asks.
"""

from __future__ import annotations

import configparser
import hashlib
import importlib
import json
import os
import time
from pathlib import Path
from types import ModuleType
from typing import Any

__all__ = ["digest"]

RACY_NS = 2_000_000_000
"""A file changed less than this before it was read is read again next time: its mtime may not
move for a write within the same tick (1-2 s on some file systems)."""
MAX_CACHED = 512
"""Entries kept; beyond, the cache starts over (it is rebuilt by one read per file)."""

Signature = tuple[int, int, int, int, int]

_cache: dict[tuple[str, str], tuple[Signature, str]] = {}


def digest(root: Path, entries: tuple[str, ...]) -> str:
    """One hex digest of what `entries` (`ServerSpec.config_files`) say at `root`; "" when
    there are none. A missing file, table or section counts as saying nothing."""
    if not entries:
        return ""
    parts = [f"{entry}={_entry_digest(root, entry)}" for entry in entries]
    return _hash("\0".join(parts).encode())


def _entry_digest(root: Path, entry: str) -> str:
    name, _, section = entry.partition(":")
    path = os.path.join(root, name)
    signature = _signature(path)
    if signature is None:
        return ""
    key = (path, section)
    cached = _cache.get(key)
    if cached is not None and cached[0] == signature:
        return cached[1]
    read_at = time.time_ns()
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError:
        return ""
    found = _section_digest(name, data, section) if section else _hash(data)
    if read_at - max(signature[1], signature[2]) >= RACY_NS:
        if len(_cache) >= MAX_CACHED:
            _cache.clear()
        _cache[key] = (signature, found)
    return found


def _signature(path: str) -> Signature | None:
    """(size, mtime, ctime, inode, device), None when there is no such file."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino, info.st_dev)


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
    for key in dotted.split("."):
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
