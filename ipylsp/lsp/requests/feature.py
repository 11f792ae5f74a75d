"""A feature request as a value: what it asks, of which capability, how its answer reads, and
where the surfaces offer it, registered once.

A `Feature` is declared by its request module (`hover`, `locations`, `symbols`, ...) and put
in `FEATURES` when that module is imported (`lsp/requests/__init__.py` imports them all). The
service asks it of the first server of a file that offers `capability` (every such server
when `merged`); the surfaces read `FEATURES` for what they do not answer by hand: a `%lsp`
magic, a function of the Python API, an agent tool. A `FeatureResult` is what one request
produced: the answer, or why there is none (`UnknownReason`, the one vocabulary).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar

from ipylsp.lsp.client import LanguageClient
from ipylsp.lsp.requests.request import At, TextSource
from ipylsp.model.diagnostics import Cached, Unknown, UnknownReason

A = TypeVar("A")

Takes = Literal["position", "file", "line", "query"]
"""What a surface must give: a place (path, line, column), a file, a file's line (code
actions), or a query string (workspace symbols, whose path only chooses the servers)."""

Fallback = Literal["outline", "names", "definition"]
"""What the store answers when no server can: a file's outline, symbols by name prefix, the
places of the name at the position."""


@dataclass(frozen=True, slots=True)
class Query:
    """One feature request for one server: where, with what, and until when."""

    at: At
    language_id: str
    deadline: float
    texts: TextSource
    """The text of a file an answer points into, for its columns."""
    direction: str = "incoming"
    new_name: str = ""
    query: str = ""

    @property
    def timeout(self) -> float:
        return max(self.deadline - time.monotonic(), 0.1)


@dataclass(frozen=True, slots=True)
class Feature(Generic[A]):
    """One feature: `ask` sends its request to a client; `render` gives the answer's lines as
    people and agents read them (1-based positions, paths relative to the root), `empty` the
    line when there is nothing."""

    kind: str
    capability: str
    ask: Callable[[LanguageClient, Query], Awaitable[A]]
    render: Callable[[A, Path | None], list[str]]
    empty: str
    about: str
    """One sentence for help texts and tool descriptions."""
    takes: Takes = "position"
    merged: bool = False
    """Answered by every server that offers it, not the first (each linter has its own quick
    fixes)."""
    fallback: Fallback | None = None
    magic: str | None = None
    """`%lsp <magic> PATH:LINE:COL`, answered from this value (None: no magic of its own, or
    one written by hand)."""
    api: str | None = None
    """`ipylsp.<api>(path, line, column)`, likewise."""
    tool: str | None = None
    """The agent tool answering it, likewise."""


def text_lines(text: str, root: Path | None) -> list[str]:
    """The rendering of an answer that is text already (hover, signature help)."""
    return [text] if text else []


FEATURES: dict[str, Feature[Any]] = {}
"""Every feature by kind, in the order the request modules register them."""


def register(feature: Feature[A]) -> Feature[A]:
    """Put `feature` in `FEATURES` (once per kind)."""
    if feature.kind in FEATURES:
        raise ValueError(f"feature {feature.kind!r} is registered twice")
    FEATURES[feature.kind] = feature
    return feature


@dataclass(frozen=True, slots=True)
class FeatureResult(Generic[A]):
    """What one feature request produced: `answer`, or the `Unknown`s saying why there is
    none (the one "why no answer" of checks and queries, mapped to agent codes and HTTP
    statuses only at those surfaces)."""

    kind: str
    answer: A | None = None
    server_id: str | None = None
    unknown: tuple[Unknown, ...] = ()
    """Why no server answered: each server's reason, or the file's own (no server named: no
    such file, not read, no language server, none offers it). With `cached`, the answer is
    the store's."""
    cached: Cached | None = None
    """Not a live answer: what the store kept from servers' earlier answers."""

    @property
    def reason(self) -> UnknownReason | None:
        """Why there is no answer (the first failure decides); None when there is one."""
        return self.unknown[0].reason if self.unknown and self.cached is None else None

    @property
    def error(self) -> str:
        """Why there is no answer, in words ("" when there is one)."""
        return _said(self.unknown) if self.cached is None else ""

    def cached_note(self) -> str:
        """`(cached 3 min ago; why no server answered)` for an answer from the store, else ""."""
        if self.cached is None:
            return ""
        return f"({self.cached.label(time.time())}; {_said(self.unknown)})"

    def format(self, root: Path | None = None) -> str:
        """The answer as people and agents read it: 1-based positions, paths relative to root."""
        if self.error:
            return f"{self.kind}: {self.error}"
        if self.cached is not None:
            live = replace(self, cached=None, unknown=()).format(root)
            return f"{live}\n{self.cached_note()}"
        feature = FEATURES[self.kind]
        lines = feature.render(self.answer, root) if self.answer is not None else []
        return "\n".join(lines) or feature.empty

    def __str__(self) -> str:
        return self.format(Path.cwd())

    def __repr__(self) -> str:  # `ipylsp.hover(...)` at a prompt reads as the answer
        return self.format(Path.cwd())


def _said(unknown: tuple[Unknown, ...]) -> str:
    """Each reason as a query's answer says it: `ty: timed out: ...`; a file's own reason (no
    server) as its detail alone (`no such file: a.py`)."""
    return "; ".join(
        f"{u.server_id}: {u.reason.value}: {u.detail}" if u.server_id else u.detail
        for u in unknown
    )
