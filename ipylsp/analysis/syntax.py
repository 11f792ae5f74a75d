"""The in-process syntax tier: parse errors without a language server.

`syntax_diagnostics(path, text)` answers in milliseconds, before (or without) any server: a
file that does not even parse is reported at once with an exact position. It returns None when
it has no parser for the file's type, `()` when the text parses, and never raises.

- Python (`.py`, `.pyi`, `.pyw`): `compile(..., ast.PyCF_ONLY_AST)` of this interpreter.
  Syntax warnings (invalid escape sequences, ...) become WARNING diagnostics with code
  "SyntaxWarning" instead of being printed into the user's cell.
- JSON (`.json`, `.ipynb`, `.geojson`, ...): `json.loads`. JSON with comments (`.jsonc`,
  `tsconfig*.json`, `.vscode/*.json`, `devcontainer.json`, ...) has its comments and trailing
  commas blanked first, keeping every position.
- JSON Lines (`.jsonl`, `.ndjson`): `json.loads` per non-blank line.
- TOML (`.toml`, `Pipfile`, `Cargo.lock`, `poetry.lock`, `uv.lock`, ...): `tomllib` (3.11+) or
  `tomli`; None when neither is importable.
- YAML (`.yaml`, `.yml`): PyYAML's `compose_all` with the safe loader (syntax, anchors and
  aliases; tags are not constructed, so CloudFormation's `!Ref` is fine); None without PyYAML.

Positions are 0-based lines and code-point columns in the LSP sense of lines (`\\n`, `\\r\\n`,
`\\r`), whatever each parser counts internally. Each diagnostic has severity ERROR (WARNING for
Python syntax warnings), source `SOURCE` and server id `SERVER_ID`.
"""

from __future__ import annotations

import ast
import importlib
import json
import re
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ipylsp.analysis.model import Diagnostic, Range, Severity
from ipylsp.analysis.positions import split_lines

__all__ = ["MAX_DIAGNOSTICS", "MAX_SIZE", "SERVER_ID", "SOURCE", "syntax_diagnostics"]

SOURCE = "ipylsp-syntax"
SERVER_ID = "syntax"
MAX_SIZE = 20_000_000
"""Texts longer than this (in characters) are not parsed here: None."""
MAX_DIAGNOSTICS = 100
"""At most this many diagnostics per file (JSON Lines can have one per line)."""

Checker = Callable[[str], tuple[Diagnostic, ...]]

_LINE_END = re.compile(r"\r\n|\r|\n")
_BOM = "\ufeff"


# --- positions ---------------------------------------------------------------------------


def offset_to_position(text: str, offset: int) -> tuple[int, int]:
    """0-based (line, code-point column) of character `offset` in `text`, LSP line ends.

    An offset between the CR and LF of a CRLF is the end of its line; offsets are clamped.
    """
    offset = min(max(offset, 0), len(text))
    line = 0
    line_start = 0
    for match in _LINE_END.finditer(text, 0, offset):
        if match.group() == "\r" and match.end() == offset and text[offset : offset + 1] == "\n":
            return line, match.start() - line_start  # inside a CRLF: the end of this line
        line += 1
        line_start = match.end()
    return line, offset - line_start


def _diagnostic(
    line: int,
    column: int,
    end_line: int,
    end_column: int,
    message: str,
    *,
    code: str | None = None,
    severity: Severity = Severity.ERROR,
) -> Diagnostic:
    return Diagnostic(
        range=Range.of(line, column, end_line, end_column),
        severity=severity,
        message=message,
        source=SOURCE,
        code=code,
        server_id=SERVER_ID,
    )


def _point(lines: list[str], line: int, column: int, message: str, **kw: Any) -> Diagnostic:
    """A one-character range at (line, column) clamped to the text (empty at a line's end)."""
    line = min(max(line, 0), len(lines) - 1)
    text = lines[line]
    column = min(max(column, 0), len(text))
    end = column + 1 if column < len(text) else column
    return _diagnostic(line, column, line, end, message, **kw)


# --- Python --------------------------------------------------------------------------------


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


