"""The layer contract of ARCHITECTURE.md, read from the code: every module's imports (top
level, inside functions and under TYPE_CHECKING alike) run downward or sideways within a
layer, never upward; the module import graph has no cycles; the core imports no frontend
framework. A new module is covered the day it is written: layers are assigned by package,
not from a hand list of modules."""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "ipylsp"

LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # (layer, module prefixes), bottom first; the longest matching prefix decides.
    ("base", ("ipylsp._version", "ipylsp.private", "ipylsp.json_text")),
    ("model", ("ipylsp.model",)),
    ("analysis", ("ipylsp.analysis",)),
    ("io", ("ipylsp.lsp", "ipylsp.servers", "ipylsp.store")),
    ("service", ("ipylsp.service",)),
    ("adapters", ("ipylsp", "ipylsp.config", "ipylsp.settings_files", "ipylsp.cli",
                  "ipylsp.cells", "ipylsp.ipython", "ipylsp.agent", "ipylsp.server",
                  "ipylsp.broker")),
)
CORE = ("base", "model", "analysis", "io", "service")
FRAMEWORKS = ("IPython", "ipykernel", "jupyter_server", "jupyter_client", "tornado",
              "traitlets", "nbformat", "mcp")


def module_name(path: Path, root: Path = PACKAGE) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def layer_of(module: str) -> int:
    best, rank = -1, -1
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, rank = len(prefix), index
    assert rank >= 0, f"{module} belongs to no layer: add its package to LAYERS"
    return rank


def imports(path: Path, root: Path = PACKAGE) -> Iterator[tuple[str, int]]:
    """(imported module, line) for every import in the file; `from pkg import sub` names
    the submodule when `sub` is one, else the package (or module) it comes from."""
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            for alias in node.names:
                sub = f"{source}.{alias.name}"
                is_module = (root.parent / Path(*sub.split("."))).with_suffix(".py").exists() or (
                    root.parent / Path(*sub.split("."))
                ).is_dir()
                yield (sub if is_module else source), node.lineno


@functools.cache
def graph(root: Path = PACKAGE) -> dict[str, list[tuple[str, int]]]:
    """Every module's imports (read once per run: four tests ask for the same tree)."""
    edges: dict[str, list[tuple[str, int]]] = {}
    for path in sorted(root.rglob("*.py")):
        edges[module_name(path, root)] = list(dict.fromkeys(imports(path, root)))
    return edges


def upward(edges: dict[str, list[tuple[str, int]]]) -> list[str]:
    found = []
    for module, targets in edges.items():
        for target, line in targets:
            if target.split(".")[0] == "ipylsp" and layer_of(target) > layer_of(module):
                found.append(f"{module}:{line} imports {target} "
                             f"({LAYERS[layer_of(module)][0]} -> {LAYERS[layer_of(target)][0]})")
    return found


def cycles(edges: dict[str, list[tuple[str, int]]]) -> list[list[str]]:
    """Import cycles between modules, lazy imports included."""
    internal = {
        module: sorted({t for t, _ in targets if t in edges and t != module})
        for module, targets in edges.items()
    }
    found: list[list[str]] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(module: str) -> None:
        state[module] = 1
        stack.append(module)
        for target in internal[module]:
            if state.get(target) == 1:
                found.append([*stack[stack.index(target):], target])
            elif target not in state:
                visit(target)
        stack.pop()
        state[module] = 2

    for module in sorted(internal):
        if module not in state:
            visit(module)
    return found


BELOW_THE_FACADE = ("ipylsp.service.", "ipylsp.servers", "ipylsp.store", "ipylsp.lsp")
FEATURES = "ipylsp.lsp.requests"
"""The features' vocabulary: values the surfaces' tables name (a feature is a module there and
a line in each table), not machinery."""


def behind_the_facade(edges: dict[str, list[tuple[str, int]]]) -> list[str]:
    """Surface imports of the service's rooms, or of the io layer's machinery: a surface holds
    the facade (`ipylsp.service`'s exported names) and nothing deeper, the features' values
    (`lsp.requests`) aside."""
    return [
        f"{module}:{line} imports {target}"
        for module, targets in edges.items()
        if LAYERS[layer_of(module)][0] == "adapters"
        for target, line in targets
        if target.startswith(BELOW_THE_FACADE) and not target.startswith(FEATURES)
    ]


