"""Language features beyond diagnostics: hover, definition, type definition, implementation,
references, completions, outline and workspace symbols, calls, rename, code actions.

This module only chooses the server (the first of the file's servers that advertises the
feature; code actions merge every server's quick fixes), makes the server's open documents
match the disk first (an answer never describes text that no longer exists), and turns
failures into results with a `reason`; the requests themselves are typed functions in
`lsp.features`, `lsp.rename` and `lsp.code_actions`. Positions in and out are 0-based lines
and code-point columns.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from ipylsp.lsp import protocol
from ipylsp.lsp.client import FILE_DELETED, ClientError, LanguageClient
from ipylsp.lsp.requests import queries as lsp_features
from ipylsp.lsp.requests.code_actions import code_actions
from ipylsp.lsp.requests.queries import At, TextSource
from ipylsp.lsp.requests.rename import rename
from ipylsp.model.answers import CodeAction, Completion, Location, Symbol
from ipylsp.model.diagnostics import Cached, Unknown, UnknownReason
from ipylsp.model.edits import TextEdit
from ipylsp.model.positions import word_at
from ipylsp.model.server_spec import ServerSpec
from ipylsp.servers import languages
from ipylsp.service.check.before_text import TextTooLarge, read_text, readable_text
from ipylsp.service.check.file_reports import display_path
from ipylsp.service.runtime.pool import Slot
from ipylsp.service.state import ServiceState

MAX_ITEMS = lsp_features.MAX_ITEMS

__all__ = [
    "PROVIDERS",
    "CodeAction",
    "FeatureFailure",
    "FeatureResult",
    "Location",
    "Symbol",
    "request_feature",
]

FeatureFailure = Literal[
    "no_file",  # the file does not exist (or is not readable text)
    "no_language",  # no language server knows the file's kind
    "no_provider",  # the file's servers run, but none offers the feature
    "not_installed",  # a server for the file is missing (`hint`: how to install it)
    "broken",  # a server is marked broken (`hint`: how to restart it)
    "timed_out",
    "crashed",
    "failed",  # the server answered with an error or an answer that does not fit the protocol
    "refused",  # not started: another user can write where it would read its configuration
]
"""Why a `FeatureResult` has no answer, for surfaces that map it (agent error codes)."""


@dataclass(frozen=True, slots=True)
class FeatureResult:
    """What one feature request produced; `error` says why there is nothing."""

    kind: str
    server_id: str | None = None
    text: str = ""
    locations: tuple[Location, ...] = ()
    items: tuple[str, ...] = ()
    symbols: tuple[Symbol, ...] = ()
    completions: tuple[Completion, ...] = ()
    edits: tuple[TextEdit, ...] = ()
    actions: tuple[CodeAction, ...] = ()
    error: str = ""
    reason: FeatureFailure | None = None
    """Set with `error`: why there is no answer."""
    hint: str = ""
    """With `reason` not_installed / broken: what to run to get the server."""
    cached: Cached | None = None
    """Not a live answer: what the store kept from servers' earlier answers (issue 14)."""
    why_cached: str = ""
    """With `cached`: why no server answered."""

    def cached_note(self) -> str:
        """`(cached 3 min ago; why no server answered)` for an answer from the store, else ""."""
        if self.cached is None:
            return ""
        return f"({self.cached.label(time.time())}; {self.why_cached})"

    def format(self, root: Path | None = None) -> str:
        """The answer as people and agents read it: 1-based positions, paths relative to root."""
        if self.error:
            return f"{self.kind}: {self.error}"
        if self.cached is not None:
            live = replace(self, cached=None, why_cached="").format(root)
            return f"{live}\n{self.cached_note()}"
        if self.kind == "hover":
            return self.text or "(no hover information)"
        if self.kind == "completions":
            return "\n".join(self.items) or "(no completions)"
        if self.kind in ("symbols", "workspace_symbols", "calls"):
            lines = [
                f"{'  ' * s.depth}{s.kind} {s.name} "
                f"[{display_path(s.path, root) + ':' if s.path else ''}{s.line + 1}:{s.column + 1}]"
                for s in self.symbols
            ]
            return "\n".join(lines) or f"(no {self.kind})"
        if self.kind == "rename":
            lines = [
                f"{display_path(e.path, root)}:{e.range.start.line + 1}:"
                f"{e.range.start.column + 1} -> {e.new_text!r}"
                for e in self.edits
            ]
            return "\n".join(lines) or "(nothing to rename)"
        if self.kind == "code_actions":
            lines = [f"{a.title} [{a.server_id}]" for a in self.actions]
            return "\n".join(lines) or "(no quick fixes)"
        lines = [
            f"{display_path(loc.path, root)}:{loc.line + 1}:{loc.column + 1}"
            for loc in self.locations
        ]
        return "\n".join(lines) or f"(no {self.kind})"

    def __str__(self) -> str:
        return self.format(Path.cwd())

    def __repr__(self) -> str:  # `ipylsp.hover(...)` at a prompt reads as the answer
        return self.format(Path.cwd())


