"""ipylsp for models: LSP tools with JSON Schema definitions, answers sized for a model, and
errors as codes. Every agent surface (in-kernel tool loops, `ipylsp mcp`, the Jupyter
server's routes) serves this one tool table.

    >>> from ipylsp.agent import call_tool, tool_schemas
    >>> tools = tool_schemas("openai")              # give these to the model
    >>> result = call_tool("lsp_check", {"path": "app.py"})
    >>> result.ok, result.text                      # never raises; error_code when not ok
"""

from ipylsp.agent import tools as _tools  # registers every tool in the table
from ipylsp.agent.errors import CODES, ErrorCode, ToolError
from ipylsp.agent.registry import TOOLS, Tool
from ipylsp.agent.result import ToolResult
from ipylsp.agent.schemas import FORMATS, tool_schemas
from ipylsp.agent.toolbox import Toolbox, call_tool

TOOL_NAMES: tuple[str, ...] = tuple(TOOLS)

__all__ = [
    "CODES",
    "FORMATS",
    "TOOLS",
    "TOOL_NAMES",
    "ErrorCode",
    "Tool",
    "ToolError",
    "ToolResult",
    "Toolbox",
    "call_tool",
    "tool_schemas",
]

del _tools
