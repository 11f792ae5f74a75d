"""The Python syntax checker: `compile(..., ast.PyCF_ONLY_AST)` of this interpreter.

Its own module because Python is the format with the most to get right: exact error ranges
across CPython versions, syntax warnings kept out of the user's cell, NUL bytes, a BOM.
"""

from __future__ import annotations

import ast
import functools
import re
import warnings

from ipylsp.analysis.syntax.checker import (
    BOM,
    MAX_DIAGNOSTICS,
    make_diagnostic,
    offset_to_position,
    point,
)
from ipylsp.model.diagnostics import Diagnostic, Range, Severity
from ipylsp.model.positions import split_lines


def _python_position(error: SyntaxError, lines: list[str]) -> tuple[int, int, int, int]:
    """Exact 0-based range of a SyntaxError raised for *str* source.

    For str source, CPython 3.10+ gives `lineno` (1-based) and `offset` (1-based, in code
    points); `end_lineno`/`end_offset` when known (0 or -1 when not). On 3.10/3.11 an error
    inside an f-string replacement field is reported relative to the field's text
    (`error.text == "(expr)"`): it is found again on the reported line.
    """
    last = len(lines) - 1
    line = min(max((error.lineno or 1) - 1, 0), last)
    column = (error.offset or 1) - 1
    text = lines[line]
    reported = (error.text or "").rstrip("\r\n")
    if reported and reported != text and reported.startswith("(") and reported.endswith(")"):
        found = text.find(reported[1:-1])
        if found >= 0:
            column = found + column - 1
    column = min(max(column, 0), len(text))
    end_line, end_column = line, -1
    end_lineno = getattr(error, "end_lineno", None)
    end_offset = getattr(error, "end_offset", None)
    if (
        reported == text
        and isinstance(end_lineno, int)
        and isinstance(end_offset, int)
        and end_offset > 0
    ):
        end_line = min(max(end_lineno - 1, line), last)
        end_column = min(end_offset - 1, len(lines[end_line]))
    if (end_line, end_column) <= (line, column):
        end_line, end_column = line, (column + 1 if column < len(text) else column)
    indent = len(text) - len(text.lstrip(" \t\f"))
    if isinstance(error, IndentationError) and indent and not indent < column < len(text.rstrip()):
        # Python points into the indentation ("unexpected indent", TabError) or past the end
        # of the line ("unindent does not match ..."): the indentation is what is wrong.
        return line, 0, line, indent
    return line, column, end_line, end_column


def _warning_position(message: str, lineno: int, lines: list[str]) -> tuple[int, int, int]:
    line = min(max(lineno - 1, 0), len(lines) - 1)
    text = lines[line]
    quoted = re.search(r"'([^']+)'", message)  # "invalid escape sequence '\d'"
    if quoted and (found := text.find(quoted.group(1))) >= 0:
        return line, found, found + len(quoted.group(1))
    start = len(text) - len(text.lstrip())
    return line, start, len(text)


@functools.lru_cache(maxsize=8)
def check_python(text: str) -> tuple[Diagnostic, ...]:
    """Python's own parser on `text`. Remembered for the last few texts: a check parses the
    text before and after, and the text before is usually the last check's after (the cells'
    document, parsed again at every cell)."""
    shift = 1 if text.startswith(BOM) else 0  # a decoded BOM; compile() rejects it in str
    source = text[shift:]
    lines = split_lines(source)
    found: list[Diagnostic] = []
    try:
        # compile() reports syntax warnings through the warnings machinery (printed in the
        # user's cell otherwise): record them for this call only.
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            compile(source, "<ipylsp>", "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
        for warning in caught:
            if issubclass(warning.category, (SyntaxWarning, DeprecationWarning)):
                message = str(warning.message)
                line, start, end = _warning_position(message, warning.lineno, lines)
                found.append(
                    make_diagnostic(
                        line,
                        start,
                        line,
                        end,
                        message,
                        code="SyntaxWarning",  # a DeprecationWarning before 3.12
                        severity=Severity.WARNING,
                    )
                )
    except SyntaxError as error:
        if error.lineno is None and "\0" in source:  # 3.11.4+: no position for NUL bytes
            found.append(_nul(source, lines))
        else:
            line, column, end_line, end_column = _python_position(error, lines)
            found.append(
                make_diagnostic(
                    line, column, end_line, end_column, error.msg, code=type(error).__name__
                )
            )
    except ValueError as error:  # 3.10: "source code string cannot contain null bytes"
        found.append(_nul(source, lines) if "\0" in source else point(lines, 0, 0, str(error)))
    except (RecursionError, MemoryError) as error:  # the interpreter fails the same way
        found.append(
            point(lines, 0, 0, f"too complex to parse ({type(error).__name__})", code="SyntaxError")
        )
    if shift:
        found = [_shift_first_line(d, shift) for d in found]
    return tuple(found[:MAX_DIAGNOSTICS])


def _nul(source: str, lines: list[str]) -> Diagnostic:
    line, column = offset_to_position(source, source.index("\0"))
    return point(lines, line, column, "source code cannot contain null bytes", code="SyntaxError")


def _shift_first_line(diagnostic: Diagnostic, shift: int) -> Diagnostic:
    r = diagnostic.range
    start_column = r.start.column + (shift if r.start.line == 0 else 0)
    end_column = r.end.column + (shift if r.end.line == 0 else 0)
    return Diagnostic(
        range=Range.of(r.start.line, start_column, r.end.line, end_column),
        severity=diagnostic.severity,
        message=diagnostic.message,
        source=diagnostic.source,
        code=diagnostic.code,
        server_id=diagnostic.server_id,
    )
