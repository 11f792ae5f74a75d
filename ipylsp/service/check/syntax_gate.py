"""The syntax tier beside the servers: when a write's syntax errors hold the servers back, and
whose answers make up the delta.

Apart from the checker because this policy is the subtle part of a check and reads best in one
place: the servers are authoritative when they answer; the syntax tier speaks when they were
not asked or could not answer; what a text that did not parse had wrong is the syntax tier's.
"""

from __future__ import annotations

from pathlib import Path

from ipylsp.analysis import delta as delta_mod
from ipylsp.analysis.syntax import syntax_diagnostics
from ipylsp.model.diagnostics import Diagnostic, Severity

Diagnostics = tuple[Diagnostic, ...]
SyntaxPair = tuple[Diagnostics, Diagnostics]
"""The syntax tier's findings for the text before and the text after."""


def syntax_pair(path: Path, before_text: str, new_text: str | None) -> SyntaxPair | None:
    """None when the syntax tier has nothing to say (no checker for the file, or deleted)."""
    if new_text is None:
        return None
    after = syntax_diagnostics(path, new_text)
    if after is None:
        return None
    before = syntax_diagnostics(path, before_text) if before_text else ()
    return before or (), after


def holds_back_servers(
    before_text: str,
    new_text: str | None,
    pair: SyntaxPair | None,
    *,
    semantic_after_syntax_error: bool,
) -> bool:
    """A write that introduces a syntax error is reported from the syntax tier alone."""
    blocked = pair is not None and _introduces_errors(before_text, new_text, pair)
    return blocked and not semantic_after_syntax_error


def combine(
    before_text: str,
    new_text: str | None,
    pair: SyntaxPair | None,
    answers: list[tuple[str, Diagnostics, Diagnostics]],
    *,
    asked: int,
    semantic_after_syntax_error: bool,
) -> tuple[Diagnostics, Diagnostics, Diagnostics]:
    """(introduced, current, fixed) of a check.

    `answers`: (text the server's delta starts from, baseline, current) per server that
    answered, of the `asked` servers."""
    introduced: list[Diagnostic] = []
    fixed: list[Diagnostic] = []
    current: list[Diagnostic] = []
    triples = list(answers)
    # The syntax tier speaks when the servers were not asked or could not answer; when
    # they answered, they report the same syntax errors themselves.
    if pair is not None and (len(triples) < asked or not asked):
        triples.append((before_text, *pair))
    # When the text before did not parse, what was wrong with it is what the syntax tier
    # said (and showed); what the servers say about such a text is mostly the parse
    # error's cascade ("fixed 3 errors" after one was shown). Not with
    # semantic_after_syntax_error: then the servers' answer was what was shown.
    syntax_fixed = (
        not semantic_after_syntax_error
        and pair is not None
        and any(d.severity is Severity.ERROR for d in pair[0])
    )
    for server_before, baseline, now in triples:
        result = delta_mod.compute_delta(server_before, new_text or "", baseline, now)
        introduced.extend(result.introduced)
        if not syntax_fixed:
            fixed.extend(result.fixed)
        current.extend(now)
    if pair is not None and syntax_fixed:
        fixed.extend(delta_mod.compute_delta(before_text, new_text or "", *pair).fixed)
    return tuple(introduced), tuple(current), tuple(fixed)


def _introduces_errors(before_text: str, new_text: str | None, pair: SyntaxPair) -> bool:
    result = delta_mod.compute_delta(before_text, new_text or "", pair[0], pair[1])
    return any(d.severity is Severity.ERROR for d in result.introduced)
