"""textDocument/signatureHelp: the signature of the call at a place, with the parameter being
written, as plain text (the signature, the active parameter, the documentation)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ipylsp.lsp import protocol
from ipylsp.lsp.requests.feature import Feature, Query, text_lines
from ipylsp.lsp.requests.request import At, ask, document, position
from ipylsp.model.positions import wire_to_column

if TYPE_CHECKING:
    from ipylsp.lsp.client import LanguageClient


async def signature_help(client: LanguageClient, at: At, timeout: float) -> str:
    """The active signature at `at`, its active parameter and documentation ("" when the
    server has none there)."""
    t = protocol.types()
    params = t.SignatureHelpParams(text_document=document(at.path), position=position(client, at))
    answer = await ask(
        client, t.TEXT_DOCUMENT_SIGNATURE_HELP, params, t.SignatureHelpResponse, timeout
    )
    if answer is None or not answer.signatures:
        return ""
    chosen = answer.active_signature or 0
    signature = answer.signatures[chosen if 0 <= chosen < len(answer.signatures) else 0]
    lines = [signature.label]
    active = signature.active_parameter
    if active is None:
        active = answer.active_parameter
    parameters = signature.parameters or []
    if active is not None and 0 <= active < len(parameters):
        label = parameters[active].label
        if not isinstance(label, str):  # [start, end) in the signature's label, wire units
            start, end = (wire_to_column(signature.label, units, client.encoding)
                          for units in label)  # the whole label: it may span lines
            label = signature.label[start:end]
        lines.append(f"parameter: {label}")
    documentation = signature.documentation
    text = getattr(documentation, "value", documentation)
    if isinstance(text, str) and text.strip():
        lines += ["", text.strip()]
    return "\n".join(lines)


async def _ask(client: LanguageClient, q: Query[None]) -> str:
    return await signature_help(client, q.at, q.timeout)


SIGNATURE_HELP = Feature(
    "signature_help", "signatureHelpProvider", _ask, text_lines, "(no signature here)",
    "The signature of the call at a place, with the parameter being written.", params=None,
    answer_type=str,
)
