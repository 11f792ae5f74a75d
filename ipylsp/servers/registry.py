"""The registry: every language server ipylsp knows, as data rows.

`languages.py` maps file names to LSP language ids; a server serves a file when the file's
language id is one of the spec's `languages`. Which of the servers for a language run is decided
by `servers_for`: the roles in ``Settings.language_servers`` where the language has an entry
(Python: a type checker and a linter), else every row with ``activation="default"``.

The rows themselves are data in `catalogue.py`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path

from ipylsp.model.server_spec import ServerSpec
from ipylsp.model.settings import DEFAULT_LANGUAGE_SERVERS, Settings
from ipylsp.servers.catalogue import SPECS
from ipylsp.servers.languages import language_id

_BY_ID = {spec.id: spec for spec in SPECS}


def get(server_id: str) -> ServerSpec | None:
    return _BY_ID.get(server_id)


def all_specs() -> Iterable[ServerSpec]:
    return SPECS


def ids() -> tuple[str, ...]:
    return tuple(_BY_ID)


def specs_for_language(language: str) -> tuple[ServerSpec, ...]:
    """Every registered server that serves ``language``, in registry order."""
    return tuple(spec for spec in SPECS if language in spec.languages)


EMBEDDED_DEFAULT = ("ty", "ruff")
"""The servers `pip install 'ipylsp[python]'` brings (pyproject's `python` extra): the default
docs/servers.md names, no node needed."""


def install_hint(spec: ServerSpec) -> str:
    """One line telling a user how to get ``spec``. For the embedded default, the extra that
    brings both first (a missing default should not send anyone to a node wheel)."""
    own = _BY_ID.get(spec.id)
    if spec.id in EMBEDDED_DEFAULT and own is not None and spec.install == own.install:
        both = " ".join(EMBEDDED_DEFAULT)
        return (
            f"pip install 'ipylsp[python]'  # {' + '.join(EMBEDDED_DEFAULT)}, the default "
            f"(or: ipylsp install {both})"
        )
    recipe = spec.install
    if recipe.kind in ("pip", "npm"):
        extra = f" ({recipe.hint})" if recipe.hint else ""
        return (
            f"ipylsp install {spec.id}  # {recipe.kind} install "
            f"{' '.join(recipe.packages)} into ipylsp's data dir{extra}"
        )
    return recipe.hint or f"put {spec.command[0]} on PATH"


def _alternatives(role: str) -> list[str]:
    return [part.strip() for part in role.split("|") if part.strip()]


def unknown_roles(language: str, settings: Settings) -> list[str]:
    """Roles configured for `language` none of whose ids names a server (a typo in
    `language_servers`): callers report them rather than checking nothing in silence."""
    known = {*_BY_ID, *(spec.id for spec in settings.extra_specs)}
    roles = settings.language_servers.get(language, ())
    return [role for role in roles if not any(i in known for i in _alternatives(role))]


def servers_for(
    path: str | os.PathLike[str],
    settings: Settings,
    is_installed: Callable[[ServerSpec], bool],
) -> list[ServerSpec]:
    """The servers that should check ``path``, user overrides applied.

    - A language with an entry in ``settings.language_servers`` (else in
      ``DEFAULT_LANGUAGE_SERVERS``) gets one server per role: the first installed alternative of
      ``"a|b|c"``, else the first alternative even when it is not installed, so the caller can
      say "a is not installed" with its hint. An empty entry means no servers for the language.
    - Any other language gets every registered server with ``activation="default"`` for it.
    - ``settings.servers[id].disabled`` removes a server (from its role's alternatives too);
      the other fields of ``settings.servers[id]`` are applied with ``ServerSpec.with_overrides``.

    ``is_installed`` sees specs with their overrides applied (an override may change the command).
    Unknown ids in ``language_servers`` are skipped. A server appears at most once.
    """
    language = language_id(path if isinstance(path, Path) else os.fspath(path))
    if language is None:
        return []

    extra = {spec.id: spec for spec in settings.extra_specs}

    def enabled(server_id: str) -> ServerSpec | None:
        spec = extra.get(server_id) or _BY_ID.get(server_id)
        if spec is None:
            return None
        override = settings.servers.get(server_id)
        if override is not None and override.disabled:
            return None
        return spec.with_overrides(override)

    chosen: dict[str, ServerSpec] = {}
    roles = settings.language_servers.get(language)
    if roles is None:
        # A mapping that leaves out a language with default roles keeps those roles, rather than
        # starting every registered server of it (pyright and basedpyright and ty at once).
        roles = DEFAULT_LANGUAGE_SERVERS.get(language)
    if roles is not None:
        for role in roles:
            candidates = [s for s in map(enabled, _alternatives(role)) if s is not None]
            if not candidates:
                continue
            pick = next((s for s in candidates if is_installed(s)), candidates[0])
            chosen.setdefault(pick.id, pick)
    else:
        for spec in (*SPECS, *settings.extra_specs):
            if spec.activation == "default" and language in spec.languages:
                resolved = enabled(spec.id)
                if resolved is not None:
                    chosen.setdefault(resolved.id, resolved)
    return list(chosen.values())
