"""The agent tools (`ipylsp.agent`) on real servers (ty + ruff) and, for faults real servers
cannot produce on demand, the fake server: schemas in every vendor shape, every error code,
positions by symbol, confinement, fresh answers after writes behind ipylsp's back, the answer
budget and subscriptions."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

import ipylsp
from ipylsp.agent import CODES, FORMATS, TOOLS, Toolbox, ToolResult, call_tool, tool_schemas
from ipylsp.agent.tools import ORDER
from ipylsp.agent.tools.features import QUERIES
from ipylsp.model.diagnostics import Report
from ipylsp.model.server_spec import InstallRecipe, ServerSpec
from ipylsp.model.settings import MB, Settings
from ipylsp.service import queries
from ipylsp.service.runtime.loop import BackgroundLoop
from ipylsp.service.service import Service
from tests.conftest import fake_command
from tests.real_servers import DATA_DIR, require, write

SHAPES = (
    "class Shape:\n"
    "    def area(self) -> float:\n"
    "        return 0.0\n"
    "\n"
    "\n"
    "class Square(Shape):\n"
    "    def area(self) -> float:\n"
    "        return 1.0\n"
)
MAIN = (
    "from shapes import Square\n"
    "\n"
    "sq = Square()\n"
    "total = sq.area() + sq.area()\n"
)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    require("ty")
    require("ruff")
    base = tmp_path_factory.mktemp("agent")
    with pytest.MonkeyPatch.context() as patch:
        home = base / "home"
        home.mkdir()
        patch.setenv("HOME", str(home))
        patch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
        ws = base / "ws"
        ws.mkdir()
        os.system(f"git init -q {ws}")
        yield ws


@pytest.fixture(scope="module")
def service(root: Path) -> Iterator[Service]:
    with Service(Settings(language_servers={"python": ("ty", "ruff")}, data_dir=DATA_DIR)) as svc:
        yield svc


@pytest.fixture
def box(root: Path, service: Service) -> Toolbox:
    write(root, "shapes.py", SHAPES)
    write(root, "main.py", MAIN)
    return Toolbox(service, root)


def ok(result: ToolResult) -> str:
    assert result.ok, result.text
    assert result.error_code is None
    return result.text


# -- schemas ----------------------------------------------------------------------------------

WRAPPERS: dict[str, dict[str, Any]] = {
    # The documented shapes: OpenAI Chat Completions `tools`, Anthropic Messages `tools`,
    # MCP `Tool` (annotations per the 2025-06-18 spec).
    "openai": {
        "type": "object",
        "required": ["type", "function"],
        "additionalProperties": False,
        "properties": {
            "type": {"const": "function"},
            "function": {
                "type": "object",
                "required": ["name", "description", "parameters"],
                "additionalProperties": False,
                "properties": {
                    "name": {"type": "string", "pattern": "^[a-zA-Z0-9_-]{1,64}$"},
                    "description": {"type": "string"},
                    "parameters": {"type": "object"},
                },
            },
        },
    },
    "anthropic": {
        "type": "object",
        "required": ["name", "description", "input_schema"],
        "additionalProperties": False,
        "properties": {
            "name": {"type": "string", "pattern": "^[a-zA-Z0-9_-]{1,64}$"},
            "description": {"type": "string"},
            "input_schema": {"type": "object", "properties": {"type": {"const": "object"}}},
        },
    },
    "mcp": {
        "type": "object",
        "required": ["name", "description", "inputSchema", "annotations"],
        "additionalProperties": False,
        "properties": {
            "name": {"type": "string"},
            "description": {"type": "string"},
            "inputSchema": {"type": "object", "properties": {"type": {"const": "object"}}},
            "annotations": {
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    "title": {"type": "string"},
                    "readOnlyHint": {"const": True},
                    "destructiveHint": {"const": False},
                    "idempotentHint": {"type": "boolean"},
                    "openWorldHint": {"type": "boolean"},
                },
            },
        },
    },
}


def _parameters(fmt: str, schema: dict[str, Any]) -> dict[str, Any]:
    if fmt == "openai":
        return schema["function"]["parameters"]  # type: ignore[no-any-return]
    return schema["input_schema" if fmt == "anthropic" else "inputSchema"]  # type: ignore[no-any-return]


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_schema_validates_in_each_format(fmt: str) -> None:
    schemas = tool_schemas(fmt)  # type: ignore[arg-type]
    wrapper = Draft202012Validator(WRAPPERS[fmt])
    names = []
    for schema in schemas:
        wrapper.validate(schema)
        parameters = _parameters(fmt, schema)
        Draft202012Validator.check_schema(parameters)
        assert parameters["type"] == "object"
        assert parameters["additionalProperties"] is False
        names.append(schema["function"]["name"] if fmt == "openai" else schema["name"])
    # the checks an agent needs most first, the queries in their table's order, the status
    assert names == list(TOOLS) == list(ORDER) == [
        "lsp_check", "lsp_check_cell", "lsp_diagnostics", "lsp_pending",
        *QUERIES, "lsp_status",
    ]
    assert QUERIES == (
        "lsp_hover", "lsp_definition", "lsp_type_definition", "lsp_implementation",
        "lsp_references", "lsp_document_highlight", "lsp_calls", "lsp_symbols",
        "lsp_completions", "lsp_signature_help", "lsp_rename_preview", "lsp_code_actions",
    )


@pytest.mark.mcp_sdk
def test_mcp_schemas_are_mcp_tools() -> None:
    types = pytest.importorskip("mcp.types", reason="the test extra installs mcp")
    for schema in tool_schemas("mcp"):
        tool = types.Tool.model_validate(schema)
        assert tool.model_dump(by_alias=True, exclude_none=True) == schema  # nothing lost


def test_an_unknown_format_is_refused() -> None:
    with pytest.raises(ValueError, match="format must be one of openai, anthropic, mcp"):
        tool_schemas("gemini")  # type: ignore[arg-type]


def test_the_schemas_accept_what_the_tools_take_and_refuse_the_rest() -> None:
    hover = Draft202012Validator(TOOLS["lsp_hover"].parameters())
    assert hover.is_valid({"path": "a.py", "line": 3, "symbol": "x", "occurrence": 2})
    assert not hover.is_valid({"path": "a.py", "line": 0})
    assert not hover.is_valid({"path": "a.py", "line": True})
    symbols = Draft202012Validator(TOOLS["lsp_symbols"].parameters())
    assert symbols.is_valid({"query": "Sq"}) and not symbols.is_valid({})


# -- every error code ---------------------------------------------------------------------------


def fake_box(root: Path, *flags: str, installed: bool = True) -> Toolbox:
    command = fake_command(*flags) if installed else ("/nonexistent/fake-server",)
    spec = ServerSpec(
        id="fake", name="Fake", languages=("shellscript",), command=command,
        install=InstallRecipe("path", hint="it is a test fixture"),
    )
    settings = Settings(language_servers={"shellscript": ("fake",)}, extra_specs=(spec,),
                        wait_budget=3.0, request_timeout=1.0)
    return Toolbox(Service(settings), root)


ERRORS: list[tuple[str, str, dict[str, Any], str]] = [
    # (code, tool, arguments, the start of the message)
    ("missing_argument", "lsp_check", {}, "lsp_check needs `path`: lsp_check(path, content?"),
    ("missing_argument", "lsp_hover", {"path": "main.py"}, "give `line` with `symbol`"),
    ("missing_argument", "lsp_hover", {"path": "main.py", "line": 3}, "give `symbol`"),
    ("invalid_argument", "lsp_hover", {"path": "main.py", "line": 0, "column": 1},
     "`line` must be bigger than or equal to 1"),
    ("invalid_argument", "lsp_hover", {"path": "main.py", "line": "3", "symbol": "sq"},
     "`line` must be integer"),
    ("invalid_argument", "lsp_hover", {"path": "main.py", "line": 3.5, "symbol": "sq"},
     "`line` must be integer"),
    ("invalid_argument", "lsp_check", {"path": "main.py", "severity": "fatal"},
     "`severity` must be one of ['error', 'warning', 'all']"),
    ("missing_argument", "lsp_symbols", {}, "lsp_symbols needs `path` or `query`"),
    ("invalid_argument", "lsp_hover", {"path": "main.py", "line": 9, "column": 1},
     "line 9 is outside the file (it has 5 lines)"),
    ("invalid_argument", "lsp_check", {"path": "main.py", "force": True},
     "lsp_check takes no `force`"),
    ("invalid_argument", "lsp_hover", {"path": "main.py", "line": 3, "symbol": "sq",
                                       "occurrence": 3},
     "'sq' appears 1 time(s) on line 3; occurrence must be 1 to 1"),
    ("unknown_tool", "lsp_format", {}, "there is no tool 'lsp_format'; the tools are lsp_check"),
    ("file_not_found", "lsp_check", {"path": "nope.py"}, "nope.py does not exist"),
    ("outside_workspace", "lsp_check", {"path": "../x.py"}, "../x.py is outside the workspace"),
    ("outside_workspace", "lsp_check", {"path": "/etc/hostname"},
     "/etc/hostname is outside the workspace"),
    ("unsupported_language", "lsp_check", {"path": "notes.xyz"},
     "no language server reads notes.xyz"),
    ("unsupported_language", "lsp_hover", {"path": "notes.xyz", "line": 1, "column": 1},
     "no language server"),
    ("symbol_not_found", "lsp_hover", {"path": "main.py", "line": 3, "symbol": "Circle"},
     "'Circle' is not on line 3, which reads: 'sq = Square()'"),
    ("symbol_not_found", "lsp_definition", {"path": "shapes.py", "symbol": "Circle"},
     "no symbol named 'Circle' in shapes.py"),
    ("ambiguous_symbol", "lsp_definition", {"path": "shapes.py", "symbol": "area"},
     "'area' names 2 symbols in shapes.py: method area (in Shape)  shapes.py:2:9; "
     "method area (in Square)  shapes.py:7:9"),
]


@pytest.mark.real
@pytest.mark.parametrize(("code", "name", "arguments", "message"), ERRORS,
                         ids=[f"{e[0]}-{e[1]}-{i}" for i, e in enumerate(ERRORS)])
def test_error_codes(box: Toolbox, code: str, name: str, arguments: dict[str, Any],
                     message: str) -> None:
    write(box.workspace.root, "notes.xyz", "hello\n")
    result = box.call(name, arguments)
    assert not result.ok
    assert result.error_code == code
    assert result.text.startswith(f"error [{code}]: {message}"), result.text
    assert result.data == {"error": {"code": code, "message": result.text.split(": ", 1)[1]}}


FAULTS = [
    ("timeout", ("--hang-on", "textDocument/hover"), True, "textDocument/hover: no answer"),
    ("lsp_error", ("--error-on", "textDocument/hover"), True, "fake: failed: textDocument/hover"),
    ("server_exited", ("--crash-on", "textDocument/hover"), True, "fake: crashed"),
    ("server_unavailable", (), False, "fake: not installed"),
    ("server_unavailable", (), True, "no server for this file offers it"),
]


@pytest.mark.real
@pytest.mark.parametrize(("code", "flags", "installed", "message"), FAULTS,
                         ids=[f"{f[0]}-{i}" for i, f in enumerate(FAULTS)])
def test_server_fault_codes(root: Path, code: str, flags: tuple[str, ...], installed: bool,
                            message: str) -> None:
    write(root, "run.sh", "echo hi\n")
    box = fake_box(root, *flags, installed=installed)
    try:
        tool = "lsp_definition" if message.startswith("no server") else "lsp_hover"
        result = box.call(tool, {"path": "run.sh", "line": 1, "symbol": "echo"})
    finally:
        box.service.close()
    assert result.error_code == code, result.text
    assert message in result.text


def test_every_error_code_is_tested() -> None:
    tested = {e[0] for e in ERRORS} | {f[0] for f in FAULTS}
    assert tested == set(CODES)


@pytest.mark.real
def test_a_bug_of_ours_is_an_answer_not_an_exception(
    box: Toolbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(box.service, "check", broken)
    result = box.call("lsp_check", {"path": "main.py"})
    assert (result.ok, result.error_code) == (False, "lsp_error")
    assert result.text == "error [lsp_error]: ipylsp failed: RuntimeError('boom')"


@pytest.mark.real
def test_the_callers_arguments_are_left_as_they_were(box: Toolbox) -> None:
    arguments = {"path": "main.py", "line": 3, "symbol": "sq"}
    assert box.call("lsp_hover", arguments).ok
    assert arguments == {"path": "main.py", "line": 3, "symbol": "sq"}  # no default filled in


@pytest.mark.real
def test_a_whole_number_written_as_a_float_is_that_number(box: Toolbox) -> None:
    """JSON Schema's "integer" admits 3.0 (some clients send every number as a float)."""
    arguments = {"path": "main.py", "line": 3.0, "symbol": "sq"}
    as_float = box.call("lsp_hover", arguments)
    assert as_float.ok, as_float.text
    assert as_float.text == box.call("lsp_hover", {"path": "main.py", "line": 3,
                                                   "symbol": "sq"}).text
    assert arguments["line"] == 3.0 and isinstance(arguments["line"], float)  # left as it was


