"""What feature requests answer (hover, definition, symbols, ...), in the model's terms.

Plain frozen values beside the diagnostics model: 0-based lines and 0-based code-point
columns. `lsp.requests` converts the wire's answers into these; every surface formats them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ipylsp.model.edits import TextEdit


@dataclass(frozen=True, slots=True)
class Location:
    """A place in a file (the start of a range)."""

    path: Path
    line: int
    column: int


@dataclass(frozen=True, slots=True)
class Symbol:
    """One entry of a file's outline or of a workspace symbol search."""

    name: str
    kind: str
    line: int
    column: int
    depth: int = 0
    path: Path | None = None
    container: str | None = None


@dataclass(frozen=True, slots=True)
class Completion:
    label: str
    kind: str | None = None
    detail: str | None = None


@dataclass(frozen=True, slots=True)
class CodeAction:
    """A quick fix a server offers for problems on a line: its edits (never applied here), or
    the server command it would run instead (which no preview can show)."""

    title: str
    server_id: str
    kind: str | None = None
    edits: tuple[TextEdit, ...] = ()
    command: str | None = None
    fixes: tuple[str, ...] = ()
    """Codes of the diagnostics the action fixes (e.g. "F401")."""
