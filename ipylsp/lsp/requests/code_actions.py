"""textDocument/codeAction: quick fixes for the problems on one line, as edits in code points
(never applied).

A server finds its fixes from the diagnostics the request carries, exactly as it sent them
(ruff keeps each fix in the diagnostic's `data`), so the document's diagnostics are obtained
for its current text first (`OpenDocument.wire` keeps them raw). One request per diagnostic
touching the line, with the diagnostic's own range: basedpyright looks for the undefined name
at the range's start to offer its add-import. An action whose edit the server deferred is
resolved (`codeAction/resolve`); one that only runs a server command keeps the command's name.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ipylsp.lsp import protocol
from ipylsp.lsp.documents import path_to_uri
from ipylsp.lsp.errors import ClientError
from ipylsp.lsp.requests.feature import Feature, Query
from ipylsp.lsp.requests.request import At, Columns, TextSource, document
from ipylsp.lsp.requests.workspace_edit import text_edits
from ipylsp.model.answers import CodeAction
from ipylsp.model.diagnostics import UnknownReason
from ipylsp.model.positions import LineIndex

if TYPE_CHECKING:
    from ipylsp.lsp.client import LanguageClient

log = logging.getLogger(__name__)

QUICK_FIX = "quickfix"


def wire_range(diagnostic: Any) -> tuple[int, int, int, int] | None:
    """A wire diagnostic's range as (start line, start units, end line, end units)."""
    try:
        start, end = diagnostic["range"]["start"], diagnostic["range"]["end"]
        values = (start["line"], start["character"], end["line"], end["character"])
    except (KeyError, TypeError):
        return None
    ok = all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in values)
    return values if ok else None


def touches(diagnostic: Any, line: int) -> bool:
    """Whether a wire diagnostic's range covers a character of `line` (a range that ends at
    the start of `line` does not)."""
    rng = wire_range(diagnostic)
    if rng is None:
        return False
    first, _, last, end_units = rng
    if last > first and end_units == 0:
        last -= 1
    return first <= line <= last


def _code(code: object) -> str | None:
    return str(code) if isinstance(code, (str, int)) and not isinstance(code, bool) else None


async def code_actions(
    client: LanguageClient,
    path: Path,
    text: str,
    language_id: str,
    line: int,
    texts: TextSource,
    deadline: float,
) -> tuple[CodeAction, ...]:
    """The quick fixes `client`'s server offers for the problems on 0-based `line` of `text`."""
    version, _ = await client.diagnostics(path, text, language_id, deadline=deadline)
    doc = client.documents.get(path_to_uri(path))
    wire = doc.wire if doc is not None else None
    items = wire[1] if wire is not None and wire[0] == version else []
    on_line = [d for d in items if touches(d, line)]
    index = LineIndex(text)
    end = index.to_wire(line, len(index.line(line)), client.encoding)
    asks = [(_range(*wire_range(d) or (line, 0, line, end)), [d]) for d in on_line]
    asks = asks or [(_range(line, 0, line, end), [])]
    columns = Columns(client.encoding, texts, At(path, text, line, 0))
    found: dict[tuple[object, ...], CodeAction] = {}
    for rng, diagnostics in asks:
        raw = await _request(client, path, rng, diagnostics, deadline)
        for action in _actions(client, raw, diagnostics, columns):
            found.setdefault((action.title, action.edits, action.command), action)
    return tuple(found.values())


def _range(line: int, units: int, end_line: int, end_units: int) -> Any:
    t = protocol.types()
    return t.Range(
        start=t.Position(line=line, character=units),
        end=t.Position(line=end_line, character=end_units),
    )


async def _request(
    client: LanguageClient, path: Path, rng: Any, diagnostics: list[Any], deadline: float
) -> list[Any]:
    """One textDocument/codeAction for `rng` (wire units), deferred edits resolved; the
    actions as the server sent them."""
    t = protocol.types()
    params = protocol.params(
        t.CodeActionParams(
            text_document=document(path),
            range=rng,
            context=t.CodeActionContext(diagnostics=[], only=[t.CodeActionKind.QuickFix]),
        )
    )
    params["context"]["diagnostics"] = diagnostics  # as the server sent them, `data` and all
    answer = await client.request(t.TEXT_DOCUMENT_CODE_ACTION, params, _left(deadline))
    raw = [item for item in answer if isinstance(item, dict)] if isinstance(answer, list) else []
    provider = client.server_capabilities.get("codeActionProvider")
    resolves = isinstance(provider, dict) and bool(provider.get("resolveProvider"))
    out = []
    for item in raw:
        if resolves and "edit" not in item and "command" not in item:
            try:
                resolved = await client.request(
                    t.CODE_ACTION_RESOLVE, item, _left(deadline)
                )
            except ClientError as exc:
                if exc.reason is not UnknownReason.FAILED:
                    raise
                log.debug("%s: dropped an action that did not resolve: %s", client.spec.id, exc)
                continue
            item = resolved if isinstance(resolved, dict) else item
        out.append(item)
    return out


def _left(deadline: float) -> float:
    return max(deadline - time.monotonic(), 0.1)


def _actions(
    client: LanguageClient, raw: list[Any], asked: list[Any], columns: Columns
) -> list[CodeAction]:
    t = protocol.types()
    method = t.TEXT_DOCUMENT_CODE_ACTION
    structured = protocol.answer(method, raw, t.CodeActionResponse) or []
    asked_codes = tuple(c for c in (_code(d.get("code")) for d in asked) if c)
    out = []
    for item in structured:
        if isinstance(item, t.Command):
            out.append(CodeAction(item.title, client.spec.id, command=item.command))
            continue
        kind = None if item.kind is None else str(getattr(item.kind, "value", item.kind))
        if item.disabled is not None or (kind and kind.split(".")[0] != QUICK_FIX):
            continue
        own = [code for d in item.diagnostics or () if (code := _code(d.code))]
        out.append(
            CodeAction(
                title=item.title,
                server_id=client.spec.id,
                kind=kind,
                edits=text_edits(item.edit, columns),
                command=item.command.command if item.command is not None else None,
                fixes=tuple(dict.fromkeys(own)) or asked_codes,
            )
        )
    return out


async def _ask(client: LanguageClient, q: Query[None]) -> tuple[CodeAction, ...]:
    at = q.at
    return await code_actions(
        client, at.path, at.text, q.language_id, at.line, q.texts, q.deadline
    )


def _render(actions: tuple[CodeAction, ...], root: Path | None) -> list[str]:
    return [f"{a.title} [{a.server_id}]" for a in actions]


CODE_ACTIONS = Feature(
    "code_actions", "codeActionProvider", _ask, _render, "(no quick fixes on this line)",
    "The quick fixes every server offers for the problems on a line (never applied).",
    params=None, answer_type=tuple[CodeAction, ...], takes="line", merged=True,
)
