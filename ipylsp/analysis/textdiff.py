"""Line and character diffs that carry positions from an old text to a new one.

`LineMap` answers, for a line of the old text: which line of the new text is the same line
(unchanged), or which new line it most plausibly became (a *changed* line, paired by
similarity), or nothing (deleted, or replaced beyond recognition). `ColumnMap` does the same for
the columns of one changed line. Both are built for the delta (`analysis.delta`), which only
needs the lines that carry diagnostics, so the expensive parts (pairing changed lines, the
character diff) are computed lazily, per line asked about, and cached.

The line diff (`line_blocks`) is patience-style: it trims the common head and tail, anchors on
lines that occur once on both sides, extends the anchors over equal neighbours and recurses
into the gaps, with `difflib.SequenceMatcher` for small gaps without unique lines. Runs of
equal lines are found by galloping slice comparisons, so a long file with a few edits costs
little more than comparing its lines once (`benchmarks/bench_delta.py`).
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections import Counter
from collections.abc import Sequence
from difflib import SequenceMatcher

PAIR_CUTOFF = 0.5
"""Least similarity (`SequenceMatcher.ratio`) for pairing an old line with a new one inside a
block of several replaced lines. A block of exactly one old and one new line is always paired."""
PAIR_WINDOW = 8
"""How far (in lines) from its proportional position a changed line's partner is searched."""
MAX_UNANCHORED = 2000
"""Largest gap without unique lines still diffed with `SequenceMatcher` (beyond: replaced)."""
MAX_DEPTH = 32
"""Recursion limit of the anchored line diff (deeper gaps go to `SequenceMatcher`)."""


_LINE_END = re.compile(r"\r\n|\r|\n")


def split_lines(text: str) -> list[str]:
    """`positions.split_lines` (LSP line ends), at C speed for LF and CRLF texts."""
    if "\r" not in text:
        return text.split("\n")
    if text.count("\r") == text.count("\r\n"):
        return text.replace("\r\n", "\n").split("\n")
    return _LINE_END.split(text)


def _run(a: Sequence[str], i: int, ahi: int, b: Sequence[str], j: int, bhi: int) -> int:
    """Length of the run of equal lines a[i:] == b[j:] (within the bounds), by galloping.

    Slice comparisons run at C speed, far faster than a line-by-line loop on long equal runs.
    """
    limit = min(ahi - i, bhi - j)
    if limit <= 0 or a[i] != b[j]:
        return 0
    low, step = 1, 1
    while low < limit:  # gallop: low lines are known equal
        high = min(low + step, limit)
        if a[i + low : i + high] != b[j + low : j + high]:
            break
        low, step = high, step * 2
    else:
        return limit
    high = min(low + step, limit) - 1  # a mismatch lies in [low, high]
    while low < high:
        mid = (low + high + 1) // 2
        if a[i + low : i + mid] == b[j + low : j + mid]:
            low = mid
        else:
            high = mid - 1
    return low


def _run_back(a: Sequence[str], alo: int, i: int, b: Sequence[str], blo: int, j: int) -> int:
    """Length of the run of equal lines ending just before a[i] and b[j]."""
    limit = min(i - alo, j - blo)
    low, high = 0, limit
    if limit <= 0 or a[i - 1] != b[j - 1]:
        return 0
    while low < high:
        mid = (low + high + 1) // 2
        if a[i - mid : i - low] == b[j - mid : j - low]:
            low = mid
        else:
            high = mid - 1
    return low


def _unique_anchors(
    a: Sequence[str], alo: int, ahi: int, b: Sequence[str], blo: int, bhi: int
) -> list[tuple[int, int]]:
    """Lines that occur exactly once on each side, as the longest ascending chain of pairs."""
    old = a[alo:ahi]
    new = b[blo:bhi]
    count_old = Counter(old)
    count_new = Counter(new)
    where = {line: i for i, line in enumerate(old, alo)}
    pairs = [
        (where[line], j)
        for j, line in enumerate(new, blo)
        if count_new[line] == 1 and count_old.get(line) == 1
    ]
    if len(pairs) < 2 or all(x[0] < y[0] for x, y in itertools.pairwise(pairs)):
        return pairs
    # Longest increasing subsequence of old positions (patience sorting).
    tails: list[int] = []
    tail_index: list[int] = []
    previous = [-1] * len(pairs)
    for k, (i, _) in enumerate(pairs):
        pos = bisect.bisect_left(tails, i)
        if pos == len(tails):
            tails.append(i)
            tail_index.append(k)
        else:
            tails[pos] = i
            tail_index[pos] = k
        previous[k] = tail_index[pos - 1] if pos else -1
    chain: list[tuple[int, int]] = []
    k = tail_index[-1]
    while k >= 0:
        chain.append(pairs[k])
        k = previous[k]
    chain.reverse()
    return chain


