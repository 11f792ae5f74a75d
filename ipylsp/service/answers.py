"""The service's side of the persistent store: which file it is, what a check
writes to it, and what a check reads back.

- Every live answer for a file's text is kept (`put`), from the loop: a queue put, the disk
  write happens on the store's writer thread.
- `baseline`: after a kernel restart, a file whose before text has a stored answer needs no
  baseline round trip.
- `cached`: a server that did not answer (missing, broken, starting, cut by the budget) is
  still an UNKNOWN, and its stored answer for the file comes with it, each diagnostic marked
  `Cached` (stale when the file's text is not the one it answered for).

The store opens on first use and never raises: a store that cannot be opened is off for this
service, with one warning.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from ipylsp.analysis import delta as delta_mod
from ipylsp.model.answers import Symbol
from ipylsp.model.diagnostics import Cached, Diagnostic, FileReport, Report, display_path
from ipylsp.model.settings import Settings
from ipylsp.servers import config_files
from ipylsp.servers.executables import data_dir
from ipylsp.service.check.before_text import readable_text
from ipylsp.service.check.file_reports import common_root, display_root
from ipylsp.service.runtime.pool import Slot
from ipylsp.store import STORE_ENV, Store, Stored, StoredSymbols, StoreInfo

log = logging.getLogger(__name__)

STORE_NAME = "store.v2.sqlite3"
"""The default file's name. Not `store.sqlite3`, the file of older versions of ipylsp, which
open and close a descriptor of it beside their connections (that drops their locks and
corrupts it under other processes): such a process (another venv, a kernel not yet restarted)
never touches this one (docs/store.md)."""


def store_file(settings: Settings) -> Path | None:
    """`Settings.store_path`, else `$IPYLSP_STORE`, else `<data_dir>/STORE_NAME`; None: off."""
    if not settings.store:
        return None
    if settings.store_path is not None:
        return settings.store_path
    env = os.environ.get(STORE_ENV, "")
    if env:
        return Path(env).expanduser()
    return data_dir(settings) / STORE_NAME


def config_key(slot: Slot | None) -> str:
    """What a server's answer depends on besides the text: its command, root, environment
    (its own variables, and the client's that servers read: `Environment.digest`), settings,
    and what its configuration files at the root say (another venv, compile flags or
    `[tool.ty]` section answers differently; `servers.config_files`). "" when there is no
    slot."""
    if slot is None:
        return ""
    spec = slot.spec
    facts = [list(slot.command), str(slot.root), dict(spec.env), slot.environment, spec.settings,
             spec.initialization_options, config_files.digest(slot.root, spec.config_files)]
    if spec.versioned_push:  # its answers stored before issue 32 may be the disk's text's
        facts.append("versioned_push")
    text = json.dumps(facts, sort_keys=True, default=str)
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def mark(diagnostics: Sequence[Diagnostic], stored: Stored, text: str | None) -> tuple[
    Diagnostic, ...
]:
    """`diagnostics` of a stored answer, each marked as cached (stale unless for `text`)."""
    cached = Cached(stored.written_at, stored.stale(text))
    return tuple(replace(d, cached=cached) for d in diagnostics)


def _cached(found: StoredSymbols, max_bytes: int | None) -> Cached:
    return Cached(found.written_at,
                  found.stale(lambda path: readable_text(Path(path), max_bytes)))


OPEN_WAIT = 0.1
"""Seconds a check's lookup waits for the store to finish opening (quick, on a thread of its
own from the service's start; a file another process keeps locked must not hold a check
up)."""
CLOSE_WAIT = 5.0
READER_WAIT = 10.0
"""What reading the store with no server (`ipylsp diagnostics`, `cache info`) waits for it."""
STORE_OFF = "the store is off (IPyLSP.store = False)"
"""What every surface says when the store is off (not when it cannot be used: that is a
problem, with its reason)."""
EARLY_PUTS = 1000
"""Puts kept while the store opens (then written); beyond, they are dropped (a cache)."""


def _max_bytes(settings: Settings) -> int:
    """The store's size cap (0: none)."""
    return int(settings.store_max_mb * 1024 * 1024)


