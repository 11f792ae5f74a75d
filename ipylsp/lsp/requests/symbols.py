"""textDocument/documentSymbol (a file's outline) and workspace/symbol (symbols by name
anywhere in a server's workspace)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ipylsp.lsp import protocol
from ipylsp.lsp.documents import uri_to_path
from ipylsp.lsp.requests.feature import Feature, Query
from ipylsp.lsp.requests.request import MAX_ITEMS, Columns, TextSource, ask, document
from ipylsp.model.answers import Symbol
from ipylsp.model.diagnostics import display_path
from ipylsp.model.positions import Encoding, LineIndex

if TYPE_CHECKING:
    from ipylsp.lsp.client import LanguageClient


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
    columns = Columns(client.encoding, texts)
    found: list[Symbol] = []
    for item in list(answer or ())[:MAX_ITEMS]:
        location = item.location
        rng = getattr(location, "range", None)
        path = uri_to_path(location.uri)
        if path is None or rng is None:  # a location without a range needs a resolve
            continue
        start = rng.start
        found.append(
            Symbol(
                name=item.name,
                kind=protocol.enum_name(t.SymbolKind, item.kind) or "symbol",
                line=start.line,
                column=columns.column(path, start.line, start.character),
                path=path,
                container=item.container_name,
            )
        )
    return tuple(found)


def render(symbols: tuple[Symbol, ...], root: Path | None) -> list[str]:
    """`kind name [path:line:col]` per symbol, indented by depth, 1-based."""
    return [
        f"{'  ' * s.depth}{s.kind} {s.name} "
        f"[{display_path(s.path, root) + ':' if s.path else ''}{s.line + 1}:{s.column + 1}]"
        for s in symbols
    ]


async def _outline_of(client: LanguageClient, q: Query[None]) -> tuple[Symbol, ...]:
    return await document_symbols(client, q.at.path, q.at.text, q.timeout)


async def _named(client: LanguageClient, q: Query[str]) -> tuple[Symbol, ...]:
    return await workspace_symbols(client, q.params, q.texts, q.timeout)


SYMBOLS = Feature(
    "symbols", "documentSymbolProvider", _outline_of, render, "(no symbols)",
    "A file's outline: its classes, functions and variables, nested.",
    params=None, answer_type=tuple[Symbol, ...], takes="file",
)
WORKSPACE_SYMBOLS = Feature(
    "workspace_symbols", "workspaceSymbolProvider", _named, render, "(no symbols)",
    "Symbols whose name matches a query, anywhere in the workspace.",
    params="", answer_type=tuple[Symbol, ...], takes="query",
)
"""Its parameter: the query (`WORKSPACE_SYMBOLS.given("area")`); the path only chooses the
servers."""
