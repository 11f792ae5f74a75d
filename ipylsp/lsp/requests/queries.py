"""One typed function per language feature: hover, definition, type definition,
implementation, references, completions, document and workspace symbols, call hierarchy
(rename, whose answer is edits, is in `lsp/rename.py`).

Each builds its request from lsprotocol's params, sends it, structures the answer with
lsprotocol and returns model values (`analysis.answers`): 0-based lines and code-point
columns, converted with the text of the file each position belongs to. Choosing the server
and turning failures into results is the service's job; here a failure is a `ClientError`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ipylsp.lsp import protocol
from ipylsp.lsp.client import LanguageClient
from ipylsp.lsp.documents import path_to_uri, uri_to_path
from ipylsp.model.answers import Completion, Location, Symbol
from ipylsp.model.positions import Encoding, LineIndex

MAX_ITEMS = 100

TextSource = Callable[[Path], "str | None"]
"""The text of a file a server's answer points into (None: unreadable), for its columns."""


@dataclass(frozen=True, slots=True)
class At:
    """A position in a document the server has open with `text`."""

    path: Path
    text: str
    line: int
    column: int


def supports(client: LanguageClient, capability: str) -> bool:
    """Whether the server advertised `capability` (e.g. "hoverProvider")."""
    return bool(client.server_capabilities.get(capability))


def position(client: LanguageClient, at: At) -> Any:
    """`at` as the wire's Position, in the encoding the server negotiated."""
    t = protocol.types()
    character = LineIndex(at.text).to_wire(at.line, at.column, client.encoding)
    return t.Position(line=at.line, character=character)


def document(path: Path) -> Any:
    """The TextDocumentIdentifier of a file."""
    return protocol.types().TextDocumentIdentifier(uri=path_to_uri(path))


async def ask(
    client: LanguageClient, method: str, params: Any, response: type[Any], timeout: float
) -> Any:
    """Send a request built from lsprotocol params; its answer structured as `response`."""
    result = await client.request(method, protocol.params(params), timeout)
    return protocol.answer(method, result, response)


# -- hover ----------------------------------------------------------------------------------------


async def hover(client: LanguageClient, at: At, timeout: float) -> str:
    """The hover text at a position ("" when the server has none)."""
    t = protocol.types()
    params = t.HoverParams(text_document=document(at.path), position=position(client, at))
    answer = await ask(client, t.TEXT_DOCUMENT_HOVER, params, t.HoverResponse, timeout)
    if answer is None:
        return ""
    contents = answer.contents
    parts = list(contents) if isinstance(contents, (list, tuple)) else [contents]
    texts = [part if isinstance(part, str) else getattr(part, "value", "") for part in parts]
    return "\n".join(t.strip() for t in texts if isinstance(t, str) and t.strip())


# -- locations ------------------------------------------------------------------------------------


class Columns:
    """Wire columns -> code points, one `LineIndex` per file an answer points into."""

    def __init__(self, encoding: Encoding, texts: TextSource, known: At) -> None:
        self._encoding = encoding
        self._texts = texts
        self._indexes: dict[Path, LineIndex] = {known.path: LineIndex(known.text)}

    def column(self, path: Path, line: int, units: int) -> int:
        index = self._indexes.get(path)
        if index is None:
            index = self._indexes[path] = LineIndex(self._texts(path) or "")
        return index.to_column(line, units, self._encoding)


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


async def _locate(
    client: LanguageClient,
    at: At,
    texts: TextSource,
    timeout: float,
    method: str,
    params_type: str,
    response: str,
    **extra: Any,
) -> tuple[Location, ...]:
    t = protocol.types()
    params = getattr(t, params_type)(
        text_document=document(at.path), position=position(client, at), **extra
    )
    answer = await ask(client, method, params, getattr(t, response), timeout)
    return _locations(answer, Columns(client.encoding, texts, at))


async def definition(
    client: LanguageClient, at: At, texts: TextSource, timeout: float
) -> tuple[Location, ...]:
    t = protocol.types()
    return await _locate(
        client,
        at,
        texts,
        timeout,
        t.TEXT_DOCUMENT_DEFINITION,
        "DefinitionParams",
        "DefinitionResponse",
    )


async def type_definition(
    client: LanguageClient, at: At, texts: TextSource, timeout: float
) -> tuple[Location, ...]:
    t = protocol.types()
    return await _locate(
        client,
        at,
        texts,
        timeout,
        t.TEXT_DOCUMENT_TYPE_DEFINITION,
        "TypeDefinitionParams",
        "TypeDefinitionResponse",
    )


async def implementation(
    client: LanguageClient, at: At, texts: TextSource, timeout: float
) -> tuple[Location, ...]:
    t = protocol.types()
    return await _locate(
        client,
        at,
        texts,
        timeout,
        t.TEXT_DOCUMENT_IMPLEMENTATION,
        "ImplementationParams",
        "ImplementationResponse",
    )


async def references(
    client: LanguageClient, at: At, texts: TextSource, timeout: float
) -> tuple[Location, ...]:
    t = protocol.types()
    return await _locate(
        client,
        at,
        texts,
        timeout,
        t.TEXT_DOCUMENT_REFERENCES,
        "ReferenceParams",
        "ReferencesResponse",
        context=t.ReferenceContext(include_declaration=True),
    )


# -- completions ----------------------------------------------------------------------------------


