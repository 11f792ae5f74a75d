"""What runs: a language server's state, and the one status row every surface shows.

Owns `ServerState` (the only word for a server's state: the client's state machine, the pool's
view of a slot, every status surface) and `ServerStatus` (one server for one root: its state,
process and owner) with its one JSON form, which the status files of other processes, the
server extension's status route and the agent's `lsp_status` all carry
(`ipylsp/schemas/status.schema.json`). Plain values: no I/O, nothing of ipylsp above the model.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class ServerState(str, enum.Enum):
    """A server's state (a `str`, so it prints and serializes as its value)."""

    STOPPED = "stopped"
    STARTING = "starting"
    RUNNING = "running"
    STOPPING = "stopping"
    BROKEN = "broken"
    CRASHED = "crashed"
    """Seen from the pool: the process exited without being stopped (restarted on next use)."""

    def __str__(self) -> str:
        return self.value

    def __repr__(self) -> str:  # in a printed row or list, the state as the string it is
        return repr(self.value)


@dataclass(frozen=True, slots=True)
class ServerStatus:
    """One server some process runs (or found broken, or stopped) for one root."""

    server_id: str
    root: Path
    state: ServerState
    detail: str = ""
    """What it is doing ("indexing 4/9"), or why it is broken."""
    pid: int | None = None
    """The server's process, while it runs."""
    owner: int | None = None
    """The process that runs it (a kernel, the Jupyter server); None when unknown."""
    open_documents: int = 0
    crashes: int = 0

    def to_json(self) -> dict[str, Any]:
        """The one JSON form: `{"server", "state", "detail", "root", "pid", "owner"}`."""
        return {"server": self.server_id, "state": self.state.value, "detail": self.detail,
                "root": str(self.root), "pid": self.pid, "owner": self.owner}

    @classmethod
    def from_json(cls, row: object, owner: int | None = None) -> ServerStatus | None:
        """A row another process wrote (`owner`: its process, when the row names none);
        None when it is not one (a state this ipylsp does not know, a field of the wrong
        type)."""
        if not isinstance(row, dict):
            return None
        try:
            pid, written_owner = row.get("pid"), row.get("owner")
            if written_owner is None:
                written_owner = owner
            if not (pid is None or isinstance(pid, int)) or not (
                    written_owner is None or isinstance(written_owner, int)):
                return None
            return cls(str(row["server"]), Path(str(row["root"])), ServerState(row["state"]),
                       str(row.get("detail") or ""), pid, written_owner)
        except (KeyError, ValueError):
            return None
