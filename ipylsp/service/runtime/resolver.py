"""Which servers serve a path, and each one's pool slot or why none can: one resolver for
checks and features alike.

A path's workspace (`file_reports.display_root`: a project, else the directory the user works
in) is where its report path is shown relative to and the ceiling of its servers' roots; in
no project, its servers start with their own file discovery bounded (`ServerSpec.plain`), and
a server that checks no file its bound hides, even one it is given (ty), is rooted at the
file's own directory below that directory (`server_root`).
A missing server becomes an `Unknown` (with the automatic install's state when
`install_strategy` is "auto"), in full the first time for a (server, root, reason, hint) and
as a short line after that; so does, for a check, a file a server's own rules leave unchecked
(`excluded`: ruff under `dist/`, a user's `extend-exclude`; `servers/exclusions.py`), which it
would answer with nothing; its rules are read only at a root where the server may start (not
`refused`: no other user can plant a file there). `BatchLookups` looks each of these up
once per batch (the lookups stat directories; 1,000 files in a few directories need a few).
Executables are found, and the Python environment handed over, in the service's client
`Environment` (its interpreter's directory and PATH; its interpreter and prefix).
"""

from __future__ import annotations

import concurrent.futures
import logging
import os
from dataclasses import dataclass, replace
from pathlib import Path

from ipylsp import private
from ipylsp.lsp.client import ClientError, LanguageClient
from ipylsp.model.diagnostics import Unknown, UnknownReason
from ipylsp.model.environment import Environment
from ipylsp.model.server_spec import ServerSpec
from ipylsp.model.settings import Settings
from ipylsp.servers import exclusions, executables, installers, python_env, registry, roots
from ipylsp.service.admin.autoinstall import AutoInstaller
from ipylsp.service.check.file_reports import display_root
from ipylsp.service.runtime.pool import ClientPool, Slot

log = logging.getLogger(__name__)


