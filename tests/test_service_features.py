"""`Service.feature` against real servers: every feature kind the agent tools use (hover,
definition, type definition, references, calls, workspace symbols, completions, rename, code
actions) on ty and basedpyright (+ ruff for code actions) and TypeScript, every failure
`reason`, and the re-sync of open documents that changed on disk. The fixture server only
for the faults no real server shows on demand (timeouts, errors, crashes, broken)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ipylsp.lsp.requests import FeatureResult
from ipylsp.lsp.requests.calls import CALLS
from ipylsp.lsp.requests.code_actions import CODE_ACTIONS
from ipylsp.lsp.requests.completion import COMPLETIONS
from ipylsp.lsp.requests.hover import HOVER
from ipylsp.lsp.requests.locations import DEFINITION, REFERENCES, TYPE_DEFINITION
from ipylsp.lsp.requests.rename import RENAME
from ipylsp.lsp.requests.symbols import WORKSPACE_SYMBOLS
from ipylsp.model.diagnostics import UnknownReason
from ipylsp.model.edits import apply, preview
from ipylsp.model.server_spec import InstallRecipe, ServerOverride, ServerSpec
from ipylsp.model.settings import Settings
from ipylsp.servers import registry
from ipylsp.service.service import Service
from tests.conftest import fake_command
from tests.real_servers import DATA_DIR, require, workspace, write
from tests.test_lsp_features import SHAPES as CLASSES

pytestmark = pytest.mark.real

SHAPES = CLASSES + (  # Shape, Square
    "\n"
    "\n"
    "def total(shapes: list[Shape]) -> float:\n"
    "    return sum(s.area() for s in shapes)\n"
)
MAIN = (
    "from shapes import Square, total\n"
    "\n"
    "# «é» non-ASCII before the name moves no column\n"
    "sq = Square(2.0)\n"
    "print(sq.area(), total([sq]))\n"
    "\n"
    "\n"
    "def report() -> float:\n"
    "    return total([sq, Square(1.0)])\n"
)

HOVER_TEXT = {
    "ty": "bound method Square.area() -> float",
    "basedpyright": "(method) def area() -> float",
}
MODULE_CALLER = {  # the module-level call's caller, as each server names it
    "ty": "module main [main.py:1:1]",
    "basedpyright": "module (module) main.py [main.py:1:1]",
}
TOTAL_SYMBOL = {  # ty points at the definition's start, basedpyright at the name
    "ty": "function total [shapes.py:13:1]",
    "basedpyright": "function total [shapes.py:13:5]",
}


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = workspace(tmp_path, monkeypatch)
    write(root, "shapes.py", SHAPES)
    write(root, "main.py", MAIN)
    return root


def python_service(*server_ids: str) -> Service:
    for server_id in server_ids:
        require(server_id)
    return Service(Settings(language_servers={"python": server_ids}, data_dir=DATA_DIR))


@pytest.fixture(params=["ty", "basedpyright"])
def service(request: pytest.FixtureRequest, root: Path) -> Iterator[Service]:
    with python_service(request.param) as service:
        yield service


def answered(result: FeatureResult[Any]) -> FeatureResult[Any]:
    assert result.reason is None and not result.error, result.error
    return result


def test_python_features(service: Service, root: Path) -> None:
    shapes, main = root / "shapes.py", root / "main.py"
    server_id = answered(service.feature(HOVER, main, 4, 9)).server_id
    assert server_id in HOVER_TEXT
    assert service.feature(HOVER, main, 4, 9).answer == HOVER_TEXT[server_id]
    assert answered(service.feature(DEFINITION, main, 3, 6)).format(root) == "shapes.py:5:7"
    assert service.feature(TYPE_DEFINITION, main, 3, 0).format(root) == "shapes.py:5:7"
    references = service.feature(REFERENCES, shapes, 12, 4).format(root).splitlines()
    assert sorted(references) == ["main.py:1:28", "main.py:5:18", "main.py:9:12", "shapes.py:13:5"]

    incoming = answered(service.feature(CALLS.given("incoming"), shapes, 12, 4))
    lines = incoming.format(root).splitlines()
    assert lines[0] == "function total [shapes.py:13:5]"  # the prepared item first, depth 0
    assert sorted(lines[1:]) == sorted(
        ["  " + MODULE_CALLER[server_id], "  function report [main.py:8:5]"]
    )
    outgoing = service.feature(CALLS.given("outgoing"), main, 7, 4).format(root)
    assert outgoing.splitlines()[0] == "function report [main.py:8:5]"
    assert sorted(outgoing.splitlines()[1:]) == [
        "  class Square [shapes.py:5:7]", "  function total [shapes.py:13:5]"
    ]

    found = answered(service.feature(WORKSPACE_SYMBOLS.given("total"), main))
    assert found.format(root) == TOTAL_SYMBOL[server_id]
    assert found.answer[0].path == shapes

    completions = answered(service.feature(COMPLETIONS, main, 4, 13))  # print(sq.area|(
    area = [c for c in completions.answer if c.label == "area"]
    assert [c.kind for c in area] == ["method"]
    assert completions.format(root).splitlines() == [c.label for c in completions.answer]

    renamed = answered(service.feature(RENAME.given("Box"), shapes, 4, 6))
    assert {edit.path for edit in renamed.answer} == {shapes, main}
    assert apply(SHAPES, [e for e in renamed.answer if e.path == shapes]) == SHAPES.replace(
        "Square", "Box"
    )
    assert apply(MAIN, [e for e in renamed.answer if e.path == main]) == MAIN.replace(
        "Square", "Box"
    )
    assert (shapes.read_text(), main.read_text()) == (SHAPES, MAIN)  # nothing applied


FIX = 'import os\nimport sys\n\nprint(sys.argv)\nx = Path("a")\n'
REMOVE_OS = (
    "--- a/fix.py\n"
    "+++ b/fix.py\n"
    "@@ -1,4 +1,3 @@\n"
    "-import os\n"
    " import sys\n"
    " \n"
    " print(sys.argv)\n"
)


def actions_by_title(result: FeatureResult[Any]) -> dict[str, str]:
    """Each action's title -> the text its edits would make of FIX."""
    return {a.title: apply(FIX, a.edits) for a in answered(result).answer}


