"""Language features beyond diagnostics: hover, definition, type definition, implementation,
references, completions, symbols.

This module only chooses the server (the first of the file's servers that advertises the
feature) and turns failures into results; the requests themselves are typed functions in
`lsp.features`. Positions in and out are 0-based lines and code-point columns.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from ipylsp.analysis.answers import CodeAction, Completion, Location, Symbol
from ipylsp.analysis.edits import TextEdit
from ipylsp.analysis.model import Unknown, UnknownReason
from ipylsp.lsp import features as lsp_features
from ipylsp.lsp import languages, protocol
from ipylsp.lsp.client import ClientError, LanguageClient
from ipylsp.lsp.features import At, TextSource
from ipylsp.service.baseline import read_text
from ipylsp.service.checker import Checker
from ipylsp.service.reports import display_path

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

    def format(self, root: Path | None = None) -> str:
        """The answer as people and agents read it: 1-based positions, paths relative to root."""
        if self.error:
            return f"{self.kind}: {self.error}"
        if self.kind == "hover":
            return self.text or "(no hover information)"
        if self.kind == "completions":
            return "\n".join(self.items) or "(no completions)"
        if self.kind == "symbols":
            lines = [
                f"{'  ' * s.depth}{s.kind} {s.name} [{s.line + 1}:{s.column + 1}]"
                for s in self.symbols
            ]
            return "\n".join(lines) or "(no symbols)"
        lines = [
            f"{display_path(loc.path, root)}:{loc.line + 1}:{loc.column + 1}"
            for loc in self.locations
        ]
        return "\n".join(lines) or f"(no {self.kind})"

    def __str__(self) -> str:
        return self.format(Path.cwd())

    def __repr__(self) -> str:  # `ipylsp.hover(...)` at a prompt reads as the answer
        return self.format(Path.cwd())


def _texts(path: Path) -> str | None:
    """Text of a file an answer points into (for its columns); None when unreadable."""
    return read_text(path) if path.is_file() else None


Ask = Callable[[LanguageClient, At, float], Awaitable[FeatureResult]]


async def _hover(client: LanguageClient, at: At, timeout: float) -> FeatureResult:
    return FeatureResult("hover", text=await lsp_features.hover(client, at, timeout))


Locate = Callable[[LanguageClient, At, TextSource, float], Awaitable[tuple[Location, ...]]]


def _locations(kind: str, locate: Locate) -> Ask:
    """A feature whose answer is places (definition, type definition, implementation,
    references): the same request shape, a different `lsp.features` function."""

    async def ask(client: LanguageClient, at: At, timeout: float) -> FeatureResult:
        return FeatureResult(kind, locations=await locate(client, at, _texts, timeout))

    return ask


async def _completions(client: LanguageClient, at: At, timeout: float) -> FeatureResult:
    found = await lsp_features.completions(client, at, timeout)
    return FeatureResult("completions", items=tuple(item.label for item in found))


async def _symbols(client: LanguageClient, at: At, timeout: float) -> FeatureResult:
    found = await lsp_features.document_symbols(client, at.path, at.text, timeout)
    return FeatureResult("symbols", symbols=found)


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
}
"""Feature kind -> (the server capability that offers it, the request)."""


async def request_feature(
    checker: Checker,
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
    text = read_text(path)
    if text is None:
        return FeatureResult(kind, error=f"no such file: {path}")
    language_id = languages.language_id(path)
    if language_id is None:
        return FeatureResult(kind, error=f"no language server knows {path.name}")
    capability, ask = PROVIDERS[kind]
    if not protocol.loaded():  # its ~0.3 s import runs beside the loop, not on it
        await asyncio.to_thread(protocol.warm)
    errors: list[str] = []
    for spec in checker.resolver.servers(path):
        slot = checker.resolver.slot(spec, path)
        if isinstance(slot, Unknown):
            errors.append(f"{spec.id}: {slot.reason.value}: {slot.detail}")
            continue
        try:
            client = await checker.pool.acquire(slot, deadline)
            if not lsp_features.supports(client, capability):
                continue
            await client.sync_document(path, text, language_id)
            timeout = max(deadline - time.monotonic(), 0.1)
            result = await ask(client, At(path, text, line, column), timeout)
        except ClientError as exc:
            errors.append(f"{spec.id}: {exc.reason.value}: {exc.detail}")
            if exc.reason is UnknownReason.TIMED_OUT:
                await checker.pool.record_timeout(slot)
            continue
        return replace(result, server_id=spec.id)
    detail = "; ".join(errors) or f"no server for {path.name} offers {kind}"
    return FeatureResult(kind, error=detail)
