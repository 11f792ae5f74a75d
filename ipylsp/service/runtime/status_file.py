"""A small per-process status file, so `ipylsp status` in a terminal can list the servers that
kernels (other processes) are running, and which are broken.

`<data_dir>/run/status-<host>-<pid>-<n>.json`, replaced whole (written beside, renamed) only
when the rows change. Its process is named by host, pid and start time: a reader ignores
another host's files (a home shared between machines) and removes this host's whose process is
gone, a pid reused by another process included, but never a file written since it read it.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ipylsp.lsp.procfs import HOST, alive, start_time
from ipylsp.model.status import ServerStatus
from ipylsp.private import owned_dir

_last_written: dict[Path, str] = {}
_STARTED = start_time(os.getpid())


def _file(data_dir: Path, token: int) -> Path:
    return data_dir / "run" / f"status-{HOST}-{os.getpid()}-{token}.json"


def write_status(
    data_dir: Path, token: int, rows: Sequence[ServerStatus], errors: int = 0, *,
    write: Callable[[Callable[[], None]], object] | None = None,
) -> None:
    """`token` tells apart several services of one process; `errors`: the current errors of
    the files it checked (the Jupyter server's status sums them over kernels). Nothing is
    written when they are what was last written; else `write`, given the writing, runs it
    (None: at once; a service's loop hands it to a thread)."""
    path = _file(data_dir, token)
    body = json.dumps(
        {
            "pid": os.getpid(),
            "host": HOST,
            "started": _STARTED,
            "errors": errors,
            "servers": [row.to_json() for row in rows],
        },
        sort_keys=True,
    )
    if _last_written.get(path) == body:
        return

    def writing() -> None:
        with contextlib.suppress(OSError):  # NotPrivate too: no status then, checks go on
            owned_dir(path.parent)
            temporary = path.with_suffix(".tmp")
            temporary.write_text(body)
            os.replace(temporary, path)
            _last_written[path] = body

    if write is None:
        writing()
    else:
        write(writing)


def remove_status(data_dir: Path, token: int) -> None:
    path = _file(data_dir, token)
    _last_written.pop(path, None)
    with contextlib.suppress(OSError):
        path.unlink()


def read_status(data_dir: Path, *, skip_token: int | None = None) -> list[ServerStatus]:
    """Rows of every live process's status file, each with its owner's pid; `skip_token`:
    not this process's file of that token (a service reading its own rows)."""
    return read_published(data_dir, skip_token=skip_token)[0]


def read_published(
    data_dir: Path, *, skip_token: int | None = None
) -> tuple[list[ServerStatus], int]:
    """What every other live service (kernels) published, in one reading of the files: its
    rows (as `read_status`) and its current errors, summed."""
    rows: list[ServerStatus] = []
    total = 0
    for owner, content in _live_files(data_dir, skip_token):
        servers = content.get("servers", [])
        for written in servers if isinstance(servers, list) else []:
            row = ServerStatus.from_json(written, owner)
            if row is not None:
                rows.append(row)
        errors = content.get("errors", 0)
        if isinstance(errors, int) and errors > 0:
            total += errors
    return rows, total


def _pid_and_token(path: Path) -> tuple[int, int, str]:
    """`status-<host>-<pid>-<token>.json` in the order of its numbers (not of their digits)."""
    pid, token = [*path.stem.split("-")[-2:], "", ""][:2]
    return (int(pid) if pid.isdigit() else -1, int(token) if token.isdigit() else -1, path.name)


def _live_files(data_dir: Path, skip_token: int | None) -> list[tuple[int, dict[str, Any]]]:
    found: list[tuple[int, dict[str, Any]]] = []
    skip = None if skip_token is None else _file(data_dir, skip_token)
    try:  # rows are read only from a directory of ours: none planted by another user
        owned_dir(data_dir / "run", narrow=False)
    except OSError:
        return found
    for path in sorted((data_dir / "run").glob("status-*.json"), key=_pid_and_token):
        if path == skip:
            continue
        try:
            with path.open(encoding="utf-8") as handle:
                inode = os.fstat(handle.fileno()).st_ino
                content = json.load(handle)
            owner = int(content["pid"])
            host, started = str(content.get("host", HOST)), int(content.get("started", 0))
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue
        if host != HOST:  # another machine's process: nothing here can tell if it runs
            continue
        if not alive(owner, started):
            with contextlib.suppress(OSError):
                if os.stat(path).st_ino == inode:  # not one its pid's new process wrote since
                    path.unlink()
            continue
        found.append((owner, content))
    return found