async def completions(
    client: LanguageClient, at: At, timeout: float, limit: int = MAX_ITEMS
) -> tuple[Completion, ...]:
    t = protocol.types()
    params = t.CompletionParams(text_document=document(at.path), position=position(client, at))
    answer = await ask(client, t.TEXT_DOCUMENT_COMPLETION, params, t.CompletionResponse, timeout)
    items = answer.items if isinstance(answer, t.CompletionList) else answer or ()
    return tuple(
        Completion(item.label, protocol.enum_name(t.CompletionItemKind, item.kind), item.detail)
        for item in list(items)[:limit]
    )


# -- symbols --------------------------------------------------------------------------------------


async def document_symbols(
    client: LanguageClient, path: Path, text: str, timeout: float
) -> tuple[Symbol, ...]:
    """A file's outline, nested symbols after their parent with `depth` + 1."""
    t = protocol.types()
    params = t.DocumentSymbolParams(text_document=document(path))
    answer = await ask(
        client, t.TEXT_DOCUMENT_DOCUMENT_SYMBOL, params, t.DocumentSymbolResponse, timeout
    )
    index = LineIndex(text)
    out: list[Symbol] = []
    _outline(answer or (), index, client.encoding, 0, out)
    return tuple(out[:MAX_ITEMS])


def _outline(
    items: Iterable[Any], index: LineIndex, encoding: Encoding, depth: int, out: list[Symbol]
) -> None:
    t = protocol.types()
    for item in items:
        if len(out) >= MAX_ITEMS:
            return
        nested = isinstance(item, t.DocumentSymbol)
        start = item.selection_range.start if nested else item.location.range.start
        out.append(
            Symbol(
                name=item.name,
                kind=protocol.enum_name(t.SymbolKind, item.kind) or "symbol",
                line=start.line,
                column=index.to_column(start.line, start.character, encoding),
                depth=depth,
                container=None if nested else item.container_name,
            )
        )
        if nested and item.children:
            _outline(item.children, index, encoding, depth + 1, out)


async def workspace_symbols(
    client: LanguageClient, query: str, texts: TextSource, timeout: float
) -> tuple[Symbol, ...]:
    """Symbols whose name matches `query` anywhere in the server's workspace."""
    t = protocol.types()
    answer = await ask(
        client,
        t.WORKSPACE_SYMBOL,
        t.WorkspaceSymbolParams(query=query),
        t.WorkspaceSymbolResponse,
        timeout,
    )
    indexes: dict[Path, LineIndex] = {}
    found: list[Symbol] = []
    for item in list(answer or ())[:MAX_ITEMS]:
        location = item.location
        rng = getattr(location, "range", None)
        path = uri_to_path(location.uri)
        if path is None or rng is None:  # a location without a range needs a resolve
            continue
        index = indexes.get(path)
        if index is None:
            index = indexes[path] = LineIndex(texts(path) or "")
        start = rng.start
        found.append(
            Symbol(
                name=item.name,
                kind=protocol.enum_name(t.SymbolKind, item.kind) or "symbol",
                line=start.line,
                column=index.to_column(start.line, start.character, client.encoding),
                path=path,
                container=item.container_name,
            )
        )
    return tuple(found)


# -- call hierarchy -------------------------------------------------------------------------------


def _item_symbol(item: Any, columns: Columns, depth: int = 0) -> Symbol | None:
    t = protocol.types()
    path = uri_to_path(item.uri)
    if path is None:
        return None
    start = item.selection_range.start
    return Symbol(
        name=item.name,
        kind=protocol.enum_name(t.SymbolKind, item.kind) or "symbol",
        line=start.line,
        column=columns.column(path, start.line, start.character),
        depth=depth,
        path=path,
        container=item.detail,
    )


async def calls(
    client: LanguageClient, at: At, direction: str, texts: TextSource, timeout: float
) -> tuple[Symbol, ...]:
    """Who calls the function at `at` ("incoming") or what it calls ("outgoing"): the
    prepared item itself first (depth 0), then each caller or callee (depth 1)."""
    t = protocol.types()
    if direction not in ("incoming", "outgoing"):
        raise ValueError(f"direction must be incoming or outgoing, not {direction!r}")
    params = t.CallHierarchyPrepareParams(
        text_document=document(at.path), position=position(client, at)
    )
    items = await ask(
        client,
        t.TEXT_DOCUMENT_PREPARE_CALL_HIERARCHY,
        params,
        t.CallHierarchyPrepareResponse,
        timeout,
    )
    columns = Columns(client.encoding, texts, at)
    found: list[Symbol] = []
    for item in list(items or ())[:1]:  # the symbol at the position
        own = _item_symbol(item, columns)
        if own is not None:
            found.append(own)
        if direction == "incoming":
            answer = await ask(
                client,
                t.CALL_HIERARCHY_INCOMING_CALLS,
                t.CallHierarchyIncomingCallsParams(item=item),
                t.CallHierarchyIncomingCallsResponse,
                timeout,
            )
            others = [call.from_ for call in answer or ()]
        else:
            answer = await ask(
                client,
                t.CALL_HIERARCHY_OUTGOING_CALLS,
                t.CallHierarchyOutgoingCallsParams(item=item),
                t.CallHierarchyOutgoingCallsResponse,
                timeout,
            )
            others = [call.to for call in answer or ()]
        for other in others[:MAX_ITEMS]:
            symbol = _item_symbol(other, columns, depth=1)
            if symbol is not None:
                found.append(symbol)
    return tuple(found)