@dataclass(frozen=True, slots=True)
class Query:
    """One feature request for one server: where, with what, and until when."""

    at: At
    language_id: str
    deadline: float
    direction: str = "incoming"
    new_name: str = ""
    query: str = ""

    @property
    def timeout(self) -> float:
        return max(self.deadline - time.monotonic(), 0.1)


Ask = Callable[[LanguageClient, Query], Awaitable[FeatureResult]]


async def _hover(client: LanguageClient, q: Query) -> FeatureResult:
    return FeatureResult("hover", text=await lsp_features.hover(client, q.at, q.timeout))


Locate = Callable[[LanguageClient, At, TextSource, float], Awaitable[tuple[Location, ...]]]


def _locations(kind: str, locate: Locate) -> Ask:
    """A feature whose answer is places (definition, type definition, implementation,
    references): the same request shape, a different `lsp.features` function."""

    async def ask(client: LanguageClient, q: Query) -> FeatureResult:
        return FeatureResult(kind, locations=await locate(client, q.at, readable_text, q.timeout))

    return ask


async def _completions(client: LanguageClient, q: Query) -> FeatureResult:
    found = await lsp_features.completions(client, q.at, q.timeout)
    return FeatureResult(
        "completions", items=tuple(item.label for item in found), completions=found
    )


async def _symbols(client: LanguageClient, q: Query) -> FeatureResult:
    found = await lsp_features.document_symbols(client, q.at.path, q.at.text, q.timeout)
    return FeatureResult("symbols", symbols=found)


async def _workspace_symbols(client: LanguageClient, q: Query) -> FeatureResult:
    found = await lsp_features.workspace_symbols(client, q.query, readable_text, q.timeout)
    return FeatureResult("workspace_symbols", symbols=found)


async def _calls(client: LanguageClient, q: Query) -> FeatureResult:
    found = await lsp_features.calls(client, q.at, q.direction, readable_text, q.timeout)
    return FeatureResult("calls", symbols=found)


async def _rename(client: LanguageClient, q: Query) -> FeatureResult:
    edits = await rename(client, q.at, q.new_name, readable_text, q.timeout)
    return FeatureResult("rename", edits=edits)


async def _code_actions(client: LanguageClient, q: Query) -> FeatureResult:
    at = q.at
    found = await code_actions(
        client, at.path, at.text, q.language_id, at.line, readable_text, q.deadline
    )
    return FeatureResult("code_actions", actions=found)


PROVIDERS: dict[str, tuple[str, Ask]] = {
    "hover": ("hoverProvider", _hover),
    "definition": ("definitionProvider", _locations("definition", lsp_features.definition)),
    "type_definition": (
        "typeDefinitionProvider", _locations("type_definition", lsp_features.type_definition)
    ),
    "implementation": (
        "implementationProvider", _locations("implementation", lsp_features.implementation)
    ),
    "references": ("referencesProvider", _locations("references", lsp_features.references)),
    "completions": ("completionProvider", _completions),
    "symbols": ("documentSymbolProvider", _symbols),
    "workspace_symbols": ("workspaceSymbolProvider", _workspace_symbols),
    "calls": ("callHierarchyProvider", _calls),
    "rename": ("renameProvider", _rename),
    "code_actions": ("codeActionProvider", _code_actions),
}
"""Feature kind -> (the server capability that offers it, the request)."""

MERGED = frozenset({"code_actions"})
"""Kinds answered by every server that offers them, not the first: each linter or checker
has its own quick fixes."""

_REASONS: dict[UnknownReason, FeatureFailure] = {
    UnknownReason.NOT_INSTALLED: "not_installed",
    UnknownReason.BROKEN: "broken",
    UnknownReason.TIMED_OUT: "timed_out",
    UnknownReason.CRASHED: "crashed",
    UnknownReason.FAILED: "failed",
    UnknownReason.REFUSED: "refused",
}


async def resync(client: LanguageClient, skip: Path, deadline: float) -> None:
    """Make the documents `client` has open match the disk (an editor or `git checkout`
    changed them behind our back): a changed text is sent, a vanished file closed and
    announced as deleted. `skip`: the queried file, synced by the caller."""
    gone: list[tuple[Path, int]] = []
    for doc in client.documents:
        if doc.path == skip:
            continue
        try:
            text = read_text(doc.path)
        except (OSError, TextTooLarge):  # unreadable now (a directory, too large)
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
    reason: FeatureFailure | None = None
    hint: str = ""

    def add(self, server_id: str, reason: UnknownReason, detail: str, hint: str = "") -> None:
        self.errors.append(f"{server_id}: {reason.value}: {detail}")
        if self.reason is None:
            self.reason, self.hint = _REASONS[reason], hint

    def result(self, path: Path) -> FeatureResult:
        if self.reason is None:
            return FeatureResult(
                self.kind, error=f"no server for {path.name} offers {self.kind}",
                reason="no_provider",
            )
        return FeatureResult(
            self.kind, error="; ".join(self.errors), reason=self.reason, hint=self.hint
        )


