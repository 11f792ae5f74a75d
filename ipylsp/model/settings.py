"""Every knob of ipylsp, declared once: `Settings`, plain values every layer reads.

A field with `Knob` metadata is a knob users set (`IPyLSP.<name>`: `%config`, `c.IPyLSP.<name>`
in a config file, the docs' knob table): `config.py` makes its trait from the field's type,
default and `Knob`, and `IPyLSP.to_settings` makes one of these, so the core never imports
traitlets or IPython and every surface reads the same knobs the same way. The fields without one
are the core's own (timeouts, what a server may send, the directory a surface sets). Knobs only
the IPython extension reads (`enabled`, `check_cells`, `show_clean`, `check_shell_writes`) and
the Jupyter server's `jupyter_ai_tools` are fields too: one place declares every knob, and the
rest of the core ignores them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import Field, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal

from ipylsp.model.server_spec import ServerOverride, ServerSpec, custom_spec

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


KNOB = "ipylsp.knob"
"""The key of a knob's `Knob` in its field's metadata."""


@dataclass(frozen=True, slots=True)
class Knob:
    """What makes a field of `Settings` a knob: `IPyLSP.<name>`, its trait made from the
    field's type (bool, int, float, a `Literal`'s choices, a path or none: a string, "" for
    none; a tuple of strings or of paths: a list), its default and this."""

    help: str
    """What `%config IPyLSP` says of it."""
    minimum: float | None = None
    """The smallest number accepted; None: any."""
    name: str = ""
    """The knob's name where it is not the field's."""
    parse: Callable[[dict[str, Any]], Any] | None = None
    """For a field whose values are not plain (servers and their options): the knob is then a
    dict, `{}` by default, and this makes the field's value of it; a `ValueError` says what is
    wrong, as the value is set."""


def knob(
    help: str,
    *,
    minimum: float | None = None,
    name: str = "",
    parse: Callable[[dict[str, Any]], Any] | None = None,
) -> dict[str, Knob]:
    """The metadata of a field that is a knob."""
    return {KNOB: Knob(help, minimum, name, parse)}


def knobs() -> dict[str, tuple[Field[Any], Knob]]:
    """Every knob by its name, in the order `Settings` declares them, with its field."""
    found: dict[str, tuple[Field[Any], Knob]] = {}
    for f in fields(Settings):
        declared = f.metadata.get(KNOB)
        if isinstance(declared, Knob):
            found[declared.name or f.name] = (f, declared)
    return found


def _language_servers(value: dict[str, Any]) -> Mapping[str, tuple[str, ...]]:
    # A bare string would be read one character per server id ("ty" -> "t", "y"): every id
    # unknown, the language silently unchecked.
    for language, servers in value.items():
        if not isinstance(servers, (list, tuple)) or not all(
            isinstance(s, str) and s for s in servers
        ):
            raise ValueError(
                f"IPyLSP.language_servers[{language!r}] must be a list of server ids,"
                f' e.g. ["ty", "ruff"], not {servers!r}'
            )
    chosen = {str(language): tuple(servers) for language, servers in value.items()}
    return chosen or dict(DEFAULT_LANGUAGE_SERVERS)


def _servers(value: dict[str, Any]) -> Mapping[str, ServerOverride]:
    for server_id, options in value.items():
        if not isinstance(options, dict):
            raise ValueError(f"IPyLSP.servers[{server_id!r}] must be a dict")
    return {k: ServerOverride.from_mapping(v) for k, v in value.items()}


def _custom_servers(value: dict[str, Any]) -> tuple[ServerSpec, ...]:
    return tuple(custom_spec(k, v) for k, v in value.items())


@dataclass(frozen=True, slots=True)
class Settings:
    """Every knob (with a `Knob`: what users set) and the core's own fields."""

    enabled: bool = field(default=True, metadata=knob(
        "Check files written by cells (also `%lsp on` / `%lsp off`)."))
    check_cells: bool = field(default=True, metadata=knob(
        "Check the code of each cell that runs (Python kernels), besides its writes."))
    show_clean: bool = field(default=False, metadata=knob(
        "Print a one-line confirmation for clean writes."))
    """Honoured by the notebook's reports only: the other surfaces say "clean" their own way."""
    check_shell_writes: bool = field(default=True, metadata=knob(
        "Also find files written by child processes (!cmd, %%bash, subprocess)."))
    jupyter_ai_tools: bool = field(default=False, metadata=knob(
        "Serve the agent tools on jupyter-server-mcp's port (Jupyter AI's MCP server, 3001 by "
        "default). That port has NO authentication: any process on the machine, any other user "
        "of it, can call the tools and read the workspace's source. Read from the Jupyter "
        "server's configuration; ipylsp's own /ipylsp/mcp needs the Jupyter token."))
    wait_budget: float = field(default=10.0, metadata=knob(
        "Seconds a cell's check may wait for its servers.", minimum=0.1))
    """Seconds one check may wait for all its servers (spawn + initialize + diagnostics)."""
    initialize_timeout: float = 60.0
    """Seconds a server may take to answer initialize (in the background) before it is broken."""
    request_timeout: float = 10.0
    """Seconds a single request may take before it is cancelled."""
    shutdown_grace: float = 2.0
    """Seconds a server gets to answer `shutdown`; one that answers then gets 0.4 s to exit
    (`client.EXIT_GRACE`), one that does not is killed at once (tree and helpers)."""
    idle_timeout: float = field(default=600.0, metadata=knob(
        "Seconds before an unused server is stopped.", minimum=0))
    """0 disables the reaper."""
    max_open_documents: int = field(default=50, metadata=knob(
        "Documents kept open per server.", minimum=1))
    """The least recently used are closed beyond this."""
    max_message_bytes: int = 64 * 1024 * 1024
    """Largest message body accepted from a server."""
    max_restarts: int = 3
    """Crash restarts (with backoff) before a server is marked broken until `restart`."""
    max_timeouts: int = 2
    """Consecutive timed-out checks before a server is marked broken until `restart`."""
    severity: SeverityFilter = field(default="error", metadata=knob(
        "Lowest severity shown (errors by default)."))
    max_files_per_check: int = field(default=200, metadata=knob(
        "Files of one cell checked at once (existing ones first); the rest on `%lsp check`. "
        "0: no limit.", minimum=0))
    """The rest of a batch waits for `Service.check_rest`."""
    max_per_file: int = field(default=20, metadata=knob("Problems shown per file.", minimum=1))
    max_per_report: int = field(default=50, metadata=knob("Problems shown per cell.", minimum=1))
    max_report_chars: int = field(default=6000, metadata=knob(
        "Characters of a cell's text/plain report, on top of the caps (the cut is announced; "
        "the rest on `%lsp pending`). 0: no limit.", minimum=0))
    """Agent tools drop or stub bigger outputs: jupyter-ai-tools stubs a cell's outputs over
    10,000 JSON characters."""
    max_answer_chars: int = field(default=4000, metadata=knob(
        "Characters of one agent tool answer (`ipylsp.agent`); the rest is announced as "
        "`... N more`. 0: no limit.", minimum=0))
    cell_history: int = field(default=200, metadata=knob(
        "Executed cells the cell document keeps (the oldest go first; the names they bound "
        "stay known from the kernel). 0: all.", minimum=0))
    language_servers: Mapping[str, tuple[str, ...]] = field(
        default_factory=lambda: dict(DEFAULT_LANGUAGE_SERVERS), metadata=knob(
            'Servers per language: {"python": ["ty", "ruff"]}; "a|b" = first installed.',
            parse=_language_servers))
    """`{}` configured: these defaults."""
    servers: Mapping[str, ServerOverride] = field(default_factory=dict, metadata=knob(
        'Per-server options: {"pyright": {"disabled": false, "command": [...], "env": {}, '
        '"settings": {}, "initialization_options": {}}}.', parse=_servers))
    extra_specs: tuple[ServerSpec, ...] = field(default=(), metadata=knob(
        'Servers of your own: {"mylsp": {"command": [...], "languages": ["python"], '
        '"root_markers": [...], "settings": {}}}.', name="custom_servers",
        parse=_custom_servers))
    """Beside (or replacing, by id) the registry's."""
    semantic_after_syntax_error: bool = field(default=False, metadata=knob(
        "Ask the servers even when a write introduced a syntax error."))
    """Else the in-process syntax tier's error holds them back."""
    install_strategy: InstallStrategy = field(default="manual", metadata=knob(
        "auto: install a missing server with a recipe on use."))
    data_dir: Path | None = field(default=None, metadata=knob(
        "Where servers are installed (default: the user data dir)."))
    """None: the platformdirs user data dir."""
    store: bool = field(default=True, metadata=knob(
        "Keep servers' answers in a SQLite store: no baseline round trip after a restart, "
        "cached answers (marked) while a server is down. `ipylsp cache info|clear`."))
    """Cached answers stand in while a server is missing, broken or starting."""
    store_path: Path | None = field(default=None, metadata=knob(
        "The store's file (default: $IPYLSP_STORE, else <data_dir>/store.v2.sqlite3)."))
    store_max_mb: float = field(default=64.0, metadata=knob(
        "The store's size cap in MB (least recently used answers go). 0: none.", minimum=0))
    max_file_mb: float = field(default=8.0, metadata=knob(
        "The largest file checked, in MB: a larger one is not checked (said in one line), and "
        "a cell's write watcher does not read its text before. 0: no limit.", minimum=0))
    """On every path that reads a file as a document."""
    workspace_markers: tuple[str, ...] = field(default=WORKSPACE_MARKERS, metadata=knob(
        "Files that make a directory a workspace (besides a git worktree)."))
    """Paths in reports are shown relative to it, and servers are never rooted above it."""
    directory: Path | None = None
    """The directory the user works in, set by each surface (the kernel's working directory,
    the Jupyter server's root, the agent's root): a file below it that is in no project is
    still in a workspace, rooted there, with the servers' own file discovery bounded (a home
    directory is not indexed). None: only projects are workspaces."""
    trusted_roots: tuple[Path, ...] = field(default=(), metadata=knob(
        "Directories whose projects servers may be rooted in although another user can "
        "write to them or above them (whoever that is, you vouch for them): a container's "
        "bind mount owned by the host's user, a WSL drive."))
    """Resolved, as the roots they are compared with."""
    broker: bool = field(default=True, metadata=knob(
        "Serve `ipylsp check`, `ipylsp mcp`, kernels and the Jupyter server extension from "
        "your broker: one process that keeps language servers warm for all of them "
        "(docs/broker.md). False: each runs its own servers, as each does when the broker "
        "cannot be had."))
    broker_idle: float = field(default=900.0, metadata=knob(
        "Seconds the broker waits with no client and no call before it ends (its servers "
        "with it).", minimum=1))

    @property
    def max_file_bytes(self) -> int | None:
        """`max_file_mb` in bytes; None: no limit."""
        return int(self.max_file_mb * MB) if self.max_file_mb > 0 else None


CLIENT_KNOBS = frozenset({
    "directory", "enabled", "check_cells", "show_clean", "check_shell_writes",
    "jupyter_ai_tools", "severity", "max_per_file", "max_per_report", "max_report_chars",
    "max_answer_chars", "cell_history", "broker", "broker_idle",
})
"""The settings each client of a broker has for itself: where it works, what it is shown,
what its own side does. The others decide how servers run and what they answer: clients
that share a broker's servers share those (`for_servers`)."""


def for_servers(settings: Settings) -> Settings:
    """`settings` with every client's own knob (`CLIENT_KNOBS`) at its default: what the
    servers of a broker's context are run with, equal for every client that shares them."""
    defaults = Settings()
    return replace(settings, **{name: getattr(defaults, name) for name in CLIENT_KNOBS})
