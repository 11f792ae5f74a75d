"""A WorkspaceEdit (rename's answer, a code action's edit) as model `TextEdit`s in code points.

One conversion for both: they answer the same structure, and every column in it must be
converted with the text of the file it points into.
"""

from __future__ import annotations

from typing import Any

from ipylsp.lsp import protocol
from ipylsp.lsp.documents import uri_to_path
from ipylsp.lsp.requests.request import Columns
from ipylsp.model.diagnostics import Range
from ipylsp.model.edits import TextEdit


def text_edits(workspace_edit: Any, columns: Columns) -> tuple[TextEdit, ...]:
    """A structured WorkspaceEdit's text edits (`changes` or `documentChanges`) in code
    points; file creations, renames and deletions are not text and are left out."""
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