async def request_feature(
    state: ServiceState,
    kind: str,
    path: Path,
    line: int,
    column: int,
    deadline: float,
    *,
    direction: str = "incoming",
    new_name: str = "",
    query: str = "",
) -> FeatureResult:
    """`direction` is for "calls", `new_name` for "rename", `query` for "workspace_symbols"
    (whose `path` only chooses the servers)."""
    if kind not in PROVIDERS:
        raise ValueError(f"unknown feature {kind!r}")
    text = readable_text(path)
    if text is None:
        return FeatureResult(kind, error=f"no such file: {path}", reason="no_file")
    language_id = languages.language_id(path)
    if language_id is None:
        return FeatureResult(
            kind, error=f"no language server knows {path.name}", reason="no_language"
        )
    if not protocol.loaded():  # its ~0.3 s import runs beside the loop, not on it
        await asyncio.to_thread(protocol.warm)
    q = Query(At(path, text, line, column), language_id, deadline, direction, new_name, query)
    failures = _Failures(kind, [])
    answers: list[FeatureResult] = []
    for spec in state.resolver.servers(path):
        result = await _ask_one(state, spec, kind, q, failures)
        if result is not None:
            answers.append(result)
            if kind not in MERGED:
                break
    if answers and kind == "symbols":
        state.answers.put_symbols(path, text, answers[0].server_id or "",
                                    _name_scope(state, path), answers[0].symbols)
    if not answers:
        stored = _from_store(state, kind, q) if failures.reason in _DOWN else None
        if stored is not None:
            return replace(stored, why_cached="; ".join(failures.errors))
        return failures.result(path)
    if kind in MERGED:
        ids = [a.server_id for a in answers if a.server_id]
        actions = tuple(action for a in answers for action in a.actions)
        return FeatureResult(kind, server_id="+".join(ids), actions=actions)
    return answers[0]


_DOWN: frozenset[FeatureFailure | None] = frozenset(
    {"not_installed", "broken", "timed_out", "crashed", "failed"}
)
"""Why no server answered, when the store may stand in."""

def _from_store(state: ServiceState, kind: str, q: Query) -> FeatureResult | None:
    """Outlines, workspace symbols and definitions by name from what servers answered before
    (marked cached); None when the store has nothing for it."""
    answers = state.answers
    path = q.at.path
    workspace = _name_scope(state, path)
    if kind == "symbols":
        found = answers.outline(path)
    elif kind == "workspace_symbols":
        found = answers.named(workspace, q.query, prefix=True)
    elif kind == "definition":
        found = answers.named(workspace, word_at(q.at.text, q.at.line, q.at.column))
    else:
        return None
    if found is None:
        return None
    symbols, cached = found
    if kind == "definition":
        locations = tuple(Location(s.path, s.line, s.column) for s in symbols if s.path)
        return FeatureResult(kind, locations=locations, cached=cached)
    return FeatureResult(kind, symbols=symbols, cached=cached)


def _name_scope(state: ServiceState, path: Path) -> Path:
    """The workspace a file's stored names are indexed under, and looked up in."""
    return state.resolver.shown_root(path) or path.parent


async def _ask_one(
    state: ServiceState, spec: ServerSpec, kind: str, q: Query, failures: _Failures
) -> FeatureResult | None:
    """One server's answer, or None (why is added to `failures`; not offering it is no
    failure)."""
    path = q.at.path
    slot: Slot | Unknown = state.resolver.slot(spec, path)
    if isinstance(slot, Unknown):
        failures.add(spec.id, slot.reason, slot.detail, slot.hint)
        return None
    capability, ask = PROVIDERS[kind]
    try:
        client = await state.pool.acquire(slot, q.deadline)
        if not lsp_features.supports(client, capability):
            return None
        await resync(client, path, q.deadline)
        await client.sync_document(path, q.at.text, q.language_id, deadline=q.deadline)
        result = await ask(client, q)
    except ClientError as exc:
        hint = state.resolver.unknown_for(spec, slot.root, exc).hint
        failures.add(spec.id, exc.reason, exc.detail, hint)
        if exc.reason is UnknownReason.TIMED_OUT:
            await state.pool.record_timeout(slot)
        return None
    return replace(result, server_id=spec.id)