@pytest.mark.real
def test_arguments_that_are_not_an_object(box: Toolbox) -> None:
    result = box.call("lsp_check", ["main.py"])  # type: ignore[arg-type]
    assert result.error_code == "invalid_argument"
    assert result.text == "error [invalid_argument]: arguments must be a JSON object, not list"


# -- checks -------------------------------------------------------------------------------------


@pytest.mark.real
def test_check_reports_what_an_edit_introduced_and_fixed(box: Toolbox) -> None:
    root = box.workspace.root
    assert ok(box.call("lsp_check", {"path": "main.py"})) == "main.py: no new problems (ruff, ty)"
    write(root, "main.py", MAIN + "print(sq.perimeter())\n")
    result = box.call("lsp_check", {"path": "main.py"})
    assert ok(result) == (
        '<diagnostics file="main.py">\n'
        "ERROR [5:7] Object of type `Square` has no attribute `perimeter` [missing-attribute] "
        "(ty)\n"
        "</diagnostics>"
    )
    assert result.data["schema"] == "ipylsp.diagnostics/2"
    assert result.data["files"][0]["path"] == "main.py"
    write(root, "main.py", MAIN)
    assert ok(box.call("lsp_check", {"path": "main.py"})) == "fixed 1 error in main.py"


@pytest.mark.real
def test_preflight_writes_nothing_and_hands_nothing_over(box: Toolbox) -> None:
    box.call("lsp_check", {"path": "main.py"})
    box.call("lsp_pending", {})
    proposed = MAIN + "sq.side = 'x'\nundefined_name\n"
    result = box.call("lsp_check", {"path": "main.py", "content": proposed})
    text = ok(result)
    assert "ERROR [6:1] Name `undefined_name` used when not defined" in text
    assert text.endswith("(proposed content; nothing was written)")
    assert (box.workspace.root / "main.py").read_text() == MAIN
    assert ok(box.call("lsp_pending", {})) == "nothing pending"
    assert ok(box.call("lsp_check", {"path": "new.py", "content": "x: int = 1\n"})) == (
        "proposed content of new.py: no new problems (ruff, ty); not written"
    )
    assert not (box.workspace.root / "new.py").exists()


