"""The registry: every language server ipylsp knows, as data rows.

`languages.py` maps file names to LSP language ids; a server serves a file when the file's
language id is one of the spec's `languages`.
"""

from __future__ import annotations

from collections.abc import Iterable

from ipylsp.lsp.spec import InstallRecipe, ServerSpec

_PY_ROOTS = ("pyproject.toml", "setup.py", "setup.cfg", "requirements.txt", "Pipfile", ".git")

SPECS: tuple[ServerSpec, ...] = (
    ServerSpec(
        id="ty",
        name="ty",
        languages=("python",),
        command=("ty", "server"),
        install=InstallRecipe("pip", ("ty",)),
        root_markers=("ty.toml", *_PY_ROOTS),
        description="Astral's type checker (fast).",
    ),
    ServerSpec(
        id="ruff",
        name="Ruff",
        languages=("python",),
        command=("ruff", "server"),
        install=InstallRecipe("pip", ("ruff",)),
        root_markers=("ruff.toml", ".ruff.toml", *_PY_ROOTS),
        description="Astral's linter: undefined names, unused imports, syntax.",
    ),
    ServerSpec(
        id="pyright",
        name="Pyright",
        languages=("python",),
        command=("pyright-langserver", "--stdio"),
        install=InstallRecipe("npm", ("pyright",), needs=("node", "npm")),
        root_markers=("pyrightconfig.json", *_PY_ROOTS),
        description="Microsoft's type checker (node).",
    ),
    ServerSpec(
        id="basedpyright",
        name="basedpyright",
        languages=("python",),
        command=("basedpyright-langserver", "--stdio"),
        install=InstallRecipe("pip", ("basedpyright",)),
        root_markers=("pyrightconfig.json", *_PY_ROOTS),
        description="Pyright fork from PyPI; brings its own node.",
    ),
)

_BY_ID = {spec.id: spec for spec in SPECS}


def get(server_id: str) -> ServerSpec | None:
    return _BY_ID.get(server_id)


def all_specs() -> Iterable[ServerSpec]:
    return SPECS
