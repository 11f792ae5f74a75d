"""`ServiceState`: what the rooms of the service share, owned once.

The settings, the client's `Environment` (which servers are found and run in), the client
pool, the resolver (which servers serve a path, rooted where), the files the service has
checked (`check.known_files`) and the store as a cache (`answers`).
The facade makes one and hands it to the check pipeline, the queries and the administration
of servers; `configure` is the only place the settings change. Holds no behaviour of its
own beyond that: it may not check, query or render anything.
"""

from __future__ import annotations

from ipylsp.model.environment import Environment
from ipylsp.model.settings import Settings, for_servers
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
        self._host: ServiceState = self
        """The state whose parts this one uses (itself when it owns them)."""
        self._settings = settings
        self.environment = environment
        """A given one is fixed for the service's life: a pool slot is keyed by (server, root, gate)
        alone (a broker keys its services by the environment)."""
        self.pool = ClientPool(settings, self.environment)
        self.resolver = Resolver(settings, self.pool, self.environment)
        self.known = KnownFiles()
        self.notices = Notices()
        """What this client was told already (fix hints said once)."""
        self.answers = Answers(settings)
        """The store, as a cache of servers' answers (its `store` is None when off)."""

    def sharing(self, settings: Settings | None = None) -> ServiceState:
        """A state for another client of the same servers (a broker's client): the
        environment, pool and store of this one, the client's own knobs (`settings`, whose
        others must be this one's: `CLIENT_KNOBS`; among them the directory it works in,
        where a file in no project belongs, hence its servers' root) and checked files of
        its own, so that what its writes introduced is measured against its own last texts.
        `ValueError` for settings that would run the servers otherwise."""
        view = object.__new__(ServiceState)
        view.owner = False
        view._host = self
        view.environment = self.environment
        view.pool, view.answers = self.pool, self.answers
        view.resolver = self.resolver
        view._settings = self._settings
        view.known = KnownFiles()
        view.notices = Notices()
        view.configure(self._settings if settings is None else settings)
        return view

    @property
    def settings(self) -> Settings:
        return self._settings

    def configure(self, settings: Settings) -> None:
        """New settings for every part at once; a new store file (`store`, `store_path`) is
        opened in place of the old one, the same one takes its new size cap. A state that
        shares another's parts takes only its client's own knobs (`CLIENT_KNOBS`; else
        `ValueError`): its checked files and pending problems stay."""
        if not self.owner:
            if for_servers(settings) != for_servers(self._host.settings):
                raise ValueError("a sharing service takes the shared one's settings (its "
                                 "client's own knobs aside: CLIENT_KNOBS)")
            if settings.directory != self.resolver.settings.directory:
                self.resolver = self.resolver.sharing(settings)
            self._settings = settings
            return
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
