"""One problem, one line: when two servers report the same problem, the text shows it once.

Its own module because the rule is a judgement kept narrow on purpose (docs/schema.md): two
diagnostics of one file are one problem only when they come from different servers, cover
exactly the same range, carry codes of one row of `SAME_PROBLEM`, and their first lines quote
a common name (`totl`, "totl"; `typing.List` and "List" share `List`). A guess from the message
alone would merge distinct problems: basedpyright's unresolved import and unused import of
`nosuchmod` share range and name, and stay two lines.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ipylsp.model.diagnostics import Diagnostic, Severity

SAME_PROBLEM: tuple[frozenset[str], ...] = (
    # an undefined name: ty, ruff, pyright/basedpyright, pyrefly
    frozenset({"unresolved-reference", "F821", "reportUndefinedVariable", "unknown-name"}),
    # a module that cannot be found: ty (both spellings), pyright/basedpyright, pyrefly
    frozenset({"unresolved-import", "import-not-found", "reportMissingImports", "missing-import"}),
    # an unused import: ruff, pyright/basedpyright, pyrefly
    frozenset({"F401", "reportUnusedImport", "unused-import"}),
    # an unused local variable: ruff, pyright/basedpyright, pyrefly
    frozenset({"F841", "reportUnusedVariable", "unused-variable"}),
)
"""Codes that name the same kind of problem across servers, one set per kind."""

_KIND = {code: kind for kind, codes in enumerate(SAME_PROBLEM) for code in codes}
_QUOTED = re.compile(r"`([^`\n]+)`|\"([^\"\n]+)\"|'([^'\n]+)'")

Row = tuple[Diagnostic, ...]
"""One line of the text: a problem and the diagnostics of every server that reported it."""


def quoted_names(message: str) -> frozenset[str]:
    """The names the message's first line quotes, each also without its dotted prefix."""
    first = message.split("\n", 1)[0]
    names: set[str] = set()
    for match in _QUOTED.finditer(first):
        name = next(group for group in match.groups() if group is not None).strip()
        if name:
            names.add(name)
            names.add(name.rsplit(".", 1)[-1])
    return frozenset(names)


def same_problem(a: Diagnostic, b: Diagnostic) -> bool:
    """Whether `a` and `b` are one problem reported by two servers (the rule above)."""
    if a.server_id == b.server_id or a.range != b.range or not a.code or not b.code:
        return False
    if a.cached is not None or b.cached is not None:  # a stored answer stays on its own line
        return False
    if a.ran_without_error != b.ran_without_error:  # the run disproved one, not the other
        return False
    kind = _KIND.get(a.code)
    if kind is None or kind != _KIND.get(b.code):
        return False
    return bool(quoted_names(a.message) & quoted_names(b.message))


def errors(diagnostics: Iterable[Diagnostic]) -> int:
    """Errors, one per problem however many servers report it (what a status bar counts)."""
    return sum(1 for row in merge(diagnostics) if row[0].severity == Severity.ERROR)


def merge(diagnostics: Iterable[Diagnostic]) -> list[Row]:
    """Rows in the order of their first diagnostic; each later one joins the first row it
    repeats (at most one diagnostic per server in a row)."""
    rows: list[list[Diagnostic]] = []
    by_range: dict[object, list[int]] = {}
    for d in diagnostics:
        candidates = by_range.setdefault(d.range, [])
        for index in candidates:
            row = rows[index]
            if all(x.server_id != d.server_id for x in row) and same_problem(row[0], d):
                row.append(d)
                break
        else:
            candidates.append(len(rows))
            rows.append([d])
    return [tuple(row) for row in rows]