def _diff(
    a: Sequence[str],
    alo: int,
    ahi: int,
    b: Sequence[str],
    blo: int,
    bhi: int,
    out: list[tuple[int, int, int]],
    depth: int,
) -> None:
    head = _run(a, alo, ahi, b, blo, bhi)
    if head:
        out.append((alo, blo, head))
        alo, blo = alo + head, blo + head
    tail = _run_back(a, alo, ahi, b, blo, bhi)
    ahi, bhi = ahi - tail, bhi - tail
    if alo < ahi and blo < bhi:
        anchors = _unique_anchors(a, alo, ahi, b, blo, bhi) if depth < MAX_DEPTH else []
        if anchors:
            starts = [i for i, _ in anchors]
            pa, pb = alo, blo
            k = 0
            while k < len(anchors):
                i, j = anchors[k]
                if i > pa or j > pb:
                    _diff(a, pa, i, b, pb, j, out, depth + 1)
                size = _run(a, i, ahi, b, j, bhi)
                out.append((i, j, size))
                pa, pb = i + size, j + size
                k = bisect.bisect_left(starts, pa, k + 1)
                while k < len(anchors) and anchors[k][1] < pb:  # pragma: no cover - defensive
                    k += 1
            if pa < ahi and pb < bhi:
                _diff(a, pa, ahi, b, pb, bhi, out, depth + 1)
        elif max(ahi - alo, bhi - blo) <= MAX_UNANCHORED:
            matcher = SequenceMatcher(None, a[alo:ahi], b[blo:bhi])
            out.extend((i + alo, j + blo, n) for i, j, n in matcher.get_matching_blocks() if n)
    if tail:
        out.append((ahi, bhi, tail))


def line_blocks(a: Sequence[str], b: Sequence[str]) -> list[tuple[int, int, int]]:
    """Runs of equal lines `(i, j, size)`, `a[i:i+size] == b[j:j+size]`, ascending in both.

    Patience-style: trim the common head and tail, anchor on lines unique on both sides (the
    longest chain of them in order), extend each anchor over the equal lines around it, and
    recurse into the gaps; a gap without unique lines falls back to `difflib.SequenceMatcher`
    when it is small enough (`MAX_UNANCHORED` lines), else counts as replaced.
    """
    out: list[tuple[int, int, int]] = []
    _diff(a, 0, len(a), b, 0, len(b), out, 0)
    return out


def opcodes(
    blocks: Sequence[tuple[int, int, int]], len_a: int, len_b: int
) -> list[tuple[str, int, int, int, int]]:
    """`SequenceMatcher.get_opcodes`-style (tag, a1, a2, b1, b2) covering both sides."""
    ops: list[tuple[str, int, int, int, int]] = []
    i = j = 0
    for ai, bj, size in (*blocks, (len_a, len_b, 0)):
        if i < ai and j < bj:
            ops.append(("replace", i, ai, j, bj))
        elif i < ai:
            ops.append(("delete", i, ai, j, j))
        elif j < bj:
            ops.append(("insert", i, i, j, bj))
        if size:
            ops.append(("equal", ai, ai + size, bj, bj + size))
        i, j = ai + size, bj + size
    return ops


def _ratio(a: str, b: str) -> float:
    if a == b:
        return 1.0
    matcher = SequenceMatcher(None, a, b, autojunk=False)
    if matcher.real_quick_ratio() < PAIR_CUTOFF or matcher.quick_ratio() < PAIR_CUTOFF:
        return 0.0
    return matcher.ratio()


class ColumnMap:
    """Columns of one old line carried to its changed counterpart in the new text.

    A *gap* `p` (the position before character `p`; `p == len(old)` is the end of the line)
    maps when it touches an unchanged run of characters (inside it or at either edge), or when
    it is the start or the end of the line. A gap strictly inside replaced or deleted
    characters does not map.
    """

    __slots__ = ("_a_ends", "_a_starts", "_blocks", "_new_len", "_old_len")

    def __init__(self, old: str, new: str) -> None:
        self._old_len = len(old)
        self._new_len = len(new)
        # Equal runs (a, b, size), ascending. Trim prefix/suffix, diff the rest.
        prefix = _run(old, 0, len(old), new, 0, len(new))
        suffix = _run_back(old, prefix, len(old), new, prefix, len(new))
        blocks: list[tuple[int, int, int]] = []
        if prefix:
            blocks.append((0, 0, prefix))
        mid_old = old[prefix : len(old) - suffix]
        mid_new = new[prefix : len(new) - suffix]
        if mid_old and mid_new:
            matcher = SequenceMatcher(None, mid_old, mid_new, autojunk=False)
            for a, b, size in matcher.get_matching_blocks():
                if size:
                    blocks.append((a + prefix, b + prefix, size))
        if suffix:
            blocks.append((len(old) - suffix, len(new) - suffix, suffix))
        self._blocks = blocks
        self._a_starts = [a for a, _, _ in blocks]
        self._a_ends = [a + size for a, _, size in blocks]

    def column(self, p: int, *, end: bool = False) -> int | None:
        """The new column for old gap `p` (clamped to the old line), or None.

        A start position sticks to the character after it, an end position (`end=True`) to the
        character before it: where text was inserted at the gap, a range starting there starts
        after the insertion and a range ending there ends before it.
        """
        p = min(max(p, 0), self._old_len)
        blocks = self._blocks
        index = bisect.bisect_right(self._a_starts, p) - 1  # last run starting at or before p
        if end:
            # The run holding character p - 1, else a run starting at p.
            if index >= 0:
                a, b, size = blocks[index]
                if a < p <= a + size:
                    return b + (p - a)
                if a == p:
                    if index > 0 and self._a_ends[index - 1] == p:
                        a, b, size = blocks[index - 1]
                        return b + size
                    return b
        elif index >= 0:
            # The run holding character p, else a run ending at p.
            a, b, size = blocks[index]
            if p <= a + size:
                return b + (p - a)
        if p == 0:
            return 0
        if p == self._old_len:
            return self._new_len
        return None

    def keeps_any(self, start: int, end: int) -> bool:
        """Whether any character of old columns [start, end) is unchanged."""
        index = bisect.bisect_right(self._a_ends, start)
        return index < len(self._blocks) and self._blocks[index][0] < end