def test_surfaces_hold_the_service_only_through_its_facade() -> None:
    assert behind_the_facade(graph()) == []


def _room(module: str, name: str) -> str:
    """How `_EXPORTS` names where `name` comes from: a room of the service by its name in the
    package, anything else by its whole module name (a module exported whole: its package)."""
    if module.startswith("ipylsp.service."):
        return module.removeprefix("ipylsp.service.")
    return module


def test_the_facade_exports_what_it_declares() -> None:
    """`ipylsp.service`'s names load lazily from `_EXPORTS`; editors and mypy read its
    `TYPE_CHECKING` imports: both say the same, and every name loads."""
    import ipylsp.service as facade

    tree = ast.parse((PACKAGE / "service" / "__init__.py").read_text(encoding="utf-8"))
    declared = {
        alias.name: _room(node.module or "", alias.name)
        for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
        and (node.module or "").startswith("ipylsp.") for alias in node.names
    }
    assert declared == facade._EXPORTS
    assert sorted(facade.__all__) == sorted(declared)
    assert all(getattr(facade, name) is not None for name in facade.__all__)


def test_a_surface_reaching_behind_the_facade_is_caught() -> None:
    edges = {"ipylsp.ipython.magics": [("ipylsp.service", 3), ("ipylsp.service.answers", 9),
                                       ("ipylsp.servers.roots", 10), ("ipylsp.lsp.client", 11),
                                       ("ipylsp.lsp.requests.hover", 12)],
             "ipylsp.service.service": [("ipylsp.service.answers", 4)]}
    assert behind_the_facade(edges) == [
        "ipylsp.ipython.magics:9 imports ipylsp.service.answers",
        "ipylsp.ipython.magics:10 imports ipylsp.servers.roots",
        "ipylsp.ipython.magics:11 imports ipylsp.lsp.client",
    ]


def test_no_import_runs_upward() -> None:
    assert upward(graph()) == []


def test_no_import_cycles() -> None:
    assert cycles(graph()) == []


def test_the_core_imports_no_frontend_framework() -> None:
    found = [
        f"{module}:{line} imports {target}"
        for module, targets in graph().items()
        if LAYERS[layer_of(module)][0] in CORE
        for target, line in targets
        if target.split(".")[0] in FRAMEWORKS
    ]
    assert found == []


def test_a_deliberate_upward_import_is_caught(tmp_path: Path) -> None:
    """The contract test itself can fail: a scratch package with an lsp module that imports
    the service layer, and a cycle."""
    scratch = tmp_path / "ipylsp"
    for sub in ("lsp", "service"):
        (scratch / sub).mkdir(parents=True)
        (scratch / sub / "__init__.py").write_text("")
    (scratch / "__init__.py").write_text("")
    (scratch / "lsp" / "client.py").write_text(
        "def f():\n    from ipylsp.service.pool import ClientPool\n"
    )
    (scratch / "service" / "pool.py").write_text("from ipylsp.lsp import client\n")
    edges = graph(scratch)
    assert upward(edges) == [
        "ipylsp.lsp.client:2 imports ipylsp.service.pool (io -> service)"
    ]
    assert cycles(edges) == [["ipylsp.lsp.client", "ipylsp.service.pool", "ipylsp.lsp.client"]]


@pytest.mark.parametrize("module", ["ipylsp.model.diagnostics", "ipylsp.lsp.client",
                                    "ipylsp.service.service", "ipylsp.ipython.magics"])
def test_every_module_has_a_layer(module: str) -> None:
    assert LAYERS[layer_of(module)][0] in {"model", "io", "service", "adapters"}


def test_the_cells_session_is_a_surface_and_their_analysis_is_not() -> None:
    """`ipylsp.cells` (the session, on the kernel's side) is an adapter: no room of the
    service may import it; `ipylsp.analysis.cells` (pure) stays below."""
    assert LAYERS[layer_of("ipylsp.cells.session")][0] == "adapters"
    assert LAYERS[layer_of("ipylsp.analysis.cells.window")][0] == "analysis"