class Answers:
    """One service's handle on the store file. The file opens on a thread of its own (its
    checks and migrations may wait on other processes' locks), never on the service's loop;
    until it is open, the first lookup waits at most `OPEN_WAIT` (later ones not at all) and
    puts are kept for it, written in order before any later one."""

    def __init__(self, settings: Settings) -> None:
        self.configured = store_file(settings)
        """The file the settings name (None: off), whether or not it could be opened."""
        self.settings = settings
        """The service's settings (`configure` keeps them current): how much of a file is
        read to tell whether a stored answer is stale."""
        self._file = self.configured
        self._max_bytes = _max_bytes(settings)
        self._store: Store | None = None
        self._lock = threading.Lock()
        self._early: list[Callable[[Store], None]] = []
        self._opened = threading.Event()
        self._waited = False
        self.problem = ""
        """Why a configured store cannot be used ("" when it can, or is off)."""
        if self._file is None:
            self._opened.set()
        else:
            threading.Thread(target=self._open, args=(self._file,), name="ipylsp-store-open",
                             daemon=True).start()

    @property
    def file(self) -> Path | None:
        return self._file

    def _open(self, file: Path) -> None:
        try:
            store: Store | None = Store(file, self._max_bytes)
        except Exception as exc:  # a directory, no permission, locked, newer: a cache
            self.problem = str(exc)
            log.warning("ipylsp: the store %s cannot be used (%s); answers are not kept",
                        file, exc)
            store = None
        while True:
            with self._lock:
                early, self._early = self._early, []
                closed = self._file is None
                if not early:  # published only once every early put is queued, in order
                    if store is None:
                        self._file = None
                    elif not closed:
                        store.max_bytes = self._max_bytes  # `configure` may have changed it
                        self._store = store
                    break
            if store is not None:
                for put in early:
                    put(store)
        if store is not None and closed:  # the service closed meanwhile: written, closed
            store.close()
        self._opened.set()

    def configure(self, settings: Settings) -> None:
        """The service's new settings, for a store of the same file (another file is another
        `Answers`): the read limit, and `store_max_mb` for the open store too, whose next
        write evicts down to it (nothing is reopened)."""
        with self._lock:
            self.settings = settings
            self._max_bytes = _max_bytes(settings)
            if self._store is not None:
                self._store.max_bytes = self._max_bytes

    def store(self, wait: float = OPEN_WAIT) -> Store | None:
        """The open store; None when off, unopenable, or still opening after `wait` s (only
        the first caller on a check's path waits: lookups must not add up on the loop)."""
        if not self._opened.is_set():
            if wait > OPEN_WAIT:  # a reader with no server (the CLI): it may wait
                self._opened.wait(wait)
            elif not self._waited:
                self._waited = True
                self._opened.wait(wait)
        return self._store

    def _put(self, put: Callable[[Store], None]) -> None:
        with self._lock:  # held for the queue put too: `close` cannot slip in before it
            store = self._store
            if store is not None:
                put(store)
            elif not self._opened.is_set() and len(self._early) < EARLY_PUTS:
                self._early.append(put)

    def reader(self) -> Store | None:
        """The store for a reader with no server (`ipylsp diagnostics`, `cache`): waited for,
        and this process's own queued answers written first, so it reads what it was given."""
        store = self.store(wait=READER_WAIT)
        if store is not None:
            store.flush(READER_WAIT)
        return store

    def put(self, path: Path, text: str, server: str, diagnostics: Sequence[Diagnostic],
            config: str = "") -> None:
        self._put(lambda store: store.put_diagnostics(str(path), text, server, diagnostics,
                                                      config))

    def baseline(
        self, path: Path, text: str, server: str, config: str
    ) -> tuple[Diagnostic, ...] | None:
        """The server's stored answer for exactly `text`, given with the same `config`."""
        store = self.store()
        found = (store.get_diagnostics(str(path), text, server, config)
                 if store is not None else None)
        return None if found is None else found.diagnostics

    def cached(
        self, path: Path, server: str, new_text: str | None, before_text: str
    ) -> tuple[Diagnostic, ...]:
        """What to show for a server that did not answer: its stored answer, marked.

        Stored for exactly the new text (and for the before text too, under the same config:
        its delta, as live); else its latest answer, all of it, stale (the store cannot tell
        what the write changed)."""
        store = self.store()
        if store is None:
            return ()
        exact = store.get_diagnostics(str(path), new_text, server) if new_text else None
        if exact is not None and new_text is not None:
            before = (store.get_diagnostics(str(path), before_text, server, exact.config)
                      if before_text else None)
            if not before_text or before is not None:
                baseline = before.diagnostics if before is not None else ()
                shown = delta_mod.compute_delta(
                    before_text, new_text, baseline, exact.diagnostics
                ).introduced
                return mark(shown, exact, new_text)
            return mark(exact.diagnostics, exact, new_text)
        latest = store.latest(str(path), server)
        return () if latest is None else mark(latest.diagnostics, latest, new_text)

    def put_symbols(self, path: Path, text: str, server: str, workspace: Path,
                    symbols: Sequence[Symbol]) -> None:
        self._put(lambda store: store.put_symbols(str(path), text, server, str(workspace),
                                                  symbols))

    def outline(self, path: Path) -> tuple[tuple[Symbol, ...], Cached] | None:
        """The file's last stored outline, and how old (stale against its text now)."""
        store = self.store()
        found = store.outline(str(path)) if store is not None else None
        return None if found is None else (found.symbols,
                                           _cached(found, self.settings.max_file_bytes))

    def named(
        self, workspace: Path, name: str, *, prefix: bool = False
    ) -> tuple[tuple[Symbol, ...], Cached] | None:
        """Symbols called `name` (`prefix`: starting with it) in the workspace's stored
        outlines: where a definition is when no server can say."""
        store = self.store()
        found = (store.symbols_named(str(workspace), name, prefix=prefix)
                 if store is not None and name else None)
        return None if found is None else (found.symbols,
                                           _cached(found, self.settings.max_file_bytes))

    def close(self) -> None:
        """Everything put is written, then the file closed. A store still opening (another
        process holds its lock) gets `CLOSE_WAIT` s to open and take what checks gave."""
        with self._lock:
            store, self._store, self._file = self._store, None, None
        if store is not None:
            store.close()
        else:
            self._opened.wait(CLOSE_WAIT)