class LineMap:
    """Old line numbers carried to the new text; see the module docstring."""

    __slots__ = ("_b_starts", "_located", "_new", "_old", "_op_starts", "_ops")

    def __init__(self, old: Sequence[str], new: Sequence[str]) -> None:
        self._old = old
        self._new = new
        self._ops = opcodes(line_blocks(old, new), len(old), len(new))
        self._op_starts = [op[1] for op in self._ops]
        self._b_starts = [op[3] for op in self._ops]
        self._located: dict[int, tuple[int, ColumnMap | None] | None] = {}

    @property
    def unchanged(self) -> bool:
        """Whether the two texts have the same lines."""
        return all(op[0] == "equal" for op in self._ops)

    def _op_for_old(self, line: int) -> tuple[str, int, int, int, int] | None:
        index = bisect.bisect_right(self._op_starts, line) - 1
        while index >= 0:  # skip inserts (empty on the old side) sharing the start
            op = self._ops[index]
            if op[1] <= line < op[2]:
                return op
            if op[2] <= line:
                return None
            index -= 1
        return None

    def locate(self, line: int) -> tuple[int, ColumnMap | None] | None:
        """Where an old line went: `(new_line, None)` when unchanged, `(new_line, columns)`
        when changed and paired, None when deleted or unpaired. Cached per line."""
        try:
            return self._located[line]
        except KeyError:
            pass
        result: tuple[int, ColumnMap | None] | None = None
        op = self._op_for_old(line)
        if op is not None:
            if op[0] == "equal":
                result = (op[3] + (line - op[1]), None)
            elif op[0] == "replace":
                partner = self._pair(line, op)
                if partner is not None:
                    result = (partner, ColumnMap(self._old[line], self._new[partner]))
        self._located[line] = result
        return result

    def same(self, line: int) -> int | None:
        """The new line that is this old line unchanged, or None."""
        located = self.locate(line)
        return located[0] if located is not None and located[1] is None else None

    def partner(self, line: int) -> int | None:
        """The new line this changed old line became (None if unchanged, deleted or unpaired)."""
        located = self.locate(line)
        return located[0] if located is not None and located[1] is not None else None

    def columns(self, line: int) -> ColumnMap | None:
        """The column map of a changed old line and its partner (None when not paired)."""
        located = self.locate(line)
        return located[1] if located is not None else None

    def _pair(self, line: int, op: tuple[str, int, int, int, int]) -> int | None:
        _, a1, a2, b1, b2 = op
        n, m = a2 - a1, b2 - b1
        if n == 1 and m == 1:
            return b1
        text = self._old[line]
        stripped = text.strip()
        # A line equal but for indentation near its proportional position wins; then the
        # proportional position itself if similar enough (edits keep the order of lines: for
        # equal-sized blocks it is the same offset); then the most similar line nearby.
        guess = b1 + ((line - a1) * m) // n
        window = [guess]
        for step in range(1, PAIR_WINDOW + 1):
            window.extend(j for j in (guess - step, guess + step) if b1 <= j < b2)
        for j in window:
            if self._new[j].strip() == stripped:
                return j
        if _ratio(text, self._new[guess]) >= PAIR_CUTOFF:
            return guess
        best, best_ratio = None, 0.0
        for j in window[1:]:
            ratio = _ratio(text, self._new[j])
            if ratio > best_ratio:
                best, best_ratio = j, ratio
        return best if best_ratio >= PAIR_CUTOFF else None

    def is_new_unchanged(self, new_line: int) -> bool:
        """Whether this line of the new text is an unchanged line of the old text."""
        index = bisect.bisect_right(self._b_starts, new_line) - 1
        while index >= 0:
            tag, _, _, b1, b2 = self._ops[index]
            if b1 <= new_line < b2:
                return tag == "equal"
            if b2 <= new_line:
                return False
            index -= 1
        return False
