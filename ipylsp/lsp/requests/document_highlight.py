"""textDocument/documentHighlight: every place in its own file where the symbol at a place is
written or read, as places (in code points, from the queried file's text)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ipylsp.lsp import protocol
from ipylsp.lsp.requests.feature import Feature, Query
from ipylsp.lsp.requests.locations import render
from ipylsp.lsp.requests.request import MAX_ITEMS, At, ask, document, position
from ipylsp.model.answers import Location
from ipylsp.model.positions import LineIndex

if TYPE_CHECKING:
    from ipylsp.lsp.client import LanguageClient


async def document_highlight(
    client: LanguageClient, at: At, timeout: float
) -> tuple[Location, ...]:
    """The places in `at`'s file that the server highlights with the symbol at `at`."""
    t = protocol.types()
    params = t.DocumentHighlightParams(
        text_document=document(at.path), position=position(client, at)
    )
    answer = await ask(
        client, t.TEXT_DOCUMENT_DOCUMENT_HIGHLIGHT, params, t.DocumentHighlightResponse, timeout
    )
    index = LineIndex(at.text)
    starts = [item.range.start for item in list(answer or ())[:MAX_ITEMS]]
    return tuple(
        Location(at.path, s.line, index.to_column(s.line, s.character, client.encoding))
        for s in starts
    )


async def _ask(client: LanguageClient, q: Query[None]) -> tuple[Location, ...]:
    return await document_highlight(client, q.at, q.timeout)


DOCUMENT_HIGHLIGHT = Feature(
    "document_highlight", "documentHighlightProvider", _ask, render, "(no highlights here)",
    "Every place in its file where the symbol at a place is written or read.", params=None,
    answer_type=tuple[Location, ...],
)