def stored_report(answers: Answers, path: Path, settings: Settings) -> Report:
    """What the store holds for a file, or for every file under a directory, with no server
    running: each server's latest answer, marked cached, stale against the text on disk now."""
    store = answers.reader()
    if store is None:
        problem = _off(answers).problem
        return Report(notes=(f"ipylsp: the store cannot be read: {problem}" if problem
                             else f"ipylsp: {STORE_OFF}",))
    paths = [path] if not path.is_dir() else [Path(p) for p in store.paths(str(path))]
    files = []
    for file in paths:
        by_server = store.latest_by_server(str(file))
        if not by_server:
            continue
        text = readable_text(file, settings.max_file_bytes)
        shown = tuple(
            d for stored in by_server.values() for d in mark(stored.diagnostics, stored, text)
        )
        files.append(FileReport(
            path=file, display_path=display_path(file, display_root(file, settings)),
            diagnostics=shown, current=shown, servers=tuple(by_server),
        ))
    notes = () if files else (f"ipylsp: nothing stored for {path}",)
    return Report(files=tuple(files), root=common_root((f.path for f in files), settings),
                  notes=notes)


def store_info(answers: Answers) -> StoreInfo:
    """The store's file, size, rows and files (`ipylsp cache info`); no path when off."""
    store = answers.reader()
    return _off(answers) if store is None else store.info()


def clear_store(answers: Answers) -> StoreInfo:
    """Forget every stored answer (`ipylsp cache clear`); what was there before."""
    store = answers.reader()
    if store is None:
        return _off(answers)
    before = store.info()
    if not store.clear():
        return StoreInfo(None, problem=f"{store.path} could not be cleared in time")
    return before


def _off(answers: Answers) -> StoreInfo:
    """No path, with `problem` when a configured store cannot be used."""
    if answers.configured is None:
        return StoreInfo(None)
    problem = answers.problem or f"{answers.configured} is still opening (locked?)"
    return StoreInfo(None, problem=problem)
