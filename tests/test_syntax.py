"""The in-process syntax tier: exact positions (0-based lines, code-point columns) per format."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from ipylsp.analysis import syntax
from ipylsp.analysis.syntax import offset_to_position, strip_jsonc, syntax_diagnostics
from ipylsp.model.diagnostics import Diagnostic, Severity

HAS_TOML = importlib.util.find_spec("tomllib") is not None or (
    importlib.util.find_spec("tomli") is not None
)
HAS_YAML = importlib.util.find_spec("yaml") is not None

Where = tuple[int, int, int, int, str]


def check(name: str, text: str) -> list[Where]:
    found = syntax_diagnostics(Path(name), text)
    assert found is not None, f"no checker for {name}"
    for d in found:
        assert d.source == "ipylsp-syntax"
        assert d.server_id == "syntax"
    return [_where(d) for d in found]


def _where(d: Diagnostic) -> Where:
    r = d.range
    return (r.start.line, r.start.column, r.end.line, r.end.column, d.message)


# --- Python ---------------------------------------------------------------------------------


def test_python_valid_source_is_clean() -> None:
    assert check("app.py", "import os\n\n\ndef f(x: int) -> int:\n    return x\n") == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("x = (1,\n", (0, 4, 0, 5, "'(' was never closed")),
        # Columns count code points: the emoji before ")" is one column.
        ("s = '😀' + )\n", (0, 10, 0, 11, "unmatched ')'")),
        ("名前 = 1 ＄ 2\n", (0, 7, 0, 8, "invalid character '＄' (U+FF04)")),  # noqa: RUF001
        ("a = 1\r\nb = (\r\n", (1, 4, 1, 5, "'(' was never closed")),
        ("a=1\rb=)\r", (1, 2, 1, 3, "unmatched ')'")),
        ("x = 1\n\x0cy = )\n", (1, 5, 1, 6, "unmatched ')'")),  # form feed is not a line end
        (
            "x = (1]\n",
            (0, 6, 0, 7, "closing parenthesis ']' does not match opening parenthesis '('"),
        ),
        (
            "名前 + 1 = 2\n",
            (0, 0, 0, 6, "cannot assign to expression here. Maybe you meant '==' instead of '='?"),
        ),
        (
            'x = """abc\n\ny',
            (0, 4, 0, 5, "unterminated triple-quoted string literal (detected at line 3)"),
        ),
        # An f-string field: 3.10/3.11 report it relative to the field, 3.12+ to the line.
        ("f'{😀 + }'\n", (0, 3, 0, 4, "invalid character '😀' (U+1F600)")),
    ],
)
def test_python_syntax_error_positions(text: str, expected: Where) -> None:
    found = syntax_diagnostics(Path("app.py"), text)
    assert found is not None
    assert [_where(d) for d in found] == [expected]
    assert found[0].severity == Severity.ERROR
    assert found[0].code == "SyntaxError"


def test_python_indentation_errors() -> None:
    found = syntax_diagnostics(Path("app.py"), "def f():\nreturn 1\n")
    assert found is not None
    assert [_where(d) for d in found] == [
        (1, 0, 1, 6, "expected an indented block after function definition on line 1")
    ]
    assert found[0].code == "IndentationError"
    # Python points past the end of "  b": the indentation is marked instead.
    found = syntax_diagnostics(Path("app.py"), "if x:\n    a\n  b\n")
    assert found is not None
    assert [_where(d) for d in found] == [
        (2, 0, 2, 2, "unindent does not match any outer indentation level")
    ]
    found = syntax_diagnostics(Path("app.py"), "if x:\n\ta\n        b\n")
    assert found is not None
    assert [_where(d) for d in found] == [
        (2, 0, 2, 8, "inconsistent use of tabs and spaces in indentation")
    ]
    assert found[0].code == "TabError"
    assert check("app.py", "x = 1\n    y = 2\n") == [(1, 0, 1, 4, "unexpected indent")]


def test_python_nul_byte_is_reported_not_raised() -> None:
    # 3.10 raises ValueError, 3.11+ a SyntaxError without a position: both become this.
    assert check("app.py", "x = 1\ny = 2\x00\n") == [
        (1, 5, 1, 6, "source code cannot contain null bytes")
    ]


def test_python_bom_is_accepted_and_counted_as_a_column() -> None:
    assert check("app.py", "\ufeffx = 1\n") == []
    assert check("app.py", "\ufeffx = )\n") == [(0, 5, 0, 6, "unmatched ')'")]
    assert check("app.py", "\ufeffx = 1\ny = )\n") == [(1, 4, 1, 5, "unmatched ')'")]


def test_python_too_deep_nesting() -> None:
    assert check("app.py", "(" * 300 + ")" * 300) == [
        (0, 200, 0, 201, "too many nested parentheses")
    ]