def test_code_actions_basedpyright_and_ruff(root: Path) -> None:
    path = write(root, "fix.py", FIX)
    with python_service("basedpyright", "ruff") as service:
        on_import = service.feature(CODE_ACTIONS, path, 0)
        assert on_import.server_id == "basedpyright+ruff"
        assert [(a.server_id, a.title, a.fixes) for a in on_import.answer] == [
            ("basedpyright", "Add `# pyright: ignore[reportUnusedImport]`",
             ("reportUnusedImport",)),
            ("ruff", "Ruff (F401): Remove unused import: `os`", ("F401",)),
            ("ruff", "Ruff (F401): Disable for this line", ("F401",)),
        ]
        remove = on_import.answer[1]
        assert preview(remove.edits, {path: FIX}, {path: "fix.py"}) == REMOVE_OS
        assert apply(FIX, on_import.answer[2].edits) == FIX.replace(
            "import os\n", "import os  # noqa: F401\n"
        )
        # basedpyright's add-import for an undefined name (it sorts the import in)
        fixes = actions_by_title(service.feature(CODE_ACTIONS, path, 4))
        assert fixes["from pathlib import Path"] == (
            'import os\nfrom pathlib import Path\nimport sys\n\nprint(sys.argv)\nx = Path("a")\n'
        )
        assert fixes["Ruff (F821): Disable for this line"] == FIX.replace(
            'Path("a")\n', 'Path("a")  # noqa: F821\n'
        )
        assert service.feature(CODE_ACTIONS, path, 3).answer == ()  # a clean line
        assert path.read_text() == FIX


def test_code_actions_ty_and_ruff(root: Path) -> None:
    path = write(root, "fix.py", FIX)
    with python_service("ty", "ruff") as service:
        on_import = service.feature(CODE_ACTIONS, path, 0)
        assert [a.title for a in on_import.answer] == [  # ty has no unused-import rule
            "Ruff (F401): Remove unused import: `os`", "Ruff (F401): Disable for this line"
        ]
        on_path = service.feature(CODE_ACTIONS, path, 4)
        ty_titles = [a.title for a in on_path.answer if a.server_id == "ty"]
        # ty imports from every module it can see that defines the name, stdlib first
        assert ty_titles[:2] == ["import pathlib.Path", "import zipfile.Path"]
        assert ty_titles[-1] == "Ignore 'unresolved-reference' for this line"
        fixes = actions_by_title(on_path)
        assert fixes["import pathlib.Path"] == "from pathlib import Path\n" + FIX
        assert on_path.answer[0].fixes == ("unresolved-reference",)