def _check_python(text: str) -> tuple[Diagnostic, ...]:
    shift = 1 if text.startswith(_BOM) else 0  # a decoded BOM; compile() rejects it in str
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
                    _diagnostic(
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
                _diagnostic(
                    line, column, end_line, end_column, error.msg, code=type(error).__name__
                )
            )
    except ValueError as error:  # 3.10: "source code string cannot contain null bytes"
        found.append(_nul(source, lines) if "\0" in source else _point(lines, 0, 0, str(error)))
    except (RecursionError, MemoryError) as error:  # the interpreter fails the same way
        found.append(
            _point(
                lines, 0, 0, f"too complex to parse ({type(error).__name__})", code="SyntaxError"
            )
        )
    if shift:
        found = [_shift_first_line(d, shift) for d in found]
    return tuple(found[:MAX_DIAGNOSTICS])


def _nul(source: str, lines: list[str]) -> Diagnostic:
    line, column = offset_to_position(source, source.index("\0"))
    return _point(lines, line, column, "source code cannot contain null bytes", code="SyntaxError")


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


# --- JSON ----------------------------------------------------------------------------------

_JSONC_TOKENS = re.compile(
    r"""
      "(?:[^"\\\r\n]|\\.)*"                              # a string: kept
    | //[^\r\n]*                                         # a line comment
    | /\*.*?\*/                                          # a block comment
    | ,(?=(?:\s|//[^\r\n]*|/\*.*?\*/)*[\]}])            # a trailing comma
    """,
    re.VERBOSE | re.DOTALL,
)
_NOT_LINE_END = re.compile(r"[^\r\n]")


def _blank(match: re.Match[str]) -> str:
    token = match.group()
    if token.startswith('"'):
        return token
    return _NOT_LINE_END.sub(" ", token)


def strip_jsonc(text: str) -> str:
    """Comments and trailing commas replaced by spaces: same length, same line breaks."""
    return _JSONC_TOKENS.sub(_blank, text)


def _json_error(text: str, lines: list[str], error: json.JSONDecodeError) -> Diagnostic:
    line, column = offset_to_position(text, error.pos)
    return _point(lines, line, column, error.msg)


def _check_json(text: str, *, comments: bool = False) -> tuple[Diagnostic, ...]:
    lines = split_lines(text)
    source = " " + text[1:] if text.startswith(_BOM) else text
    if comments:
        source = strip_jsonc(source)
    try:
        json.loads(source)
    except json.JSONDecodeError as error:
        return (_json_error(source, lines, error),)
    except (ValueError, RecursionError):  # huge integers, deep nesting: not syntax errors
        return ()
    return ()


def _check_jsonc(text: str) -> tuple[Diagnostic, ...]:
    return _check_json(text, comments=True)


def _check_json_lines(text: str) -> tuple[Diagnostic, ...]:
    lines = split_lines(text)
    found: list[Diagnostic] = []
    for number, line in enumerate(lines):
        source = " " + line[1:] if number == 0 and line.startswith(_BOM) else line
        if not source.strip():
            continue
        try:
            json.loads(source)
        except json.JSONDecodeError as error:
            found.append(_point(lines, number, error.pos, error.msg))
            if len(found) >= MAX_DIAGNOSTICS:
                break
        except (ValueError, RecursionError):
            continue
    return tuple(found)


# --- TOML ----------------------------------------------------------------------------------

_TOML_WHERE = re.compile(r"\s*\(at (?:line (\d+), column (\d+)|end of document)\)\s*$")


def _toml_module() -> Any:
    for name in ("tomllib", "tomli"):
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    return None


def _check_toml(text: str) -> tuple[Diagnostic, ...]:
    module = _toml_module()
    if module is None:  # pragma: no cover - Python 3.10 without tomli
        return ()
    lines = split_lines(text)
    source = " " + text[1:] if text.startswith(_BOM) else text
    try:
        module.loads(source)
    except module.TOMLDecodeError as error:
        message = str(getattr(error, "msg", None) or error)
        where = _TOML_WHERE.search(message)
        message = message[: where.start()] if where else message
        lineno = getattr(error, "lineno", None)
        colno = getattr(error, "colno", None)
        if isinstance(lineno, int) and isinstance(colno, int):
            line, column = lineno - 1, colno - 1
        elif where and where.group(1):
            line, column = int(where.group(1)) - 1, int(where.group(2)) - 1
        else:  # end of document
            line, column = offset_to_position(text, len(text))
        # tomllib counts on the text with CRLF made LF: the same lines and columns as LSP.
        return (_point(lines, line, column, message),)
    except (ValueError, RecursionError):
        return ()
    return ()


