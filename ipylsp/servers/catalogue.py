"""The rows of the registry: every language server ipylsp knows, as data.

Settings below are what each server needs to actually report (measured with the raw client
``benchmarks/lsp_client.py``): they are answered to
``workspace/configuration`` by section (``{"css": {"validate": true}}`` answers section ``css``).
Adding a server is adding a row here; `registry` holds the functions that read them.
"""

from __future__ import annotations

from ipylsp.model.server_spec import Excludes, InstallRecipe, ServerSpec

_PY_ROOTS = ("pyproject.toml", "setup.py", "setup.cfg", "requirements.txt", "Pipfile", ".git")
_JS_ROOTS = ("tsconfig.json", "jsconfig.json", "package.json")
_SUBDIRECTORIES = ["**/*/"]
"""Every directory below a plain root (a notebook in the home directory): not discovered as
the project's files. pyright and basedpyright still check a file opened there; ty checks no
file its exclusion covers, opened or not (0.0.105), so it is rooted at each file's own
directory instead (`"root": "directory"`)."""
_NO_DISCOVERY = {"analysis": {"exclude": _SUBDIRECTORIES}}
_JS_CONFIG = ("tsconfig.json", "jsconfig.json")
_NODE = ("node", "npm")

_JS_LANGUAGES = ("typescript", "typescriptreact", "javascript", "javascriptreact")

# The directories each server skips by default, even a file it is given there (its answer is
# nothing at all): the installed versions' defaults, each one verified with the server
# (tests/test_excluded.py). pyright and basedpyright check every file they are given.
_RUFF_EXCLUDED = (  # ruff 0.17.6, `ruff check --show-settings`: file_resolver.exclude
    ".bzr", ".direnv", ".eggs", ".git", ".git-rewrite", ".hg", ".ipynb_checkpoints",
    ".mypy_cache", ".nox", ".pants.d", ".pyenv", ".pytest_cache", ".pytype", ".ruff_cache",
    ".svn", ".tox", ".venv", ".vscode", "__pypackages__", "_build", "buck-out", "dist",
    "node_modules", "site-packages", "venv",
)
_TY_EXCLUDED = (  # ty 0.0.105, src.exclude's defaults (`**/<name>/`): not build/
    ".bzr", ".direnv", ".eggs", ".git", ".git-rewrite", ".hg", ".mypy_cache", ".nox",
    ".pants.d", ".pytype", ".ruff_cache", ".svn", ".tox", ".venv", "__pypackages__", "_build",
    "buck-out", "dist", "node_modules", "venv",
)
_PYREFLY_EXCLUDED = ("node_modules", "__pycache__", "venv")
"""pyrefly 1.4.1's project-excludes heuristics: no type errors there (its unused-import hints
only), anywhere in the absolute path."""


def _npm(*packages: str) -> InstallRecipe:
    return InstallRecipe("npm", packages, needs=_NODE)


def _path(hint: str) -> InstallRecipe:
    return InstallRecipe("path", hint=hint)


def _apt(hint: str) -> InstallRecipe:
    return InstallRecipe("apt", hint=hint)