def test_typescript_definition_and_rename(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    require("typescript")
    root = workspace(tmp_path, monkeypatch)
    write(root, "tsconfig.json", '{"compilerOptions": {"strict": true}}\n')
    greet_ts = "export function greet(name: string): string {\n  return `hi ${name}`;\n}\n"
    main_ts = 'import { greet } from "./greet";\n\nconsole.log(greet("é"), greet("x"));\n'
    greet, main = write(root, "greet.ts", greet_ts), write(root, "main.ts", main_ts)
    settings = Settings(language_servers={"typescript": ("typescript",)}, data_dir=DATA_DIR)
    with Service(settings) as service:
        assert answered(service.feature(DEFINITION, main, 2, 28)).format(root) == (
            "greet.ts:1:17"
        )
        renamed = answered(service.feature(RENAME.given("welcome"), greet, 0, 16))
        assert apply(greet_ts, [e for e in renamed.answer if e.path == greet]) == (
            greet_ts.replace("greet", "welcome")
        )
        assert apply(main_ts, [e for e in renamed.answer if e.path == main]) == (
            main_ts.replace("greet(", "welcome(").replace("{ greet }", "{ welcome }")
        )


def test_failure_reasons_from_real_servers(root: Path) -> None:
    write(root, "notes.xyz", "hello\n")
    missing = ServerOverride(command=("/nonexistent/ty",))
    with python_service("ruff") as service:
        assert service.feature(HOVER, root / "nope.py").reason is UnknownReason.NO_FILE
        assert service.feature(HOVER, root).reason is UnknownReason.NOT_READ  # a directory
        assert service.feature(HOVER, root / "notes.xyz").reason is UnknownReason.NO_LANGUAGE
        no_rename = service.feature(RENAME.given("x"), root / "main.py", 0, 20)
        assert (no_rename.reason, no_rename.error) == (
            UnknownReason.NO_PROVIDER, "no server for main.py offers rename"
        )
    settings = Settings(language_servers={"python": ("ty",)}, servers={"ty": missing},
                        data_dir=DATA_DIR)
    with Service(settings) as service:
        absent = service.feature(DEFINITION, root / "main.py", 3, 6)
        ty = registry.get("ty")
        assert ty is not None
        assert (absent.reason, absent.unknown[0].hint) == (
            UnknownReason.NOT_INSTALLED, registry.install_hint(ty)
        )
        assert absent.unknown[0].hint and absent.error.startswith("ty: not installed: ")


def fake_service(*flags: str) -> Service:
    spec = ServerSpec(
        id="fake", name="Fake", languages=("shellscript",), command=fake_command(*flags),
        install=InstallRecipe("path", hint="it is a test fixture"),
    )
    return Service(Settings(language_servers={"shellscript": ("fake",)}, extra_specs=(spec,),
                            wait_budget=1.0, request_timeout=1.0, max_timeouts=2))


@pytest.mark.parametrize(
    ("flags", "reason"),
    [
        (("--error-on", "textDocument/hover"), UnknownReason.FAILED),
        (("--crash-on", "textDocument/hover"), UnknownReason.CRASHED),
        (("--hang-on", "textDocument/hover"), UnknownReason.TIMED_OUT),
    ],
)
def test_failure_reasons_from_faults(
    tmp_path: Path, flags: tuple[str, ...], reason: UnknownReason
) -> None:
    path = write(tmp_path, "a.sh", "echo hi\n")
    with fake_service(*flags) as service:
        assert service.feature(HOVER, path).reason == reason


def test_a_server_that_keeps_timing_out_is_broken_with_a_hint(tmp_path: Path) -> None:
    path = write(tmp_path, "a.sh", "echo hi\n")
    with fake_service("--hang-on", "textDocument/hover") as service:
        reasons = [service.feature(HOVER, path).reason for _ in range(2)]
        assert reasons == [UnknownReason.TIMED_OUT] * 2
        broken = service.feature(HOVER, path)
        assert (broken.reason, broken.unknown[0].hint) == (
            UnknownReason.BROKEN, "`%lsp restart fake` starts it again"
        )


def test_answers_follow_open_documents_changed_on_disk(service: Service, root: Path) -> None:
    shapes, main = root / "shapes.py", root / "main.py"
    # shapes.py is open in the server (queried), then changes behind its back
    assert service.feature(DEFINITION, shapes, 12, 23).format(root) == "shapes.py:1:7"
    assert service.feature(DEFINITION, main, 3, 6).format(root) == "shapes.py:5:7"
    shapes.write_text("# moved\n\n" + SHAPES, encoding="utf-8")
    assert service.feature(DEFINITION, main, 3, 6).format(root) == "shapes.py:7:7"
    references = service.feature(REFERENCES, main, 0, 19).format(root).splitlines()
    assert sorted(references) == ["main.py:1:20", "main.py:4:6", "main.py:9:23", "shapes.py:7:7"]
    shapes.unlink()  # gone: closed in the server, which is told it was deleted
    after = service.feature(DEFINITION, main, 3, 6)
    assert after.reason is None and [loc for loc in after.answer if loc.path == shapes] == []
