"""The data-format syntax checkers: JSON (with comments, JSON Lines), TOML and YAML.

Its own module: these formats share nothing with Python's checker but a parser that gives an
offset or a (line, column) to be turned into an LSP position.
"""

from __future__ import annotations

import importlib
import json
import re
from typing import Any

from ipylsp.analysis.syntax.checker import BOM, MAX_DIAGNOSTICS, offset_to_position, point
from ipylsp.model.diagnostics import Diagnostic
from ipylsp.model.positions import split_lines

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
    return point(lines, line, column, error.msg)


def check_json(text: str, *, comments: bool = False) -> tuple[Diagnostic, ...]:
    lines = split_lines(text)
    source = " " + text[1:] if text.startswith(BOM) else text
    if comments:
        source = strip_jsonc(source)
    try:
        json.loads(source)
    except json.JSONDecodeError as error:
        return (_json_error(source, lines, error),)
    except (ValueError, RecursionError):  # huge integers, deep nesting: not syntax errors
        return ()
    return ()


def check_jsonc(text: str) -> tuple[Diagnostic, ...]:
    return check_json(text, comments=True)


def check_json_lines(text: str) -> tuple[Diagnostic, ...]:
    lines = split_lines(text)
    found: list[Diagnostic] = []
    for number, line in enumerate(lines):
        source = " " + line[1:] if number == 0 and line.startswith(BOM) else line
        if not source.strip():
            continue
        try:
            json.loads(source)
        except json.JSONDecodeError as error:
            found.append(point(lines, number, error.pos, error.msg))
            if len(found) >= MAX_DIAGNOSTICS:
                break
        except (ValueError, RecursionError):
            continue
    return tuple(found)


# --- TOML ----------------------------------------------------------------------------------

_TOML_WHERE = re.compile(r"\s*\(at (?:line (\d+), column (\d+)|end of document)\)\s*$")


def toml_module() -> Any:
    for name in ("tomllib", "tomli"):
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    return None


def check_toml(text: str) -> tuple[Diagnostic, ...]:
    module = toml_module()
    if module is None:  # pragma: no cover - Python 3.10 without tomli
        return ()
    lines = split_lines(text)
    source = " " + text[1:] if text.startswith(BOM) else text
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
        return (point(lines, line, column, message),)
    except (ValueError, RecursionError):
        return ()
    return ()


# --- YAML ----------------------------------------------------------------------------------


def yaml_module() -> Any:
    try:
        return importlib.import_module("yaml")
    except ImportError:
        return None


def check_yaml(text: str) -> tuple[Diagnostic, ...]:
    yaml = yaml_module()
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
        return (point(lines, line, column, message),)
    except yaml.reader.ReaderError as error:
        character = error.character
        code = ord(character) if isinstance(character, str) else int(character)
        line, column = offset_to_position(text, error.position)
        return (point(lines, line, column, f"unacceptable character #x{code:04x}: {error.reason}"),)
    except yaml.YAMLError as error:  # pragma: no cover - other YAML errors carry no mark
        return (point(lines, 0, 0, str(error)),)
    except RecursionError:
        return ()
    return ()
