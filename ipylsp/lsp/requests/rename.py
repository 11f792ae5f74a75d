"""Rename as edits: what renaming the symbol at a position would change, in code points,
never applied (`analysis.edits` shows it as a diff). Beside `features` because its answer is a
WorkspaceEdit, not a place."""

from __future__ import annotations

from ipylsp.lsp import protocol
from ipylsp.lsp.client import LanguageClient
from ipylsp.lsp.requests.queries import At, Columns, TextSource, ask, document, position
from ipylsp.lsp.requests.workspace_edit import text_edits
from ipylsp.model.edits import TextEdit


async def rename(
    client: LanguageClient, at: At, new_name: str, texts: TextSource, timeout: float
) -> tuple[TextEdit, ...]:
    """The edits renaming the symbol at `at` to `new_name` would make (nothing is applied)."""
    t = protocol.types()
    params = t.RenameParams(
        text_document=document(at.path), position=position(client, at), new_name=new_name
    )
    answer = await ask(client, t.TEXT_DOCUMENT_RENAME, params, t.RenameResponse, timeout)
    return text_edits(answer, Columns(client.encoding, texts, at))
