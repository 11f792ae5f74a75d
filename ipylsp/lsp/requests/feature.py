"""A feature request as a value: what it asks, of which capability, with which parameters,
and how its answer reads.

A `Feature` is declared by its request module (`hover`, `locations`, `symbols`, ...); it knows
nothing of the store or of the surfaces. The service asks it of the first server of a file
that offers `capability` (every such server when `merged`) and stands the store in for some
(`service/queries.py`, by kind); each surface offers the features its own table names: the
`%lsp` magics, the Python API's functions, the agent tools. A `FeatureResult` is what one
request produced: the answer, or the `Unknown`s saying why there is none; it crosses a process
boundary (the broker answering a kernel's query) as the model's wire form of its fields but the
feature, which the asking side holds, its answer read as the feature's declared `answer_type`.
"""

from __future__ import annotations

import functools
import time
import typing
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

from ipylsp.lsp.requests.request import At, TextSource
from ipylsp.model.diagnostics import Cached, Unknown, UnknownReason
from ipylsp.model.wire import from_wire, to_wire

if TYPE_CHECKING:
    from ipylsp.lsp.client import LanguageClient

A = TypeVar("A")
P = TypeVar("P")

Takes = Literal["position", "file", "line", "query"]
"""What a surface must give: a place (path, line, column), a file, a file's line (code
actions), or a query string (workspace symbols, whose path only chooses the servers)."""


@dataclass(frozen=True, slots=True)
class Query(Generic[P]):
    """One feature request for one server: where, with what, and until when."""

    at: At
    language_id: str
    deadline: float
    texts: TextSource
    """The text of a file an answer points into, for its columns."""
    params: P
    """The feature's own parameters (`Feature.params`)."""

    @property
    def timeout(self) -> float:
        return max(self.deadline - time.monotonic(), 0.1)


@dataclass(frozen=True, slots=True)
class Feature(Generic[P, A]):
    """One feature: `ask` sends its request to a client; `render` gives the answer's lines as
    people and agents read them (1-based positions, paths relative to the root), `empty` what
    every surface says when there is nothing."""

    kind: str
    capability: str
    ask: Callable[[LanguageClient, Query[P]], Awaitable[A]]
    render: Callable[[A, Path | None], list[str]]
    empty: str
    about: str
    """One sentence for help texts, docstrings and tool descriptions."""
    params: P
    """What the request sends beside the place (calls' direction, rename's new name, a symbol
    search's query; None for most): the declared default, another one `given`."""
    answer_type: type[A]
    """The type of its answer (`str`, `tuple[Location, ...]`), `A` at run time: what an answer
    that crossed a process boundary is read as (`result_from_wire`)."""
    takes: Takes = "position"
    merged: bool = False
    """Answered by every server that offers it, not the first (each linter has its own quick
    fixes)."""

    def given(self, params: P) -> Feature[P, A]:
        """This feature asked with `params`."""
        return replace(self, params=params)

    def failed(self, reason: UnknownReason, detail: str) -> FeatureResult[A]:
        """No answer, for a reason of the file's or ipylsp's own (no server to name)."""
        return FeatureResult(self, unknown=(Unknown("", reason, detail),))

    def result_from_wire(self, data: Any) -> FeatureResult[A]:
        """This feature's result that `FeatureResult.to_wire` made `data` from (the broker's
        answer to a relayed query): each field read as `FeatureResult` declares it, the answer
        as `answer_type`; `ValueError` when `data` is not one."""
        if not isinstance(data, dict):
            raise ValueError(f"a {self.kind} result is an object on the wire")
        types = _result_fields()
        given: dict[str, Any] = {}
        for name, kind in types.items():
            if name in data:
                kind = self.answer_type | None if name == "answer" else kind
                given[name] = from_wire(kind, data[name])
        return FeatureResult(self, **given)


def check_place(line: object, column: object) -> None:
    """`ValueError` unless `line` and `column` are a 0-based place: non-negative integers."""
    if not isinstance(line, int) or not isinstance(column, int) or line < 0 or column < 0:
        raise ValueError("line and column must be non-negative integers")


def text_lines(text: str, root: Path | None) -> list[str]:
    """The rendering of an answer that is text already (hover, signature help)."""
    return [text] if text else []


@dataclass(frozen=True, slots=True)
class FeatureResult(Generic[A]):
    """What one feature request produced: `answer`, or the `Unknown`s saying why there is
    none (the one "why no answer" of checks and queries, mapped to agent codes and HTTP
    statuses only at those surfaces)."""

    feature: Feature[Any, A]
    answer: A | None = None
    server_id: str | None = None
    unknown: tuple[Unknown, ...] = ()
    """Why no server answered: each server's reason, or the file's own (no server named: no
    such file, not read, no language server, none offers it). With `cached`, the answer is
    the store's."""
    cached: Cached | None = None
    """Not a live answer: what the store kept from servers' earlier answers."""

    @property
    def kind(self) -> str:
        return self.feature.kind

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
        feature = self.feature
        lines = feature.render(self.answer, root) if self.answer is not None else []
        return "\n".join(lines) or feature.empty

    def to_wire(self) -> dict[str, Any]:
        """Its fields but the feature in the model's wire form (`Feature.result_from_wire`
        reads it back with the asker's feature)."""
        return {name: to_wire(getattr(self, name)) for name in _result_fields()}

    def __str__(self) -> str:
        return self.format(Path.cwd())

    def __repr__(self) -> str:  # `ipylsp.hover(...)` at a prompt reads as the answer
        return self.format(Path.cwd())


@functools.cache
def _result_fields() -> dict[str, Any]:
    """`FeatureResult`'s fields that cross, with their declared types (its feature does not:
    the asking side has it; the answer's type is the feature's `answer_type`)."""
    hints = typing.get_type_hints(FeatureResult)
    return {f.name: hints[f.name] for f in fields(FeatureResult)
            if f.init and f.name != "feature"}


def _said(unknown: tuple[Unknown, ...]) -> str:
    """Each reason as a query's answer says it: `ty: timed out: ...`; a file's own reason (no
    server) as its detail alone (`no such file: a.py`)."""
    return "; ".join(
        f"{u.server_id}: {u.reason.value}: {u.detail}" if u.server_id else u.detail
        for u in unknown
    )
