"""The tool table: each tool is one small function registered with its JSON Schema, so the
dispatcher, the vendor schemas and the MCP server all read one table (no `if name == ...`).

Parameter schemas are plain JSON Schema (draft 2020-12 subset every vendor accepts: objects,
strings, integers, enums, no `$ref`), written once here and wrapped per vendor by `schemas`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ipylsp.agent.result import ToolResult

Arguments = Mapping[str, Any]
Schema = dict[str, Any]
"""One argument's JSON Schema."""
Run = Callable[[Any, Arguments], ToolResult]
"""A tool: (the `Toolbox`, its arguments) -> its answer. The toolbox is typed `Any` here
because `toolbox` imports this table."""


@dataclass(frozen=True, slots=True)
class Tool:
    name: str
    description: str
    properties: Mapping[str, Mapping[str, Any]]
    required: tuple[str, ...]
    run: Run
    read_only: bool = True
    """MCP annotations: every tool reads; previews show edits and apply none."""
    title: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)
    """More schema keywords for the arguments object (e.g. `anyOf` of required sets)."""

    def parameters(self) -> dict[str, Any]:
        """The arguments' JSON Schema."""
        schema: dict[str, Any] = {
            "type": "object",
            "properties": {name: dict(spec) for name, spec in self.properties.items()},
            "additionalProperties": False,
        }
        if self.required:
            schema["required"] = list(self.required)
        schema.update(self.extra)
        return schema


TOOLS: dict[str, Tool] = {}
"""Every tool by name, in the order the tool modules register them."""


def tool(
    name: str,
    description: str,
    properties: Mapping[str, Mapping[str, Any]],
    *,
    required: tuple[str, ...] = (),
    title: str = "",
    extra: Mapping[str, Any] | None = None,
) -> Callable[[Run], Run]:
    """Register the decorated function as tool `name`."""

    def register(run: Run) -> Run:
        if name in TOOLS:
            raise ValueError(f"tool {name} registered twice")
        TOOLS[name] = Tool(name, description, properties, required, run, title=title,
                           extra=extra or {})
        return run

    return register


# -- argument fragments shared by several tools ------------------------------------------------

PATH: Schema = {
    "type": "string",
    "description": "File path, relative to the workspace root (or absolute inside it).",
}
LINE: Schema = {"type": "integer", "minimum": 1, "description": "1-based line number."}
COLUMN: Schema = {
    "type": "integer",
    "minimum": 1,
    "description": "1-based column in characters. Prefer `symbol`: columns are easy to miscount.",
}
SYMBOL: Schema = {
    "type": "string",
    "minLength": 1,
    "description": (
        "A name on `line` (whole word), instead of `column`. Without `line`: looked up in "
        "`path`'s outline, or, without `path` too, across the workspace (`Class.method` "
        "narrows it); several matches are listed to choose from."
    ),
}
OCCURRENCE: Schema = {
    "type": "integer",
    "minimum": 1,
    "default": 1,
    "description": "Which occurrence of `symbol` on the line (1 = first).",
}
SEVERITY: Schema = {
    "type": "string",
    "enum": ["error", "warning", "all"],
    "description": "Lowest severity shown (default: the user's setting, errors only).",
}

POSITION: dict[str, Schema] = {
    "path": PATH,
    "line": LINE,
    "column": COLUMN,
    "symbol": SYMBOL,
    "occurrence": OCCURRENCE,
}
"""Where a query points: path + line + column, path + line + symbol, path + symbol, or a
workspace-wide symbol alone."""
