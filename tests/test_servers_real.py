"""Real language servers through the public path, `Service.check`.

Each case plants one known problem in a fresh git workspace, asserts that the report puts it at
the exact 1-based line and code-point column with the server's exact message and code (in the
JSON schema and in the text block agents read), then writes a fix and asserts that the second
check reports it fixed, with nothing left. Several cases put emoji and CJK text before the
error column on the same line: servers speak UTF-16, UTF-8 or UTF-32 on the wire, people and
agents get code points.

Servers come from `scripts/bootstrap` (ipylsp's data dir) and apt (clangd, gopls, golang-go,
shellcheck; `.ci/run`). A missing server FAILS its test with the fix; nothing here skips.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from ipylsp.analysis.report import FormatOptions, format_text
from ipylsp.model.diagnostics import FileReport, Report, UnknownReason
from ipylsp.model.settings import Settings
from ipylsp.servers import executables, languages, registry
from ipylsp.service.service import Service
from tests.real_servers import DATA_DIR, json_diagnostics, require, workspace, write

pytestmark = pytest.mark.real

# Generous: a healthy server answers in well under a second (pyright ~2 s to start), and
# freshness is by document version, so the budget only matters when something is wrong.
BUDGET = 60.0

GO_MOD = "module example.com/m\n\ngo 1.19\n"
JSON_SCHEMA = '{"type": "object", "properties": {"port": {"type": "integer"}}}\n'


@dataclass(frozen=True)
class Case:
    id: str
    server: str
    filename: str
    bad: str
    fixed: str
    # what the report must say, 1-based, end exclusive (schema ipylsp.diagnostics/2)
    severity: str
    start: tuple[int, int]
    end: tuple[int, int]
    message: str  # the first line of the server's message, exactly
    code: str | None
    source: str | None
    text: str  # the diagnostic's line in the text/plain block, exactly
    files: dict[str, str] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)


PY_BAD = 'def f() -> int:\n    x: int = "a"\n    return x\n'
PY_FIXED = "def f() -> int:\n    x: int = 1\n    return x\n"
PYRIGHT_MESSAGE = "Type \"Literal['a']\" is not assignable to declared type \"int\""
PYRIGHT_TEXT = (
    "ERROR [2:14] Type \"Literal['a']\" is not assignable to declared type \"int\"; "
    "\"Literal['a']\" is not assignable to \"int\" [reportAssignmentType] ({source})"
)

# The same line in every Unicode case: a CJK and an emoji (two UTF-16 units, four UTF-8 bytes)
# before the error column.
UNI = "你好🎉"

CASES = [
    Case(
        "ty", "ty", "app.py", PY_BAD, PY_FIXED,
        "error", (2, 14), (2, 17),
        'Object of type `Literal["a"]` is not assignable to `int`', "invalid-assignment", "ty",
        'ERROR [2:14] Object of type `Literal["a"]` is not assignable to `int` '
        "[invalid-assignment] (ty)",
    ),
    Case(
        "ruff", "ruff", "lint.py",
        "import os\n\nprint(os.sep, undefined_name)\n", "import os\n\nprint(os.sep)\n",
        "error", (3, 15), (3, 29),
        "Undefined name `undefined_name`", "F821", "Ruff",
        "ERROR [3:15] Undefined name `undefined_name` [F821] (Ruff)",
    ),
    Case(
        "pyright", "pyright", "app.py", PY_BAD, PY_FIXED,
        "error", (2, 14), (2, 17),
        PYRIGHT_MESSAGE, "reportAssignmentType", "Pyright",
        PYRIGHT_TEXT.format(source="Pyright"),
    ),
    Case(
        "basedpyright", "basedpyright", "app.py", PY_BAD, PY_FIXED,
        "error", (2, 14), (2, 17),
        PYRIGHT_MESSAGE, "reportAssignmentType", "basedpyright",
        PYRIGHT_TEXT.format(source="basedpyright"),
    ),
    Case(
        "pyrefly", "pyrefly", "app.py", PY_BAD, PY_FIXED,
        "error", (2, 14), (2, 17),
        "`Literal['a']` is not assignable to `int`", "bad-assignment", "Pyrefly",
        "ERROR [2:14] `Literal['a']` is not assignable to `int` [bad-assignment] (Pyrefly)",
    ),
    Case(
        "typescript", "typescript", "app.ts",
        'const n: number = "s";\nexport { n };\n', "const n: number = 1;\nexport { n };\n",
        "error", (1, 7), (1, 8),
        "Type 'string' is not assignable to type 'number'.", "2322", "ts",
        "ERROR [1:7] Type 'string' is not assignable to type 'number'. [2322] (ts)",
    ),
    Case(
        "typescript-language-server", "typescript-language-server", "app.ts",
        'const n: number = "s";\nexport { n };\n', "const n: number = 1;\nexport { n };\n",
        "error", (1, 7), (1, 8),
        "Type 'string' is not assignable to type 'number'.", "2322", "typescript",
        "ERROR [1:7] Type 'string' is not assignable to type 'number'. [2322] (typescript)",
    ),
    Case(
        "clangd", "clangd", "main.c",
        "int main(void) {\n    return y;\n}\n", "int main(void) {\n    return 0;\n}\n",
        "error", (2, 12), (2, 13),
        "Use of undeclared identifier 'y'", "undeclared_var_use", "clang",
        "ERROR [2:12] Use of undeclared identifier 'y' [undeclared_var_use] (clang)",
    ),
    Case(
        # a tab before the error: one column, whatever an editor shows
        "gopls", "gopls", "main.go",
        'package main\n\nfunc main() {\n\tvar x int = "s"\n\t_ = x\n}\n',
        "package main\n\nfunc main() {\n\tvar x int = 1\n\t_ = x\n}\n",
        "error", (4, 14), (4, 17),
        'cannot use "s" (untyped string constant) as int value in variable declaration',
        "IncompatibleAssign", "compiler",
        'ERROR [4:14] cannot use "s" (untyped string constant) as int value in variable '
        "declaration [IncompatibleAssign] (compiler)",
        files={"go.mod": GO_MOD},
    ),
    Case(
        # diagnostics come from shellcheck (SC2068 is one of its errors)
        "bash-language-server", "bash-language-server", "run.sh",
        '#!/bin/bash\necho "start"\nprintf "%s\\n" $@\n',
        '#!/bin/bash\necho "start"\nprintf "%s\\n" "$@"\n',
        "error", (3, 15), (3, 17),
        "Double quote array expansions to avoid re-splitting elements.", "SC2068", "shellcheck",
        "ERROR [3:15] Double quote array expansions to avoid re-splitting elements. "
        "[SC2068] (shellcheck)",
    ),
    Case(
        # valid YAML for PyYAML (the syntax tier), an error for the server
        "yaml-language-server", "yaml-language-server", "conf.yaml",
        "a: 1\nb: 2\na: 3\n", "a: 1\nb: 2\nc: 3\n",
        "error", (3, 1), (3, 5),
        "Map keys must be unique", "0", "YAML",
        "ERROR [3:1] Map keys must be unique [0] (YAML)",
    ),
    Case(
        # schema validation against a local schema: the server's own work (a warning)
        "vscode-json-language-server-schema", "vscode-json-language-server", "conf.json",
        '{\n  "$schema": "./schema.json",\n  "port": "eighty"\n}\n',
        '{\n  "$schema": "./schema.json",\n  "port": 80\n}\n',
        "warning", (3, 11), (3, 19),
        'Incorrect type. Expected "integer".', None, None,
        'WARN [3:11] Incorrect type. Expected "integer". (vscode-json-language-server)',
        files={"schema.json": JSON_SCHEMA},
    ),
    Case(
        # a syntax error, asked of the server too (semantic_after_syntax_error): its answer,
        # not the in-process syntax tier's, is the report
        "vscode-json-language-server-syntax", "vscode-json-language-server", "data.json",
        '{\n  "a": 1,\n}\n', '{\n  "a": 1\n}\n',
        "error", (2, 9), (2, 10),
        "Trailing comma", "519", "json",
        "ERROR [2:9] Trailing comma [519] (json)",
        settings={"semantic_after_syntax_error": True},
    ),
    Case(
        "dockerfile-language-server", "dockerfile-language-server", "Dockerfile",
        "FROM debian:12\nRUN echo hi\nEXPOSE abc\n", "FROM debian:12\nRUN echo hi\nEXPOSE 80\n",
        "error", (3, 8), (3, 11),
        "Invalid containerPort: abc", "24", "dockerfile-utils",
        "ERROR [3:8] Invalid containerPort: abc [24] (dockerfile-utils)",
    ),
    # ------------------------------------------------------------ non-ASCII before the column
    Case(
        "ty-unicode", "ty", "uni.py",
        f's = "{UNI}"; n: int = s\n', f's = "{UNI}"; n: str = s\n',
        "error", (1, 21), (1, 22),
        f'Object of type `Literal["{UNI}"]` is not assignable to `int`',
        "invalid-assignment", "ty",
        f'ERROR [1:21] Object of type `Literal["{UNI}"]` is not assignable to `int` '
        "[invalid-assignment] (ty)",
    ),
    Case(
        "ruff-unicode", "ruff", "uni.py",
        f's = "{UNI}"; print(s, undefined_name)\n', f's = "{UNI}"; print(s)\n',
        "error", (1, 21), (1, 35),
        "Undefined name `undefined_name`", "F821", "Ruff",
        "ERROR [1:21] Undefined name `undefined_name` [F821] (Ruff)",
    ),
    Case(
        "pyright-unicode", "pyright", "uni.py",
        f's = "{UNI}"; n: int = s\n', f's = "{UNI}"; n: str = s\n',
        "error", (1, 21), (1, 22),
        f"Type \"Literal['{UNI}']\" is not assignable to declared type \"int\"",
        "reportAssignmentType", "Pyright",
        f"ERROR [1:21] Type \"Literal['{UNI}']\" is not assignable to declared type \"int\"; "
        f"\"Literal['{UNI}']\" is not assignable to \"int\" [reportAssignmentType] (Pyright)",
    ),
    Case(
        "typescript-unicode", "typescript", "uni.ts",
        f'const s = "{UNI}"; const n: number = s;\nexport {{ n }};\n',
        f'const s = "{UNI}"; const n: string = s;\nexport {{ n }};\n',
        "error", (1, 24), (1, 25),
        "Type 'string' is not assignable to type 'number'.", "2322", "ts",
        "ERROR [1:24] Type 'string' is not assignable to type 'number'. [2322] (ts)",
    ),
    Case(
        "clangd-unicode", "clangd", "uni.c",
        f'const char *s = "{UNI}"; int n = y;\n', f'const char *s = "{UNI}"; int n = 0;\n',
        "error", (1, 32), (1, 33),
        "Use of undeclared identifier 'y'", "undeclared_var_use", "clang",
        "ERROR [1:32] Use of undeclared identifier 'y' [undeclared_var_use] (clang)",
    ),
    Case(
        "gopls-unicode", "gopls", "uni.go",
        f'package main\n\nvar s = "{UNI}"; var n int = s\n',
        f'package main\n\nvar s = "{UNI}"; var n string = s\n',
        "error", (3, 28), (3, 29),
        "cannot use s (variable of type string) as int value in variable declaration",
        "IncompatibleAssign", "compiler",
        "ERROR [3:28] cannot use s (variable of type string) as int value in variable "
        "declaration [IncompatibleAssign] (compiler)",
        files={"go.mod": GO_MOD},
    ),
    Case(
        # CJK only: bash-language-server passes shellcheck's code-point columns on as UTF-16
        # units, so an emoji (two units) before the error shifts it by one in the server itself
        "bash-language-server-unicode", "bash-language-server", "uni.sh",
        '#!/bin/bash\necho "你好" $@\n', '#!/bin/bash\necho "你好" "$@"\n',
        "error", (2, 11), (2, 13),
        "Double quote array expansions to avoid re-splitting elements.", "SC2068", "shellcheck",
        "ERROR [2:11] Double quote array expansions to avoid re-splitting elements. "
        "[SC2068] (shellcheck)",
    ),
]


def _only_file(report: Report, name: str) -> FileReport:
    assert [f.display_path for f in report.files] == [name], report
    return report.files[0]


def _settings(case: Case, path: Path) -> Settings:
    language = languages.language_id(path)
    spec = registry.get(case.server)
    assert spec is not None and language in spec.languages, (case.server, language)
    return Settings(
        data_dir=DATA_DIR,
        language_servers={language: (case.server,)},
        wait_budget=BUDGET,
        **case.settings,
    )


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_a_planted_problem_is_reported_at_its_place_then_fixed(
    case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require(case.server)
    root = workspace(tmp_path, monkeypatch)
    for name, text in case.files.items():
        write(root, name, text)
    path = write(root, case.filename, case.bad)
    options = FormatOptions(severity="warning" if case.severity == "warning" else "error")
    noun = "warning" if case.severity == "warning" else "error"

    with Service(_settings(case, path)) as service:
        first = service.check(path)
        report = _only_file(first, case.filename)
        assert report.unknown == ()
        assert report.servers == (case.server,)
        shown = json_diagnostics(first, options)
        assert len(shown) == 1, shown
        [diagnostic] = shown
        assert diagnostic["message"].splitlines()[0] == case.message
        del diagnostic["message"]
        assert diagnostic == {
            "severity": case.severity,
            "line": case.start[0],
            "column": case.start[1],
            "end_line": case.end[0],
            "end_column": case.end[1],
            "code": case.code,
            "source": case.source,
            "server": case.server,
        }
        assert format_text(first, options) == (
            f'<diagnostics file="{case.filename}">\n{case.text}\n</diagnostics>'
        )
        [planted] = report.diagnostics

        path.write_text(case.fixed, encoding="utf-8")
        second = service.check(path)
        report = _only_file(second, case.filename)
        assert report.unknown == ()
        assert report.diagnostics == ()
        assert report.current == (), "the fixed file still has problems"
        assert [(d.message, d.code, d.server_id) for d in report.fixed] == [
            (planted.message, planted.code, case.server)
        ]
        assert format_text(second, options) == f"fixed 1 {noun} in {case.filename}"

    if case.server == "clangd":
        assert not (root / ".cache").exists(), "clangd wrote an index into the project"


# ------------------------------------------------------------------------------ Python defaults


def test_pythons_default_set_is_the_embedded_ty_and_ruff(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No language_servers setting: ty and ruff (the embedded default, docs/servers.md) check a
    Python file, and both are heard, although basedpyright and pyright are installed too."""
    require("basedpyright")
    require("ty")
    require("ruff")
    root = workspace(tmp_path, monkeypatch)
    bad = 'def f() -> int:\n    x: int = "a"\n    return x\n\n\nprint(undefined_name)\n'
    path = write(root, "app.py", bad)
    with Service(Settings(data_dir=DATA_DIR, wait_budget=BUDGET)) as service:
        first = service.check(path)
        report = _only_file(first, "app.py")
        assert report.servers == ("ty", "ruff")
        assert report.unknown == ()
        assert format_text(first).splitlines() == [
            '<diagnostics file="app.py">',
            'ERROR [2:14] Object of type `Literal["a"]` is not assignable to `int` '
            "[invalid-assignment] (ty)",
            "ERROR [6:7] Name `undefined_name` used when not defined "
            "[unresolved-reference, F821] (ty, Ruff)",
            "</diagnostics>",
        ]
        path.write_text(PY_FIXED, encoding="utf-8")
        second = service.check(path)
        assert _only_file(second, "app.py").diagnostics == ()
        assert format_text(second) == "fixed 2 errors in app.py"  # one undefined name