SPECS: tuple[ServerSpec, ...] = (
    # ---------------------------------------------------------------- Python
    ServerSpec(
        id="ty",
        name="ty",
        languages=("python",),
        command=("ty", "server"),
        install=InstallRecipe("pip", ("ty",)),
        root_markers=("ty.toml", *_PY_ROOTS),
        config_files=("ty.toml", "pyproject.toml:tool.ty"),
        # In section ty, beside `python_env`'s environment: an initialization option
        # `configuration` would replace the section's (0.0.105). Below the plain directory:
        # rooted at the file's own directory, its imports resolved from the plain directory
        # (`python_env.first_party_root`), as at the top.
        plain={
            "settings": {"ty": {"configuration": {"src": {"exclude": _SUBDIRECTORIES}}}},
            "root": "directory",
        },
        description="Astral's type checker (fast).",
        excludes=Excludes(_TY_EXCLUDED, "ty"),
    ),
    ServerSpec(
        id="ruff",
        name="Ruff",
        languages=("python",),
        command=("ruff", "server"),
        install=InstallRecipe("pip", ("ruff",)),
        root_markers=("ruff.toml", ".ruff.toml", *_PY_ROOTS),
        config_files=("ruff.toml", ".ruff.toml", "pyproject.toml:tool.ruff"),
        description="Astral's linter: undefined names, unused imports, syntax.",
        excludes=Excludes(_RUFF_EXCLUDED, "ruff"),
    ),
    ServerSpec(
        id="pyright",
        name="Pyright",
        languages=("python",),
        command=("pyright-langserver", "--stdio"),
        install=InstallRecipe("npm", ("pyright",), needs=("node", "npm")),
        root_markers=("pyrightconfig.json", *_PY_ROOTS),
        config_files=("pyrightconfig.json", "pyproject.toml:tool.pyright"),
        plain={"settings": {"python": _NO_DISCOVERY}},
        description="Microsoft's type checker (node).",
    ),
    ServerSpec(
        id="basedpyright",
        name="basedpyright",
        languages=("python",),
        command=("basedpyright-langserver", "--stdio"),
        install=InstallRecipe("pip", ("basedpyright",)),
        root_markers=("pyrightconfig.json", *_PY_ROOTS),
        config_files=(
            "pyrightconfig.json", "pyproject.toml:tool.basedpyright", "pyproject.toml:tool.pyright"
        ),
        plain={"settings": {"basedpyright": _NO_DISCOVERY, "python": _NO_DISCOVERY}},
        description="Pyright fork from PyPI; brings its own node.",
    ),
    ServerSpec(
        id="pyrefly",
        name="Pyrefly",
        languages=("python",),
        command=("pyrefly", "lsp"),
        install=InstallRecipe("pip", ("pyrefly",)),
        root_markers=("pyrefly.toml", *_PY_ROOTS),
        config_files=("pyrefly.toml", "pyproject.toml:tool.pyrefly"),
        # Without a pyrefly.toml (or this setting) pyrefly publishes no type errors at all.
        settings={"python": {"pyrefly": {"displayTypeErrors": "force-on"}}},
        activation="manual",
        description="Meta's type checker (Rust); push diagnostics.",
        excludes=Excludes(_PYREFLY_EXCLUDED, "pyrefly", above_root=True),
    ),
    ServerSpec(
        id="pylsp",
        name="python-lsp-server",
        languages=("python",),
        command=("pylsp",),
        # Plain python-lsp-server has no linters and publishes []: mypy is the checker here.
        install=InstallRecipe("pip", ("python-lsp-server", "pylsp-mypy")),
        root_markers=("mypy.ini", ".mypy.ini", *_PY_ROOTS),
        config_files=(
            "mypy.ini", ".mypy.ini", "setup.cfg:mypy", "pyproject.toml:tool.mypy",
            "setup.cfg:pycodestyle", "setup.cfg:flake8", "tox.ini:pycodestyle", "tox.ini:flake8",
        ),
        settings={"pylsp": {"plugins": {"pylsp_mypy": {"enabled": True, "live_mode": True}}}},
        activation="manual",
        description="python-lsp-server with pylsp-mypy (writes .mypy_cache).",
    ),
    ServerSpec(
        id="jedi-language-server",
        name="jedi-language-server",
        languages=("python",),
        command=("jedi-language-server",),
        install=InstallRecipe("pip", ("jedi-language-server",)),
        root_markers=_PY_ROOTS,
        activation="manual",
        description="Jedi: completion and navigation; reports syntax errors only.",
    ),
    # ---------------------------------------------------------------- TypeScript / JavaScript
    ServerSpec(
        id="typescript",
        name="TypeScript (tsc --lsp)",
        languages=_JS_LANGUAGES,
        command=("tsc", "--lsp", "--stdio"),
        install=_npm("typescript@7"),
        root_markers=_JS_ROOTS,
        config_files=_JS_CONFIG,
        description="TypeScript 7's native language server; pull diagnostics only.",
    ),
    ServerSpec(
        id="typescript-language-server",
        name="typescript-language-server",
        languages=_JS_LANGUAGES,
        command=("typescript-language-server", "--stdio"),
        # Fails with TypeScript 7 ("Could not find a valid TypeScript installation").
        install=_npm("typescript-language-server", "typescript@5"),
        root_markers=_JS_ROOTS,
        config_files=_JS_CONFIG,
        activation="manual",
        description="tsserver (TypeScript 5) behind LSP; push diagnostics.",
    ),
    # ---------------------------------------------------------------- C / C++, Go
    ServerSpec(
        id="clangd",
        name="clangd",
        languages=("c", "cpp", "objective-c", "objective-cpp", "cuda-cpp"),
        # No background index: it would write .cache/clangd into the user's project.
        # --sync: each message is handled to the end before the next, so a version's
        # diagnostics are published once, from a preamble checked against the disk. Without
        # it clangd 19 first publishes a version from the stale preamble (a header changed on
        # disk, a caller's old answer), then again once the preamble is rebuilt: ipylsp takes
        # a version's push as its answer, so it reported broken callers clean, missed their
        # fixes and took a caller updated with its header for broken (clangd 14 waits for the
        # preamble). Costs clangd's own parallelism: benchmarks/README.md.
        command=("clangd", "--background-index=false", "--sync"),
        install=_apt("apt-get install clangd"),
        root_markers=(".clangd", "compile_commands.json", "compile_flags.txt"),
        config_files=(
            ".clangd", "compile_flags.txt", "compile_commands.json", "build/compile_commands.json"
        ),
        description="LLVM's C/C++ server; best with compile_commands.json.",
    ),
    ServerSpec(
        id="gopls",
        name="gopls",
        languages=("go", "go.mod", "go.sum", "go.work"),
        command=("gopls",),
        install=_apt("apt-get install golang-go gopls"),
        root_markers=("go.work", "go.mod"),
        config_files=("go.work", "go.mod"),
        # Its first diagnosis of the workspace reads the disk and is published without a
        # version, also for a document just opened with another text (issue 32).
        versioned_push=True,
        description="The Go team's server; spawns `go`.",
    ),
    # ---------------------------------------------------------------- shell, config, web
    ServerSpec(
        id="bash-language-server",
        name="bash-language-server",
        languages=("shellscript",),
        command=("bash-language-server", "start"),
        install=InstallRecipe(
            "npm",
            ("bash-language-server",),
            hint="diagnostics come from shellcheck: apt-get install shellcheck",
            needs=_NODE,
        ),
        config_files=(".shellcheckrc",),
        description="Bash; diagnostics from shellcheck (nothing without it).",
    ),
    ServerSpec(
        id="yaml-language-server",
        name="yaml-language-server",
        languages=("yaml",),
        command=("yaml-language-server", "--stdio"),
        install=_npm("yaml-language-server@1"),  # 2.x needs node >= 22
        settings={"yaml": {"validate": True}},
        description="Red Hat's YAML server: syntax, and schemas from SchemaStore.",
    ),
    ServerSpec(
        id="vscode-json-language-server",
        name="vscode-json-language-server",
        languages=("json", "jsonc"),
        command=("vscode-json-language-server", "--stdio"),
        install=_npm("vscode-langservers-extracted"),
        root_markers=("package.json",),
        settings={"json": {"validate": {"enable": True}}},
        initialization_options={"provideFormatter": True},
        description="VS Code's JSON server; pull diagnostics.",
    ),
    ServerSpec(
        id="vscode-css-language-server",
        name="vscode-css-language-server",
        languages=("css", "scss", "less"),
        command=("vscode-css-language-server", "--stdio"),
        install=_npm("vscode-langservers-extracted"),
        root_markers=("package.json",),
        # Validates nothing unless workspace/configuration says so, per language section.
        settings={
            "css": {"validate": True},
            "scss": {"validate": True},
            "less": {"validate": True},
        },
        initialization_options={"provideFormatter": True},
        description="VS Code's CSS/SCSS/Less server; pull diagnostics.",
    ),
    ServerSpec(
        id="vscode-html-language-server",
        name="vscode-html-language-server",
        languages=("html",),
        command=("vscode-html-language-server", "--stdio"),
        install=_npm("vscode-langservers-extracted"),
        root_markers=("package.json",),
        # Embedded <script>/<style> are checked only when the css/javascript sections say so.
        settings={
            "html": {"validate": {"scripts": True, "styles": True}},
            "css": {"validate": True},
            "javascript": {"validate": {"enable": True}},
        },
        initialization_options={
            "provideFormatter": True,
            "embeddedLanguages": {"css": True, "javascript": True},
        },
        description="VS Code's HTML server (embedded CSS/JS); pull diagnostics.",
    ),
    ServerSpec(
        id="dockerfile-language-server",
        name="dockerfile-language-server",
        languages=("dockerfile",),
        command=("docker-langserver", "--stdio"),
        install=_npm("dockerfile-language-server-nodejs"),
        description="Dockerfile instructions and arguments.",
    ),
    ServerSpec(
        id="intelephense",
        name="Intelephense",
        languages=("php",),
        command=("intelephense", "--stdio"),
        install=_npm("intelephense"),
        root_markers=("composer.json",),
        description="PHP (free tier).",
    ),
    # ---------------------------------------------------------------- PATH-only servers
    ServerSpec(
        id="rust-analyzer",
        name="rust-analyzer",
        languages=("rust",),
        command=("rust-analyzer",),
        install=_path("rustup component add rust-analyzer (a rustup proxy alone does not run)"),
        root_markers=("Cargo.toml", "rust-project.json"),
        config_files=("Cargo.toml", "rust-project.json"),
        description="Rust.",
    ),
    ServerSpec(
        id="lua-language-server",
        name="lua-language-server",
        languages=("lua",),
        command=("lua-language-server",),
        install=_path(
            "download a release from github.com/LuaLS/lua-language-server and put "
            "lua-language-server on PATH"
        ),
        root_markers=(".luarc.json", ".luarc.jsonc", ".luacheckrc", ".stylua.toml"),
        config_files=(".luarc.json", ".luarc.jsonc", ".luacheckrc"),
        description="Lua (LuaLS).",
    ),
    ServerSpec(
        id="jdtls",
        name="Eclipse JDT LS",
        languages=("java",),
        command=("jdtls",),
        install=_path("install eclipse.jdt.ls (e.g. brew install jdtls) and put jdtls on PATH"),
        root_markers=(
            "pom.xml",
            "build.gradle",
            "build.gradle.kts",
            "settings.gradle",
            "settings.gradle.kts",
            ".project",
        ),
        description="Java.",
    ),
    ServerSpec(
        id="kotlin-language-server",
        name="kotlin-language-server",
        languages=("kotlin",),
        command=("kotlin-language-server",),
        install=_path(
            "download kotlin-language-server from github.com/fwcd/kotlin-language-server "
            "and put its bin/ on PATH"
        ),
        root_markers=(
            "settings.gradle",
            "settings.gradle.kts",
            "build.gradle.kts",
            "build.gradle",
            "pom.xml",
        ),
        description="Kotlin.",
    ),
    ServerSpec(
        id="haskell-language-server",
        name="haskell-language-server",
        languages=("haskell",),
        command=("haskell-language-server-wrapper", "--lsp"),
        install=_path("ghcup install hls"),
        root_markers=("hie.yaml", "cabal.project", "stack.yaml", "package.yaml", "*.cabal"),
        description="Haskell (HLS via its wrapper).",
    ),
    ServerSpec(
        id="zls",
        name="zls",
        languages=("zig",),
        command=("zls",),
        install=_path("install zls matching your zig version (ziglang.org) and put it on PATH"),
        root_markers=("build.zig", "zls.json"),
        description="Zig.",
    ),
    ServerSpec(
        id="terraform-ls",
        name="terraform-ls",
        languages=("terraform", "terraform-vars"),
        command=("terraform-ls", "serve"),
        install=_path("install terraform-ls from releases.hashicorp.com and put it on PATH"),
        root_markers=(".terraform", ".terraform.lock.hcl"),
        description="Terraform (HashiCorp).",
    ),
    ServerSpec(
        id="ocamllsp",
        name="ocaml-lsp",
        languages=("ocaml", "ocaml.interface"),
        command=("ocamllsp",),
        install=_path("opam install ocaml-lsp-server"),
        root_markers=("dune-project", "dune-workspace", "*.opam", "esy.json"),
        description="OCaml.",
    ),
    ServerSpec(
        id="elixir-ls",
        name="ElixirLS",
        languages=("elixir", "phoenix-heex"),
        command=("elixir-ls",),
        install=_path(
            "download an ElixirLS release (github.com/elixir-lsp/elixir-ls) and put its "
            "language_server.sh on PATH as elixir-ls"
        ),
        root_markers=("mix.exs",),
        description="Elixir.",
    ),
    ServerSpec(
        id="vue-language-server",
        name="Vue language server",
        languages=("vue",),
        command=("vue-language-server", "--stdio"),
        install=_path(
            "npm install -g @vue/language-server typescript; set initialization_options "
            '{"typescript": {"tsdk": "<node_modules>/typescript/lib"}}'
        ),
        root_markers=("package.json",),
        description="Vue (Volar).",
    ),
    ServerSpec(
        id="svelte-language-server",
        name="Svelte language server",
        languages=("svelte",),
        command=("svelteserver", "--stdio"),
        install=_path("npm install -g svelte-language-server"),
        root_markers=("svelte.config.js", "svelte.config.mjs", "package.json"),
        description="Svelte.",
    ),
    ServerSpec(
        id="astro-ls",
        name="Astro language server",
        languages=("astro",),
        command=("astro-ls", "--stdio"),
        install=_path(
            "npm install -g @astrojs/language-server typescript; set initialization_options "
            '{"typescript": {"tsdk": "<node_modules>/typescript/lib"}}'
        ),
        root_markers=("astro.config.mjs", "astro.config.ts", "package.json"),
        description="Astro.",
    ),
    ServerSpec(
        id="taplo",
        name="Taplo",
        languages=("toml",),
        command=("taplo", "lsp", "stdio"),
        install=_path("cargo install taplo-cli --locked --features lsp"),
        root_markers=(".taplo.toml", "taplo.toml"),
        description="TOML syntax and schemas.",
    ),
    ServerSpec(
        id="marksman",
        name="Marksman",
        languages=("markdown",),
        command=("marksman", "server"),
        install=_path("download marksman from github.com/artempyanykh/marksman onto PATH"),
        root_markers=(".marksman.toml",),
        # Markdown is written often and marksman only checks links: opt-in.
        activation="manual",
        description="Markdown links and references.",
    ),
    ServerSpec(
        id="ruby-lsp",
        name="Ruby LSP",
        languages=("ruby",),
        command=("ruby-lsp",),
        install=_path("gem install ruby-lsp"),
        root_markers=("Gemfile", ".ruby-version"),
        description="Ruby (Shopify).",
    ),
)
