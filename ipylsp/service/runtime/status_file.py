"""A small per-process status file, so `ipylsp status` in a terminal can list the servers that
kernels (other processes) are running, and which are broken.

`<data_dir>/run/status-<pid>-<n>.json`, rewritten only when the rows change; a file whose process is
gone is ignored and removed by the reader.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ipylsp.private import owned_dir
from ipylsp.service.runtime.pool import SlotStatus

_last_written: dict[Path, str] = {}


def _file(data_dir: Path, token: int) -> Path:
    return data_dir / "run" / f"status-{os.getpid()}-{token}.json"


def write_status(
    data_dir: Path, token: int, rows: Sequence[SlotStatus], errors: int = 0
) -> None:
    """`token` tells apart several services of one process; `errors`: the current errors of
    the files it checked (the Jupyter server's status sums them over kernels)."""
    path = _file(data_dir, token)
    body = json.dumps(
        {
            "pid": os.getpid(),
            "errors": errors,
            "servers": [
                {
                    "server": r.server_id,
                    "root": str(r.root),
                    "state": r.state,
                    "detail": r.detail,
                    "pid": r.pid,
                }
                for r in rows
            ],
        },
        sort_keys=True,
    )
    if _last_written.get(path) == body:
        return
    with contextlib.suppress(OSError):  # NotPrivate too: no status then, checks go on
        owned_dir(path.parent)
        temporary = path.with_suffix(".tmp")
        temporary.write_text(body)
        os.replace(temporary, path)
        _last_written[path] = body


def remove_status(data_dir: Path, token: int) -> None:
    path = _file(data_dir, token)
    _last_written.pop(path, None)
    with contextlib.suppress(OSError):
        path.unlink()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def read_status(data_dir: Path, *, skip_token: int | None = None) -> list[dict[str, Any]]:
    """Rows of every live process's status file, each with its owner's pid as `owner`;
    `skip_token`: not this process's file of that token (a service reading its own rows)."""
    return read_published(data_dir, skip_token=skip_token)[0]


def read_published(
    data_dir: Path, *, skip_token: int | None = None
) -> tuple[list[dict[str, Any]], int]:
    """What every other live service (kernels) published, in one reading of the files: its
    rows (as `read_status`) and its current errors, summed."""
    rows: list[dict[str, Any]] = []
    total = 0
    for owner, content in _live_files(data_dir, skip_token):
        for row in content.get("servers", []):
            if isinstance(row, dict):
                rows.append({**row, "owner": owner})
        errors = content.get("errors", 0)
        if isinstance(errors, int) and errors > 0:
            total += errors
    return rows, total


def _pid_and_token(path: Path) -> tuple[int, int, str]:
    """`status-<pid>-<token>.json` in the order of its numbers (not of their digits)."""
    _, pid, token = [*path.stem.split("-"), "", ""][:3]
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
            content = json.loads(path.read_text())
            owner = int(content["pid"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if not isinstance(content, dict):
            continue
        if not _alive(owner):
            with contextlib.suppress(OSError):
                path.unlink()
            continue
        found.append((owner, content))
    return found