# ------------------------------------------------------------------------------ missing servers


def _empty_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """PATH without node, git, clangd, ...: only an empty directory."""
    empty_bin = tmp_path / "bin"
    empty_bin.mkdir()
    monkeypatch.setenv("PATH", str(empty_bin))


def test_a_server_found_nowhere_gets_its_install_hint_not_a_crash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """rust-analyzer is a PATH-only row: with nothing on PATH and an empty data dir, the check
    says it is not installed, how to get it (in full once per server and root), and returns."""
    root = workspace(tmp_path, monkeypatch)
    _empty_path(tmp_path, monkeypatch)
    spec = registry.get("rust-analyzer")
    assert spec is not None
    settings = Settings(data_dir=tmp_path / "empty", wait_budget=BUDGET)
    assert executables.resolve_command(spec, tmp_path / "empty") is None
    path = write(root, "src/main.rs", "fn main() {\n    let x: i32 = \"s\";\n}\n")
    hint = registry.install_hint(spec)
    assert "rustup component add rust-analyzer" in hint

    with Service(settings) as service:
        started = time.monotonic()
        first = service.check(path)
        assert time.monotonic() - started < 5.0, "a missing server must cost nothing"
        report = _only_file(first, "src/main.rs")
        assert report.diagnostics == ()
        [unknown] = report.unknown
        assert unknown.server_id == "rust-analyzer"
        assert unknown.reason is UnknownReason.NOT_INSTALLED
        assert unknown.detail.startswith("rust-analyzer not found")
        assert unknown.hint == hint
        assert format_text(first) == (
            '<diagnostics file="src/main.rs">\n'
            f"UNKNOWN [rust-analyzer] not installed ({unknown.detail}): results for this file "
            f"are incomplete; {hint}\n"
            "</diagnostics>"
        )
        assert service.status() == [], "nothing may be spawned for a missing server"

        # Once explained, later checks of the same workspace say it in one line, and still
        # never show the file as clean.
        second = service.check(path)
        [unknown] = _only_file(second, "src/main.rs").unknown
        assert (unknown.reason, unknown.hint) == (UnknownReason.NOT_INSTALLED, "")
        assert "UNKNOWN [rust-analyzer] not installed" in format_text(second)
    assert path.read_text(encoding="utf-8").startswith("fn main()")


