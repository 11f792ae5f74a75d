"""The servers ipylsp knows, as every surface shows them: one table of rows (installed or
missing, with the command or how to install), `which`, and installs with progress.

The facade's answer to "what can I run?": the CLI, the magics and the agent tools print
these values rather than building rows of their own, so `ipylsp list` and `%lsp list` are
one rendering and "installable" has one definition (`installers.installable`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ipylsp.lsp import installers, locate, registry
from ipylsp.settings import Settings
from ipylsp.spec import ServerSpec

MAX_LANGUAGES = 32
"""Characters of the languages column; longer lists end in "…" (TypeScript's are long)."""


class UnknownServer(ValueError):
    """A server id the registry and the user's configuration do not know."""


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


@dataclass(frozen=True, slots=True)
class ServerTable:
    """Rows that print as an aligned table (`str`, `repr` and IPython's display alike)."""

    rows: tuple[ServerRow, ...]

    def format(self, *, commands: bool = False) -> str:
        """`id  state  languages` per row; with `commands`, the command or install hint too."""
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

    def __str__(self) -> str:
        return self.format()

    def __repr__(self) -> str:
        return self.format()

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(self.format())


def _specs(settings: Settings) -> list[ServerSpec]:
    """The registry's servers, with the user's own (`extra_specs`) replacing by id."""
    own = {spec.id: spec for spec in settings.extra_specs}
    specs = [own.pop(spec.id, spec) for spec in registry.all_specs()]
    return [*specs, *own.values()]


def _row(spec: ServerSpec, settings: Settings) -> ServerRow:
    resolution = locate.resolve(spec, locate.data_dir(settings))
    hint = "" if resolution.command is not None else registry.install_hint(spec)
    return ServerRow(
        spec.id, tuple(spec.languages), resolution.command, hint, resolution.reason or ""
    )


def table(settings: Settings, *, installed_only: bool = False) -> ServerTable:
    rows = (_row(spec, settings) for spec in _specs(settings))
    return ServerTable(tuple(r for r in rows if r.installed or not installed_only))


def row(settings: Settings, server_id: str) -> ServerRow:
    """One server's row; `UnknownServer` for an id nobody defined."""
    for spec in _specs(settings):
        if spec.id == server_id:
            return _row(spec, settings)
    raise UnknownServer(f"unknown server {server_id!r} (see `ipylsp list`)")


def install_targets(
    settings: Settings, ids: Iterable[str], *, install_all: bool = False
) -> list[ServerSpec]:
    """The servers an install names; `UnknownServer`/`ValueError` with a one-line reason."""
    if install_all:
        return [spec for spec in _specs(settings) if installers.installable(spec)]
    ids = list(ids)
    if not ids:
        raise ValueError("name servers (see `ipylsp list`), or --all")
    specs = {spec.id: spec for spec in _specs(settings)}
    unknown = [i for i in ids if i not in specs]
    if unknown:
        raise UnknownServer(f"unknown server(s): {', '.join(unknown)}")
    return [specs[i] for i in dict.fromkeys(ids)]


InstallProgress = Callable[[str, str], None]
"""Called with (server id, a line of the installer's output)."""


def install(
    settings: Settings, specs: Iterable[ServerSpec], progress: InstallProgress | None = None
) -> list[installers.InstallResult]:
    """Install each server into ipylsp's data dir, in turn (blocking: minutes for npm)."""
    data = locate.data_dir(settings)
    results = []
    for spec in specs:

        def relay(line: str, server_id: str = spec.id) -> None:
            if progress is not None:
                progress(server_id, line)

        results.append(installers.install(spec, data, progress=relay))
    locate.invalidate()
    return results
