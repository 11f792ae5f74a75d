"""Answers sized for a model: locations as `path:line:col: <source line>`, hover as plain text
without markdown fences, and one character budget per answer that ends with `... N more`.

Positions shown are 1-based lines and 1-based columns in characters (code points), the ones
the tools take, so a model can pass an answer's position straight back.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from ipylsp.agent.workspace import Workspace
from ipylsp.model.answers import Location, Symbol
from ipylsp.service import MAX_FILE_BYTES, readable_text

MAX_SOURCE_LINE = 120
"""Characters of a source line shown after a location."""

_FENCE = re.compile(r"^\s*(```|~~~)[\w+-]*\s*$")


class SourceLines:
    """Lines of the files an answer points into, each file read once."""

    def __init__(
        self, max_bytes: int | None = MAX_FILE_BYTES, known: Mapping[Path, str] | None = None
    ) -> None:
        """`max_bytes`: `Settings.max_file_bytes` (a larger file shows no lines); `known`:
        texts already read (the queried file's), not read again."""
        self._files: dict[Path, list[str] | None] = {
            path: text.splitlines() for path, text in (known or {}).items()
        }
        self._max_bytes = max_bytes

    def line(self, path: Path, line: int) -> str:
        """0-based `line` of `path`, stripped and shortened; "" when unreadable."""
        if path not in self._files:
            text = readable_text(path, self._max_bytes)  # a FIFO is never opened
            self._files[path] = None if text is None else text.splitlines()
        lines = self._files[path]
        if lines is None or not 0 <= line < len(lines):
            return ""
        shown = lines[line].strip()
        return shown if len(shown) <= MAX_SOURCE_LINE else shown[: MAX_SOURCE_LINE - 1] + "…"


def place(workspace: Workspace, path: Path, line: int, column: int) -> str:
    """`path:line:col`, 1-based, the path relative to the workspace when inside it."""
    return f"{workspace.shown(path)}:{line + 1}:{column + 1}"


def location_line(workspace: Workspace, location: Location, sources: SourceLines) -> str:
    source = sources.line(location.path, location.line)
    where = place(workspace, location.path, location.line, location.column)
    return f"{where}: {source}" if source else where


def location_data(
    workspace: Workspace, location: Location, sources: SourceLines
) -> dict[str, object]:
    return {
        "path": workspace.shown(location.path),
        "line": location.line + 1,
        "column": location.column + 1,
        "text": sources.line(location.path, location.line),
    }


def symbol_line(workspace: Workspace, symbol: Symbol, default: Path | None = None) -> str:
    """`kind name  path:line:col` (an outline's nesting as indentation)."""
    path = symbol.path or default
    where = (
        place(workspace, path, symbol.line, symbol.column)
        if path is not None
        else f"{symbol.line + 1}:{symbol.column + 1}"
    )
    container = f" (in {symbol.container})" if symbol.container else ""
    return f"{'  ' * symbol.depth}{symbol.kind} {symbol.name}{container}  {where}"


def symbol_data(
    workspace: Workspace, symbol: Symbol, default: Path | None = None
) -> dict[str, object]:
    path = symbol.path or default
    return {
        "name": symbol.name,
        "kind": symbol.kind,
        "path": None if path is None else workspace.shown(path),
        "line": symbol.line + 1,
        "column": symbol.column + 1,
        "depth": symbol.depth,
        "container": symbol.container,
    }


def plain(markdown: str) -> str:
    """Hover markdown as plain text: fences dropped (their code kept), horizontal rules as a
    blank line, runs of blank lines collapsed."""
    out: list[str] = []
    for line in markdown.splitlines():
        if _FENCE.match(line):
            continue
        if line.strip() in ("---", "***", "___"):
            line = ""
        if not line.strip() and (not out or not out[-1].strip()):
            continue
        out.append(line.rstrip())
    while out and not out[-1].strip():
        out.pop()
    return "\n".join(out)


def fit(lines: Sequence[str], max_chars: int, *, total: int | None = None) -> str:
    """Whole lines within `max_chars` (0: no limit), then `... N more` for the rest.

    `total`: how many items there were when `lines` is already a cut of them (the more line
    counts those too). The first line is always kept, cut to the budget if it must be."""
    total = len(lines) if total is None else total
    if max_chars <= 0:
        shown = list(lines)
    else:
        shown, used = [], 0
        for line in lines:
            reserve = len(f"\n... {total} more")
            if shown and used + len(line) + 1 + reserve > max_chars:
                break
            if not shown and len(line) > max_chars:
                line = line[: max(max_chars - 1, 1)] + "…"
            shown.append(line)
            used += len(line) + 1
    rest = total - len(shown)
    if rest > 0:
        shown.append(f"... {rest} more")
    return "\n".join(shown)