def test_pyright_missing_from_ipylsps_data_dir_gets_the_ipylsp_install_hint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = workspace(tmp_path, monkeypatch)
    _empty_path(tmp_path, monkeypatch)
    spec = registry.get("pyright")
    assert spec is not None
    empty = tmp_path / "empty"
    assert executables.resolve_command(spec, empty) is None, "pyright-langserver is in .venv/bin?"
    path = write(root, "app.py", PY_BAD)
    settings = Settings(
        data_dir=empty, language_servers={"python": ("pyright",)}, wait_budget=BUDGET
    )
    with Service(settings) as service:
        report = _only_file(service.check(path), "app.py")
    [unknown] = report.unknown
    assert unknown.server_id == "pyright"
    assert unknown.reason is UnknownReason.NOT_INSTALLED
    assert unknown.detail.startswith("pyright-langserver not found")
    assert unknown.hint == "ipylsp install pyright  # npm install pyright into ipylsp's data dir"
    assert report.diagnostics == ()


def test_pyright_installed_but_without_node_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The npm install is there, node is not on PATH: not installed (cannot run), with why."""
    require("pyright")
    root = workspace(tmp_path, monkeypatch)
    _empty_path(tmp_path, monkeypatch)
    path = write(root, "app.py", PY_BAD)
    settings = Settings(
        data_dir=DATA_DIR, language_servers={"python": ("pyright",)}, wait_budget=BUDGET
    )
    with Service(settings) as service:
        report = _only_file(service.check(path), "app.py")
        assert service.status() == []
    [unknown] = report.unknown
    assert unknown.server_id == "pyright"
    assert unknown.reason is UnknownReason.NOT_INSTALLED
    assert "needs node, which is not on PATH" in unknown.detail, unknown.detail
    assert "install Node.js" in unknown.detail
    assert unknown.hint.startswith("ipylsp install pyright")
    assert report.diagnostics == ()
