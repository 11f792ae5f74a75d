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

Modules: `checker` (what a checker is; source, server id, positions, diagnostics), `python`
and `data` (the checkers per format family); the dispatch by file name is here.
"""

from __future__ import annotations

import re
from pathlib import Path

from ipylsp.analysis.syntax.checker import MAX_DIAGNOSTICS, SERVER_ID, SOURCE
from ipylsp.analysis.syntax.checker import Checker as Checker
from ipylsp.analysis.syntax.checker import offset_to_position as offset_to_position
from ipylsp.analysis.syntax.data import (
    check_json,
    check_json_lines,
    check_jsonc,
    check_toml,
    check_yaml,
)
from ipylsp.analysis.syntax.data import strip_jsonc as strip_jsonc

# Module attributes, looked up by `checker_for` on each call (tests replace them).
from ipylsp.analysis.syntax.data import toml_module as _toml_module
from ipylsp.analysis.syntax.data import yaml_module as _yaml_module
from ipylsp.analysis.syntax.python import check_python
from ipylsp.model.diagnostics import Diagnostic

__all__ = ["MAX_DIAGNOSTICS", "MAX_SIZE", "SERVER_ID", "SOURCE", "syntax_diagnostics"]

MAX_SIZE = 20_000_000
"""Texts longer than this (in characters) are not parsed here: None."""

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
        return check_python
    if (
        suffix in _JSONC_SUFFIXES
        or name in _JSONC_NAMES
        or _JSONC_NAME.match(name)
        or (suffix == ".json" and path.parent.name == ".vscode")
    ):
        return check_jsonc
    if suffix in _JSON_SUFFIXES:
        return check_json
    if suffix in {".jsonl", ".ndjson"}:
        return check_json_lines
    if suffix == ".toml" or name in _TOML_NAMES:
        return check_toml if _toml_module() is not None else None
    if suffix in {".yaml", ".yml"}:
        return check_yaml if _yaml_module() is not None else None
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
