"""The tools, one small function each, registered in `agent.registry.TOOLS` on import:
`checks` (what writes introduced, current problems, servers), `queries` (hover, places,
symbols, completions, calls, and a tool for every feature that names one), `changes`
(rename and quick fixes as diffs, never applied)."""

from ipylsp.agent.registry import TOOLS
from ipylsp.agent.tools import changes, checks, queries

ORDER = (
    "lsp_check",
    "lsp_check_cell",
    "lsp_diagnostics",
    "lsp_pending",
    "lsp_hover",
    "lsp_definition",
    "lsp_type_definition",
    "lsp_implementation",
    "lsp_references",
    "lsp_calls",
    "lsp_symbols",
    "lsp_completions",
    "lsp_rename_preview",
    "lsp_code_actions",
    "lsp_status",
)
"""The order models see the tools in: the checks an agent needs most first. The tools made
from features (`queries.FEATURE_TOOLS`) come after the queries written by hand."""

assert set(ORDER) | set(queries.FEATURE_TOOLS) == set(TOOLS), "every tool has its place"
_registered = dict(TOOLS)
_AFTER = ORDER.index("lsp_completions") + 1
TOOLS.clear()
TOOLS.update((name, _registered[name])
             for name in (*ORDER[:_AFTER], *queries.FEATURE_TOOLS, *ORDER[_AFTER:]))

__all__ = ["ORDER", "changes", "checks", "queries"]
