"""The delta: which diagnostics a write introduced, and which it fixed.

A language server reports everything wrong with a file; ipylsp shows only what the last write
changed. `compute_delta` takes the text before and after the write, the diagnostics of the
before-text (the baseline) and those of the after-text (current), and splits them into
*introduced* (current, with no counterpart in the baseline), *fixed* (baseline, with no
counterpart in current) and *persisting* (current, with a counterpart).

Algorithm
---------

1. **Remap the baseline through a diff of before -> after.** Both texts are split into lines the
   LSP way (``\n``, ``\r\n`` and ``\r``; so a CRLF <-> LF conversion changes nothing) and
   diffed line by line (`analysis.textdiff`): patience-style, the common head and tail are
   trimmed, lines occurring once on each side anchor the alignment (the longest chain of them
   in order), anchors are extended over equal neighbours and the gaps between them are diffed
   recursively, small gaps without unique lines with `difflib.SequenceMatcher`.

   An old line in an *equal* run maps to its new line, columns unchanged. An old line inside a
   *replaced* run is *changed* and is paired with a new line: a 1:1 replacement always; in a
   larger run, a line equal to it but for indentation near its proportional position, else the
   line at its proportional position if similar enough (`SequenceMatcher.ratio` >= 0.5), else
   the most similar line within 8 lines of it (>= 0.5). Its columns are carried through a
   character diff of the two lines (`ColumnMap`): a start sticks to the character after it, an
   end to the character before it, so insertions and deletions earlier on the line move the
   range, and text inserted right before or after a range stays outside it. Deleted lines and
   unpaired replaced lines do not map.

   A range *survives* when both of its ends map; a range on a changed line must also keep at
   least one of its characters (a range lying wholly inside replaced characters does not
   survive; a range that merely contains an edit does). Positions past the end of the before
   text are clamped to it first.

2. **Match by identity, as multisets.** Identity is (severity, code, server, source, message)
   with the message whitespace-collapsed and the positions it quotes masked: "line 12" /
   "column 3" references and ``file.c:101:45``-style places (clangd folds a note and its
   position into the message; their numbers move with the edit). Each current diagnostic
   matches at most one baseline diagnostic and vice versa, in six rounds, each only among
   what the earlier rounds left:

   a. *exact*: identity and the remapped range are equal;
   b. *same line*: identity equal, the baseline range survived and the current diagnostic
      starts on the line it was carried to; the nearest column wins. This absorbs a server
      reporting another range for the same problem (a range that now ends elsewhere, an empty
      one at column 1 or one covering the line from its start: a parse-only pass, a package
      still loading, another version), or a name whose column moved in a way the character
      diff did not follow;
   c. *same line, numbers masked*: as (b), for diagnostics that have a code, comparing messages
      with every digit run masked ("Line too long (95 > 88)" after the line grew);
   d. *reworded*: for diagnostics that have a code, identity but the message equal, the
      remapped range equal to the current one and the text inside it unchanged: the same
      problem at the same place, told in other words (basedpyright names another chain in
      "Cycle detected in import chain"; a message that names a type the write changed
      elsewhere);
   e. *moved*: a baseline diagnostic whose line did not stay unchanged (deleted, replaced, or
      paired with a changed line) matches a current one on a *new* line whose text equals the
      old line's text but for indentation, at the same column relative to the indentation and
      with the same shape — a block moved, or re-indented into a new `if`;
   f. *moved, reworded*: as (e), for diagnostics that have a code, identity but the message
      equal.

   Whatever remains of current is introduced; whatever remains of the baseline is fixed.

Consequences and limits
-----------------------

- Two identical errors before, one removed and one added elsewhere: the survivor matches
  exactly, the new one is reported, the removed one is fixed. Counts matter, not just keys.
- A problem whose *message* changed is new, unless round (c), (d) or (f) applies: it has a
  code and stayed (or moved with its line), the text it points at unchanged. Another code,
  severity or server, another place, or no code at all: a different problem.
- A diagnostic whose own text the write replaced is not matched by position: if the problem
  is still there after the edit, it is reported again (the write touched it, and "your edit
  did not fix this" is what the caller needs to hear). `x = foo(1)` -> `x = bar(1)` with
  "Expected expression" at the name before and after reports it.
- Round (b) trusts the line: a surviving error and a new one with the same message on the
  same line count as one.
- Round (d) cannot tell a moved line from a deleted line re-typed elsewhere with the same text:
  both are "moved".
- Diagnostics the write caused in *other* files are the caller's business: this compares one
  file's two texts. A new file has no baseline: everything is introduced; a deleted (or
  emptied) file with no current diagnostics has everything fixed. Fixed diagnostics keep
  their before-text positions.
- Pairing inside a block of several replaced lines is a heuristic; a wrong pair can only matter
  when both candidate lines carry a diagnostic with the same identity.

Cost: equal runs are measured with galloping slice comparisons (C speed), anchors with
`Counter`/dict passes, so the diff is roughly linear in the number of lines with small
constants; pairing and character diffs run lazily, only for changed lines that carry baseline
diagnostics (`benchmarks/bench_delta.py` measures a 10,000-line file with 500 diagnostics; the
numbers are in benchmarks/README.md).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from ipylsp.analysis.textdiff import LineMap, split_lines
from ipylsp.model.diagnostics import Diagnostic, Range

__all__ = ["Delta", "compute_delta", "identity", "normalize_message", "remap_range"]


@dataclass(frozen=True, slots=True)
class Delta:
    """The result of comparing a file's diagnostics across one write."""

    introduced: tuple[Diagnostic, ...] = ()
    """Current diagnostics with no counterpart before the write (in the order given)."""
    fixed: tuple[Diagnostic, ...] = ()
    """Baseline diagnostics with no counterpart after the write (before-text positions)."""
    persisting: tuple[Diagnostic, ...] = ()
    """Current diagnostics that the file already had before the write."""


