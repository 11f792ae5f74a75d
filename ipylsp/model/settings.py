"""Plain settings for the core (service, lsp, analysis).

The adapters read the traitlets `IPyLSP` configurable (or CLI flags) and build one of these, so
the core never imports traitlets or IPython and every surface reads the same knobs the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ipylsp.model.server_spec import ServerOverride, ServerSpec

SeverityFilter = Literal["error", "warning", "all"]
MB = 1024 * 1024
"""The megabyte of the size knobs (`store_max_mb`, `max_file_mb`)."""
InstallStrategy = Literal["manual", "auto"]

DEFAULT_LANGUAGE_SERVERS: Mapping[str, tuple[str, ...]] = {
    # One entry per role; "a|b|c" means: the first of these that is installed. ty + ruff is
    # the embedded default the README names (`pip install 'ipylsp[python]'`, no node); the
    # pyright family serves when it is all a user installed. A missing role suggests ty first.
    "python": ("ty|basedpyright|pyright", "ruff"),
}

WORKSPACE_MARKERS: tuple[str, ...] = (
    ".git",
    ".hg",
    ".jj",
    ".svn",
    "pyproject.toml",
    "setup.py",
    "setup.cfg",
    "requirements.txt",
    "Pipfile",
    "ty.toml",
    "pyrightconfig.json",
    "package.json",
    "tsconfig.json",
    "jsconfig.json",
    "deno.json",
    "Cargo.toml",
    "go.mod",
    "go.work",
    "CMakeLists.txt",
    "compile_commands.json",
    "meson.build",
    "Makefile",
    "pom.xml",
    "build.gradle",
    "build.gradle.kts",
    "settings.gradle",
    "settings.gradle.kts",
    "mix.exs",
    "composer.json",
    "Gemfile",
    "build.zig",
    "dune-project",
    "stack.yaml",
    "cabal.project",
    "flake.nix",
    ".ipylsp",
)
"""What makes a directory a project (`roots.workspace_gate`) when it is not in a git
worktree; `Settings.workspace_markers` by default. Here, at the bottom, so settings need not
import `lsp`."""


@dataclass(frozen=True, slots=True)
class Settings:
    """Every knob of the core, with the defaults documented in the README."""

    wait_budget: float = 10.0
    """Seconds one check may wait for all its servers (spawn + initialize + diagnostics)."""
    initialize_timeout: float = 60.0
    """Seconds a server may take to answer initialize (in the background) before it is broken."""
    request_timeout: float = 10.0
    """Seconds a single request may take before it is cancelled."""
    shutdown_grace: float = 2.0
    """Seconds a server gets to answer `shutdown`; one that answers then gets 0.4 s to exit
    (`client.EXIT_GRACE`), one that does not is killed at once (tree and helpers)."""
    idle_timeout: float = 600.0
    """Seconds without use after which a server is stopped (0 disables the reaper)."""
    max_open_documents: int = 50
    """Documents kept open per server; the least recently used are closed beyond this."""
    max_message_bytes: int = 64 * 1024 * 1024
    """Largest message body accepted from a server."""
    max_restarts: int = 3
    """Crash restarts (with backoff) before a server is marked broken until `restart`."""
    max_timeouts: int = 2
    """Consecutive timed-out checks before a server is marked broken until `restart`."""
    severity: SeverityFilter = "error"
    max_files_per_check: int = 200
    """Files of one batch (a cell's writes) put to the servers; the rest waits for
    `Service.check_rest`. 0 means no limit."""
    max_per_file: int = 20
    max_per_report: int = 50
    max_report_chars: int = 6000
    """Characters of a report's text/plain, on top of the caps (agent tools drop or stub
    bigger outputs: jupyter-ai-tools stubs a cell's outputs over 10,000 JSON characters); the
    cut is announced. 0 means no limit."""
    max_answer_chars: int = 4000
    """Characters of one agent tool answer (`ipylsp.agent`); what does not fit ends with
    `... N more`. 0 means no limit."""
    cell_history: int = 200
    """Executed cells the notebook's cell document keeps (the oldest go first); 0: all."""
    language_servers: Mapping[str, tuple[str, ...]] = field(
        default_factory=lambda: dict(DEFAULT_LANGUAGE_SERVERS)
    )
    servers: Mapping[str, ServerOverride] = field(default_factory=dict)
    extra_specs: tuple[ServerSpec, ...] = ()
    """Servers defined by the user's configuration, beside (or replacing, by id) the registry's."""
    semantic_after_syntax_error: bool = False
    """Ask the language servers even when the in-process syntax tier found an error."""
    install_strategy: InstallStrategy = "manual"
    data_dir: Path | None = None
    """Where ipylsp installs servers; None means the platformdirs user data dir."""
    store: bool = True
    """Keep servers' answers in a SQLite file (`store_path`): baselines after a restart, and
    cached answers while a server is missing, broken or starting."""
    store_path: Path | None = None
    """The store's file; None: `$IPYLSP_STORE`, else `<data_dir>/store.v2.sqlite3`."""
    store_max_mb: float = 64.0
    """The store's size cap; over it the least recently used answers go. 0: no cap."""
    max_file_mb: float = 8.0
    """The largest file ipylsp reads as a document, on every path that reads one: the check
    (a larger file is not checked, and the report says so in one line) and the write
    watcher (a larger file's text before the cell is not read). 0: no limit."""
    workspace_markers: tuple[str, ...] = WORKSPACE_MARKERS
    """Files that make a directory a workspace besides a git worktree: paths in reports are
    shown relative to it, and servers are never rooted above it."""
    directory: Path | None = None
    """The directory the user works in, set by each surface (the kernel's working directory,
    the Jupyter server's root, the agent's root): a file below it that is in no project is
    still in a workspace, rooted there, with the servers' own file discovery bounded (a home
    directory is not indexed). None: only projects are workspaces."""
    trusted_roots: tuple[Path, ...] = ()
    """Directories whose projects servers may be rooted in although another user can write
    to them or above them (a container's bind mount owned by the host's user, a WSL drive):
    the user vouches for whoever else can write there."""

    @property
    def max_file_bytes(self) -> int | None:
        """`max_file_mb` in bytes; None: no limit."""
        return int(self.max_file_mb * MB) if self.max_file_mb > 0 else None
