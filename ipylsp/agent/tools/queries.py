"""How the queries' answers read for a model: a place per line with the source line there
(`places`), text made plain (`text`), calls, completions; and lsp_symbols (a file's outline or
a workspace search: two features, so a tool of its own). The tools are made from these in
`features`; places come from `targets` (by line and column or by name)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ipylsp.agent.registry import PATH, Arguments, tool
from ipylsp.agent.result import ToolResult
from ipylsp.agent.targets import Target
from ipylsp.agent.text import (
    SourceLines,
    fit,
    location_data,
    location_line,
    plain,
    symbol_data,
    symbol_line,
)
from ipylsp.lsp.requests.symbols import SYMBOLS, WORKSPACE_SYMBOLS
from ipylsp.model.answers import Completion, Location, Symbol

if TYPE_CHECKING:
    from ipylsp.agent.toolbox import Toolbox
    from ipylsp.lsp.requests import FeatureResult
    from ipylsp.service import Trip

MAX_COMPLETIONS = 20

Data = dict[str, object]


def stored(result: ToolResult, answer: FeatureResult[Any]) -> ToolResult:
    """An answer from the store says so: `(cached 3 min ago; why)` last in the text, and
    `data.source` "cache" with `data.cached`."""
    if answer.cached is None:
        return result
    from ipylsp.analysis.report.schema import cached_json

    return dataclasses.replace(
        result, text=f"{result.text}\n{answer.cached_note()}",
        data={**result.data, "source": "cache", "cached": cached_json(answer.cached)},
    )


def where(box: Toolbox, at: Target) -> Data:
    return {"path": box.workspace.shown(at.path), "line": at.line + 1, "column": at.column + 1}


def text(box: Toolbox, at: Target, answer: FeatureResult[Any]) -> tuple[str, Data]:
    """An answer that reads as text (hover, signature help): plain, without markdown fences."""
    lines = answer.feature.render(answer.answer, box.workspace.root) if answer.answer else []
    said = plain("\n".join(lines))
    return fit(said.splitlines(), box.max_chars) if said else "", {
        "at": where(box, at), answer.kind: said, "server": answer.server_id,
    }


def places(
    box: Toolbox, at: Target, answer: FeatureResult[tuple[Location, ...]]
) -> tuple[str, Data]:
    """An answer that is places (definition, references, ...): one line per place, with the
    source line there."""
    found = answer.answer or ()
    sources = SourceLines(box.service.settings.max_file_bytes, {at.path: at.text})
    lines = [location_line(box.workspace, loc, sources) for loc in found]
    return fit(lines, box.max_chars) if lines else "", {
        "at": where(box, at),
        "locations": [location_data(box.workspace, loc, sources) for loc in found],
        "server": answer.server_id,
    }


def calls(box: Toolbox, at: Target, answer: FeatureResult[tuple[Symbol, ...]]
          ) -> tuple[str, Data]:
    """The function at the place, then its callers or callees (the feature's direction)."""
    found = answer.answer or ()
    if not found:
        return "", {"calls": []}
    direction = answer.feature.params
    own, others = found[0], found[1:]
    head = f"{direction} calls of {symbol_line(box.workspace, own).strip()}:"
    lines = [symbol_line(box.workspace, s).strip() for s in others] or ["(none)"]
    return head + "\n" + fit(lines, box.max_chars - len(head)), {
        "direction": direction,
        "function": symbol_data(box.workspace, own),
        "calls": [symbol_data(box.workspace, s) for s in others],
    }


def completions(
    box: Toolbox, at: Target, answer: FeatureResult[tuple[Completion, ...]]
) -> tuple[str, Data]:
    """At most `MAX_COMPLETIONS`, each with its kind and detail."""
    items = (answer.answer or ())[:MAX_COMPLETIONS]
    if not items:
        return "", {"completions": []}
    lines = [
        " ".join(part for part in (c.label, f"({c.kind})" if c.kind else "",
                                   c.detail or "") if part)
        for c in items
    ]
    return fit(lines, box.max_chars), {
        "completions": [{"label": c.label, "kind": c.kind, "detail": c.detail} for c in items],
        "server": answer.server_id,
    }


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
    path = box.workspace.resolve(args["path"]) if "path" in args else None

    async def ask(trip: Trip) -> list[FeatureResult[tuple[Symbol, ...]]]:
        if path is not None:
            return [await box.ask(trip, SYMBOLS, path)]
        search = WORKSPACE_SYMBOLS.given(query or "")
        return [await box.ask(trip, search, sample)
                for sample in one_file_per_language(box, trip)]

    answers = box.trip(ask)
    if path is not None:
        found = answers[0].answer or ()
        if query:
            found = tuple(s for s in found if query.lower() in s.name.lower())
        lines = [f"{'  ' * s.depth}{s.kind} {s.name}  {s.line + 1}:{s.column + 1}" for s in found]
        data = [symbol_data(box.workspace, s, path) for s in found]
    else:
        found_all: dict[tuple[Path | None, int, int], Symbol] = {}
        for answer in answers:
            for s in answer.answer or ():
                found_all.setdefault((s.path, s.line, s.column), s)
        symbols = list(found_all.values())
        lines = [symbol_line(box.workspace, s).strip() for s in symbols]
        data = [symbol_data(box.workspace, s) for s in symbols]
    said = fit(lines, box.max_chars) if lines else SYMBOLS.empty
    result = ToolResult(ok=True, text=said, data={"symbols": data})
    cached = [a for a in answers if a.cached is not None]
    return stored(result, cached[0]) if cached else result
