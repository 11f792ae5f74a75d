"""The diagnostics model: plain, frozen values shared by every layer above the wire.

Positions here are 0-based lines and 0-based columns in *characters* (Unicode code points).
The wire's encoding (UTF-16 by default) is converted exactly once, in `model/positions.py`,
when a server's message is parsed. Formatting for people and agents adds 1 to both.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from pathlib import Path


class Severity(enum.IntEnum):
    """LSP DiagnosticSeverity values; lower is more severe."""

    ERROR = 1
    WARNING = 2
    INFORMATION = 3
    HINT = 4

    @property
    def label(self) -> str:
        return {1: "ERROR", 2: "WARN", 3: "INFO", 4: "HINT"}[self.value]

    @property
    def json_name(self) -> str:
        return {1: "error", 2: "warning", 3: "information", 4: "hint"}[self.value]

    @classmethod
    def from_lsp(cls, value: object) -> Severity:
        """Servers may omit severity; the spec says the client decides: we call it an error."""
        if isinstance(value, int) and 1 <= value <= 4:
            return cls(value)
        return cls.ERROR


@dataclass(frozen=True, slots=True, order=True)
class Position:
    line: int
    column: int


@dataclass(frozen=True, slots=True, order=True)
class Range:
    start: Position
    end: Position

    @classmethod
    def of(cls, line: int, column: int, end_line: int, end_column: int) -> Range:
        return cls(Position(line, column), Position(end_line, end_column))


@dataclass(frozen=True, slots=True)
class Cached:
    """Where a diagnostic came from the store instead of a live server: when the
    server answered, and whether the file's text has changed since (`stale`)."""

    written_at: float
    stale: bool = False

    def label(self, now: float) -> str:
        """`cached 3 min ago` (`, stale` when the text changed since)."""
        age = max(0.0, now - self.written_at)
        if age < 60:
            ago = f"{int(age)} s"
        elif age < 3600:
            ago = f"{int(age // 60)} min"
        elif age < 2 * 86400:
            ago = f"{int(age // 3600)} h"
        else:
            ago = f"{int(age // 86400)} days"
        return f"cached {ago} ago" + (", stale" if self.stale else "")


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One problem, in characters, tagged with the server that reported it."""

    range: Range
    severity: Severity
    message: str
    source: str | None = None
    code: str | None = None
    server_id: str = ""
    cached: Cached | None = None
    """Not a live answer: the server's stored one (`Cached`)."""
    ran_without_error: bool = False
    """An ERROR the kernel's run disproved (`analysis.cells.ran`): shown as a warning, marked."""

    def sort_key(self) -> tuple[int, int, int, str, str]:
        return (
            self.severity.value,
            self.range.start.line,
            self.range.start.column,
            self.message,
            self.server_id,
        )


class UnknownReason(enum.Enum):
    """Why there is no answer: the one vocabulary of checks and queries alike, mapped to agent
    error codes and HTTP statuses only at those surfaces. Never shown as clean."""

    NO_FILE = "no such file"
    """The file does not exist (queries)."""
    NOT_READ = "not read"
    """The file is not read as a document: not a regular file (a FIFO, a directory), over
    `max_file_mb`, or unreadable (`before_text.FileRefused` says which; queries)."""
    NO_LANGUAGE = "no language server"
    """No language server knows the file's kind (queries)."""
    NO_PROVIDER = "not offered"
    """The file's servers run, but none offers the feature (queries)."""
    TIMED_OUT = "timed out"
    NOT_INSTALLED = "not installed"
    BROKEN = "broken"
    CRASHED = "crashed"
    FAILED = "failed"
    REFUSED = "refused"
    """Not started: its root, configuration or interpreter is where another user can write."""
    EXCLUDED = "excluded"
    """Not asked: the server's own rules leave the file unchecked even when it is given it
    (ruff under `dist/`, a user's `extend-exclude`: `servers/exclusions.py`); it would answer
    nothing, which reads as clean."""

    @property
    def has_cause(self) -> bool:
        """Its detail is a cause, said in parentheses (`not installed (tsc not found)`), not a
        continuation of the reason (`timed out after 10.0 s`). The report's JSON schema lists
        the same reasons (`x-detail-is-cause`), which the lab extension's text is generated
        from; tests/test_schemas.py holds the two equal."""
        return self in (UnknownReason.NOT_INSTALLED, UnknownReason.REFUSED, UnknownReason.EXCLUDED)


@dataclass(frozen=True, slots=True)
class Unknown:
    """A server whose diagnostics for a file could not be obtained, and why."""

    server_id: str
    reason: UnknownReason
    detail: str = ""
    hint: str = ""


@dataclass(frozen=True, slots=True)
class FileReport:
    """The problems of one file as shown to a caller: new ones, fixed ones, unknown servers.

    `diagnostics` is what the check reports (the introduced ones for a delta check, everything
    for a full check); `current` is everything the servers said about the new text.
    """

    path: Path
    display_path: str
    diagnostics: tuple[Diagnostic, ...] = ()
    current: tuple[Diagnostic, ...] = ()
    fixed: tuple[Diagnostic, ...] = ()
    unknown: tuple[Unknown, ...] = ()
    servers: tuple[str, ...] = ()
    elsewhere: bool = False
    """A file the check did not write: what the write broke or fixed there (a caller)."""
    cell: int | None = None
    """A notebook cell's problems (`display_path` "cell [n]"): its execution count."""
    cell_id: str | None = None
    """A notebook cell's id, as the front end sent it (JupyterLab does; nbclient does not)."""


@dataclass(frozen=True, slots=True)
class Report:
    """Everything one check (or one cell) produced, before caps and formatting."""

    files: tuple[FileReport, ...] = ()
    root: Path | None = None
    notes: tuple[str, ...] = field(default=())
    unknown: tuple[Unknown, ...] = ()
    """Per-server lines about the whole check rather than one file (a batch cut by the
    budget: "24 of 150 files not checked within 10.0 s")."""

    @property
    def has_problems(self) -> bool:
        return any(f.diagnostics for f in self.files)

    @property
    def has_unknown(self) -> bool:
        return bool(self.unknown) or any(f.unknown for f in self.files)


def display_path(path: Path, root: Path | None) -> str:
    """Relative to the workspace root; absolute outside one."""
    if root is not None:
        try:
            return path.relative_to(root).as_posix()
        except ValueError:
            pass
    return str(path)
