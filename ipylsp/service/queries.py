"""Asking a feature of the servers: hover, definition, ..., rename, code actions, and any
feature registered in `lsp/requests/` (`FEATURES`).

This module only chooses the server (the first of the file's servers that advertises the
feature's capability; every one for a merged feature), makes the server's open documents
match the disk first (an answer never describes text that no longer exists), stands the store
in for servers that cannot answer (the feature's `fallback`), and turns failures into results
with a `reason`. What each feature asks and how its answer reads is its `Feature` value.
Positions in and out are 0-based lines and code-point columns.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

from ipylsp.lsp import protocol
from ipylsp.lsp.client import FILE_DELETED, ClientError, LanguageClient
from ipylsp.lsp.requests import FEATURES, Feature, FeatureResult, Query
from ipylsp.lsp.requests.request import At, supports
from ipylsp.model.answers import Location
from ipylsp.model.diagnostics import Unknown, UnknownReason, display_path
from ipylsp.model.positions import word_at
from ipylsp.model.server_spec import ServerSpec
from ipylsp.servers import languages
from ipylsp.service.check.before_text import FileRefused, read_text, readable_text
from ipylsp.service.runtime.pool import Slot
from ipylsp.service.state import ServiceState

A = TypeVar("A")

__all__ = ["FEATURES", "Feature", "FeatureResult", "feature_of", "request_feature", "resync"]


def feature_of(kind: str | Feature[A]) -> Feature[Any]:
    """The registered feature named `kind` (or `kind` itself); `ValueError` for none."""
    if isinstance(kind, Feature):
        return kind
    found = FEATURES.get(kind)
    if found is None:
        raise ValueError(f"unknown feature {kind!r}; one of {', '.join(FEATURES)}")
    return found


async def request_feature(
    state: ServiceState,
    feature: Feature[A],
    path: Path,
    line: int,
    column: int,
    deadline: float,
    *,
    direction: str = "incoming",
    new_name: str = "",
    query: str = "",
) -> FeatureResult[A]:
    """`direction` is for calls, `new_name` for rename, `query` for workspace symbols (whose
    `path` only chooses the servers)."""
    kind = feature.kind
    limit = state.settings.max_file_bytes
    try:
        text = read_text(path, limit)  # what the check reads, refused in its words
    except FileRefused as refused:
        return FeatureResult(kind, error=refused.about(_shown(state, path)),
                             reason=UnknownReason.NOT_READ)
    if text is None:
        return FeatureResult(kind, error=f"no such file: {_shown(state, path)}",
                             reason=UnknownReason.NO_FILE)
    language_id = languages.language_id(path)
    if language_id is None:
        return FeatureResult(
            kind, error=f"no language server knows {path.name}",
            reason=UnknownReason.NO_LANGUAGE,
        )
    if not protocol.loaded():  # its slow import runs beside the loop, not on it
        await asyncio.to_thread(protocol.warm)
    q = Query(At(path, text, line, column), language_id, deadline,
              lambda place: readable_text(place, limit), direction, new_name, query)
    failures = _Failures(kind, [])
    answers: list[FeatureResult[A]] = []
    for spec in state.resolver.servers(path):
        result = await _ask_one(state, spec, feature, q, failures)
        if result is not None:
            answers.append(result)
            if not feature.merged:
                break
    if not answers:
        stored = _from_store(state, feature, q) if failures.reason in _DOWN else None
        if stored is not None:
            return replace(stored, why_cached="; ".join(failures.errors))
        return failures.result(path)
    if feature.fallback == "outline":  # what the store answers when no server can
        outline: Any = answers[0].answer or ()
        state.answers.put_symbols(path, text, answers[0].server_id or "",
                                  _name_scope(state, path), outline)
    if feature.merged:
        ids = [a.server_id for a in answers if a.server_id]
        parts: list[Any] = [a.answer or () for a in answers]
        merged: Any = tuple(item for part in parts for item in part)
        return FeatureResult(kind, answer=merged, server_id="+".join(ids))
    return answers[0]


_DOWN: frozenset[UnknownReason | None] = frozenset({
    UnknownReason.NOT_INSTALLED, UnknownReason.BROKEN, UnknownReason.TIMED_OUT,
    UnknownReason.CRASHED, UnknownReason.FAILED,
})
"""Why no server answered, when the store may stand in."""


def _from_store(state: ServiceState, feature: Feature[A], q: Query) -> FeatureResult[A] | None:
    """What the store answers for a feature with a `fallback` (marked cached); None when it
    has nothing for it."""
    answers = state.answers
    path = q.at.path
    workspace = _name_scope(state, path)
    if feature.fallback == "outline":
        found = answers.outline(path)
    elif feature.fallback == "names":
        found = answers.named(workspace, q.query, prefix=True)
    elif feature.fallback == "definition":
        found = answers.named(workspace, word_at(q.at.text, q.at.line, q.at.column))
    else:
        return None
    if found is None:
        return None
    symbols, cached = found
    answer: Any = symbols
    if feature.fallback == "definition":
        answer = tuple(Location(s.path, s.line, s.column) for s in symbols if s.path)
    return FeatureResult(feature.kind, answer=answer, cached=cached)


def _shown(state: ServiceState, path: Path) -> str:
    """`path` as a check's report shows it: relative to its workspace, absolute outside one."""
    return display_path(path, state.resolver.shown_root(path))


