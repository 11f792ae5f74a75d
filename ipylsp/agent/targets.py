"""Where a query points, from the ways a model can say it: `path` + `line` + `column`,
`path` + `line` + `symbol` (`occurrence`), `path` + `symbol` (the file's outline), or
`symbol` alone (the workspace's symbols). A name that matches several places is
`ambiguous_symbol` with the places listed, so the model chooses instead of us guessing.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ipylsp.agent import positions
from ipylsp.agent.errors import ToolError
from ipylsp.agent.registry import Arguments
from ipylsp.agent.text import fit, symbol_line
from ipylsp.analysis.naturalsort import natural_key
from ipylsp.lsp.requests.symbols import SYMBOLS, WORKSPACE_SYMBOLS
from ipylsp.model.answers import Symbol

if TYPE_CHECKING:
    from ipylsp.agent.toolbox import Toolbox
    from ipylsp.service import Trip

MAX_CHOICES = 10
"""Places listed for an ambiguous symbol."""

MAX_WALKED = 5000
"""Directory entries looked at to find one file per language for a workspace symbol search."""

_SKIPPED_DIRS = {"node_modules", "__pycache__", "site-packages", "venv", "build", "dist", "target"}
_DATA_LANGUAGES = {"json", "jsonc", "yaml", "toml", "markdown", "plaintext", "dockerfile", "ini"}
"""Languages whose servers define no symbols worth searching for a name in code."""


@dataclass(frozen=True, slots=True)
class Target:
    path: Path
    text: str
    line: int
    """0-based."""
    column: int
    """0-based, in code points."""


async def target(box: Toolbox, trip: Trip, args: Arguments) -> Target:
    """The 0-based place the arguments point at (`ToolError` when they do not), found in
    `trip`: a name's place is asked of the servers there, on the loop."""
    path_arg = args.get("path")
    line = args.get("line")
    symbol = args.get("symbol")
    if path_arg is None:
        if symbol is None:
            raise ToolError(
                "missing_argument",
                "give `path` with `line` and `symbol` (or `column`), or a `symbol` name alone",
            )
        if line is not None or args.get("column") is not None:
            raise ToolError("missing_argument", "`line` and `column` need the file's `path`")
        return await _in_workspace(box, trip, symbol)
    path = box.workspace.resolve(path_arg)
    text = box.read(path, trip)
    if line is None:
        if symbol is None:
            raise ToolError(
                "missing_argument", "give `line` with `symbol` (or `column`), or a `symbol` name"
            )
        return await _in_outline(box, trip, path, text, symbol)
    spot = positions.resolve(
        text, line, column=args.get("column"), symbol=symbol,
        occurrence=args.get("occurrence", 1),
    )
    return Target(path, text, spot.line, spot.column)


def _matches(symbols: Sequence[Symbol], wanted: str) -> list[Symbol]:
    """Symbols named `wanted`; `Outer.name` also requires the container (or, in an outline,
    the enclosing symbol) to end with `Outer`."""
    owner, _, name = wanted.rpartition(".")
    parents: list[str] = []
    found = []
    for symbol in symbols:
        del parents[symbol.depth:]
        container = symbol.container or ".".join(parents)
        parents.append(symbol.name)
        if symbol.name != name:
            continue
        if owner and not (container == owner or container.endswith("." + owner)):
            continue
        found.append(dataclasses.replace(symbol, container=container or None))
    return found


def _chosen(box: Toolbox, found: list[Symbol], wanted: str, where: str, default: Path | None
            ) -> Symbol:
    if len(found) == 1:
        return found[0]
    if not found:
        raise ToolError(
            "symbol_not_found",
            f"no symbol named {wanted!r} {where}; lsp_symbols(query=...) searches by part of a "
            f"name, or give `path` and `line`",
        )
    if default is None:  # places across the workspace, in the order of their paths
        found = sorted(found, key=lambda s: (natural_key(box.workspace.shown(s.path or Path())),
                                             s.line, s.column))
    choices = [symbol_line(box.workspace, s, default).strip() for s in found[:MAX_CHOICES]]
    listing = fit(choices, box.max_chars, total=len(found)).replace("\n", "; ")
    raise ToolError(
        "ambiguous_symbol",
        f"{wanted!r} names {len(found)} symbols {where}: {listing}; "
        f"pass `path` and `line` (with `symbol`) for the one you mean",
    )


