"""Asking a feature of the servers: hover, definition, ..., rename, code actions, any
`Feature` of `lsp/requests/`.

This module only chooses the server (the first of the file's servers that advertises the
feature's capability; every one for a merged feature), makes the server's open documents
match the disk first (an answer never describes text that no longer exists), stands the store
in for servers that cannot answer (`STORED`: a function per feature kind), and turns failures
into results with the `Unknown`s saying why. Requests are asked in a `Trip`: one or several
on one deadline, each file read once. What each feature asks and how its answer reads
is its `Feature` value. Positions in and out are 0-based lines and code-point columns.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from ipylsp.lsp import protocol
from ipylsp.lsp.client import ClientError, LanguageClient
from ipylsp.lsp.requests import Feature, FeatureResult, Query
from ipylsp.lsp.requests.locations import DEFINITION
from ipylsp.lsp.requests.request import At, supports
from ipylsp.lsp.requests.symbols import SYMBOLS, WORKSPACE_SYMBOLS
from ipylsp.model.answers import Location
from ipylsp.model.diagnostics import Cached, Unknown, UnknownReason, display_path
from ipylsp.model.positions import word_at
from ipylsp.model.server_spec import ServerSpec
from ipylsp.servers import languages
from ipylsp.service.answers import Answers
from ipylsp.service.check.before_text import FileRefused, read_text
from ipylsp.service.check.open_documents import match_disk
from ipylsp.service.runtime.pool import Slot
from ipylsp.service.state import ServiceState

A = TypeVar("A")

__all__ = ["STORED", "Feature", "FeatureResult", "Trip"]

log = logging.getLogger(__name__)


class Trip:
    """The feature requests of one trip to the loop: one deadline for all of them, each file
    read once, each server's open documents made to match the disk once. A surface that
    finds its place with queries (an agent's call by symbol: an outline, then the feature)
    asks them all in one trip (`Service.trip`)."""

    def __init__(self, state: ServiceState, deadline: float) -> None:
        self._state = state
        self.deadline = deadline
        self._texts: dict[Path, str | FileRefused | None] = {}
        self._resynced: set[LanguageClient] = set()

    def read(self, path: Path) -> str | None:
        """`path`'s text as the check reads it (None: no such file; `FileRefused`: a FIFO, a
        directory, a file over `max_file_mb`), read once per trip."""
        if path not in self._texts:
            try:
                self._texts[path] = read_text(path, self._state.settings.max_file_bytes)
            except FileRefused as refused:
                self._texts[path] = refused
        text = self._texts[path]
        if isinstance(text, FileRefused):
            raise text
        return text

    def _readable(self, path: Path) -> str | None:
        try:
            return self.read(path)
        except FileRefused:
            return None

    def shown(self, path: Path) -> str:
        """`path` as a check's report shows it: relative to its workspace, absolute outside."""
        return display_path(path, self._state.resolver.shown_root(path))

    def checked(self) -> list[Path]:
        """The files the service has checked, in order (no server asked)."""
        return sorted(self._state.known)

    async def feature(
        self, feature: Feature[Any, A], path: Path, line: int = 0, column: int = 0
    ) -> FeatureResult[A]:
        """`feature` (with its `params`) at a 0-based place of `path`; never raises."""
        try:
            return await self._feature(feature, path, line, column)
        except Exception as exc:  # an odd file or server answer must not reach the caller
            log.exception("%s of %s failed", feature.kind, path)
            return feature.failed(UnknownReason.FAILED, f"failed: {exc!r}")

    async def _feature(
        self, feature: Feature[Any, A], path: Path, line: int, column: int
    ) -> FeatureResult[A]:
        state = self._state
        try:
            text = self.read(path)  # what the check reads, refused in its words
        except FileRefused as refused:
            return feature.failed(UnknownReason.NOT_READ, refused.about(self.shown(path)))
        if text is None:
            return feature.failed(UnknownReason.NO_FILE, f"no such file: {self.shown(path)}")
        language_id = languages.language_id(path)
        if language_id is None:
            return feature.failed(UnknownReason.NO_LANGUAGE,
                                  f"no language server knows {path.name}")
        if not protocol.loaded():  # its slow import runs beside the loop, not on it
            await asyncio.to_thread(protocol.warm)
        q = Query(At(path, text, line, column), language_id, self.deadline, self._readable,
                  feature.params)
        failures: list[Unknown] = []
        answers: list[FeatureResult[A]] = []
        for spec in state.resolver.servers(path):
            result = await self._ask_one(spec, feature, q, failures)
            if result is not None:
                answers.append(result)
                if not feature.merged:
                    break
        if not answers:
            if not failures:
                return feature.failed(UnknownReason.NO_PROVIDER,
                                      f"no server for {path.name} offers {feature.kind}")
            stand_in = STORED.get(feature.kind) if failures[0].reason in _DOWN else None
            stored = stand_in(state.answers, q, _name_scope(state, path)) if stand_in else None
            if stored is not None:
                answer, cached = stored
                return FeatureResult(feature, answer, cached=cached, unknown=tuple(failures))
            return FeatureResult(feature, unknown=tuple(failures))
        if feature.kind == SYMBOLS.kind:  # the outlines the stand-ins below read
            outline: Any = answers[0].answer or ()
            state.answers.put_symbols(path, text, answers[0].server_id or "",
                                      _name_scope(state, path), outline)
        if feature.merged:
            ids = [a.server_id for a in answers if a.server_id]
            parts: list[Any] = [a.answer or () for a in answers]
            merged: Any = tuple(item for part in parts for item in part)
            return FeatureResult(feature, answer=merged, server_id="+".join(ids))
        return answers[0]

    async def _resync(self, client: LanguageClient, skip: Path) -> None:
        """The documents `client` has open made the disk's text (`check.open_documents`),
        each read once this trip. `skip`: the queried file, synced by the caller."""
        await match_disk(client, self.read, {skip}, self.deadline)

    async def _ask_one(
        self, spec: ServerSpec, feature: Feature[Any, A], q: Query[Any], failures: list[Unknown]
    ) -> FeatureResult[A] | None:
        """One server's answer, or None (why is added to `failures`; not offering it is no
        failure)."""
        state = self._state
        path = q.at.path
        slot: Slot | Unknown = state.resolver.slot(spec, path)
        if isinstance(slot, Unknown):
            failures.append(slot)
            return None
        try:
            client = await state.pool.acquire(slot, q.deadline)
            if not supports(client, feature.capability):
                return None
            if client not in self._resynced:
                self._resynced.add(client)
                await self._resync(client, path)
            await client.sync_document(path, q.at.text, q.language_id, deadline=q.deadline)
            answer = await feature.ask(client, q)
        except ClientError as exc:
            failures.append(state.resolver.unknown_for(spec, slot.root, exc))
            if exc.reason is UnknownReason.TIMED_OUT:
                await state.pool.record_timeout(slot)
            return None
        return FeatureResult(feature, answer=answer, server_id=spec.id)


