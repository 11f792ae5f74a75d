"""Rename as edits: what renaming the symbol at a position would change, in code points,
never applied (`analysis.edits` shows it as a diff). Beside `features` because its answer is a
WorkspaceEdit, not a place."""

from __future__ import annotations

from typing import Any

from ipylsp.analysis.edits import TextEdit
from ipylsp.analysis.model import Range
from ipylsp.lsp import protocol
from ipylsp.lsp.client import LanguageClient
from ipylsp.lsp.documents import uri_to_path
from ipylsp.lsp.features import At, Columns, TextSource, ask, document, position


def _edits(workspace_edit: Any, columns: Columns) -> tuple[TextEdit, ...]:
    """A WorkspaceEdit's text edits (`changes` or `documentChanges`) in code points; file
    creations, renames and deletions are not text and are left out."""
    t = protocol.types()
    pairs: list[tuple[str, Any]] = []
    if workspace_edit is None:
        return ()
    if workspace_edit.document_changes:
        for change in workspace_edit.document_changes:
            if isinstance(change, t.TextDocumentEdit):
                pairs.extend((change.text_document.uri, edit) for edit in change.edits)
    elif workspace_edit.changes:
        for uri, edits in workspace_edit.changes.items():
            pairs.extend((uri, edit) for edit in edits)
    out = []
    for uri, edit in pairs:
        path = uri_to_path(uri)
        if path is None:
            continue
        start, end = edit.range.start, edit.range.end
        out.append(
            TextEdit(
                path,
                Range.of(
                    start.line,
                    columns.column(path, start.line, start.character),
                    end.line,
                    columns.column(path, end.line, end.character),
                ),
                edit.new_text,
            )
        )
    return tuple(out)


async def rename(
    client: LanguageClient, at: At, new_name: str, texts: TextSource, timeout: float
) -> tuple[TextEdit, ...]:
    """The edits renaming the symbol at `at` to `new_name` would make (nothing is applied)."""
    t = protocol.types()
    params = t.RenameParams(
        text_document=document(at.path), position=position(client, at), new_name=new_name
    )
    answer = await ask(client, t.TEXT_DOCUMENT_RENAME, params, t.RenameResponse, timeout)
    return _edits(answer, Columns(client.encoding, texts, at))
