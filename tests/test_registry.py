"""The registry rows, file name -> language id, and which servers serve a file."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from ipylsp.model.server_spec import Excludes, InstallRecipe, ServerOverride, ServerSpec
from ipylsp.model.settings import DEFAULT_LANGUAGE_SERVERS, Settings
from ipylsp.servers import languages, registry
from ipylsp.servers.languages import language_id

# ------------------------------------------------------------------------------------ languages


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("app.py", "python"),
        ("stubs.pyi", "python"),
        ("index.ts", "typescript"),
        ("types.d.ts", "typescript"),
        ("mod.mts", "typescript"),
        ("App.tsx", "typescriptreact"),
        ("main.js", "javascript"),
        ("cfg.cjs", "javascript"),
        ("App.jsx", "javascriptreact"),
        ("main.c", "c"),
        ("util.h", "c"),
        ("main.cpp", "cpp"),
        ("main.cc", "cpp"),
        ("vec.hpp", "cpp"),
        ("main.go", "go"),
        ("go.mod", "go.mod"),
        ("lib.rs", "rust"),
        ("run.sh", "shellscript"),
        ("run.bash", "shellscript"),
        (".bashrc", "shellscript"),
        (".zshrc", "shellscript"),
        ("ci.yaml", "yaml"),
        ("ci.yml", "yaml"),
        ("data.json", "json"),
        ("tsconfig.json", "jsonc"),
        ("settings.jsonc", "jsonc"),
        ("page.html", "html"),
        ("site.css", "css"),
        ("site.scss", "scss"),
        ("site.less", "less"),
        ("Dockerfile", "dockerfile"),
        ("Dockerfile.dev", "dockerfile"),
        ("Containerfile", "dockerfile"),
        ("app.dockerfile", "dockerfile"),
        ("Makefile", "makefile"),
        ("CMakeLists.txt", "cmake"),
        ("init.lua", "lua"),
        ("Main.java", "java"),
        ("Main.kt", "kotlin"),
        ("build.gradle.kts", "kotlin"),
        ("Main.hs", "haskell"),
        ("main.zig", "zig"),
        ("main.tf", "terraform"),
        ("main.ml", "ocaml"),
        ("mix.exs", "elixir"),
        ("index.php", "php"),
        ("App.vue", "vue"),
        ("App.svelte", "svelte"),
        ("index.astro", "astro"),
        ("pyproject.toml", "toml"),
        ("README.md", "markdown"),
        ("Gemfile", "ruby"),
        ("MAIN.PY", "python"),  # extensions are case-insensitive
        ("notes.txt", None),
        ("notebook.ipynb", None),
        ("LICENSE", None),
        (".gitignore", None),
        ("", None),
    ],
)
def test_language_id(name: str, expected: str | None) -> None:
    assert language_id(Path("/some/dir") / name if name else Path("/")) == expected
    assert languages.language_id_for_name(name) == expected


def test_language_id_accepts_str_paths() -> None:
    assert language_id("/a/b/Dockerfile") == "dockerfile"
    assert language_id("rel/x.py") == "python"


@pytest.mark.parametrize(
    ("first_line", "expected"),
    [
        ("#!/bin/bash", "shellscript"),
        ("#!/bin/sh -e", "shellscript"),
        ("#!/usr/bin/env bash", "shellscript"),
        ("#!/usr/bin/env python3", "python"),
        ("#!/usr/bin/python3.12", "python"),
        ("#!/usr/bin/env -S python3 -u", "python"),
        ("#!/usr/bin/env -S VAR=1 node", "javascript"),
        ("#!/usr/bin/env deno", "typescript"),
        ("#!/usr/bin/env", None),
        ("#!", None),
        ("#!/usr/bin/awk -f", None),
        ("import os", None),
        ("", None),
    ],
)
def test_shebang_decides_for_names_that_say_nothing(first_line: str, expected: str | None) -> None:
    assert language_id(Path("/w/bin/deploy"), first_line) == expected


def test_the_name_wins_over_the_shebang() -> None:
    assert language_id(Path("/w/tool.py"), "#!/bin/bash") == "python"
    assert language_id(Path("/w/tool.txt"), "#!/bin/bash") == "shellscript"


def test_dockerfile_is_an_exact_name_not_a_suffix() -> None:
    assert language_id(Path("notADockerfile")) is None


# ------------------------------------------------------------------------------------ the rows


def test_at_least_25_rows_with_unique_ids() -> None:
    specs = list(registry.all_specs())
    assert len(specs) >= 25
    ids = [s.id for s in specs]
    assert len(ids) == len(set(ids))
    assert registry.ids() == tuple(ids)


def test_the_original_four_rows_are_unchanged() -> None:
    py_roots = ("pyproject.toml", "setup.py", "setup.cfg", "requirements.txt", "Pipfile", ".git")
    assert registry.get("ty") == ServerSpec(
        id="ty",
        name="ty",
        languages=("python",),
        command=("ty", "server"),
        install=InstallRecipe("pip", ("ty",)),
        root_markers=("ty.toml", *py_roots),
        config_files=("ty.toml", "pyproject.toml:tool.ty"),
        plain={
            "settings": {"ty": {"configuration": {"src": {"exclude": ["**/*/"]}}}},
            "root": "directory",
        },
        description="Astral's type checker (fast).",
        excludes=Excludes((
            ".bzr", ".direnv", ".eggs", ".git", ".git-rewrite", ".hg", ".mypy_cache", ".nox",
            ".pants.d", ".pytype", ".ruff_cache", ".svn", ".tox", ".venv", "__pypackages__",
            "_build", "buck-out", "dist", "node_modules", "venv",
        ), "ty"),
    )
    assert registry.get("ruff") == ServerSpec(
        id="ruff",
        name="Ruff",
        languages=("python",),
        command=("ruff", "server"),
        install=InstallRecipe("pip", ("ruff",)),
        root_markers=("ruff.toml", ".ruff.toml", *py_roots),
        config_files=("ruff.toml", ".ruff.toml", "pyproject.toml:tool.ruff"),
        description="Astral's linter: undefined names, unused imports, syntax.",
        excludes=Excludes((
            ".bzr", ".direnv", ".eggs", ".git", ".git-rewrite", ".hg", ".ipynb_checkpoints",
            ".mypy_cache", ".nox", ".pants.d", ".pyenv", ".pytest_cache", ".pytype",
            ".ruff_cache", ".svn", ".tox", ".venv", ".vscode", "__pypackages__", "_build",
            "buck-out", "dist", "node_modules", "site-packages", "venv",
        ), "ruff"),
    )
    assert registry.get("pyright") == ServerSpec(
        id="pyright",
        name="Pyright",
        languages=("python",),
        command=("pyright-langserver", "--stdio"),
        install=InstallRecipe("npm", ("pyright",), needs=("node", "npm")),
        root_markers=("pyrightconfig.json", *py_roots),
        config_files=("pyrightconfig.json", "pyproject.toml:tool.pyright"),
        plain={"settings": {"python": {"analysis": {"exclude": ["**/*/"]}}}},
        description="Microsoft's type checker (node).",
    )
    assert registry.get("basedpyright") == ServerSpec(
        id="basedpyright",
        name="basedpyright",
        languages=("python",),
        command=("basedpyright-langserver", "--stdio"),
        install=InstallRecipe("pip", ("basedpyright",)),
        root_markers=("pyrightconfig.json", *py_roots),
        config_files=(
            "pyrightconfig.json", "pyproject.toml:tool.basedpyright", "pyproject.toml:tool.pyright"
        ),
        plain={"settings": {"basedpyright": {"analysis": {"exclude": ["**/*/"]}},
                        "python": {"analysis": {"exclude": ["**/*/"]}}}},
        description="Pyright fork from PyPI; brings its own node.",
    )


@pytest.mark.parametrize("spec", list(registry.all_specs()), ids=lambda s: s.id)
def test_every_row_is_complete(spec: ServerSpec) -> None:
    assert spec.id and spec.name and spec.description
    assert spec.languages and spec.command and spec.command[0]
    assert "/" not in spec.command[0], "commands are bare names, resolved by locate"
    recipe = spec.install
    if recipe.kind in ("pip", "npm"):
        assert recipe.packages
    else:
        assert recipe.hint and not recipe.packages
    if recipe.kind == "npm":
        assert recipe.needs == ("node", "npm")
    assert spec.activation in ("default", "manual")


def test_every_language_of_every_row_is_reachable_from_a_file_name() -> None:
    reachable = set(languages.EXTENSIONS.values()) | set(languages.FILENAMES.values())
    for spec in registry.all_specs():
        for lang in spec.languages:
            assert lang in reachable, f"{spec.id}: no file maps to {lang!r}"


@pytest.mark.parametrize(
    ("server_id", "kind", "packages", "command"),
    [
        ("pyrefly", "pip", ("pyrefly",), ("pyrefly", "lsp")),
        ("pylsp", "pip", ("python-lsp-server", "pylsp-mypy"), ("pylsp",)),
        ("jedi-language-server", "pip", ("jedi-language-server",), ("jedi-language-server",)),
        ("typescript", "npm", ("typescript@7",), ("tsc", "--lsp", "--stdio")),
        (
            "typescript-language-server",
            "npm",
            ("typescript-language-server", "typescript@5"),
            ("typescript-language-server", "--stdio"),
        ),
        (
            "bash-language-server",
            "npm",
            ("bash-language-server",),
            ("bash-language-server", "start"),
        ),
        (
            "yaml-language-server",
            "npm",
            ("yaml-language-server@1",),
            ("yaml-language-server", "--stdio"),
        ),
        (
            "vscode-json-language-server",
            "npm",
            ("vscode-langservers-extracted",),
            ("vscode-json-language-server", "--stdio"),
        ),
        (
            "vscode-css-language-server",
            "npm",
            ("vscode-langservers-extracted",),
            ("vscode-css-language-server", "--stdio"),
        ),
        (
            "vscode-html-language-server",
            "npm",
            ("vscode-langservers-extracted",),
            ("vscode-html-language-server", "--stdio"),
        ),
        (
            "dockerfile-language-server",
            "npm",
            ("dockerfile-language-server-nodejs",),
            ("docker-langserver", "--stdio"),
        ),
        ("intelephense", "npm", ("intelephense",), ("intelephense", "--stdio")),
        ("clangd", "apt", (), ("clangd", "--background-index=false", "--sync")),
        ("gopls", "apt", (), ("gopls",)),
        ("rust-analyzer", "path", (), ("rust-analyzer",)),
        ("lua-language-server", "path", (), ("lua-language-server",)),
        ("jdtls", "path", (), ("jdtls",)),
        ("kotlin-language-server", "path", (), ("kotlin-language-server",)),
        ("haskell-language-server", "path", (), ("haskell-language-server-wrapper", "--lsp")),
        ("zls", "path", (), ("zls",)),
        ("terraform-ls", "path", (), ("terraform-ls", "serve")),
        ("ocamllsp", "path", (), ("ocamllsp",)),
        ("elixir-ls", "path", (), ("elixir-ls",)),
        ("vue-language-server", "path", (), ("vue-language-server", "--stdio")),
        ("svelte-language-server", "path", (), ("svelteserver", "--stdio")),
        ("astro-ls", "path", (), ("astro-ls", "--stdio")),
        ("taplo", "path", (), ("taplo", "lsp", "stdio")),
        ("marksman", "path", (), ("marksman", "server")),
    ],
)
def test_row_recipes_and_commands(
    server_id: str, kind: str, packages: tuple[str, ...], command: tuple[str, ...]
) -> None:
    spec = registry.get(server_id)
    assert spec is not None
    assert spec.install.kind == kind
    assert spec.install.packages == packages
    assert spec.command == command


def test_apt_rows_carry_the_apt_command() -> None:
    clangd, gopls = registry.get("clangd"), registry.get("gopls")
    assert clangd is not None and gopls is not None
    assert clangd.install.hint == "apt-get install clangd"
    assert gopls.install.hint == "apt-get install golang-go gopls"


def test_settings_that_make_servers_report() -> None:
    def settings(server_id: str) -> object:
        spec = registry.get(server_id)
        assert spec is not None
        return spec.settings

    assert settings("pyrefly") == {"python": {"pyrefly": {"displayTypeErrors": "force-on"}}}
    assert settings("vscode-css-language-server") == {
        "css": {"validate": True},
        "scss": {"validate": True},
        "less": {"validate": True},
    }
    html = settings("vscode-html-language-server")
    assert isinstance(html, dict)
    assert html["css"] == {"validate": True}
    assert html["javascript"] == {"validate": {"enable": True}}
    assert settings("vscode-json-language-server") == {"json": {"validate": {"enable": True}}}


def test_root_markers() -> None:
    def markers(server_id: str) -> tuple[str, ...]:
        spec = registry.get(server_id)
        assert spec is not None
        return spec.root_markers

    assert "go.mod" in markers("gopls")
    assert "Cargo.toml" in markers("rust-analyzer")
    assert {"package.json", "tsconfig.json"} <= set(markers("typescript"))
    assert "compile_commands.json" in markers("clangd")
    assert "*.cabal" in markers("haskell-language-server")


def test_manual_rows_duplicate_a_default_role() -> None:
    manual = {s.id for s in registry.all_specs() if s.activation == "manual"}
    assert {"pylsp", "jedi-language-server", "pyrefly", "typescript-language-server"} <= manual
    assert "typescript" not in manual


def test_specs_for_language() -> None:
    assert [s.id for s in registry.specs_for_language("css")] == ["vscode-css-language-server"]
    assert {s.id for s in registry.specs_for_language("typescript")} == {
        "typescript",
        "typescript-language-server",
    }
    assert registry.specs_for_language("cobol") == ()


def test_install_hint() -> None:
    ty, clangd, zls = registry.get("ty"), registry.get("clangd"), registry.get("zls")
    ruff, pyright = registry.get("ruff"), registry.get("basedpyright")
    assert ty and clangd and zls and ruff and pyright
    # the embedded default: the extra that brings both, before a private install
    assert registry.install_hint(ty) == registry.install_hint(ruff) == (
        "pip install 'ipylsp[python]'  # ty + ruff, the default (or: ipylsp install ty ruff)"
    )
    assert registry.install_hint(pyright) == (
        "ipylsp install basedpyright  # pip install basedpyright into ipylsp's data dir"
    )
    assert registry.install_hint(clangd) == "apt-get install clangd"
    assert registry.install_hint(zls) == zls.install.hint


# ------------------------------------------------------------------------------------ servers_for


def _installed(*ids: str) -> Callable[[ServerSpec], bool]:
    return lambda spec: spec.id in ids


def _ids(specs: list[ServerSpec]) -> list[str]:
    return [s.id for s in specs]


def test_python_default_roles_pick_the_first_installed_alternative() -> None:
    settings = Settings()
    assert settings.language_servers["python"] == DEFAULT_LANGUAGE_SERVERS["python"]
    path = Path("/w/app.py")
    assert _ids(registry.servers_for(path, settings, _installed("ty", "ruff"))) == ["ty", "ruff"]
    assert _ids(registry.servers_for(path, settings, _installed("pyright", "ty", "ruff"))) == [
        "ty",
        "ruff",
    ]
    assert _ids(registry.servers_for(path, settings, _installed("pyright", "ruff"))) == [
        "pyright",
        "ruff",
    ]
    assert _ids(
        registry.servers_for(path, settings, _installed("basedpyright", "pyright", "ruff"))
    ) == ["basedpyright", "ruff"]


def test_a_role_with_nothing_installed_yields_its_first_alternative() -> None:
    specs = registry.servers_for(Path("/w/app.py"), Settings(), _installed())
    assert _ids(specs) == ["ty", "ruff"]  # the missing-server hint names the embedded default


def test_is_installed_is_asked_about_specs_with_overrides_applied() -> None:
    seen: list[tuple[str, tuple[str, ...]]] = []

    def installed(spec: ServerSpec) -> bool:
        seen.append((spec.id, spec.command))
        return spec.id == "ty"

    settings = Settings(servers={"ty": ServerOverride(command=("/opt/ty", "server"))})
    specs = registry.servers_for(Path("/w/app.py"), settings, installed)
    assert _ids(specs) == ["ty", "ruff"]
    assert specs[0].command == ("/opt/ty", "server")
    assert ("ty", ("/opt/ty", "server")) in seen


def test_disabled_removes_a_server_and_its_alternative_takes_over() -> None:
    settings = Settings(
        servers={
            "basedpyright": ServerOverride(disabled=True),
            "ruff": ServerOverride(disabled=True),
        }
    )
    specs = registry.servers_for(Path("/w/a.py"), settings, _installed("basedpyright", "ty"))
    assert _ids(specs) == ["ty"]


def test_a_role_whose_alternatives_are_all_disabled_yields_nothing() -> None:
    settings = Settings(
        language_servers={"python": ("ty", "ruff")},
        servers={"ty": ServerOverride(disabled=True)},
    )
    assert _ids(registry.servers_for(Path("/w/a.py"), settings, _installed("ty"))) == ["ruff"]


def test_overrides_apply_to_the_chosen_specs() -> None:
    settings = Settings(
        servers={
            "ruff": ServerOverride(
                env={"RUFF_X": "1"},
                settings={"lint": {"select": ["F"]}},
                initialization_options={"x": 1},
            )
        }
    )
    specs = registry.servers_for(Path("/w/a.py"), settings, _installed("ty", "ruff"))
    ruff = specs[1]
    assert ruff.id == "ruff"
    assert ruff.env == {"RUFF_X": "1"}
    assert ruff.settings == {"lint": {"select": ["F"]}}
    assert ruff.initialization_options == {"x": 1}


def test_user_roles_can_enable_manual_servers_and_skip_unknown_ids() -> None:
    settings = Settings(
        language_servers={"python": ("pyrefly", "nope|jedi-language-server", "pyrefly")}
    )
    specs = registry.servers_for(Path("/w/a.py"), settings, _installed())
    assert _ids(specs) == ["pyrefly", "jedi-language-server"]
    assert specs[0].settings == {"python": {"pyrefly": {"displayTypeErrors": "force-on"}}}


def test_an_empty_role_list_turns_a_language_off() -> None:
    settings = Settings(language_servers={"python": (), "typescript": ()})
    assert registry.servers_for(Path("/w/a.py"), settings, _installed("ty")) == []
    assert registry.servers_for(Path("/w/a.ts"), settings, _installed("typescript")) == []


def test_a_mapping_without_python_keeps_pythons_default_roles() -> None:
    settings = Settings(language_servers={"typescript": ("typescript",)})
    specs = registry.servers_for(Path("/w/a.py"), settings, _installed("pyright", "ruff"))
    assert _ids(specs) == ["pyright", "ruff"]


def test_user_roles_for_other_languages() -> None:
    settings = Settings(language_servers={"typescript": ("typescript-language-server|typescript",)})
    ts = registry.servers_for(Path("/w/a.ts"), settings, _installed("typescript"))
    assert _ids(ts) == ["typescript"]
    # javascript has no entry: default-activation rows
    js = registry.servers_for(Path("/w/a.js"), settings, _installed())
    assert _ids(js) == ["typescript"]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("a.ts", ["typescript"]),
        ("a.tsx", ["typescript"]),
        ("a.c", ["clangd"]),
        ("a.cpp", ["clangd"]),
        ("main.go", ["gopls"]),
        ("run.sh", ["bash-language-server"]),
        (".bashrc", ["bash-language-server"]),
        ("ci.yml", ["yaml-language-server"]),
        ("data.json", ["vscode-json-language-server"]),
        ("tsconfig.json", ["vscode-json-language-server"]),
        ("site.scss", ["vscode-css-language-server"]),
        ("index.html", ["vscode-html-language-server"]),
        ("Dockerfile", ["dockerfile-language-server"]),
        ("lib.rs", ["rust-analyzer"]),
        ("pyproject.toml", ["taplo"]),
        ("README.md", []),  # marksman is opt-in
        ("notes.txt", []),
        ("Makefile", []),
    ],
)
def test_other_languages_get_their_default_rows(name: str, expected: list[str]) -> None:
    assert _ids(registry.servers_for(Path("/w") / name, Settings(), _installed())) == expected


def test_disabled_applies_to_default_rows_too() -> None:
    settings = Settings(servers={"typescript": ServerOverride(disabled=True)})
    assert registry.servers_for(Path("/w/a.ts"), settings, _installed("typescript")) == []


def test_servers_for_accepts_str_paths() -> None:
    assert _ids(registry.servers_for("/w/a.go", Settings(), _installed())) == ["gopls"]