_DOWN: frozenset[UnknownReason] = frozenset({
    UnknownReason.NOT_INSTALLED, UnknownReason.BROKEN, UnknownReason.TIMED_OUT,
    UnknownReason.CRASHED, UnknownReason.FAILED,
})
"""Why no server answered, when the store may stand in."""


StandIn = Callable[[Answers, Query[Any], Path], "tuple[Any, Cached] | None"]
"""What the store answers for a feature no server could answer, from the stored outlines of
`Answers` in the workspace given (the name scope): the answer and how old, or None."""


def _outline(answers: Answers, q: Query[Any], scope: Path) -> tuple[Any, Cached] | None:
    return answers.outline(q.at.path)


def _named(answers: Answers, q: Query[str], scope: Path) -> tuple[Any, Cached] | None:
    return answers.named(scope, q.params, prefix=True)


def _definition(answers: Answers, q: Query[Any], scope: Path) -> tuple[Any, Cached] | None:
    found = answers.named(scope, word_at(q.at.text, q.at.line, q.at.column))
    if found is None:
        return None
    symbols, cached = found
    return tuple(Location(s.path, s.line, s.column) for s in symbols if s.path), cached


STORED: dict[str, StandIn] = {
    SYMBOLS.kind: _outline,  # a file's outline
    WORKSPACE_SYMBOLS.kind: _named,  # symbols by name prefix
    DEFINITION.kind: _definition,  # the places of the name at the position
}
"""The store's stand-in of each feature that has one, by kind (marked cached)."""


def _name_scope(state: ServiceState, path: Path) -> Path:
    """The workspace a file's stored names are indexed under, and looked up in."""
    return state.resolver.shown_root(path) or path.parent
