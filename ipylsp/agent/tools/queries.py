"""Queries at a place: hover, definition, type definition, implementation, references, calls,
completions; and lsp_symbols (a file's outline or a workspace search). Places come from
`targets` (by line and column or by name); answers are `path:line:col: <source line>`."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ipylsp.agent.registry import PATH, POSITION, Arguments, Run, tool
from ipylsp.agent.result import ToolResult
from ipylsp.agent.targets import Target, target
from ipylsp.agent.text import (
    SourceLines,
    fit,
    location_data,
    location_line,
    plain,
    symbol_data,
    symbol_line,
)
from ipylsp.lsp.requests import FEATURES
from ipylsp.lsp.requests.calls import CALLS
from ipylsp.lsp.requests.completion import COMPLETIONS
from ipylsp.lsp.requests.feature import Feature
from ipylsp.lsp.requests.hover import HOVER
from ipylsp.lsp.requests.locations import DEFINITION, IMPLEMENTATION, REFERENCES, TYPE_DEFINITION
from ipylsp.lsp.requests.symbols import SYMBOLS, WORKSPACE_SYMBOLS
from ipylsp.model.answers import Location, Symbol

if TYPE_CHECKING:
    from ipylsp.agent.toolbox import Toolbox
    from ipylsp.lsp.requests import FeatureResult

MAX_COMPLETIONS = 20
_AT = "Point at it with `path` + `line` + `symbol` (or `column`), or a `symbol` name alone."


def _stored(result: ToolResult, answer: FeatureResult[Any]) -> ToolResult:
    """An answer from the store says so: `(cached 3 min ago; why)` last in the text, and
    `data.source` "cache" with `data.cached`."""
    if answer.cached is None:
        return result
    from ipylsp.analysis.report.schema import cached_json

    return dataclasses.replace(
        result, text=f"{result.text}\n{answer.cached_note()}",
        data={**result.data, "source": "cache", "cached": cached_json(answer.cached)},
    )


def _where(box: Toolbox, at: Target) -> dict[str, object]:
    return {"path": box.workspace.shown(at.path), "line": at.line + 1, "column": at.column + 1}


@tool("lsp_hover", f"The type and documentation of the symbol at a place. {_AT}", POSITION)
def lsp_hover(box: Toolbox, args: Arguments) -> ToolResult:
    at = target(box, args)
    answer = box.feature(HOVER, at.path, at.line, at.column)
    text = plain(answer.answer or "")
    shown = fit(text.splitlines(), box.max_chars) if text else "(no hover information here)"
    return ToolResult(ok=True, text=shown, data={
        "at": _where(box, at), "hover": text, "server": answer.server_id,
    })


def _places(kind: Feature[tuple[Location, ...]], noun: str) -> Run:
    """A query whose answer is places (definition, type definition, implementation,
    references): one line per place, with the source line there."""

    def run(box: Toolbox, args: Arguments) -> ToolResult:
        at = target(box, args)
        answer = box.feature(kind, at.path, at.line, at.column)
        places = answer.answer or ()
        sources = SourceLines(box.service.settings.max_file_bytes)
        lines = [location_line(box.workspace, loc, sources) for loc in places]
        return _stored(ToolResult(
            ok=True,
            text=fit(lines, box.max_chars) if lines else f"(no {noun} found)",
            data={
                "at": _where(box, at),
                "locations": [location_data(box.workspace, loc, sources)
                              for loc in places],
                "server": answer.server_id,
            },
        ), answer)

    return run


tool("lsp_definition", f"Where the symbol at a place is defined. {_AT}", POSITION)(
    _places(DEFINITION, "definition"))
tool("lsp_type_definition", f"Where the type of the symbol at a place is defined. {_AT}",
     POSITION)(_places(TYPE_DEFINITION, "type definition"))
tool("lsp_implementation",
     f"The implementations of the interface, abstract method or protocol at a place. {_AT}",
     POSITION)(_places(IMPLEMENTATION, "implementation"))
tool("lsp_references", f"Every reference to the symbol at a place, its definition included. {_AT}",
     POSITION)(_places(REFERENCES, "references"))


@tool(
    "lsp_calls",
    f"Who calls the function at a place (`incoming`), or what it calls (`outgoing`). {_AT}",
    {**POSITION, "direction": {
        "type": "string", "enum": ["incoming", "outgoing"], "default": "incoming",
        "description": "incoming: its callers; outgoing: the functions it calls.",
    }},
)
def lsp_calls(box: Toolbox, args: Arguments) -> ToolResult:
    at = target(box, args)
    direction = args.get("direction", "incoming")
    answer = box.feature(CALLS, at.path, at.line, at.column, direction=direction)
    found = answer.answer or ()
    if not found:
        return ToolResult(ok=True, text="(no function to follow here)", data={"calls": []})
    own, others = found[0], found[1:]
    head = f"{direction} calls of {symbol_line(box.workspace, own).strip()}:"
    lines = [symbol_line(box.workspace, s).strip() for s in others] or ["(none)"]
    return ToolResult(ok=True, text=head + "\n" + fit(lines, box.max_chars - len(head)), data={
        "direction": direction,
        "function": symbol_data(box.workspace, own),
        "calls": [symbol_data(box.workspace, s) for s in others],
    })


@tool(
    "lsp_symbols",
    "A file's outline (`path`), or a search for symbols by name across the workspace "
    "(`query`); with both, the file's symbols whose name contains `query`.",
    {"path": PATH, "query": {
        "type": "string", "minLength": 1, "description": "A name or part of one.",
    }},
    extra={"anyOf": [{"required": ["path"]}, {"required": ["query"]}]},
)
def lsp_symbols(box: Toolbox, args: Arguments) -> ToolResult:
    from ipylsp.agent.targets import one_file_per_language

    query = args.get("query")
    answers: list[FeatureResult[tuple[Symbol, ...]]] = []
    if "path" in args:
        path = box.workspace.resolve(args["path"])
        answers.append(box.feature(SYMBOLS, path))
        found = answers[0].answer or ()
        if query:
            found = tuple(s for s in found if query.lower() in s.name.lower())
        lines = [f"{'  ' * s.depth}{s.kind} {s.name}  {s.line + 1}:{s.column + 1}" for s in found]
        data = [symbol_data(box.workspace, s, path) for s in found]
    else:
        found_all: dict[tuple[Path | None, int, int], Symbol] = {}
        for sample in one_file_per_language(box):
            answer = box.feature(WORKSPACE_SYMBOLS, sample, query=query or "")
            answers.append(answer)
            for s in answer.answer or ():
                found_all.setdefault((s.path, s.line, s.column), s)
        symbols = list(found_all.values())
        lines = [symbol_line(box.workspace, s).strip() for s in symbols]
        data = [symbol_data(box.workspace, s) for s in symbols]
    text = fit(lines, box.max_chars) if lines else "(no symbols)"
    result = ToolResult(ok=True, text=text, data={"symbols": data})
    stored = [a for a in answers if a.cached is not None]
    return _stored(result, stored[0]) if stored else result


@tool(
    "lsp_completions",
    f"What may be typed at a place (at most {MAX_COMPLETIONS}): names, members, keywords. "
    "Give the exact `line` and `column` (1-based, where the cursor would be).",
    {"path": PATH, "line": POSITION["line"], "column": POSITION["column"]},
    required=("path", "line", "column"),
)
def lsp_completions(box: Toolbox, args: Arguments) -> ToolResult:
    at = target(box, args)
    answer = box.feature(COMPLETIONS, at.path, at.line, at.column)
    items = (answer.answer or ())[:MAX_COMPLETIONS]
    lines = [
        " ".join(part for part in (c.label, f"({c.kind})" if c.kind else "",
                                   c.detail or "") if part)
        for c in items
    ]
    if not lines:
        return ToolResult(ok=True, text="(no completions here)", data={"completions": []})
    return ToolResult(ok=True, text=fit(lines, box.max_chars), data={
        "completions": [{"label": c.label, "kind": c.kind, "detail": c.detail} for c in items],
        "server": answer.server_id,
    })


def _answering(feature: Feature[Any]) -> Run:
    """The tool of a feature that has none written by hand: its answer at a place, as its
    `render` gives it (paths relative to the workspace)."""

    def run(box: Toolbox, args: Arguments) -> ToolResult:
        at = target(box, args)
        answer = box.feature(feature, at.path, at.line, at.column)
        lines = feature.render(answer.answer, box.workspace.root) if answer.answer else []
        text = "\n".join(lines)
        return _stored(ToolResult(
            ok=True, text=fit(text.splitlines(), box.max_chars) if text else feature.empty,
            data={"at": _where(box, at), feature.kind: text, "server": answer.server_id},
        ), answer)

    return run


FEATURE_TOOLS = tuple(
    f.tool for f in FEATURES.values() if f.tool is not None and f.takes == "position"
)
"""Tools made from features (`Feature.tool`), in the order the features are registered."""

for _feature in FEATURES.values():
    if _feature.tool is not None and _feature.takes == "position":
        tool(_feature.tool, f"{_feature.about} {_AT}", POSITION)(_answering(_feature))
