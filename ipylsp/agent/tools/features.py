"""The tools that answer a feature, made one way (`answering`) and listed in one table
(`QUERIES`, one line per tool, in the order models see them): the place from `targets` and
the feature asked there in one trip to the service's loop (one deadline, the file read once),
its answer shown by the tool's reading of it (`queries`, `changes`), or the feature's own
`empty` when there is nothing (the text every surface says)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from ipylsp.agent.registry import PATH, POSITION, Arguments, tool
from ipylsp.agent.result import ToolResult
from ipylsp.agent.targets import Target, target
from ipylsp.agent.tools.changes import quick_fixes, rename_diff
from ipylsp.agent.tools.queries import (
    MAX_COMPLETIONS,
    calls,
    completions,
    places,
    stored,
    text,
)
from ipylsp.lsp.requests.calls import CALLS
from ipylsp.lsp.requests.code_actions import CODE_ACTIONS
from ipylsp.lsp.requests.completion import COMPLETIONS
from ipylsp.lsp.requests.document_highlight import DOCUMENT_HIGHLIGHT
from ipylsp.lsp.requests.hover import HOVER
from ipylsp.lsp.requests.locations import DEFINITION, IMPLEMENTATION, REFERENCES, TYPE_DEFINITION
from ipylsp.lsp.requests.rename import RENAME
from ipylsp.lsp.requests.signature_help import SIGNATURE_HELP

if TYPE_CHECKING:
    from ipylsp.agent.toolbox import Toolbox
    from ipylsp.lsp.requests import Feature, FeatureResult
    from ipylsp.service import Trip

A = TypeVar("A")
P = TypeVar("P")

Shown = Callable[["Toolbox", Target, "FeatureResult[A]"], tuple[str, dict[str, object]]]
"""How a tool reads its feature's answer: its text ("" for nothing) and its data."""

AT = "Point at it with `path` + `line` + `symbol` (or `column`), or a `symbol` name alone."


Place = Callable[["Toolbox", "Trip", Arguments], Awaitable[Target]]
"""Where the arguments point, found in the trip (`targets.target`)."""


async def _on_line(box: Toolbox, trip: Trip, args: Arguments) -> Target:
    """A file's line (code actions): its first column."""
    return await target(box, trip, {"path": args["path"], "line": args["line"], "column": 1})


def answering(
    name: str,
    feature: Feature[P, A],
    shown: Shown[A],
    description: str | None = None,
    *,
    properties: Mapping[str, Mapping[str, Any]] = POSITION,
    required: tuple[str, ...] = (),
    params: Callable[[Arguments], P] | None = None,
    place: Place = target,
) -> str:
    """Register tool `name`: `feature` (given `params` of the arguments) at the `place` the
    arguments point at, its answer `shown`; described by the feature's `about` and how to
    point at a place, unless `description` says otherwise."""

    async def ask(box: Toolbox, trip: Trip, args: Arguments) -> tuple[Target, FeatureResult[A]]:
        at = await place(box, trip, args)
        given = feature if params is None else feature.given(params(args))
        return at, await box.ask(trip, given, at.path, at.line, at.column)

    def run(box: Toolbox, args: Arguments) -> ToolResult:
        at, answer = box.trip(lambda trip: ask(box, trip, args))
        said, data = shown(box, at, answer)
        return stored(ToolResult(ok=True, text=said or feature.empty, data=data), answer)

    tool(name, description or f"{feature.about} {AT}", properties, required=required)(run)
    return name


QUERIES: tuple[str, ...] = (
    answering("lsp_hover", HOVER, text),
    answering("lsp_definition", DEFINITION, places),
    answering("lsp_type_definition", TYPE_DEFINITION, places),
    answering("lsp_implementation", IMPLEMENTATION, places),
    answering("lsp_references", REFERENCES, places),
    answering("lsp_document_highlight", DOCUMENT_HIGHLIGHT, places),
    answering("lsp_calls", CALLS, calls, params=lambda args: args.get("direction", "incoming"),
              properties={**POSITION, "direction": {
                  "type": "string", "enum": ["incoming", "outgoing"], "default": "incoming",
                  "description": "incoming: its callers; outgoing: the functions it calls.",
              }}),
    "lsp_symbols",  # two features, a file's outline or a workspace search: `queries`
    answering("lsp_completions", COMPLETIONS, completions,
              f"What may be typed at a place (at most {MAX_COMPLETIONS}): names, members, "
              "keywords. Give the exact `line` and `column` (1-based, where the cursor would "
              "be).", properties={"path": PATH, "line": POSITION["line"],
                                  "column": POSITION["column"]},
              required=("path", "line", "column")),
    answering("lsp_signature_help", SIGNATURE_HELP, text),
    answering("lsp_rename_preview", RENAME, rename_diff,
              "What renaming the symbol at a place to `new_name` would change in every file, "
              "as a unified diff. Nothing is written. Point at the symbol with `path` + `line` "
              "+ `symbol` (or `column`), or a `symbol` name alone.",
              properties={"new_name": {"type": "string", "minLength": 1,
                                       "description": "The new name."}, **POSITION},
              required=("new_name",), params=lambda args: args["new_name"]),
    answering("lsp_code_actions", CODE_ACTIONS, quick_fixes,
              "The quick fixes the language servers offer for the problems on a line (e.g. "
              "remove an unused import, add a missing import), each with its unified diff. "
              "Nothing is applied.", properties={"path": PATH, "line": POSITION["line"]},
              required=("path", "line"), place=_on_line),
)
"""Every query tool, one line each, in the order models see them."""
