"""The typed request functions of `lsp/requests/` against real servers (ty, basedpyright,
TypeScript 7), and lsprotocol's structuring of malformed answers."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import pytest

from ipylsp.lsp import protocol
from ipylsp.lsp.client import ClientError, LanguageClient
from ipylsp.lsp.requests import calls, completion, hover, locations, rename, symbols
from ipylsp.lsp.requests.locations import IMPLEMENTATION, TYPE_DEFINITION
from ipylsp.lsp.requests.request import At
from ipylsp.model.answers import Location
from ipylsp.model.diagnostics import UnknownReason
from ipylsp.model.edits import apply
from ipylsp.servers import executables
from tests.real_servers import DATA_DIR, require, workspace, write

T = TypeVar("T")

SHAPES = (
    "class Shape:\n"
    "    def area(self) -> float:\n"
    "        return 0.0\n"
    "\n"
    "class Square(Shape):\n"
    "    def __init__(self, side: float) -> None:\n"
    "        self.side = side\n"
    "\n"
    "    def area(self) -> float:\n"
    "        return self.side ** 2\n"
)
MAIN = (
    "from shapes import Square\n"
    "\n"
    "# «é» non-ASCII before the name moves no column\n"
    "sq = Square(2.0)\n"
    "print(sq.area())\n"
    "sq.\n"
)


HOVER = {
    "ty": "bound method Square.area() -> float",
    "basedpyright": "(method) def area() -> float",
}


def texts(path: Path) -> str | None:
    return path.read_text(encoding="utf-8") if path.is_file() else None


async def with_client(server_id: str, root: Path,
                      body: Callable[[LanguageClient], Awaitable[T]]) -> T:
    spec = require(server_id)
    command = executables.resolve(spec, DATA_DIR).command
    assert command is not None
    client = LanguageClient(spec, root, command)
    await client.start(60)
    try:
        return await body(client)
    finally:
        await client.stop()


def python_workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, str]:
    root = workspace(tmp_path, monkeypatch)
    shapes = write(root, "shapes.py", SHAPES)
    main = write(root, "main.py", MAIN)
    return shapes, main, MAIN


@pytest.mark.real
@pytest.mark.parametrize("server_id", ["ty", "basedpyright"])
def test_python_features_answer_in_code_points(
    server_id: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shapes, main, text = python_workspace(tmp_path, monkeypatch)

    async def body(client: LanguageClient) -> None:
        await client.sync_document(shapes, SHAPES, "python")
        await client.sync_document(main, text, "python")
        on_square = At(main, text, 3, 6)  # sq = Square(2.0): the "S"
        assert await locations.definition(client, on_square, texts, 30) == (
            Location(shapes, 4, 6),
        )
        hovered = await hover.hover(client, At(main, text, 4, 9), 30)  # sq.area
        assert hovered == HOVER[server_id]
        refs = await locations.references(client, At(shapes, SHAPES, 4, 6), texts, 30)
        assert set(refs) >= {Location(shapes, 4, 6), Location(main, 0, 19), Location(main, 3, 5)}
        type_of_sq = await locations.type_definition(client, At(main, text, 3, 0), texts, 30)
        assert type_of_sq == (Location(shapes, 4, 6),)
        outline = await symbols.document_symbols(client, shapes, SHAPES, 30)
        assert [(s.kind, s.name, s.line, s.column, s.depth) for s in outline][:3] == [
            ("class", "Shape", 0, 6, 0),
            ("method", "area", 1, 8, 1),
            ("class", "Square", 4, 6, 0),
        ]
        found = await symbols.workspace_symbols(client, "Square", texts, 30)
        assert any(s.name == "Square" and s.path == shapes and s.line == 4 for s in found)
        items = await completion.completions(client, At(main, text, 5, 3), 30)  # sq.|
        assert "area" in [item.label for item in items]

    asyncio.run(with_client(server_id, shapes.parent, body))


@pytest.mark.real
def test_typescript_implementation_and_definition(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = workspace(tmp_path, monkeypatch)
    source = (
        "interface Greeter { greet(): string }\n"
        "class Hello implements Greeter { greet() { return 'hi' } }\n"
        "const g: Greeter = new Hello();\n"
        "g.greet();\n"
    )
    path = write(root, "main.ts", source)
    write(root, "tsconfig.json", '{"compilerOptions": {"strict": true}}\n')

    async def body(client: LanguageClient) -> None:
        await client.sync_document(path, source, "typescript")
        on_interface = At(path, source, 0, 10)
        impls = await locations.implementation(client, on_interface, texts, 30)
        assert Location(path, 1, 6) in impls
        assert await locations.definition(client, At(path, source, 3, 2), texts, 30) == (
            Location(path, 0, 20),
        )

    asyncio.run(with_client("typescript", root, body))


def test_malformed_answer_is_a_client_error() -> None:
    t = protocol.types()
    with pytest.raises(ClientError) as caught:
        protocol.answer(t.TEXT_DOCUMENT_HOVER, [1, 2], t.HoverResponse)
    assert caught.value.reason is UnknownReason.FAILED
    assert caught.value.detail == "textDocument/hover: malformed answer (ClassValidationError)"


def test_enum_names_are_words() -> None:
    t = protocol.types()
    assert protocol.enum_name(t.SymbolKind, 12) == "function"
    assert protocol.enum_name(t.SymbolKind, 22) == "enum member"
    assert protocol.enum_name(t.SymbolKind, 999) is None


@pytest.mark.real
def test_lsprotocol_stays_off_the_import_and_diagnostics_path(tmp_path: Path) -> None:
    import subprocess
    import sys

    code = (
        "import sys, ipylsp, ipylsp.service.service, ipylsp.lsp.client;"
        "print('lsprotocol' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


CALLS = (
    "def helper() -> int:\n"
    "    return 1\n"
    "\n"
    "def main() -> int:\n"
    "    return helper() + helper()\n"
    "\n"
    "def other() -> int:\n"
    "    return helper()\n"
)


@pytest.mark.real
@pytest.mark.parametrize("server_id", ["basedpyright", "ty"])
def test_calls_and_rename_preview(
    server_id: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = workspace(tmp_path, monkeypatch)
    path = write(root, "calls.py", CALLS)

    async def body(client: LanguageClient) -> None:
        await client.sync_document(path, CALLS, "python")
        incoming = await calls.calls(client, At(path, CALLS, 0, 4), "incoming", texts, 30)
        assert [(s.name, s.line, s.depth) for s in incoming] == [
            ("helper", 0, 0), ("main", 3, 1), ("other", 6, 1)
        ]
        outgoing = await calls.calls(client, At(path, CALLS, 3, 4), "outgoing", texts, 30)
        assert [(s.name, s.line, s.depth) for s in outgoing] == [("main", 3, 0), ("helper", 0, 1)]
        edits = await rename.rename(client, At(path, CALLS, 0, 4), "assist", texts, 30)
        renamed = apply(CALLS, edits)
        assert renamed == CALLS.replace("helper", "assist")
        assert path.read_text() == CALLS  # a preview: nothing written

    asyncio.run(with_client(server_id, root, body))


@pytest.mark.real
def test_service_serves_type_definition_and_implementation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ipylsp.model.settings import Settings
    from ipylsp.service.service import Service

    root = workspace(tmp_path, monkeypatch)
    path = write(root, "a.py", "class A: ...\nclass B(A): ...\nx = B()\nx\n")
    settings = Settings(language_servers={"python": ("basedpyright",)}, data_dir=DATA_DIR)
    with Service(settings) as service:
        assert service.feature(TYPE_DEFINITION, path, 3, 0).format(root) == "a.py:2:7"
        # basedpyright lists the class itself and its subclass
        assert service.feature(IMPLEMENTATION, path, 0, 6).format(root).splitlines() == [
            "a.py:1:7", "a.py:2:7"
        ]