# --- YAML ----------------------------------------------------------------------------------


def _yaml_module() -> Any:
    try:
        return importlib.import_module("yaml")
    except ImportError:
        return None


def _check_yaml(text: str) -> tuple[Diagnostic, ...]:
    yaml = _yaml_module()
    if yaml is None:  # pragma: no cover - PyYAML is a test dependency
        return ()
    lines = split_lines(text)
    try:
        # Compose, do not construct: syntax and anchors are checked, tags are not resolved.
        for _ in yaml.compose_all(text, Loader=yaml.SafeLoader):
            pass
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        message = error.problem or error.context or "invalid YAML"
        if error.problem and error.context:
            message = f"{error.problem} ({error.context})"
        offset = mark.index if mark is not None else 0
        line, column = offset_to_position(text, offset)
        return (_point(lines, line, column, message),)
    except yaml.reader.ReaderError as error:
        character = error.character
        code = ord(character) if isinstance(character, str) else int(character)
        line, column = offset_to_position(text, error.position)
        return (
            _point(lines, line, column, f"unacceptable character #x{code:04x}: {error.reason}"),
        )
    except yaml.YAMLError as error:  # pragma: no cover - other YAML errors carry no mark
        return (_point(lines, 0, 0, str(error)),)
    except RecursionError:
        return ()
    return ()


# --- dispatch ------------------------------------------------------------------------------

_JSON_SUFFIXES = frozenset({".json", ".ipynb", ".geojson", ".webmanifest", ".har", ".jsonld"})
_JSONC_SUFFIXES = frozenset({".jsonc", ".json5c", ".code-workspace", ".code-snippets"})
_JSONC_NAMES = frozenset(
    {
        "tsconfig.json",
        "jsconfig.json",
        "devcontainer.json",
        ".devcontainer.json",
        ".eslintrc.json",
        ".babelrc",
        "babel.config.json",
        "tslint.json",
        "deno.json",
        "api-extractor.json",
        "typedoc.json",
        "language-configuration.json",
    }
)
_JSONC_NAME = re.compile(r"^(?:ts|js)config\..*\.json$")
_TOML_NAMES = frozenset({"pipfile", "cargo.lock", "poetry.lock", "uv.lock", "pdm.lock"})


def checker_for(path: Path) -> Checker | None:
    """The syntax checker for a path (by name and suffix), or None."""
    name = path.name.lower()
    suffix = path.suffix.lower()
    if suffix in {".py", ".pyi", ".pyw"}:
        return _check_python
    if (
        suffix in _JSONC_SUFFIXES
        or name in _JSONC_NAMES
        or _JSONC_NAME.match(name)
        or (suffix == ".json" and path.parent.name == ".vscode")
    ):
        return _check_jsonc
    if suffix in _JSON_SUFFIXES:
        return _check_json
    if suffix in {".jsonl", ".ndjson"}:
        return _check_json_lines
    if suffix == ".toml" or name in _TOML_NAMES:
        return _check_toml if _toml_module() is not None else None
    if suffix in {".yaml", ".yml"}:
        return _check_yaml if _yaml_module() is not None else None
    return None


def syntax_diagnostics(path: Path, text: str) -> tuple[Diagnostic, ...] | None:
    """Parse errors of `text` (the content of `path`); None when there is no parser for it.

    Never raises: an unexpected failure of a parser is treated as "no parser" (None), since
    the syntax tier is an early answer and the language servers still check the file.
    """
    checker = checker_for(path)
    if checker is None or len(text) > MAX_SIZE:
        return None
    try:
        return checker(text)
    except Exception:
        return None