class Resolver:
    def __init__(
        self, settings: Settings, pool: ClientPool, environment: Environment | None = None
    ) -> None:
        """`environment`: the client's (None: this process's)."""
        self.settings = settings
        self.pool = pool
        self.environment = environment
        self._auto = AutoInstaller()

    def sharing(self, settings: Settings) -> Resolver:
        """A resolver for another client of the same pool whose `Settings.directory` is its
        own (`settings`; everything else is this one's): its paths' workspaces, hence their
        servers' roots, are its own, and the servers at those roots, and the automatic
        installs, are shared."""
        view = Resolver(settings, self.pool, self.environment)
        view._auto = self._auto
        return view

    @property
    def installs(self) -> dict[str, concurrent.futures.Future[installers.InstallResult]]:
        """Automatic installs by server id (see `autoinstall`)."""
        return self._auto.installs

    def shown_root(self, path: Path) -> Path | None:
        """The workspace `path` is shown relative to, and servers are rooted within."""
        return display_root(path, self.settings)

    def installed(self, spec: ServerSpec) -> bool:
        return executables.is_installed(
            spec, executables.data_dir(self.settings), self.environment
        )

    def servers(self, path: Path) -> list[ServerSpec]:
        """The installed servers configured for `path`'s language, in order."""
        return registry.servers_for(path, self.settings, self.installed)

    def slot(self, spec: ServerSpec, path: Path, gate: Path | None = None) -> Slot | Unknown:
        """The pool slot serving `path` for `spec` (Python env handed over), or why none can.
        `gate`: the path's `shown_root`, when the caller knows it already."""
        admitted = self.admit(spec, path, gate)
        return self.add(admitted) if isinstance(admitted, NewSlot) else admitted

    def admit(
        self, spec: ServerSpec, path: Path, gate: Path | None = None
    ) -> Slot | NewSlot | Unknown:
        """What `slot` decides before it adds anything to the pool: the slot serving `path`
        for `spec`, a `NewSlot` the pool does not hold yet (`add` adds it), or why none can
        (not installed, refused)."""
        data = executables.data_dir(self.settings)
        resolution = executables.resolve(spec, data, self.environment)
        gate = gate if gate is not None else self.shown_root(path)
        if resolution.command is None:
            detail = resolution.reason or f"{spec.command[0]} not found"
            if self.settings.install_strategy == "auto" and installers.installable(spec):
                detail = self._auto.status(spec, data)
            return self.unknown(
                spec, gate or path.parent, UnknownReason.NOT_INSTALLED, detail,
                registry.install_hint(spec),
            )
        root = self.server_root(spec, path, gate)
        found = self.pool.find(spec.id, root, gate)
        running = found is not None and found.client is not None and found.client.alive
        if found is not None and running:
            return found  # kept until stopped; it read its configuration when it started
        refused = _refusal(spec, root, gate, self.settings.trusted_roots)  # before each start
        if refused is not None:
            return self.unknown(spec, root, UnknownReason.REFUSED, refused, REFUSED_HINT)
        if found is not None and (
            found.command == resolution.command  # the same server as configured now
            or found.starting is not None
        ):  # else a stopped server whose command was configured anew: the new one starts
            return found
        below: Path | None = None
        if gate is not None and self.plain(path):
            spec = plain_spec(spec)  # the directory the user works in: no discovery of its own
            if root != gate:
                spec = python_env.first_party_root(spec, gate)
                below = gate
        client = self.environment
        served = python_env.for_server(
            spec, root, ceiling=gate,
            executable=None if client is None else client.executable,
            prefix=None if client is None else client.prefix,
        )
        return NewSlot(served, root, resolution.command, below, gate)

    def add(self, new: NewSlot) -> Slot:
        """`new`'s slot in the pool (its server starts when a check acquires it); the one the
        pool holds already when one was added for the same server, root and command since
        `new` was admitted (another directory of the batch with the same root)."""
        found = self.pool.find(new.spec.id, new.root, new.gate)
        if found is not None and found.command == new.command:
            return found
        slot = self.pool.add(new.spec, new.root, new.command, new.gate)
        if new.below is not None:  # one more directory's server below a plain directory
            self.pool.retire_below(new.spec.id, new.below, PLAIN_DIRECTORY_SERVERS, besides=slot)
        return slot

    def plain(self, path: Path) -> bool:
        """Whether `path`, in a workspace, is in no project: only below the directory the user
        works in (`roots.in_project`)."""
        return not roots.in_project(path, self.settings.workspace_markers)

    def server_root(self, spec: ServerSpec, path: Path, gate: Path | None) -> Path:
        """Where `spec` serves `path`: the nearest directory with one of its markers, never
        above `gate` (the path's workspace). Below a plain directory, a server whose bounded
        discovery also hides the files it is given (`ServerSpec.plain` "root": "directory":
        ty drops every file its `src.exclude` covers) is rooted at the file's own directory,
        where nothing hides it: one server per directory the user writes in."""
        directory = Path(os.path.dirname(os.path.abspath(path)))
        if (
            gate is not None
            and spec.plain.get("root") == "directory"
            and directory != gate
            and self.plain(path)
        ):
            return directory
        return roots.find_root(path, spec.root_markers, git_worktree=gate)

    def exclusion_rules(
        self, spec: ServerSpec, path: Path, gate: Path | None
    ) -> exclusions.Rules | None:
        """The files `spec` will not check where it serves `path` (its root's configuration
        read), or None when it checks every file it is given. `gate`: the path's
        `shown_root`. Call it only for a root `admit` lets a server start at: other users
        cannot write there. Whatever a user's configuration holds, this never raises: rules
        that cannot be read are None (the server is asked, and answers as it will)."""
        if spec.excludes is None:
            return None
        root = self.server_root(spec, path, gate)
        try:
            return exclusions.rules(spec, root)
        except Exception:  # a bug of ours on an odd configuration must not fail the check
            log.warning("cannot read %s's exclusions at %s", spec.id, root, exc_info=True)
            return None

    def excluded(
        self, spec: ServerSpec, path: Path, rules: exclusions.Rules | None
    ) -> Unknown | None:
        """Why `spec` would answer nothing for `path` by its own `rules`, with the fix; None
        when it checks it (or its rules fail on it: see `exclusion_rules`)."""
        if rules is None:
            return None
        try:
            found = rules.match(path)
        except Exception:  # as in `exclusion_rules`
            log.warning("cannot match %s against %s's exclusions", path, spec.id, exc_info=True)
            return None
        if found is None:
            return None
        return self.unknown(spec, rules.root, UnknownReason.EXCLUDED, found.why, found.fix)

    def running(self, path: Path) -> list[tuple[str, LanguageClient]]:
        """(server id, client) of the running servers that serve `path` (none are started)."""
        found = []
        gate = self.shown_root(path)
        for spec in self.servers(path):
            slot = self.pool.find(spec.id, self.server_root(spec, path, gate), gate)
            if slot is not None and slot.client is not None and slot.client.alive:
                found.append((spec.id, slot.client))
        return found

    def unknown_for(self, spec: ServerSpec, root: Path, exc: ClientError) -> Unknown:
        hint = ""
        if exc.reason is UnknownReason.BROKEN:
            hint = f"`%lsp restart {spec.id}` starts it again"
        return self.unknown(spec, root, exc.reason, exc.detail, hint)

    def unknown(
        self, spec: ServerSpec, root: Path, reason: UnknownReason, detail: str, hint: str = ""
    ) -> Unknown:
        """Why a server cannot answer, with its hint; `once` decides whether the hint is said."""
        return Unknown(spec.id, reason, detail, hint)


    def close(self) -> None:
        """Drop queued automatic installs (one already running finishes in its thread)."""
        self._auto.close()


@dataclass(frozen=True, slots=True)
class NewSlot:
    """A slot `Resolver.admit` allows and the pool does not hold yet: the server as it will be
    started (overrides and Python environment applied), its root and its command."""

    spec: ServerSpec
    root: Path
    command: tuple[str, ...]
    below: Path | None = None
    """The plain directory it serves a subdirectory of (`server_root`), if it does."""
    gate: Path | None = None
    """The workspace of the path it was admitted for (`pool.Key`)."""


