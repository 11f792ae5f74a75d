"""The call hierarchy: textDocument/prepareCallHierarchy, then callHierarchy/incomingCalls
(who calls the function at a place) or outgoingCalls (what it calls)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from ipylsp.lsp import protocol
from ipylsp.lsp.documents import uri_to_path
from ipylsp.lsp.requests import symbols
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
from ipylsp.model.answers import Symbol

if TYPE_CHECKING:
    from ipylsp.lsp.client import LanguageClient


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


Direction = Literal["incoming", "outgoing"]


async def calls(
    client: LanguageClient, at: At, direction: Direction, texts: TextSource, timeout: float
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
        if direction == "incoming":  # (method, params, response, the other end of a call)
            method, params_type, response, end = (
                t.CALL_HIERARCHY_INCOMING_CALLS, t.CallHierarchyIncomingCallsParams,
                t.CallHierarchyIncomingCallsResponse, "from_",
            )
        else:
            method, params_type, response, end = (
                t.CALL_HIERARCHY_OUTGOING_CALLS, t.CallHierarchyOutgoingCallsParams,
                t.CallHierarchyOutgoingCallsResponse, "to",
            )
        answer = await ask(client, method, params_type(item=item), response, timeout)
        others = [getattr(call, end) for call in answer or ()]
        for other in others[:MAX_ITEMS]:
            symbol = _item_symbol(other, columns, depth=1)
            if symbol is not None:
                found.append(symbol)
    return tuple(found)


async def _ask(client: LanguageClient, q: Query[Direction]) -> tuple[Symbol, ...]:
    return await calls(client, q.at, q.params, q.texts, q.timeout)


CALLS: Feature[Direction, tuple[Symbol, ...]] = Feature(
    "calls", "callHierarchyProvider", _ask, symbols.render, "(no function to follow here)",
    "Who calls the function at a place (`incoming`), or what it calls (`outgoing`).",
    params="incoming", answer_type=tuple[Symbol, ...],
)
"""Its parameter: the `Direction` (`CALLS.given("outgoing")`)."""