_POSITION_REF = re.compile(r"\b(lines?|columns?|col|ln)(\s+)\d+", re.IGNORECASE)
_QUOTED_PLACE = re.compile(r"(\w\.[A-Za-z]\w*):\d+(:\d+)?\b")
"""A place quoted as ``name.ext:line[:column]`` (clangd's folded notes, compilers' output)."""
_HAS_DIGIT = re.compile(r"\d").search
_DIGITS = re.compile(r"\d+")

Identity = tuple[int, str, str, str, str]
Span = tuple[int, int, int, int]  # start line, start column, end line, end column
MoveKey = tuple[Identity, str, int, tuple[int, int]]


def normalize_message(message: str) -> str:
    """Whitespace collapsed, quoted positions masked: line/column references ("on line 12")
    and places (``bufferutil.c:101:45`` -> ``bufferutil.c:#:#``)."""
    collapsed = " ".join(message.split())
    if _HAS_DIGIT(collapsed):
        collapsed = _QUOTED_PLACE.sub(_mask_place, collapsed)
        return _POSITION_REF.sub(r"\1\2#", collapsed)
    return collapsed


def _mask_place(match: re.Match[str]) -> str:
    return f"{match[1]}:#" + (":#" if match[2] else "")


def identity(diagnostic: Diagnostic) -> Identity:
    """What makes two diagnostics 'the same problem', apart from where they are."""
    return (
        int(diagnostic.severity),
        diagnostic.code or "",
        diagnostic.server_id,
        diagnostic.source or "",
        normalize_message(diagnostic.message),
    )


def _span(rng: Range) -> Span:
    return (rng.start.line, rng.start.column, rng.end.line, rng.end.column)


def _clamp(line: int, column: int, lines: Sequence[str]) -> tuple[int, int]:
    last = len(lines) - 1
    if line > last:  # past the end of the text: its very end
        return last, len(lines[last])
    if line < 0:
        return 0, 0
    return line, min(max(column, 0), len(lines[line]))


def _map_point(lmap: LineMap, line: int, column: int, *, end: bool) -> tuple[int, int] | None:
    located = lmap.locate(line)
    if located is None:
        return None
    new_line, columns = located
    if columns is None:
        return new_line, column
    mapped = columns.column(column, end=end)
    return None if mapped is None else (new_line, mapped)