async def _in_outline(box: Toolbox, trip: Trip, path: Path, text: str, wanted: str) -> Target:
    outline = (await box.ask(trip, SYMBOLS, path)).answer or ()
    shown = box.workspace.shown(path)
    chosen = _chosen(box, _matches(outline, wanted), wanted, f"in {shown}", path)
    return Target(path, text, chosen.line, chosen.column)


async def _in_workspace(box: Toolbox, trip: Trip, wanted: str) -> Target:
    name = wanted.rpartition(".")[2]
    found: dict[tuple[Path, int, int], Symbol] = {}
    errors: list[ToolError] = []
    samples = one_file_per_language(box, trip)
    for sample in samples:
        try:
            answer = await box.ask(trip, WORKSPACE_SYMBOLS.given(name), sample)
        except ToolError as error:
            errors.append(error)
            continue
        for symbol in _matches((answer.answer or ()), wanted):
            if symbol.path is not None:
                column = _on_name(box.read(symbol.path, trip), symbol)
                found.setdefault((symbol.path, symbol.line, column),
                                 dataclasses.replace(symbol, column=column))
        for symbol in await _in_outlines(box, trip, answer.answer or (), wanted):
            assert symbol.path is not None
            found.setdefault((symbol.path, symbol.line, symbol.column), symbol)
    if not found and errors and len(errors) == len(samples):  # no search answered at all
        raise errors[0]
    inside = [s for s in found.values() if s.path and box.workspace.contains(s.path)]
    chosen = _chosen(box, inside or list(found.values()), wanted, "in the workspace", None)
    assert chosen.path is not None
    return Target(chosen.path, box.read(chosen.path, trip), chosen.line, chosen.column)


def _on_name(text: str, symbol: Symbol) -> int:
    """The column of the symbol's name on its line: some servers' workspace symbols point at
    the start of the definition (`def`, `class`), where a query finds nothing."""
    lines = text.splitlines()
    if not 0 <= symbol.line < len(lines):
        return symbol.column
    found = [
        c for c in positions.occurrences(lines[symbol.line], symbol.name) if c >= symbol.column
    ]
    return found[0] if found else symbol.column


async def _in_outlines(
    box: Toolbox, trip: Trip, symbols: Sequence[Symbol], wanted: str
) -> list[Symbol]:
    """`Outer.name` among workspace symbols that carry no container (ty's): looked up in the
    outline of each file that defines a `name`."""
    owner, _, name = wanted.rpartition(".")
    if not owner:
        return []
    paths = dict.fromkeys(
        s.path for s in symbols if s.name == name and not s.container and s.path is not None
    )
    found = []
    for path in paths:
        assert path is not None
        for symbol in _matches((await box.ask(trip, SYMBOLS, path)).answer or (), wanted):
            found.append(dataclasses.replace(symbol, path=path))
    return found


def one_file_per_language(box: Toolbox, trip: Trip) -> list[Path]:
    """A file of each language in the workspace, to choose the servers a workspace-wide
    symbol search asks: files ipylsp has checked first, then a bounded walk of the root."""
    from ipylsp.service import languages

    chosen: dict[str, Path] = {}
    for path in _candidates(box, trip):
        language = languages.language_id_for_name(path.name)
        if language is not None and language not in chosen and language not in _DATA_LANGUAGES:
            chosen[language] = path
    if not chosen:
        raise ToolError(
            "symbol_not_found",
            f"no source file in {box.workspace.root} that a language server reads; give `path`",
        )
    return list(chosen.values())


def _candidates(box: Toolbox, trip: Trip) -> Iterator[Path]:
    for path in trip.checked():
        if box.workspace.contains(path) and path.is_file():
            yield path
    seen = 0
    for directory, dirs, files in os.walk(box.workspace.root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIPPED_DIRS)
        for name in sorted(files):
            seen += 1
            if seen > MAX_WALKED:
                return
            yield Path(directory, name)
