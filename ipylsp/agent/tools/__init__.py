"""The tools, one small function each, registered in `agent.registry.TOOLS` on import:
`checks` (what writes introduced, current problems, servers), `queries` (hover, places,
symbols, completions, calls), `changes` (rename and quick fixes as diffs, never applied)."""

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
"""The order models see the tools in: the checks an agent needs most first."""

assert set(ORDER) == set(TOOLS), "every tool has its place in ORDER"
_registered = dict(TOOLS)
TOOLS.clear()
TOOLS.update((name, _registered[name]) for name in ORDER)

__all__ = ["ORDER", "changes", "checks", "queries"]