PLAIN_DIRECTORY_SERVERS = 4
"""The most servers of one kind rooted below one plain directory (ty: one per directory the
user writes in, ~35 MB each); past it, the least recently used one idle goes."""

REFUSED_HINT = (
    "move the project below a directory only you can write to (or, if you vouch for whoever "
    "else can write there, add it to IPyLSP.trusted_roots)"
)


def _refusal(
    spec: ServerSpec, root: Path, gate: Path | None, trusted: tuple[Path, ...] = ()
) -> str | None:
    """Why no server may start at `root`, or None: another user can write to the root or a
    directory above it (servers read configuration there), or to the project's Python
    environment (pyright runs its interpreter). A directory ipylsp sealed is safe whatever
    is above it; one in `trusted` (`Settings.trusted_roots`) is vouched for by the user."""
    real = Path(os.path.realpath(root))
    if any(real == t or t in real.parents for t in trusted):
        return None
    if not private.is_sealed(root):
        exposed = private.other_writer(root)
        if exposed is not None:
            return (f"another user can write to {exposed}, where {spec.id} would read "
                    f"configuration they put there")
    env = python_env.project_env(root, ceiling=gate) if "python" in spec.languages else None
    if env is not None:
        exposed = private.other_writer(env.prefix) or private.other_writer(
            os.path.realpath(env.interpreter)
        )
        if exposed is not None:
            return f"another user can write to {exposed}, which holds the project's Python"
    return None


class BatchLookups:
    """What every file of a batch in the same directory or language shares, looked up once:
    its workspace, its servers, their slots and the files they will not check."""

    def __init__(self, resolver: Resolver) -> None:
        self._resolver = resolver
        self._roots: dict[Path, Path | None] = {}
        self._specs: dict[str, list[ServerSpec]] = {}
        self._slots: dict[tuple[str, Path], Slot | NewSlot | Unknown] = {}
        self._rules: dict[tuple[str, Path], exclusions.Rules | None] = {}

    def shown_root(self, path: Path) -> Path | None:
        if path.parent not in self._roots:
            self._roots[path.parent] = self._resolver.shown_root(path)
        return self._roots[path.parent]

    def servers(self, path: Path, language_id: str) -> list[ServerSpec]:
        if language_id not in self._specs:
            self._specs[language_id] = self._resolver.servers(path)
        return self._specs[language_id]

    def slot(self, spec: ServerSpec, path: Path) -> Slot | Unknown:
        """The slot that checks `path` for `spec`, or why none does: its directory's reason
        (not installed, refused), else `excluded` (the file's own name may be what excludes
        it), else its directory's slot. The configuration at a root is read only once a
        server may start there: a root another user can write to may hold anything (a FIFO
        named `pyproject.toml`), and nothing there is opened. A slot is added to the pool
        only for a file its server checks."""
        key = (spec.id, path.parent)
        if key not in self._slots:
            self._slots[key] = self._resolver.admit(spec, path, self.shown_root(path))
        admitted = self._slots[key]
        if isinstance(admitted, Unknown):
            return admitted
        if key not in self._rules:
            self._rules[key] = self._resolver.exclusion_rules(spec, path, self.shown_root(path))
        excluded = self._resolver.excluded(spec, path, self._rules[key])
        if excluded is not None:
            return excluded
        if isinstance(admitted, NewSlot):
            admitted = self._slots[key] = self._resolver.add(admitted)
        return admitted


def plain_spec(spec: ServerSpec) -> ServerSpec:
    """`spec` for a root in no project (`ServerSpec.plain` merged in)."""
    if not spec.plain:
        return spec
    init = spec.plain.get("init")
    settings = spec.plain.get("settings")
    return replace(
        spec,
        initialization_options=(
            python_env.deep_merge(spec.initialization_options or {}, init)
            if init else spec.initialization_options
        ),
        settings=python_env.deep_merge(spec.settings, settings) if settings else spec.settings,
    )


class Notices:
    """What one client was already told: a fix hint (install it, trust the root, an
    exclusion's other fix) is said in full the first time one of its reports shows it, for a
    (server, workspace, reason, hint), and without the hint after that. Per client: each of a
    broker's clients is told as a process of its own would be."""

    def __init__(self) -> None:
        self._said: set[tuple[str, Path, UnknownReason, str]] = set()

    def once(self, unknown: Unknown, root: Path) -> Unknown:
        """`unknown` in full the first time, without its hint after that (another hint is
        said once too). Decided when a report is made, not when the unknown is: an answer that
        arrives late (a background retry finding the server broken) is shown to nobody, and
        must not use up the notice the next check owes the user."""
        key = (unknown.server_id, root, unknown.reason, unknown.hint)
        if key in self._said:
            return replace(unknown, hint="")
        self._said.add(key)
        return unknown

    def forget(self) -> None:
        """Say every hint again (`restart`)."""
        self._said.clear()
