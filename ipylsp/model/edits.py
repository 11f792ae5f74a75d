"""Text edits in the model's terms and what they would do, as a unified diff.

Rename previews and code actions are shown to a model as diffs and never applied: the edits
are applied here to copies of the texts, in memory. Positions are 0-based lines and
code-point columns (the wire's were converted by `lsp.requests`).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from ipylsp.model.diagnostics import Range


@dataclass(frozen=True, slots=True)
class TextEdit:
    path: Path
    range: Range
    new_text: str


class EditConflict(ValueError):
    """Edits that overlap or point outside the text: the preview would be wrong."""


def _offset(lines: list[str], line: int, column: int) -> int:
    if line == len(lines) and column == 0:  # the very end of the text
        return sum(len(x) for x in lines)
    if not 0 <= line < len(lines):
        raise EditConflict(f"line {line + 1} is outside the text ({len(lines)} lines)")
    body = lines[line].rstrip("\r\n")
    if not 0 <= column <= len(body):
        raise EditConflict(f"column {column + 1} is outside line {line + 1}")
    return sum(len(x) for x in lines[:line]) + column


def apply(text: str, edits: Iterable[TextEdit]) -> str:
    """`text` with the edits applied (all against the original text, as LSP defines them)."""
    lines = text.splitlines(keepends=True)
    if text.endswith(("\n", "\r")) or not text:
        lines.append("")
    spans = sorted(
        (
            (
                _offset(lines, e.range.start.line, e.range.start.column),
                _offset(lines, e.range.end.line, e.range.end.column),
                e.new_text,
            )
            for e in edits
        ),
        key=lambda span: (span[0], span[1]),
    )
    out, at = [], 0
    for start, end, new in spans:
        if start < at or end < start:
            raise EditConflict("overlapping edits")
        out.append(text[at:start])
        out.append(new)
        at = end
    out.append(text[at:])
    return "".join(out)


def unified_diff(shown_path: str, before: str, after: str) -> str:
    """A `git diff`-style unified diff of one file ("" when nothing changes)."""
    if before == after:
        return ""
    lines = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile=f"a/{shown_path}",
        tofile=f"b/{shown_path}",
    )
    # a last line without a newline still ends its diff line (as `git diff` shows it)
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def preview(edits: Iterable[TextEdit], texts: Mapping[Path, str], shown: Mapping[Path, str]) -> str:
    """The diff of every file the edits touch, files in the order first edited."""
    by_file: dict[Path, list[TextEdit]] = {}
    for edit in edits:
        by_file.setdefault(edit.path, []).append(edit)
    parts = []
    for path, file_edits in by_file.items():
        before = texts.get(path, "")
        parts.append(unified_diff(shown.get(path, str(path)), before, apply(before, file_edits)))
    return "".join(parts)
