"""textDocument/hover: the type and documentation of the symbol at a place, as plain text."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ipylsp.lsp import protocol
from ipylsp.lsp.requests.feature import Feature, Query, text_lines
from ipylsp.lsp.requests.request import At, ask, document, position

if TYPE_CHECKING:
    from ipylsp.lsp.client import LanguageClient


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


async def _ask(client: LanguageClient, q: Query[None]) -> str:
    return await hover(client, q.at, q.timeout)


HOVER = Feature(
    "hover", "hoverProvider", _ask, text_lines, "(no hover information here)",
    "The type and documentation of the symbol at a place.", params=None, answer_type=str,
)
