"""`ServiceState`: what the rooms of the service share, owned once.

The settings, the client's `Environment` (which servers are found and run in), the client
pool, the resolver (which servers serve a path, rooted where), the files the service has
checked (`check.known_files`) and the store as a cache (`answers`).
The facade makes one and hands it to the check pipeline, the queries and the administration
of servers; `configure` is the only place the settings change. Holds no behaviour of its
own beyond that: it may not check, query or render anything.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ipylsp.model.environment import Environment
from ipylsp.model.settings import Settings
from ipylsp.service.answers import Answers, store_file
from ipylsp.service.check.known_files import KnownFiles
from ipylsp.service.runtime.pool import ClientPool
from ipylsp.service.runtime.resolver import Notices, Resolver


class ServiceState:
    def __init__(self, settings: Settings, environment: Environment | None = None) -> None:
        """`environment`: the client's (a broker's client); None: this process's, read at each
        use (a kernel's `%env PATH=...` reaches the next server it starts, as before there was
        a value for it)."""
        self.owner = True
        """Owns its pool, resolver and store (False: `sharing` made it, another closes them)."""
        self._settings = settings
        self.environment = environment
        """A given one is fixed for the service's life: a pool slot is keyed by (server, root)
        alone (a broker keys its services by the environment)."""
        self.pool = ClientPool(settings, self.environment)
        self.resolver = Resolver(settings, self.pool, self.environment)
        self.known = KnownFiles()
        self.notices = Notices()
        """What this client was told already (fix hints said once)."""
        self.answers = Answers(settings)
        """The store, as a cache of servers' answers (its `store` is None when off)."""

    def sharing(self, directory: Path | None = None) -> ServiceState:
        """A state for another client of the same servers (a broker's client): the settings,
        environment, pool and store of this one, the directory the client works in
        (`Settings.directory`: where a file in no project belongs, hence its servers' root)
        and checked files of its own, so that what its writes introduced is measured
        against its own last texts."""
        view = object.__new__(ServiceState)
        view.owner = False
        view._settings = replace(self._settings, directory=directory)
        view.environment = self.environment
        view.pool, view.answers = self.pool, self.answers
        view.resolver = (self.resolver if directory == self._settings.directory
                         else self.resolver.sharing(view._settings))
        view.known = KnownFiles()
        view.notices = Notices()
        return view

    @property
    def settings(self) -> Settings:
        return self._settings

    def configure(self, settings: Settings) -> None:
        """New settings for every part at once; a new store file (`store`, `store_path`) is
        opened in place of the old one, the same one takes its new size cap. Not for a
        state that shares another's parts (their settings are that one's)."""
        if not self.owner:
            raise RuntimeError("a shared service's settings are its owner's")
        self._settings = self.pool.settings = self.resolver.settings = settings
        if store_file(settings) != self.answers.configured:
            self.answers.close()
            self.answers = Answers(settings)
        self.answers.configure(settings)

    def close(self) -> None:
        """Queued automatic installs dropped, the store closed (the pool is closed on the
        loop, by the facade); nothing when the parts are another state's."""
        if not self.owner:
            return
        self.resolver.close()
        self.answers.close()