def test_python_syntax_warnings_are_diagnostics_not_output(
    recwarn: pytest.WarningsRecorder,
) -> None:
    found = syntax_diagnostics(Path("app.py"), 'x = 1\ny = "\\d"\n')
    assert found is not None
    assert [_where(d) for d in found] == [(1, 5, 1, 7, "invalid escape sequence '\\d'")]
    assert found[0].severity == Severity.WARNING
    assert found[0].code == "SyntaxWarning"
    assert len(recwarn) == 0  # nothing leaked into the user's warnings


@pytest.mark.parametrize("name", ["stub.pyi", "tool.pyw", "UPPER.PY"])
def test_python_suffixes(name: str) -> None:
    assert check(name, "def (") == [(0, 4, 0, 5, "invalid syntax")]


# --- JSON -----------------------------------------------------------------------------------


def test_json_valid_and_invalid() -> None:
    assert check("data.json", '{"a": [1, 2, {"b": null}]}\n') == []
    assert check("data.json", '{"a": 1 "b": 2}') == [(0, 8, 0, 9, "Expecting ',' delimiter")]


def test_json_trailing_comma() -> None:
    found = check("data.json", '{"a": 1,}')
    if sys.version_info >= (3, 13):  # json names the problem since 3.13
        assert found == [(0, 7, 0, 8, "Illegal trailing comma before end of object")]
    else:
        assert found == [(0, 8, 0, 9, "Expecting property name enclosed in double quotes")]


def test_json_positions_use_lsp_lines_and_code_points() -> None:
    assert check("data.json", '{\r\n"a": 1\r\n"b": 2}') == [(2, 0, 2, 1, "Expecting ',' delimiter")]
    # A lone CR ends a line for LSP (json itself would say line 1).
    assert check("data.json", '{\r"a": x}') == [(1, 5, 1, 6, "Expecting value")]
    assert check("data.json", '{"😀名": x}') == [(0, 7, 0, 8, "Expecting value")]


def test_json_edge_cases() -> None:
    assert check("data.json", "") == [(0, 0, 0, 0, "Expecting value")]
    assert check("data.json", '\ufeff{"a": 1}') == []  # a decoded BOM is tolerated
    assert check("data.json", '\ufeff{"a": }') == [(0, 7, 0, 8, "Expecting value")]
    assert check("data.json", "[" * 100_000 + "]" * 100_000) == []  # deep, but valid
    assert check("data.json", '{"a": 1} x') == [(0, 9, 0, 10, "Extra data")]


def test_notebook_is_checked_as_json() -> None:
    assert check("analysis.ipynb", '{"cells": [], "metadata": {}}') == []
    assert check("analysis.ipynb", '{"cells": [}') == [(0, 11, 0, 12, "Expecting value")]


@pytest.mark.parametrize(
    "name", ["tsconfig.json", "tsconfig.build.json", "settings.jsonc", ".vscode/settings.json"]
)
def test_json_with_comments(name: str) -> None:
    text = '{\n  // compiler\n  "a": "x // not a comment", /* b */\n  "c": [1, 2,],\n}\n'
    assert check(name, text) == []
    assert check(name, '{\n  // c\n  "a": 1 2\n}') == [(2, 9, 2, 10, "Expecting ',' delimiter")]


def test_plain_json_does_not_allow_comments() -> None:
    assert check("data.json", '{"a": 1 // no\n}') == [(0, 8, 0, 9, "Expecting ',' delimiter")]


def test_strip_jsonc_keeps_length_and_line_breaks() -> None:
    text = '{"a": "/* kept */", // gone\r\n /* multi\nline */ "b": [1,],}'
    stripped = strip_jsonc(text)
    assert len(stripped) == len(text)
    assert stripped == '{"a": "/* kept */",        \r\n         \n        "b": [1 ] }'


def test_json_lines_checks_each_line() -> None:
    text = '{"a": 1}\n{bad}\n\n[1, x]\n{"ok": true}\n'
    assert check("events.jsonl", text) == [
        (1, 1, 1, 2, "Expecting property name enclosed in double quotes"),
        (3, 4, 3, 5, "Expecting value"),
    ]
    assert check("events.ndjson", '{"a": 1}\r\n{"b": }\r\n') == [(1, 6, 1, 7, "Expecting value")]


def test_json_lines_are_capped() -> None:
    text = "x\n" * (syntax.MAX_DIAGNOSTICS + 50)
    found = check("events.jsonl", text)
    assert len(found) == syntax.MAX_DIAGNOSTICS
    assert found[-1] == (
        syntax.MAX_DIAGNOSTICS - 1,
        0,
        syntax.MAX_DIAGNOSTICS - 1,
        1,
        "Expecting value",
    )


# --- TOML -----------------------------------------------------------------------------------

needs_toml = pytest.mark.skipif(not HAS_TOML, reason="no tomllib/tomli on this Python")


@needs_toml
def test_toml_valid_and_invalid() -> None:
    assert check("pyproject.toml", '[project]\nname = "x"\n') == []
    assert check("pyproject.toml", "a = 1\nb = \n") == [(1, 4, 1, 4, "Invalid value")]


