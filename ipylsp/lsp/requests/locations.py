"""The requests whose answer is places: textDocument/definition, typeDefinition,
implementation and references (one request shape, four methods)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ipylsp.lsp import protocol
from ipylsp.lsp.documents import uri_to_path
from ipylsp.lsp.requests.feature import Feature, Query
from ipylsp.lsp.requests.request import (
    MAX_ITEMS,
    At,
    Columns,
    TextSource,
    ask,
    document,
    position,
)
from ipylsp.model.answers import Location
from ipylsp.model.diagnostics import display_path

if TYPE_CHECKING:
    from ipylsp.lsp.client import LanguageClient


def _locations(items: Any, columns: Columns) -> tuple[Location, ...]:
    t = protocol.types()
    raw = items if isinstance(items, (list, tuple)) else [] if items is None else [items]
    found: list[Location] = []
    for item in raw[:MAX_ITEMS]:
        if isinstance(item, t.LocationLink):
            uri, start = item.target_uri, item.target_selection_range.start
        else:
            uri, start = item.uri, item.range.start
        target = uri_to_path(uri)
        if target is not None:
            column = columns.column(target, start.line, start.character)
            found.append(Location(target, start.line, column))
    return tuple(found)


Locate = Callable[["LanguageClient", At, TextSource, float], Awaitable[tuple[Location, ...]]]


def _locate(method: str, params_type: str, response: str, **extra: Any) -> Locate:
    """The request for one of the four methods: the same params shape, another method."""

    async def locate(
        client: LanguageClient, at: At, texts: TextSource, timeout: float
    ) -> tuple[Location, ...]:
        t = protocol.types()
        more = {key: value(t) for key, value in extra.items()}
        params = getattr(t, params_type)(
            text_document=document(at.path), position=position(client, at), **more
        )
        answer = await ask(client, method, params, getattr(t, response), timeout)
        return _locations(answer, Columns(client.encoding, texts, at))

    return locate


definition = _locate("textDocument/definition", "DefinitionParams", "DefinitionResponse")
type_definition = _locate(
    "textDocument/typeDefinition", "TypeDefinitionParams", "TypeDefinitionResponse"
)
implementation = _locate(
    "textDocument/implementation", "ImplementationParams", "ImplementationResponse"
)
references = _locate(
    "textDocument/references", "ReferenceParams", "ReferencesResponse",
    context=lambda t: t.ReferenceContext(include_declaration=True),
)


def render(locations: tuple[Location, ...], root: Path | None) -> list[str]:
    """`path:line:col` per place, 1-based."""
    return [f"{display_path(loc.path, root)}:{loc.line + 1}:{loc.column + 1}"
            for loc in locations]


def _feature(
    kind: str, capability: str, locate: Locate, about: str
) -> Feature[None, tuple[Location, ...]]:
    async def ask_places(client: LanguageClient, q: Query[None]) -> tuple[Location, ...]:
        return await locate(client, q.at, q.texts, q.timeout)

    nothing = f"(no {kind.replace('_', ' ')} found)"
    return Feature(kind, capability, ask_places, render, nothing, about, params=None,
                   answer_type=tuple[Location, ...])


DEFINITION = _feature("definition", "definitionProvider", definition,
                      "Where the symbol at a place is defined.")
TYPE_DEFINITION = _feature("type_definition", "typeDefinitionProvider", type_definition,
                           "Where the type of the symbol at a place is defined.")
IMPLEMENTATION = _feature("implementation", "implementationProvider", implementation,
                          "The implementations of the interface, abstract method or protocol "
                          "at a place.")
REFERENCES = _feature("references", "referencesProvider", references,
                      "Every reference to the symbol at a place, its definition included.")
