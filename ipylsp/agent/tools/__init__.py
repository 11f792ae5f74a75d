"""The tools, one small function each, registered in `agent.registry.TOOLS` on import:
`checks` (what writes introduced, current problems, servers), `features` (a tool per query,
one table: hover, places, calls, completions, ..., rename and quick fixes as diffs, never
applied), whose answers read as `queries` and `changes` say; `queries` also has lsp_symbols."""

from ipylsp.agent.registry import TOOLS
from ipylsp.agent.tools import changes, checks, features, queries

ORDER = (
    "lsp_check",
    "lsp_check_cell",
    "lsp_diagnostics",
    "lsp_pending",
    *features.QUERIES,
    "lsp_status",
)
"""The order models see the tools in: the checks an agent needs most first, then the queries
in their table's order."""

assert set(ORDER) == set(TOOLS), "every tool has its place"
_registered = dict(TOOLS)
TOOLS.clear()
TOOLS.update((name, _registered[name]) for name in ORDER)

__all__ = ["ORDER", "changes", "checks", "features", "queries"]
