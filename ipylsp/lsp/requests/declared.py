"""Every feature ipylsp declares, in one table by kind (`DECLARED`): what a feature is known by
where its functions cannot go.

A declared feature crosses a process boundary (a kernel's `%lsp hover` answered by the
broker's servers) as its kind and its `params`, plain values read back as the type of the
declared default (a direction, a new name, a query: `None` for most); the other side finds it
here and asks it. A feature of a caller's own (another `ask`, another rendering), or one given
parameters of another type, is not one of them: it is asked where it was made. Each surface's
table (the `%lsp` magics, the Python API, the agent tools) names those it offers.
"""

from __future__ import annotations

from typing import Any

from ipylsp.lsp.requests.calls import CALLS
from ipylsp.lsp.requests.code_actions import CODE_ACTIONS
from ipylsp.lsp.requests.completion import COMPLETIONS
from ipylsp.lsp.requests.document_highlight import DOCUMENT_HIGHLIGHT
from ipylsp.lsp.requests.feature import Feature
from ipylsp.lsp.requests.hover import HOVER
from ipylsp.lsp.requests.locations import DEFINITION, IMPLEMENTATION, REFERENCES, TYPE_DEFINITION
from ipylsp.lsp.requests.rename import RENAME
from ipylsp.lsp.requests.signature_help import SIGNATURE_HELP
from ipylsp.lsp.requests.symbols import SYMBOLS, WORKSPACE_SYMBOLS
from ipylsp.model.wire import from_wire, to_wire

DECLARED: dict[str, Feature[Any, Any]] = {feature.kind: feature for feature in (
    HOVER, DEFINITION, TYPE_DEFINITION, IMPLEMENTATION, REFERENCES, DOCUMENT_HIGHLIGHT,
    COMPLETIONS, SIGNATURE_HELP, SYMBOLS, WORKSPACE_SYMBOLS, CALLS, RENAME, CODE_ACTIONS,
)}
"""Every declared feature, by its kind (each module of this package declares its own)."""


def wire_form(feature: Feature[Any, Any]) -> dict[str, Any] | None:
    """`feature` as it crosses a process boundary, `{"kind": ..., "params": ...}`; None when
    it is not a declared one (its own functions, or parameters of another type)."""
    found = DECLARED.get(feature.kind)
    if found is None or type(feature.params) is not type(found.params):
        return None
    if found.given(feature.params) != feature:
        return None
    return {"kind": feature.kind, "params": to_wire(feature.params)}


def from_wire_form(data: Any) -> Feature[Any, Any]:
    """The declared feature `wire_form` made `data` from, given its parameters; `ValueError`
    for a kind that is not declared or parameters not of its type."""
    if not isinstance(data, dict):
        raise ValueError("a feature is an object on the wire")
    found = DECLARED.get(str(data.get("kind")))
    if found is None:
        raise ValueError(f"there is no feature {data.get('kind')!r}")
    return found.given(from_wire(type(found.params), data.get("params")))
