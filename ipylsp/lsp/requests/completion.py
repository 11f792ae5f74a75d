"""textDocument/completion: what may be written at a place."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ipylsp.lsp import protocol
from ipylsp.lsp.requests.feature import Feature, Query
from ipylsp.lsp.requests.request import MAX_ITEMS, At, ask, document, position
from ipylsp.model.answers import Completion

if TYPE_CHECKING:
    from ipylsp.lsp.client import LanguageClient


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


async def _ask(client: LanguageClient, q: Query[None]) -> tuple[Completion, ...]:
    return await completions(client, q.at, q.timeout)


def _render(found: tuple[Completion, ...], root: Path | None) -> list[str]:
    return [item.label for item in found]


COMPLETIONS = Feature(
    "completions", "completionProvider", _ask, _render, "(no completions here)",
    "What may be written at a place: names, members, keywords.", params=None,
    answer_type=tuple[Completion, ...],
)