def _remap(lmap: LineMap, old_lines: Sequence[str], rng: Range) -> Span | None:
    sl, sc = _clamp(rng.start.line, rng.start.column, old_lines)
    el, ec = _clamp(rng.end.line, rng.end.column, old_lines)
    if (el, ec) < (sl, sc):
        el, ec = sl, sc
    located = lmap.locate(sl)
    if located is None:
        return None
    new_line, columns = located
    if columns is None:  # fast path: start line unchanged
        if el == sl:
            return (new_line, sc, new_line, ec)
        end = _map_point(lmap, el, ec, end=True)
        return None if end is None else (new_line, sc, *end)
    start_column = columns.column(sc, end=False)
    if start_column is None:
        return None
    if (el, ec) == (sl, sc):
        return (new_line, start_column, new_line, start_column)
    if el == sl:
        end_column = columns.column(ec, end=True)
        if end_column is None or end_column < start_column or not columns.keeps_any(sc, ec):
            return None
        return (new_line, start_column, new_line, end_column)
    end = _map_point(lmap, el, ec, end=True)
    if end is None or end < (new_line, start_column):
        return None
    return (new_line, start_column, *end)


def remap_range(before_text: str, after_text: str, rng: Range) -> Range | None:
    """Where `rng` of the before-text is in the after-text, or None if it did not survive."""
    old_lines = split_lines(before_text)
    span = _remap(LineMap(old_lines, split_lines(after_text)), old_lines, rng)
    return None if span is None else Range.of(*span)


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip())


def _shape(rng: Range) -> tuple[int, int]:
    lines = rng.end.line - rng.start.line
    return lines, (rng.end.column - rng.start.column) if lines == 0 else rng.end.column


def _mask(ident: Identity) -> Identity:
    return (*ident[:4], _DIGITS.sub("#", ident[4]))


def _unworded(ident: Identity) -> Identity:
    """Identity without the message: for diagnostics that have a code (`Identity[1]`)."""
    return (*ident[:4], "")


def _text_at(lines: Sequence[str], span: Span) -> str | None:
    """The text a span covers (lines joined by "\\n"), None when it is not inside `lines`."""
    sl, sc, el, ec = span
    if not 0 <= sl <= el < len(lines):
        return None
    if sl == el:
        return lines[sl][sc:ec]
    return "\n".join((lines[sl][sc:], *lines[sl + 1 : el], lines[el][:ec]))


