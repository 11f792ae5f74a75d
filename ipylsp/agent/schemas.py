"""The tool table in each vendor's shape, and argument validation against the same schemas.

- "openai": Chat Completions function tools, `{"type": "function", "function": {...}}`.
- "anthropic": Messages API tools, `{"name", "description", "input_schema"}`.
- "mcp": MCP `Tool` objects, `{"name", "description", "inputSchema", "annotations"}`.

Arguments are validated against the very schema the model was given, with `fastjsonschema`
(it compiles each schema once; `jsonschema` would be the field's default, but its import is
slow where Jupyter installed `rfc3987_syntax`, all of it on an agent's first call:
benchmarks/README.md, bench_mcp.py). A missing required argument is `missing_argument`,
anything else that does not fit is `invalid_argument`, each with a message naming the argument.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Literal

from ipylsp.agent.errors import ToolError
from ipylsp.agent.registry import TOOLS, Arguments, Tool

Format = Literal["openai", "anthropic", "mcp"]
FORMATS: tuple[Format, ...] = ("openai", "anthropic", "mcp")


def mcp_annotations(tool: Tool) -> dict[str, Any]:
    """MCP tool annotations: nothing here writes a file or changes the world beyond the
    language servers' view, and calling twice answers the same."""
    return {
        "title": tool.title or tool.name.replace("_", " "),
        "readOnlyHint": tool.read_only,
        "destructiveHint": False,
        "idempotentHint": True,
        "openWorldHint": False,
    }


def tool_schema(tool: Tool, format: Format) -> dict[str, Any]:
    parameters = tool.parameters()
    if format == "openai":
        return {
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description,
                "parameters": parameters,
            },
        }
    if format == "anthropic":
        return {"name": tool.name, "description": tool.description, "input_schema": parameters}
    if format == "mcp":
        return {
            "name": tool.name,
            "description": tool.description,
            "inputSchema": parameters,
            "annotations": mcp_annotations(tool),
        }
    raise ValueError(f"format must be one of {', '.join(FORMATS)}, not {format!r}")


def tool_schemas(format: Format = "openai") -> list[dict[str, Any]]:
    """Every tool's definition in `format` ("openai", "anthropic" or "mcp")."""
    return [tool_schema(tool, format) for tool in TOOLS.values()]


@functools.cache
def _validator(name: str) -> Callable[[Any], Any]:
    import fastjsonschema

    return fastjsonschema.compile(TOOLS[name].parameters())


def validate(tool: Tool, arguments: Arguments) -> None:
    """`ToolError` (missing_argument / invalid_argument) when `arguments` do not fit."""
    import fastjsonschema

    if not isinstance(arguments, dict):
        raise ToolError(
            "invalid_argument", f"arguments must be a JSON object, not {type(arguments).__name__}"
        )
    missing = [n for n in tool.required if n not in arguments]
    if missing:
        raise ToolError(
            "missing_argument",
            f"{tool.name} needs `{'`, `'.join(missing)}`: {_signature(tool)}",
        )
    try:
        # A copy: fastjsonschema fills in defaults, and the caller's dict is the model's.
        _validator(tool.name)(dict(arguments))
    except fastjsonschema.JsonSchemaValueException as error:
        raise _error(tool, arguments, error) from None


def whole_numbers(tool: Tool, arguments: Arguments) -> Arguments:
    """`arguments` (validated) with each integer argument an `int`: JSON Schema's "integer"
    admits `3.0`, which cannot index or slice. A copy when one changes (the caller's dict is
    the model's)."""
    floats = {
        name: int(value) for name, value in arguments.items()
        if isinstance(value, float) and tool.properties.get(name, {}).get("type") == "integer"
    }
    return {**arguments, **floats} if floats else arguments


def _error(tool: Tool, arguments: Arguments, error: Any) -> ToolError:
    if error.rule == "additionalProperties":
        unknown = sorted(set(arguments) - set(tool.properties))
        return ToolError(
            "invalid_argument",
            f"{tool.name} takes no `{'`, `'.join(unknown)}`: {_signature(tool)}",
        )
    if error.rule == "anyOf" and error.name == "data":  # one of several argument sets
        choices = " or ".join(
            "`" + "` + `".join(option["required"]) + "`" for option in tool.extra["anyOf"]
        )
        return ToolError("missing_argument", f"{tool.name} needs {choices}: {_signature(tool)}")
    where = str(error.name).removeprefix("data.").removeprefix("data")
    message = str(error.message).removeprefix(str(error.name)).strip()
    return ToolError(
        "invalid_argument", f"`{where or 'arguments'}` {message}; {_signature(tool)}"
    )


def _signature(tool: Tool) -> str:
    """`lsp_hover(path, line, column?, symbol?, occurrence?)` for error messages."""
    names = [n if n in tool.required else f"{n}?" for n in tool.properties]
    return f"{tool.name}({', '.join(names)})"