@needs_toml
def test_toml_positions() -> None:
    assert check("config.toml", "a = 1\r\nb = \r\n") == [(1, 4, 1, 4, "Invalid value")]
    assert check("config.toml", 'a = "😀" x\n') == [
        (0, 8, 0, 9, "Expected newline or end of document after a statement")
    ]
    assert check("config.toml", "[t]\na=1\n[t]\n") == [(2, 2, 2, 3, "Cannot declare ('t',) twice")]
    # "(at end of document)": the end of the text.
    assert check("config.toml", "a = [1,\n") == [(1, 0, 1, 0, "Invalid value")]
    assert check("config.toml", "\ufeffa = 1\n") == []


@needs_toml
@pytest.mark.parametrize("name", ["Pipfile", "Cargo.lock", "poetry.lock", "uv.lock"])
def test_toml_file_names(name: str) -> None:
    assert check(name, "x = ") == [(0, 4, 0, 4, "Invalid value")]


def test_toml_without_a_parser_has_no_checker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(syntax, "_toml_module", lambda: None)
    assert syntax_diagnostics(Path("pyproject.toml"), "a = ") is None


# --- YAML -----------------------------------------------------------------------------------

needs_yaml = pytest.mark.skipif(not HAS_YAML, reason="PyYAML is not installed")


@needs_yaml
def test_yaml_valid_documents_and_custom_tags() -> None:
    assert check("ci.yaml", "a: 1\nb:\n  - x\n  - y\n---\nc: &anchor 1\nd: *anchor\n") == []
    assert check("template.yml", "Value: !Ref MyBucket\nOther: !GetAtt A.Arn\n") == []


@needs_yaml
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a: b: c\n", (0, 4, 0, 5, "mapping values are not allowed here")),
        ("a: 1\r\nb: c: d\r\n", (1, 4, 1, 5, "mapping values are not allowed here")),
        ("\ufeffa: 1\nb: c: d\n", (1, 4, 1, 5, "mapping values are not allowed here")),
        ("a: *missing\n", (0, 3, 0, 4, "found undefined alias 'missing'")),
        (
            'k: "😀" x: y\n',
            (
                0,
                7,
                0,
                8,
                "expected <block end>, but found '<scalar>' (while parsing a block mapping)",
            ),
        ),
        (
            "a:\n\t- b\n",
            (
                1,
                0,
                1,
                1,
                "found character '\\t' that cannot start any token "
                "(while scanning for the next token)",
            ),
        ),
        (
            "---\na: 1\n---\nb: [\n",
            (
                4,
                0,
                4,
                0,
                "expected the node content, but found '<stream end>' (while parsing a flow node)",
            ),
        ),
        (
            "a: \x00\n",
            (0, 3, 0, 4, "unacceptable character #x0000: special characters are not allowed"),
        ),
    ],
)
def test_yaml_error_positions(text: str, expected: Where) -> None:
    assert check("config.yaml", text) == [expected]


def test_yaml_without_pyyaml_has_no_checker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(syntax, "_yaml_module", lambda: None)
    assert syntax_diagnostics(Path("config.yaml"), "a: b: c") is None


# --- dispatch and robustness ----------------------------------------------------------------


@pytest.mark.parametrize("name", ["README.md", "main.rs", "Makefile", "data.csv", "noext"])
def test_unknown_file_types_have_no_checker(name: str) -> None:
    assert syntax_diagnostics(Path(name), "anything (") is None


def test_a_failing_parser_never_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(text: str) -> tuple[Diagnostic, ...]:
        raise RuntimeError("bug")

    monkeypatch.setattr(syntax, "checker_for", lambda path: broken)
    assert syntax_diagnostics(Path("app.py"), "x = 1") is None


def test_huge_texts_are_not_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(syntax, "MAX_SIZE", 10)
    assert syntax_diagnostics(Path("app.py"), "x = (" * 10) is None


@pytest.mark.parametrize(
    ("text", "offset", "expected"),
    [
        ("", 0, (0, 0)),
        ("abc", 2, (0, 2)),
        ("a\nb", 2, (1, 0)),
        ("a\r\nb", 1, (0, 1)),
        ("a\r\nb", 2, (0, 1)),  # between CR and LF: still the end of line 0
        ("a\r\nb", 3, (1, 0)),
        ("a\rb", 2, (1, 0)),
        ("a\n\nb", 3, (2, 0)),
        ("😀x", 1, (0, 1)),
        ("ab", 99, (0, 2)),
        ("ab", -4, (0, 0)),
    ],
)
def test_offset_to_position(text: str, offset: int, expected: tuple[int, int]) -> None:
    assert offset_to_position(text, offset) == expected


def test_python_version_is_known() -> None:
    # The position rules above were verified on CPython 3.10 to 3.13.
    assert sys.version_info >= (3, 10)