def _name_scope(state: ServiceState, path: Path) -> Path:
    """The workspace a file's stored names are indexed under, and looked up in."""
    return state.resolver.shown_root(path) or path.parent


async def resync(
    client: LanguageClient, skip: Path, deadline: float, max_bytes: int | None
) -> None:
    """Make the documents `client` has open match the disk (an editor or `git checkout`
    changed them behind our back): a changed text is sent, a vanished file closed and
    announced as deleted. `skip`: the queried file, synced by the caller; `max_bytes`:
    `Settings.max_file_bytes`."""
    gone: list[tuple[Path, int]] = []
    for doc in client.documents:
        if doc.path == skip:
            continue
        try:
            text = read_text(doc.path, max_bytes)
        except FileRefused:  # not read now (a directory, too large, unreadable)
            continue  # leave the server's text alone
        if text is None:
            await client.close_document(doc.path)
            gone.append((doc.path, FILE_DELETED))
        elif text != doc.text:
            await client.sync_document(doc.path, text, doc.language_id, deadline=deadline)
    await client.files_changed(gone)


@dataclass
class _Failures:
    """What kept the servers from answering: the first failure decides the reason."""

    kind: str
    errors: list[str]
    reason: UnknownReason | None = None
    hint: str = ""

    def add(self, server_id: str, reason: UnknownReason, detail: str, hint: str = "") -> None:
        self.errors.append(f"{server_id}: {reason.value}: {detail}")
        if self.reason is None:
            self.reason, self.hint = reason, hint

    def result(self, path: Path) -> FeatureResult[Any]:
        if self.reason is None:
            return FeatureResult(
                self.kind, error=f"no server for {path.name} offers {self.kind}",
                reason=UnknownReason.NO_PROVIDER,
            )
        return FeatureResult(
            self.kind, error="; ".join(self.errors), reason=self.reason, hint=self.hint
        )


async def _ask_one(
    state: ServiceState, spec: ServerSpec, feature: Feature[A], q: Query, failures: _Failures
) -> FeatureResult[A] | None:
    """One server's answer, or None (why is added to `failures`; not offering it is no
    failure)."""
    path = q.at.path
    slot: Slot | Unknown = state.resolver.slot(spec, path)
    if isinstance(slot, Unknown):
        failures.add(spec.id, slot.reason, slot.detail, slot.hint)
        return None
    try:
        client = await state.pool.acquire(slot, q.deadline)
        if not supports(client, feature.capability):
            return None
        await resync(client, path, q.deadline, state.settings.max_file_bytes)
        await client.sync_document(path, q.at.text, q.language_id, deadline=q.deadline)
        answer = await feature.ask(client, q)
    except ClientError as exc:
        hint = state.resolver.unknown_for(spec, slot.root, exc).hint
        failures.add(spec.id, exc.reason, exc.detail, hint)
        if exc.reason is UnknownReason.TIMED_OUT:
            await state.pool.record_timeout(slot)
        return None
    return FeatureResult(feature.kind, answer=answer, server_id=spec.id)