@pytest.mark.real
def test_a_cells_code_is_read_with_ipythons_transforms_without_a_kernel(
    box: Toolbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No kernel runs here: the code is read as IPython would read it (magics, escapes and
    prompts are not Python problems), and the rest is checked in the cell's own columns.
    Without a kernel the cells' document lives in the current directory's project: the
    workspace here, never the checkout (which may be where other users can write, /tmp)."""
    monkeypatch.chdir(box.workspace.root)
    text = ok(box.call("lsp_check_cell", {
        "code": "%matplotlib inline\n!ls\n>>> x: int = 's'\nlen?", "severity": "error"}))
    assert text.splitlines()[1:-1] == [
        'ERROR [3:14] Object of type `Literal["s"]` is not assignable to `int` '
        "[invalid-assignment] (ty)",
    ], text


@pytest.mark.real
def test_a_fifo_or_a_file_over_the_limit_is_one_sentence(box: Toolbox) -> None:
    """Issue 28: a FIFO is refused before anything opens it (reading one waits for a writer);
    a file over `max_file_mb` (8 MB here) is not checked, and the answer says so in one line."""
    root = box.workspace.root
    os.mkfifo(root / "pipe.py")
    (root / "big.py").write_bytes(b"x = 1\n" * (9 * MB // 6))
    try:
        fifo = box.call("lsp_check", {"path": "pipe.py"})
        assert (fifo.ok, fifo.text) == (
            False, "error [invalid_argument]: pipe.py is a FIFO, not a regular file; give a file",
        )
        big = box.call("lsp_check", {"path": "big.py"})
        assert (big.ok, big.text) == (
            True, "not checked: big.py is 9 MB, over the 8 MB limit (IPyLSP.max_file_mb)",
        )
        assert (big.data["files"], big.data["notes"]) == ([], [big.text])
    finally:
        (root / "pipe.py").unlink()
        (root / "big.py").unlink()


@pytest.mark.real
def test_a_query_on_a_file_the_check_does_not_read_says_the_checks_sentence(
    tmp_path: Path,
) -> None:
    """Issue 28: a query on a file over `max_file_mb` answered `file_not_found: no such file:
    /abs/path`. Every query tool now says the check's sentence, the path as the workspace
    shows it, as `invalid_argument` (a FIFO or a directory: before anything opens it); one
    byte over a small limit reads in bytes, never `0.001 MB, over the 0.001 MB limit`."""
    root = tmp_path / "ws"
    (root / "refused" / "pkg.py").mkdir(parents=True)
    os.mkfifo(root / "refused" / "pipe.py")
    (root / "refused" / "over.py").write_bytes(b"#" * 1048 + b"\n")  # 0.001 MB + 1 byte
    over = "refused/over.py is 1,049 bytes, over the 1,048-byte limit (IPyLSP.max_file_mb)"
    refused = {
        "pipe.py": "refused/pipe.py is a FIFO, not a regular file; give a file",
        "pkg.py": "refused/pkg.py is a directory, not a regular file; give a file",
        "over.py": over,
    }
    asks: list[tuple[str, dict[str, Any]]] = [
        ("lsp_hover", {"line": 1, "column": 1}),
        ("lsp_definition", {"line": 1, "symbol": "x"}),
        ("lsp_references", {"line": 1, "column": 1}),
        ("lsp_completions", {"line": 1, "column": 1}),
        ("lsp_signature_help", {"line": 1, "column": 1}),
        ("lsp_code_actions", {"line": 1}),
        ("lsp_symbols", {}),
    ]
    settings = Settings(language_servers={"python": ("ty", "ruff")}, data_dir=DATA_DIR,
                        max_file_mb=0.001, directory=root)  # as `ipylsp mcp --root` has it
    with Service(settings) as service:
        box = Toolbox(service, root)
        for name, why in refused.items():
            for tool, args in asks:
                result = box.call(tool, {"path": f"refused/{name}", **args})
                assert (result.ok, result.error_code, result.text) == (
                    False, "invalid_argument", f"error [invalid_argument]: {why}"), tool
        checked = box.call("lsp_check", {"path": "refused/over.py"})
        assert (checked.ok, checked.text) == (True, f"not checked: {over}")
        assert service.server_pids() == []  # nothing was asked of a server


@pytest.mark.real
def test_diagnostics_follow_a_write_behind_ipylsps_back(box: Toolbox) -> None:
    root = box.workspace.root
    write(root, "bad.py", "x: int = 'one'\n")
    assert "ERROR [1:10]" in ok(box.call("lsp_check", {"path": "bad.py"}))
    write(root, "bad.py", "x: int = 1\n")  # an editor fixes it; nobody tells ipylsp
    assert ok(box.call("lsp_diagnostics", {"path": "bad.py"})) == "no known problems"
    write(root, "bad.py", "x: str = 1\n")
    text = ok(box.call("lsp_diagnostics", {}))
    assert '<diagnostics file="bad.py">\nERROR [1:10]' in text


@pytest.mark.real
def test_diagnostics_say_what_the_severity_filter_hides(box: Toolbox) -> None:
    write(box.workspace.root, "warn.py", "import os\n")
    box.call("lsp_check", {"path": "warn.py"})
    assert ok(box.call("lsp_diagnostics", {"path": "warn.py"})) == (
        'no known problems; 1 warning not shown (severity="all" shows them)'
    )
    assert "WARN [1:8] `os` imported but unused" in ok(
        box.call("lsp_diagnostics", {"path": "warn.py", "severity": "all"})
    )


@pytest.mark.real
def test_status_names_the_running_servers(box: Toolbox) -> None:
    box.call("lsp_check", {"path": "main.py"})
    text = ok(box.call("lsp_status", {}))
    assert f"workspace: {box.workspace.root}\n" in text
    assert "ty: running for .\n" in text and "ruff: running for .\n" in text
    rows = box.call("lsp_status", {}).data["servers"]
    assert {(row["server"], row["state"]) for row in rows} == {("ty", "running"),
                                                              ("ruff", "running")}


# -- queries and positions ----------------------------------------------------------------------


@pytest.mark.real
def test_definition_by_line_and_symbol_shows_the_source_line(box: Toolbox) -> None:
    result = box.call("lsp_definition", {"path": "main.py", "line": 3, "symbol": "Square"})
    assert ok(result) == "shapes.py:6:7: class Square(Shape):"
    assert result.data["locations"] == [
        {"path": "shapes.py", "line": 6, "column": 7, "text": "class Square(Shape):"}
    ]
    by_column = box.call("lsp_definition", {"path": "main.py", "line": 3, "column": 6})
    assert ok(by_column) == ok(result)


@pytest.mark.real
def test_occurrence_picks_among_repeats(box: Toolbox) -> None:
    first = box.call("lsp_hover", {"path": "main.py", "line": 4, "symbol": "sq"})
    second = box.call("lsp_hover", {"path": "main.py", "line": 4, "symbol": "sq", "occurrence": 2})
    assert first.data["at"] == {"path": "main.py", "line": 4, "column": 9}
    assert second.data["at"] == {"path": "main.py", "line": 4, "column": 21}
    assert ok(first) == ok(second) == "Square"


@pytest.mark.real
def test_path_and_symbol_use_the_outline(box: Toolbox) -> None:
    result = box.call("lsp_references", {"path": "shapes.py", "symbol": "Square"})
    assert ok(result) == (
        "shapes.py:6:7: class Square(Shape):\n"
        "main.py:1:20: from shapes import Square\n"
        "main.py:3:6: sq = Square()"
    )
    narrowed = box.call("lsp_hover", {"path": "shapes.py", "symbol": "Square.area"})
    assert narrowed.data["at"] == {"path": "shapes.py", "line": 7, "column": 9}


@pytest.mark.real
def test_hover_is_plain_text(box: Toolbox) -> None:
    result = box.call("lsp_hover", {"path": "main.py", "line": 4, "symbol": "area"})
    assert ok(result) == "bound method Square.area() -> float"
    assert "```" not in result.data["hover"]


@pytest.mark.real
def test_symbols_outline(box: Toolbox) -> None:
    assert ok(box.call("lsp_symbols", {"path": "shapes.py"})) == (
        "class Shape  1:7\n  method area  2:9\nclass Square  6:7\n  method area  7:9"
    )
    assert ok(box.call("lsp_symbols", {"path": "shapes.py", "query": "squ"})) == (
        "class Square  6:7"
    )


@pytest.mark.real
def test_answers_keep_to_the_budget(root: Path, service: Service) -> None:
    lines = "".join(f"value_{i} = {i}\n" for i in range(60))
    write(root, "many.py", lines)
    box = Toolbox(service, root, max_chars=200)
    text = ok(box.call("lsp_symbols", {"path": "many.py"}))
    assert len(text) <= 200
    shown = text.splitlines()
    assert shown[0] == "variable value_0  1:1"
    assert shown[-1] == f"... {60 - (len(shown) - 1)} more"


# -- confinement --------------------------------------------------------------------------------


@pytest.mark.real
def test_symlinks_out_of_the_root_are_refused(box: Toolbox, tmp_path: Path) -> None:
    outside = write(tmp_path, "secret.py", "password = 1\n")
    link = box.workspace.root / "link.py"
    if not link.is_symlink():
        link.symlink_to(outside)
    result = box.call("lsp_check", {"path": "link.py"})
    assert result.error_code == "outside_workspace"
    assert result.text.startswith("error [outside_workspace]: link.py is outside the workspace")
    inside = box.workspace.root / "alias.py"
    if not inside.is_symlink():
        inside.symlink_to(box.workspace.root / "shapes.py")
    assert box.call("lsp_symbols", {"path": "alias.py"}).ok


@pytest.mark.real
def test_call_tool_uses_the_current_directory(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(root)
    write(root, "cwd.py", "y: int = 2\n")
    try:
        assert call_tool("lsp_check", {"path": "cwd.py"}).text == (
            "cwd.py: no new problems (ruff, ty)"
        )
        assert call_tool("lsp_check", {"path": str(root.parent / "x.py")}).error_code == (
            "outside_workspace"
        )
        bad = call_tool("lsp_check", {"path": "cwd.py"}, root=root / "missing")
        assert bad.error_code == "invalid_argument"
    finally:
        ipylsp._reset_service()


# -- subscriptions ------------------------------------------------------------------------------


@pytest.mark.real
def test_subscribers_see_every_report_and_a_raising_one_is_dropped(box: Toolbox) -> None:
    seen: list[Report] = []

    def broken(report: Report) -> None:
        raise ValueError("subscriber bug")

    box.service.subscribe(seen.append)
    box.service.subscribe(broken)
    try:
        write(box.workspace.root, "sub.py", "a: int = 'x'\n")
        first = box.call("lsp_check", {"path": "sub.py"})
        assert "ERROR [1:10]" in ok(first)
        box.call("lsp_check", {"path": "sub.py", "content": "a: int = 2\n"})
        assert [r.files[0].path.name for r in seen] == ["sub.py", "sub.py"]
        assert len(seen[0].files[0].diagnostics) == 1 and seen[1].files[0].fixed
        assert box.service.unsubscribe(broken) is False  # dropped when it raised
    finally:
        assert box.service.unsubscribe(seen.append) is True
    box.call("lsp_check", {"path": "sub.py"})
    assert len(seen) == 2


@pytest.mark.real
def test_late_answers_reach_subscribers(root: Path) -> None:
    spec = ServerSpec(
        id="fake", name="Fake", languages=("shellscript",),
        command=fake_command("--diagnostics", "pull", "--pull-delay-ms", "1500"),
        install=InstallRecipe("path", hint="it is a test fixture"),
    )
    service = Service(Settings(language_servers={"shellscript": ("fake",)},
                               extra_specs=(spec,), wait_budget=0.5))
    seen: list[Report] = []
    service.subscribe(seen.append)
    try:
        late = write(root, "late.sh", "ERROR:arrives late\n")
        first = service.check(late, before="")
        assert [u.reason.value for u in first.files[0].unknown] == ["timed out"]
        assert service.settle_late(30)
    finally:
        service.close()
    assert len(seen) == 2 and seen[0] is first
    assert [d.message for d in seen[1].files[0].diagnostics] == ["arrives late"]


# -- the features that answer with edits, calls and workspace symbols ---------------------------


@pytest.mark.real
def test_symbol_alone_is_found_across_the_workspace(box: Toolbox) -> None:
    result = box.call("lsp_definition", {"symbol": "Square"})
    assert ok(result) == "shapes.py:6:7: class Square(Shape):"
    assert result.data["at"] == {"path": "shapes.py", "line": 6, "column": 7}
    narrowed = box.call("lsp_hover", {"symbol": "Square.area"})
    assert narrowed.data["at"] == {"path": "shapes.py", "line": 7, "column": 9}


@pytest.mark.real
def test_a_call_by_symbol_is_one_loop_trip(
    box: Toolbox, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 29, item 7: a call by symbol is placed (the file's outline, or a workspace symbol
    search) and asked in one coroutine on the service's loop, under one deadline, each file
    read once. It was two trips, each with a budget of its own, and three reads of the file."""
    trips: list[object] = []
    reads: list[Path] = []
    run, read_text = BackgroundLoop.run, queries.read_text

    def counted_run(loop: BackgroundLoop, coro: Any, *args: Any, **kwargs: Any) -> Any:
        trips.append(coro)
        return run(loop, coro, *args, **kwargs)

    def counted_read(path: Path, limit: int | None) -> str | None:
        reads.append(path)
        return read_text(path, limit)

    monkeypatch.setattr(BackgroundLoop, "run", counted_run)
    monkeypatch.setattr(queries, "read_text", counted_read)
    in_file = box.call("lsp_hover", {"path": "shapes.py", "symbol": "Square.area"})
    assert ok(in_file) == "def area(self) -> float"
    assert len(trips) == 1
    assert reads.count(root / "shapes.py") == 1 and len(reads) == len(set(reads))
    trips.clear()
    reads.clear()
    anywhere = box.call("lsp_definition", {"symbol": "Square"})
    assert ok(anywhere) == "shapes.py:6:7: class Square(Shape):"
    assert len(trips) == 1
    assert reads.count(root / "shapes.py") == 1 and len(reads) == len(set(reads))


@pytest.mark.real
def test_a_name_defined_twice_in_the_workspace_is_ambiguous(box: Toolbox) -> None:
    write(box.workspace.root, "other.py", "class Square:\n    pass\n")
    box.call("lsp_check", {"path": "other.py"})  # ipylsp tells the servers of new files it sees
    try:
        result = box.call("lsp_references", {"symbol": "Square"})
        assert result.error_code == "ambiguous_symbol"
        assert result.text == (
            "error [ambiguous_symbol]: 'Square' names 2 symbols in the workspace: "
            "class Square  other.py:1:7; class Square  shapes.py:6:7; "
            "pass `path` and `line` (with `symbol`) for the one you mean"
        )
        missing = box.call("lsp_references", {"symbol": "Circle"})
        assert missing.error_code == "symbol_not_found"
        assert missing.text.startswith("error [symbol_not_found]: no symbol named 'Circle' in "
                                       "the workspace")
    finally:
        (box.workspace.root / "other.py").unlink()


@pytest.mark.real
def test_workspace_symbol_search(box: Toolbox) -> None:
    assert ok(box.call("lsp_symbols", {"query": "Squ"})) == "class Square  shapes.py:6:1"


@pytest.mark.real
def test_rename_preview_is_a_diff_and_writes_nothing(box: Toolbox) -> None:
    result = box.call("lsp_rename_preview", {"path": "main.py", "line": 3, "symbol": "Square",
                                             "new_name": "Box"})
    assert ok(result) == (
        "renaming changes 3 places in 2 files (not applied):\n"
        "--- a/main.py\n+++ b/main.py\n@@ -1,4 +1,4 @@\n"
        "-from shapes import Square\n+from shapes import Box\n \n"
        "-sq = Square()\n+sq = Box()\n total = sq.area() + sq.area()\n"
        "--- a/shapes.py\n+++ b/shapes.py\n@@ -3,6 +3,6 @@\n"
        "         return 0.0\n \n \n-class Square(Shape):\n+class Box(Shape):\n"
        "     def area(self) -> float:\n         return 1.0"
    )
    assert result.data["files"] == ["main.py", "shapes.py"]
    assert (box.workspace.root / "main.py").read_text() == MAIN


@pytest.mark.real
def test_code_actions_show_ruffs_fix_as_a_diff(box: Toolbox) -> None:
    write(box.workspace.root, "imports.py", "import os\n\nprint(1)\n")
    result = box.call("lsp_code_actions", {"path": "imports.py", "line": 1})
    text = ok(result)
    assert text.startswith(
        "1. Ruff (F401): Remove unused import: `os` [ruff] (F401)\n"
        "--- a/imports.py\n+++ b/imports.py\n@@ -1,3 +1,2 @@\n-import os\n \n print(1)\n"
        "2. Ruff (F401): Disable for this line [ruff] (F401)\n"
    )
    assert result.data["actions"][0]["diff"].startswith("--- a/imports.py")
    assert (box.workspace.root / "imports.py").read_text() == "import os\n\nprint(1)\n"
    none = box.call("lsp_code_actions", {"path": "imports.py", "line": 3})
    assert ok(none) == "(no quick fixes on this line)"


@pytest.mark.real
def test_calls_incoming_and_outgoing(box: Toolbox) -> None:
    write(box.workspace.root, "calls.py",
          "def leaf() -> int:\n    return 1\n\n\ndef root() -> int:\n    return leaf()\n")
    incoming = box.call("lsp_calls", {"path": "calls.py", "symbol": "leaf"})
    assert ok(incoming).splitlines() == [
        "incoming calls of function leaf (in calls)  calls.py:1:5:",
        "function root (in calls)  calls.py:5:5",
    ]
    outgoing = box.call("lsp_calls", {"path": "calls.py", "symbol": "root",
                                      "direction": "outgoing"})
    assert ok(outgoing).splitlines()[1:] == ["function leaf (in calls)  calls.py:1:5"]


@pytest.mark.real
def test_a_definition_follows_a_file_changed_behind_ipylsps_back(box: Toolbox) -> None:
    box.call("lsp_check", {"path": "shapes.py"})  # the server has shapes.py open
    first = box.call("lsp_definition", {"path": "main.py", "line": 3, "symbol": "Square"})
    assert ok(first) == "shapes.py:6:7: class Square(Shape):"
    write(box.workspace.root, "shapes.py", "# moved down\n\n" + SHAPES)
    moved = box.call("lsp_definition", {"path": "main.py", "line": 3, "symbol": "Square"})
    assert ok(moved) == "shapes.py:8:7: class Square(Shape):"


@pytest.mark.real
def test_basedpyright_offers_the_missing_import(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.real_servers import workspace

    require("basedpyright")
    root = workspace(tmp_path, monkeypatch)
    write(root, "paths.py", "home = Path.home()\n")
    settings = Settings(language_servers={"python": ("basedpyright",)}, data_dir=DATA_DIR)
    with Service(settings) as service:
        result = Toolbox(service, root).call("lsp_code_actions", {"path": "paths.py", "line": 1})
    text = ok(result)
    assert text.startswith(
        "1. from pathlib import Path [basedpyright] (reportUndefinedVariable)\n"
        "--- a/paths.py\n+++ b/paths.py\n@@ -1 +1,4 @@\n"
        "+from pathlib import Path\n+\n+\n home = Path.home()\n"
    )


@pytest.mark.real
def test_typescript_definition_by_symbol(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.real_servers import workspace

    require("typescript")
    root = workspace(tmp_path, monkeypatch)
    write(root, "tsconfig.json", '{"compilerOptions": {"strict": true}}\n')
    write(root, "greet.ts", "export function greet(name: string): string {\n  return name;\n}\n")
    write(root, "main.ts", 'import { greet } from "./greet";\n\nconsole.log(greet("x"));\n')
    settings = Settings(language_servers={"typescript": ("typescript",)}, data_dir=DATA_DIR)
    with Service(settings) as service:
        box = Toolbox(service, root)
        result = box.call("lsp_definition", {"path": "main.ts", "line": 3, "symbol": "greet"})
        assert ok(result) == (
            "greet.ts:1:17: export function greet(name: string): string {"
        )
        hover = box.call("lsp_hover", {"path": "main.ts", "line": 3, "symbol": "greet"})
        assert "function greet(name: string): string" in ok(hover)


@pytest.mark.real
def test_a_diff_keeps_a_blank_context_line_at_its_end(box: Toolbox) -> None:
    write(box.workspace.root, "blank.py", "import os\nx = 1\n\n")
    text = ok(box.call("lsp_code_actions", {"path": "blank.py", "line": 1}))
    assert text.startswith(
        "1. Ruff (F401): Remove unused import: `os` [ruff] (F401)\n"
        "--- a/blank.py\n+++ b/blank.py\n@@ -1,3 +1,2 @@\n-import os\n x = 1\n \n"
        "2. "
    )
