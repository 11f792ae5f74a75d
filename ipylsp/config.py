"""`IPyLSP`: the one traitlets Configurable with every knob.

Read the same way by the IPython extension (`c.IPyLSP.x` in ipython_config.py, `%config
IPyLSP.x = y` at run time) and anything else that loads traitlets config; `to_settings()` turns
it into the core's plain `Settings`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from traitlets import Bool, Dict, Enum, Float, Int, List, TraitError, Unicode, validate
from traitlets.config import Configurable

from ipylsp.model.server_spec import InstallRecipe, ServerOverride, ServerSpec
from ipylsp.model.settings import WORKSPACE_MARKERS, InstallStrategy, Settings, SeverityFilter


class IPyLSP(Configurable):
    """Language-server diagnostics after every notebook cell that writes files."""

    enabled = Bool(True, help="Check files written by cells (also `%lsp on` / `%lsp off`).").tag(
        config=True
    )
    wait_budget = Float(
        10.0, min=0.1, help="Seconds a cell's check may wait for its servers."
    ).tag(config=True)
    severity = Enum(
        ["error", "warning", "all"], "error", help="Lowest severity shown (errors by default)."
    ).tag(config=True)
    max_per_file = Int(20, min=1, help="Problems shown per file.").tag(config=True)
    max_per_report = Int(50, min=1, help="Problems shown per cell.").tag(config=True)
    max_report_chars = Int(
        6000, min=0, help="Characters of a cell's text/plain report, on top of the caps (the cut "
        "is announced; the rest on `%lsp pending`). 0: no limit."
    ).tag(config=True)
    max_answer_chars = Int(
        4000, min=0, help="Characters of one agent tool answer (`ipylsp.agent`); the rest is "
        "announced as `... N more`. 0: no limit."
    ).tag(config=True)
    check_cells = Bool(
        True, help="Check the code of each cell that runs (Python kernels), besides its writes."
    ).tag(config=True)
    cell_history = Int(
        200, min=0, help="Executed cells the cell document keeps (the oldest go first; the "
        "names they bound stay known from the kernel). 0: all."
    ).tag(config=True)
    max_files_per_check = Int(
        200, min=0, help="Files of one cell checked at once (existing ones first); the rest on "
        "`%lsp check`. 0: no limit."
    ).tag(config=True)
    show_clean = Bool(False, help="Print a one-line confirmation for clean writes.").tag(
        config=True
    )
    check_shell_writes = Bool(
        True, help="Also find files written by child processes (!cmd, %%bash, subprocess)."
    ).tag(config=True)
    language_servers = Dict(
        help='Servers per language: {"python": ["ty", "ruff"]}; "a|b" = first installed.'
    ).tag(config=True)
    servers = Dict(
        help='Per-server options: {"pyright": {"disabled": false, "command": [...], "env": {},'
        ' "settings": {}, "initialization_options": {}}}.'
    ).tag(config=True)
    custom_servers = Dict(
        help='Servers of your own: {"mylsp": {"command": [...], "languages": ["python"],'
        ' "root_markers": [...], "settings": {}}}.'
    ).tag(config=True)
    install_strategy = Enum(
        ["manual", "auto"], "manual", help="auto: install a missing server with a recipe on use."
    ).tag(config=True)
    workspace_markers = List(
        Unicode(),
        default_value=list(WORKSPACE_MARKERS),
        help="Files that make a directory a workspace (besides a git worktree).",
    ).tag(config=True)
    semantic_after_syntax_error = Bool(
        False, help="Ask the servers even when a write introduced a syntax error."
    ).tag(config=True)
    trusted_roots = List(
        Unicode(),
        help="Directories whose projects servers may be rooted in although another user can "
        "write to them or above them (whoever that is, you vouch for them): a container's "
        "bind mount owned by the host's user, a WSL drive.",
    ).tag(config=True)
    jupyter_ai_tools = Bool(
        False, help="Serve the agent tools on jupyter-server-mcp's port (Jupyter AI's MCP "
        "server, 3001 by default). That port has NO authentication: any process on the machine, "
        "any other user of it, can call the tools and read the workspace's source. Read from the "
        "Jupyter server's configuration; ipylsp's own /ipylsp/mcp needs the Jupyter token.",
    ).tag(config=True)
    idle_timeout = Float(600.0, min=0, help="Seconds before an unused server is stopped.").tag(
        config=True
    )
    max_open_documents = Int(50, min=1, help="Documents kept open per server.").tag(config=True)
    max_file_mb = Float(
        8.0, min=0, help="The largest file checked, in MB: a larger one is not checked (said in "
        "one line), and a cell's write watcher does not read its text before. 0: no limit."
    ).tag(config=True)
    data_dir = Unicode("", help="Where servers are installed (default: the user data dir).").tag(
        config=True
    )

    store = Bool(
        True, help="Keep servers' answers in a SQLite store: no baseline round trip after a "
        "restart, cached answers (marked) while a server is down. `ipylsp cache info|clear`."
    ).tag(config=True)
    store_path = Unicode(
        "", help="The store's file (default: $IPYLSP_STORE, else <data_dir>/store.v2.sqlite3)."
    ).tag(config=True)
    store_max_mb = Float(
        64.0, min=0, help="The store's size cap in MB (least recently used answers go). 0: none."
    ).tag(config=True)

    @validate("language_servers")
    def _check_language_servers(self, proposal: dict[str, Any]) -> dict[str, Any]:
        # A bare string would be read one character per server id ("ty" -> "t", "y"): every
        # id unknown, the language silently unchecked.
        value: dict[str, Any] = proposal["value"]
        for language, servers in value.items():
            if not isinstance(servers, (list, tuple)) or not all(
                isinstance(s, str) and s for s in servers
            ):
                raise ValueError(
                    f"IPyLSP.language_servers[{language!r}] must be a list of server ids,"
                    f' e.g. ["ty", "ruff"], not {servers!r}'
                )
        return value

    @validate("servers")
    def _check_servers(self, proposal: dict[str, Any]) -> dict[str, Any]:
        value: dict[str, Any] = proposal["value"]
        for server_id, options in value.items():
            if not isinstance(options, dict):
                raise ValueError(f"IPyLSP.servers[{server_id!r}] must be a dict")
            ServerOverride.from_mapping(options)
        return value

    @validate("custom_servers")
    def _check_custom(self, proposal: dict[str, Any]) -> dict[str, Any]:
        value: dict[str, Any] = proposal["value"]
        for server_id, options in value.items():
            custom_spec(server_id, options)
        return value

    def to_settings(self) -> Settings:
        language_servers = {
            str(language): tuple(str(s) for s in servers)
            for language, servers in self.language_servers.items()
        }
        return Settings(
            wait_budget=float(self.wait_budget),
            severity=cast(SeverityFilter, self.severity),
            max_per_file=int(self.max_per_file),
            max_per_report=int(self.max_per_report),
            max_report_chars=int(self.max_report_chars),
            max_answer_chars=int(self.max_answer_chars),
            cell_history=int(self.cell_history),
            max_files_per_check=int(self.max_files_per_check),
            language_servers=language_servers or Settings().language_servers,
            servers={k: ServerOverride.from_mapping(v) for k, v in self.servers.items()},
            extra_specs=tuple(custom_spec(k, v) for k, v in self.custom_servers.items()),
            install_strategy=cast(InstallStrategy, self.install_strategy),
            semantic_after_syntax_error=bool(self.semantic_after_syntax_error),
            idle_timeout=float(self.idle_timeout),
            max_open_documents=int(self.max_open_documents),
            max_file_mb=float(self.max_file_mb),
            data_dir=Path(self.data_dir).expanduser() if self.data_dir else None,
            workspace_markers=tuple(str(m) for m in self.workspace_markers),
            trusted_roots=tuple(Path(str(p)).expanduser().resolve() for p in self.trusted_roots),
            store=bool(self.store),
            store_path=Path(self.store_path).expanduser() if self.store_path else None,
            store_max_mb=float(self.store_max_mb),
        )


def custom_spec(server_id: str, options: Any) -> ServerSpec:
    """A user's own server row; the command comes only from the user's configuration."""
    if not isinstance(options, dict):
        raise ValueError(f"IPyLSP.custom_servers[{server_id!r}] must be a dict")
    command = options.get("command")
    if not isinstance(command, (list, tuple)) or not command:
        raise ValueError(f"custom server {server_id!r}: 'command' must be a non-empty list")
    languages = options.get("languages")
    if not isinstance(languages, (list, tuple)) or not languages:
        raise ValueError(f"custom server {server_id!r}: 'languages' must be a non-empty list")
    return ServerSpec(
        id=server_id,
        name=str(options.get("name", server_id)),
        languages=tuple(str(x) for x in languages),
        command=tuple(str(x) for x in command),
        install=InstallRecipe("path", hint=str(options.get("install_hint", ""))),
        root_markers=tuple(str(x) for x in options.get("root_markers", ())),
        settings=dict(options.get("settings") or {}),
        initialization_options=options.get("initialization_options"),
        env={str(k): str(v) for k, v in (options.get("env") or {}).items()},
    )


CONFIG_NAME = "ipylsp_config"


def config_files() -> list[Path]:
    """`ipylsp_config.py`/`.json` in Jupyter's config dirs, lowest precedence first."""
    try:
        from jupyter_core.paths import jupyter_config_path

        dirs = [Path(d) for d in jupyter_config_path()]
    except ImportError:
        dirs = [Path.home() / ".jupyter"]
    found = []
    for directory in reversed(dirs):  # jupyter_config_path lists the most specific first
        for suffix in (".json", ".py"):
            candidate = directory / f"{CONFIG_NAME}{suffix}"
            if candidate.is_file():
                found.append(candidate)
    return found


def load_settings(extra: Path | None = None) -> Settings:
    """Settings for processes without an IPython profile (the CLI): the `IPyLSP` section of
    the Jupyter config dirs' `ipylsp_config.py`/`.json`, then of `extra`."""
    from traitlets.config import Config
    from traitlets.config.loader import JSONFileConfigLoader, PyFileConfigLoader

    merged = Config()
    for path in [*config_files(), *([extra] if extra is not None else [])]:
        if not path.is_file():
            raise ValueError(f"no such config file: {path}")
        loader_class = JSONFileConfigLoader if path.suffix == ".json" else PyFileConfigLoader
        loader = loader_class(path.name, path=str(path.parent))
        merged.merge(loader.load_config())
    try:
        return IPyLSP(config=merged).to_settings()
    except TraitError as exc:
        raise ValueError(str(exc)) from None

