"""What a language server is, as data: the registry is a list of these rows.

Adding a server is adding a `ServerSpec` to `servers/catalogue.py`. Nothing here runs anything.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

InstallKind = Literal["pip", "npm", "apt", "path"]
Activation = Literal["default", "manual"]
ExcludeRules = Literal["ruff", "ty", "pyrefly"]


@dataclass(frozen=True, slots=True)
class InstallRecipe:
    """How ipylsp can get a server.

    - ``pip``: packages installed into ipylsp's own environment under its data dir;
    - ``npm``: packages installed with ``npm install --prefix <data dir>/npm``;
    - ``apt``/``path``: ipylsp does not install these; ``hint`` tells the user how.
    """

    kind: InstallKind
    packages: tuple[str, ...] = ()
    hint: str = ""
    needs: tuple[str, ...] = ()  # executables the install needs (e.g. "node", "npm")


@dataclass(frozen=True, slots=True)
class Excludes:
    """The files a server leaves unchecked by its own rules even when it is given one: it
    answers them with nothing, which would read as clean (`servers/exclusions.py`)."""

    dirs: tuple[str, ...]
    """Names of the directories whose files it skips by default: the installed version's
    defaults, each one verified with the server (tests/test_excluded.py)."""
    rules: ExcludeRules
    """Whose rules read the user's own patterns in its configuration files at its root, and
    whether they replace these defaults (`servers/exclusions.py`)."""
    above_root: bool = False
    """The names count above its root too (pyrefly matches absolute paths): a project in a
    directory named `venv` is skipped whole."""


@dataclass(frozen=True, slots=True)
class ServerSpec:
    """One language server: what it serves, how to start it, how to make it report."""

    id: str
    name: str
    languages: tuple[str, ...]
    command: tuple[str, ...]
    install: InstallRecipe
    root_markers: tuple[str, ...] = ()
    config_files: tuple[str, ...] = ()
    """Files at its root that change its answers (a stored answer is a baseline only while
    they say the same): `name`, or `name:section` for only a TOML table (`pyproject.toml:tool.ty`)
    or INI sections (`setup.cfg:mypy`: `[mypy]` and `[mypy-*]`)."""
    settings: Mapping[str, Any] = field(default_factory=dict)
    initialization_options: Mapping[str, Any] | None = None
    plain: Mapping[str, Any] = field(default_factory=dict)
    """Merged into `initialization_options` and `settings` (keys "init" and "settings") when
    the root is a plain directory, in no project (a notebook in the home directory): the
    server discovers no files of its own there and checks only the files it is given. With
    `"root": "directory"`, below that directory it is rooted at each file's own directory
    (`Resolver.server_root`): its bound there hides even the files it is given (ty)."""
    env: Mapping[str, str] = field(default_factory=dict)
    activation: Activation = "default"
    description: str = ""
    excludes: Excludes | None = None
    """The files it will not check, by its own rules: a check says so instead of asking it."""
    versioned_push: bool = False
    """Every push about an open document names its version; a push without one is about the
    file on disk (gopls: its first diagnosis of the workspace, made before the document was
    opened), never the answer for a version. A server that never names one is answered by its
    latest push."""

    def with_overrides(self, override: ServerOverride | None) -> ServerSpec:
        if override is None:
            return self
        return replace(
            self,
            command=override.command or self.command,
            env={**self.env, **override.env},
            settings=override.settings if override.settings is not None else self.settings,
            initialization_options=(
                override.initialization_options
                if override.initialization_options is not None
                else self.initialization_options
            ),
        )


@dataclass(frozen=True, slots=True)
class ServerOverride:
    """A user's per-server configuration (``IPyLSP.servers = {"pyright": {...}}``)."""

    disabled: bool = False
    command: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    settings: Mapping[str, Any] | None = None
    initialization_options: Mapping[str, Any] | None = None

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any]) -> ServerOverride:
        unknown = set(raw) - {"disabled", "command", "env", "settings", "initialization_options"}
        if unknown:
            raise ValueError(f"unknown server option(s): {', '.join(sorted(unknown))}")
        command = raw.get("command") or ()
        if isinstance(command, str):
            raise ValueError("'command' must be a list of strings, not a shell string")
        return cls(
            disabled=bool(raw.get("disabled", False)),
            command=tuple(str(part) for part in command),
            env={str(k): str(v) for k, v in (raw.get("env") or {}).items()},
            settings=raw.get("settings"),
            initialization_options=raw.get("initialization_options"),
        )


def custom_spec(server_id: str, options: Any) -> ServerSpec:
    """A user's own server row (``IPyLSP.custom_servers = {"mylsp": {...}}``); the command
    comes only from the user's configuration."""
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