class _Matcher:
    """The six matching rounds over one pair of diagnostic lists."""

    def __init__(
        self,
        lmap: LineMap,
        old_lines: Sequence[str],
        new_lines: Sequence[str],
        baseline: Sequence[Diagnostic],
        current: Sequence[Diagnostic],
    ) -> None:
        self.lmap = lmap
        self.old_lines = old_lines
        self.new_lines = new_lines
        self.baseline = baseline
        self.current = current
        memo: dict[str, str] = {}
        self.ids_b = [self._identity(d, memo) for d in baseline]
        self.ids_c = [self._identity(d, memo) for d in current]
        self.mapped = [_remap(lmap, old_lines, d.range) for d in baseline]
        self.done_b = [False] * len(baseline)
        self.done_c = [False] * len(current)

    @staticmethod
    def _identity(d: Diagnostic, memo: dict[str, str]) -> Identity:
        message = memo.get(d.message)
        if message is None:
            message = memo[d.message] = normalize_message(d.message)
        return (int(d.severity), d.code or "", d.server_id, d.source or "", message)

    def _pair(self, i: int, j: int) -> None:
        self.done_b[i] = self.done_c[j] = True

    def exact(self) -> None:
        buckets: defaultdict[tuple[Identity, Span], list[int]] = defaultdict(list)
        for j in reversed(range(len(self.current))):  # pop() yields the first given
            buckets[(self.ids_c[j], _span(self.current[j].range))].append(j)
        for i, span in enumerate(self.mapped):
            if span is not None:
                bucket = buckets.get((self.ids_b[i], span))
                if bucket:
                    self._pair(i, bucket.pop())

    def same_line(self, *, masked: bool) -> None:
        candidates: defaultdict[tuple[Identity, int], list[int]] = defaultdict(list)
        for j, d in enumerate(self.current):
            if self.done_c[j] or (masked and not d.code):
                continue
            key = _mask(self.ids_c[j]) if masked else self.ids_c[j]
            candidates[(key, d.range.start.line)].append(j)
        if not candidates:
            return
        for i, span in enumerate(self.mapped):
            if self.done_b[i] or span is None:
                continue
            anchor, column = span[0], span[1]
            key = _mask(self.ids_b[i]) if masked else self.ids_b[i]
            bucket = candidates.get((key, anchor))
            if bucket:
                best = min(
                    bucket, key=lambda j: (abs(self.current[j].range.start.column - column), j)
                )
                bucket.remove(best)
                self._pair(i, best)

    def reworded(self) -> None:
        """Same code, server and severity at the same remapped place, over the same text;
        only the message differs."""
        buckets: defaultdict[tuple[Identity, Span], list[int]] = defaultdict(list)
        for j in reversed(range(len(self.current))):  # pop() yields the first given
            if not self.done_c[j] and self.current[j].code:
                buckets[(_unworded(self.ids_c[j]), _span(self.current[j].range))].append(j)
        if not buckets:
            return
        for i, span in enumerate(self.mapped):
            if self.done_b[i] or span is None or not self.baseline[i].code:
                continue
            bucket = buckets.get((_unworded(self.ids_b[i]), span))
            if bucket and self._same_text(self.baseline[i].range, span):
                self._pair(i, bucket.pop())

    def _same_text(self, old: Range, new: Span) -> bool:
        sl, sc = _clamp(old.start.line, old.start.column, self.old_lines)
        el, ec = _clamp(old.end.line, old.end.column, self.old_lines)
        before = _text_at(self.old_lines, (sl, sc, el, ec))
        return before is not None and before == _text_at(self.new_lines, new)

    def moved(self, *, reworded: bool) -> None:
        """`reworded`: diagnostics with a code, matched without their message."""
        def key(ident: Identity) -> Identity:
            return _unworded(ident) if reworded else ident

        candidates: defaultdict[MoveKey, list[int]] = defaultdict(list)
        for j, d in enumerate(self.current):
            line = d.range.start.line
            if self.done_c[j] or not 0 <= line < len(self.new_lines) or (reworded and not d.code):
                continue
            if self.lmap.is_new_unchanged(line):
                continue
            text = self.new_lines[line]
            relative = d.range.start.column - _indent(text)
            candidates[(key(self.ids_c[j]), text.strip(), relative, _shape(d.range))].append(j)
        if not candidates:
            return
        for i, d in enumerate(self.baseline):
            line = d.range.start.line
            if self.done_b[i] or not 0 <= line < len(self.old_lines) or (reworded and not d.code):
                continue
            if self.lmap.same(line) is not None:
                continue
            text = self.old_lines[line]
            relative = d.range.start.column - _indent(text)
            bucket = candidates.get((key(self.ids_b[i]), text.strip(), relative, _shape(d.range)))
            if bucket:
                self._pair(i, bucket.pop(0))


def compute_delta(
    before_text: str | None,
    after_text: str | None,
    baseline: Sequence[Diagnostic],
    current: Sequence[Diagnostic],
) -> Delta:
    """Split `current` into introduced/persisting and find the `baseline` ones fixed.

    `baseline` holds diagnostics of `before_text`, `current` of `after_text` (positions in each
    text's own coordinates; `None` means no text). See the module docstring for the algorithm.
    """
    if not baseline:
        return Delta(introduced=tuple(current))
    if not current:
        return Delta(fixed=tuple(baseline))
    old_lines = split_lines(before_text or "")
    new_lines = split_lines(after_text or "")
    matcher = _Matcher(LineMap(old_lines, new_lines), old_lines, new_lines, baseline, current)
    matcher.exact()
    if not all(matcher.done_c) and not all(matcher.done_b):
        matcher.same_line(masked=False)
        matcher.same_line(masked=True)
        matcher.reworded()
        matcher.moved(reworded=False)
        matcher.moved(reworded=True)
    done_c, done_b = matcher.done_c, matcher.done_b
    return Delta(
        introduced=tuple(d for j, d in enumerate(current) if not done_c[j]),
        fixed=tuple(d for i, d in enumerate(baseline) if not done_b[i]),
        persisting=tuple(d for j, d in enumerate(current) if done_c[j]),
    )
