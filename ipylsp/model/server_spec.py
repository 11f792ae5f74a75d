"""What a language server is, as data: the registry is a list of these rows.

Adding a server is adding a `ServerSpec` to `servers/catalogue.py`. Nothing here runs anything.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

InstallKind = Literal["pip", "npm", "apt", "path"]
Activation = Literal["default", "manual"]


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
    server discovers no files of its own there and checks only the files it is given."""
    env: Mapping[str, str] = field(default_factory=dict)
    activation: Activation = "default"
    description: str = ""

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
