"""The servers ipylsp knows, as every surface shows them: one table of rows (installed or
missing, with the command or how to install), `which`, the running servers of every process,
and installs with progress.

The facade's answer to "what can I run, and what runs?": the CLI, the magics and the agent
tools print these values rather than building rows of their own, so `ipylsp list` and
`%lsp list` (and `ipylsp status` and `%lsp status`) are one rendering, and "installable" has
one definition (`installers.installable`). Whether a server is installed, and its command,
are as the asking service's client would run it (its `Environment`: interpreter and PATH;
None: this process's); installs run in this process's own environment, into the data dir.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ipylsp.model.environment import Environment
from ipylsp.model.server_spec import ServerSpec
from ipylsp.model.settings import Settings
from ipylsp.model.status import ServerStatus
from ipylsp.servers import executables, installers, registry
from ipylsp.service.runtime.status_file import read_published

MAX_LANGUAGES = 32
"""Characters of the languages column; longer lists end in "…" (TypeScript's are long)."""


class UnknownServer(ValueError):
    """A server id the registry and the user's configuration do not know (the message names
    it; each surface adds where to look: `ipylsp list`, `%lsp list`)."""


@dataclass(frozen=True, slots=True)
class ServerRow:
    server_id: str
    languages: tuple[str, ...]
    command: tuple[str, ...] | None
    """What ipylsp runs for it; None when it cannot run."""
    hint: str
    """How to install it ("" when installed)."""
    reason: str = ""
    """Why a server that was found cannot run (e.g. no node on PATH)."""

    @property
    def installed(self) -> bool:
        return self.command is not None

    @property
    def state(self) -> str:
        return "installed" if self.installed else "missing"

    def which(self) -> str:
        """The command, or one line saying why there is none and how to get it."""
        if self.command is not None:
            return " ".join(self.command)
        return f"{self.server_id}: {self.reason or 'not installed'}. {self.hint}".rstrip()


def format_columns(rows: Sequence[Sequence[str]], gap: str = "  ") -> str:
    """Aligned columns; the last one is not padded (a long command stays on its line)."""
    if not rows:
        return ""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return "\n".join(
        gap.join(
            [*(cell.ljust(width) for cell, width in zip(row[:-1], widths, strict=True)), row[-1]]
        ).rstrip()
        for row in rows
    )


def _languages(row: ServerRow) -> str:
    text = ",".join(row.languages)
    return text if len(text) <= MAX_LANGUAGES else text[: MAX_LANGUAGES - 1] + "…"


class _PrintsAsText:
    """`str`, `repr` and IPython's display alike are `format()`: at a prompt the answer reads
    as the CLI prints it."""

    __slots__ = ()

    def format(self) -> str:
        raise NotImplementedError

    def __str__(self) -> str:
        return self.format()

    def __repr__(self) -> str:
        return self.format()

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(self.format())


@dataclass(frozen=True, slots=True, repr=False)
class ServerTable(_PrintsAsText):
    """Rows that print as an aligned table (`str`, `repr` and IPython's display alike)."""

    rows: tuple[ServerRow, ...]

    def format(self, *, commands: bool = True) -> str:
        """`id  state  languages  command-or-install-hint` per row (without `commands`, the
        first three)."""
        cells = [
            [
                r.server_id,
                r.state,
                _languages(r),
                *([r.which() if r.installed else r.hint] if commands else []),
            ]
            for r in self.rows
        ]
        return format_columns(cells)

    def summary(self) -> str:
        installed = sum(1 for r in self.rows if r.installed)
        return f"{installed} of {len(self.rows)} servers installed"


def _specs(settings: Settings) -> list[ServerSpec]:
    """The registry's servers, with the user's own (`extra_specs`) replacing by id."""
    own = {spec.id: spec for spec in settings.extra_specs}
    specs = [own.pop(spec.id, spec) for spec in registry.all_specs()]
    return [*specs, *own.values()]


def _row(spec: ServerSpec, settings: Settings, environment: Environment | None) -> ServerRow:
    resolution = executables.resolve(spec, executables.data_dir(settings), environment)
    hint = "" if resolution.command is not None else registry.install_hint(spec)
    return ServerRow(
        spec.id, tuple(spec.languages), resolution.command, hint, resolution.reason or ""
    )


def table(
    settings: Settings, *, installed_only: bool = False, environment: Environment | None = None
) -> ServerTable:
    rows = (_row(spec, settings, environment) for spec in _specs(settings))
    return ServerTable(tuple(r for r in rows if r.installed or not installed_only))


def row(settings: Settings, server_id: str, environment: Environment | None = None) -> ServerRow:
    """One server's row; `UnknownServer` for an id nobody defined."""
    for spec in _specs(settings):
        if spec.id == server_id:
            return _row(spec, settings, environment)
    raise UnknownServer(f"unknown server {server_id!r}")


def install_targets(
    settings: Settings, ids: Iterable[str], *, install_all: bool = False
) -> list[ServerSpec]:
    """The servers an install names; `UnknownServer`/`ValueError` with a one-line reason."""
    if install_all:
        return [spec for spec in _specs(settings) if installers.installable(spec)]
    ids = list(ids)
    if not ids:
        raise ValueError("name servers, or --all")
    specs = {spec.id: spec for spec in _specs(settings)}
    unknown = [i for i in ids if i not in specs]
    if unknown:
        raise UnknownServer(f"unknown server(s): {', '.join(unknown)}")
    return [specs[i] for i in dict.fromkeys(ids)]


class InstallProgress:
    """What an install tells its caller as it goes (each method a no-op here): a surface
    overrides what it shows (the CLI prints lines, a cell updates one line per server)."""

    def started(self, spec: ServerSpec) -> None:
        """`spec`'s install begins."""

    def output(self, server_id: str, line: str) -> None:
        """A line of the installer's output, as it arrives."""

    def finished(self, result: installers.InstallResult) -> None:
        """`result.server_id`'s install ended (`result.message` says how, naming it)."""


def install_one(
    spec: ServerSpec, data_dir: Path, progress: InstallProgress | None = None
) -> installers.InstallResult:
    """Install one server into `data_dir` (blocking: minutes for npm); where servers are is
    looked up afresh afterwards."""
    report = progress or InstallProgress()
    report.started(spec)

    def relay(line: str) -> None:
        report.output(spec.id, line)

    try:
        result = installers.install(spec, data_dir, progress=relay)
    finally:
        executables.invalidate()
    report.finished(result)
    return result


def install(
    settings: Settings, specs: Iterable[ServerSpec], progress: InstallProgress | None = None
) -> list[installers.InstallResult]:
    """Install each server into ipylsp's data dir, in turn (blocking: minutes for npm)."""
    data = executables.data_dir(settings)
    return [install_one(spec, data, progress) for spec in specs]


# -- what runs ------------------------------------------------------------------------------------


def _cells(row: ServerStatus) -> list[str]:
    """A status row as the table's columns."""
    owner = ("this process" if row.owner == os.getpid()
             else f"process {row.owner}" if row.owner is not None else "")
    return [
        row.server_id,
        row.state.value,
        str(row.root),
        f"pid {row.pid}" if row.pid else "",
        f"({owner})" if owner else "",
        row.detail if row.detail not in ("", row.state.value) else "",
    ]


NOTHING_RUNS = "no server running (servers start when a file is checked)"


@dataclass(frozen=True, slots=True, repr=False)
class StatusView(_PrintsAsText):
    """The one status view: the servers of every process, the installed ones, the current
    errors of every live service and the asking service's pending problems. Every surface
    renders it: as text (`%lsp status`, `ipylsp status`), as JSON (the server extension's
    status route), or its own rows (the agent's `lsp_status`)."""

    running: tuple[ServerStatus, ...]
    installed: tuple[str, ...]
    errors: int = 0
    pending: int = 0
    own: int = 0
    """The first `own` rows are the asking service's (not another service's, even in this
    process)."""

    def format(self) -> str:
        rows = format_columns([_cells(row) for row in self.running]) or NOTHING_RUNS
        return f"{rows}\ninstalled: {', '.join(self.installed) or 'none'}"

    def mine(self) -> tuple[ServerStatus, ...]:
        """The asking service's own rows."""
        return self.running[: self.own]

    def to_json(self) -> dict[str, Any]:
        """The status route's answer (`ipylsp/schemas/status.schema.json`)."""
        return {
            "servers": [row.to_json() for row in self.running],
            "installed": list(self.installed),
            "errors": self.errors,
        }


def status(
    settings: Settings,
    own: Sequence[ServerStatus] = (),
    own_token: int | None = None,
    *,
    errors: int = 0,
    pending: int = 0,
    environment: Environment | None = None,
) -> StatusView:
    """`own`: the asking service's rows (fresher than its status file, which is skipped by
    `own_token`); then what other services of this process published, then other processes
    (kernels), by process id. `errors`, `pending`: the asking service's; every other live
    service's published errors are added."""
    pid = os.getpid()
    found, others = read_published(executables.data_dir(settings), skip_token=own_token)
    rows = [*own, *sorted(found, key=lambda row: row.owner != pid)]  # stable: files' order
    installed = tuple(
        row.server_id
        for row in table(settings, installed_only=True, environment=environment).rows
    )
    return StatusView(tuple(rows), installed, errors + others, pending, own=len(own))
