"""textDocument/rename as edits: what renaming the symbol at a position would change, in code
points, never applied (`model.edits` shows it as a diff)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ipylsp.lsp import protocol
from ipylsp.lsp.requests.feature import Feature, Query
from ipylsp.lsp.requests.request import At, Columns, TextSource, ask, document, position
from ipylsp.lsp.requests.workspace_edit import text_edits
from ipylsp.model.diagnostics import display_path
from ipylsp.model.edits import TextEdit

if TYPE_CHECKING:
    from ipylsp.lsp.client import LanguageClient


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


async def _ask(client: LanguageClient, q: Query[str]) -> tuple[TextEdit, ...]:
    return await rename(client, q.at, q.params, q.texts, q.timeout)


def _render(edits: tuple[TextEdit, ...], root: Path | None) -> list[str]:
    return [
        f"{display_path(e.path, root)}:{e.range.start.line + 1}:{e.range.start.column + 1} "
        f"-> {e.new_text!r}"
        for e in edits
    ]


RENAME = Feature(
    "rename", "renameProvider", _ask, _render, "(nothing to rename here)",
    "What renaming the symbol at a place would change, as edits (never applied).", params="",
    answer_type=tuple[TextEdit, ...],
)
"""Its parameter: the new name (`RENAME.given("Box")`)."""
