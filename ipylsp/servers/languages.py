"""File name -> LSP ``languageId``.

Pure data plus one small function: it runs on every observed write, so it does no I/O and no
regex work. Exact file names win over extensions; extensions are matched case-insensitively,
longest compound suffix first (``.d.ts`` before ``.ts``). A file that no row names has no
language id (``None``) and no server serves it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import PurePath

# Exact base names (case-sensitive, as tools treat them).
FILENAMES: Mapping[str, str] = {
    "Dockerfile": "dockerfile",
    "Containerfile": "dockerfile",
    "dockerfile": "dockerfile",
    "Makefile": "makefile",
    "makefile": "makefile",
    "GNUmakefile": "makefile",
    "CMakeLists.txt": "cmake",
    "Gemfile": "ruby",
    "Rakefile": "ruby",
    "Vagrantfile": "ruby",
    "Pipfile": "toml",
    "Cargo.lock": "toml",
    "poetry.lock": "toml",
    "uv.lock": "toml",
    "go.mod": "go.mod",
    "go.sum": "go.sum",
    "go.work": "go.work",
    "tsconfig.json": "jsonc",
    "jsconfig.json": "jsonc",
    ".eslintrc": "jsonc",
    ".eslintrc.json": "jsonc",
    ".babelrc": "jsonc",
    ".swcrc": "jsonc",
    "devcontainer.json": "jsonc",
    ".devcontainer.json": "jsonc",
    ".bashrc": "shellscript",
    ".bash_profile": "shellscript",
    ".bash_login": "shellscript",
    ".bash_logout": "shellscript",
    ".bash_aliases": "shellscript",
    ".profile": "shellscript",
    ".zshrc": "shellscript",
    ".zshenv": "shellscript",
    ".zprofile": "shellscript",
    ".kshrc": "shellscript",
    ".envrc": "shellscript",
    "PKGBUILD": "shellscript",
    "APKBUILD": "shellscript",
    ".clangd": "yaml",
    ".clang-format": "yaml",
    ".clang-tidy": "yaml",
    ".gitlab-ci.yml": "yaml",
    "BUILD": "starlark",
    "BUILD.bazel": "starlark",
    "WORKSPACE": "starlark",
    "WORKSPACE.bazel": "starlark",
    "MODULE.bazel": "starlark",
}

# Extensions without the dot, lower case. Compound ones (containing a dot) are tried first.
EXTENSIONS: Mapping[str, str] = {
    # Python
    "py": "python",
    "pyi": "python",
    "pyw": "python",
    # TypeScript / JavaScript
    "ts": "typescript",
    "mts": "typescript",
    "cts": "typescript",
    "d.ts": "typescript",
    "tsx": "typescriptreact",
    "js": "javascript",
    "mjs": "javascript",
    "cjs": "javascript",
    "jsx": "javascriptreact",
    # C family
    "c": "c",
    "h": "c",
    "cc": "cpp",
    "cpp": "cpp",
    "cxx": "cpp",
    "c++": "cpp",
    "hh": "cpp",
    "hpp": "cpp",
    "hxx": "cpp",
    "h++": "cpp",
    "ipp": "cpp",
    "inl": "cpp",
    "tpp": "cpp",
    "cu": "cuda-cpp",
    "cuh": "cuda-cpp",
    "m": "objective-c",
    "mm": "objective-cpp",
    # Systems and compiled languages
    "go": "go",
    "rs": "rust",
    "zig": "zig",
    "zon": "zig",
    "java": "java",
    "kt": "kotlin",
    "kts": "kotlin",
    "scala": "scala",
    "sc": "scala",
    "cs": "csharp",
    "fs": "fsharp",
    "fsx": "fsharp",
    "swift": "swift",
    "dart": "dart",
    "hs": "haskell",
    "lhs": "haskell",
    "ml": "ocaml",
    "mli": "ocaml.interface",
    "ex": "elixir",
    "exs": "elixir",
    "heex": "phoenix-heex",
    "erl": "erlang",
    "hrl": "erlang",
    "clj": "clojure",
    "cljs": "clojure",
    "cljc": "clojure",
    "edn": "clojure",
    "nim": "nim",
    "jl": "julia",
    "r": "r",
    # Scripting
    "sh": "shellscript",
    "bash": "shellscript",
    "zsh": "shellscript",
    "ksh": "shellscript",
    "bats": "shellscript",
    "command": "shellscript",
    "fish": "fish",
    "ps1": "powershell",
    "psm1": "powershell",
    "lua": "lua",
    "rb": "ruby",
    "rake": "ruby",
    "gemspec": "ruby",
    "php": "php",
    "phtml": "php",
    "pl": "perl",
    "pm": "perl",
    # Data and config
    "json": "json",
    "jsonc": "jsonc",
    "json5": "json5",
    "code-workspace": "jsonc",
    "geojson": "json",
    "webmanifest": "json",
    "yaml": "yaml",
    "yml": "yaml",
    "toml": "toml",
    "xml": "xml",
    "xsd": "xml",
    "xsl": "xml",
    "svg": "xml",
    "ini": "ini",
    "cfg": "ini",
    "properties": "properties",
    "tf": "terraform",
    "tfvars": "terraform-vars",
    "hcl": "hcl",
    "nix": "nix",
    "proto": "proto",
    "graphql": "graphql",
    "gql": "graphql",
    "sql": "sql",
    "dockerfile": "dockerfile",
    "containerfile": "dockerfile",
    "mk": "makefile",
    "cmake": "cmake",
    "bzl": "starlark",
    "star": "starlark",
    # Web
    "html": "html",
    "htm": "html",
    "xhtml": "html",
    "css": "css",
    "scss": "scss",
    "sass": "sass",
    "less": "less",
    "vue": "vue",
    "svelte": "svelte",
    "astro": "astro",
    # Docs
    "md": "markdown",
    "markdown": "markdown",
    "mdx": "mdx",
    "rst": "restructuredtext",
    "tex": "latex",
    "bib": "bibtex",
}

# Compound extensions, longest first, e.g. ("d.ts",).
_COMPOUND = tuple(sorted((e for e in EXTENSIONS if "." in e), key=len, reverse=True))

# Name prefixes/suffixes that mark a family of files (Dockerfile.dev, app.dockerfile, ...).
_PREFIXES: tuple[tuple[str, str], ...] = (
    ("Dockerfile.", "dockerfile"),
    ("Containerfile.", "dockerfile"),
)


def language_id_for_name(name: str) -> str | None:
    """The LSP language id for a base file name, or None."""
    by_name = FILENAMES.get(name)
    if by_name is not None:
        return by_name
    lower = name.lower()
    for suffix in _COMPOUND:
        if lower.endswith("." + suffix) and len(lower) > len(suffix) + 1:
            return EXTENSIONS[suffix]
    dot = lower.rfind(".")
    if dot > 0:  # a leading dot is a hidden file, not an extension (".bashrc" is named above)
        found = EXTENSIONS.get(lower[dot + 1 :])
        if found is not None:
            return found
    for prefix, language in _PREFIXES:
        if name.startswith(prefix):
            return language
    return None


# Interpreters named on a ``#!`` line of a file whose name says nothing (``bin/deploy``).
INTERPRETERS: Mapping[str, str] = {
    "sh": "shellscript",
    "bash": "shellscript",
    "dash": "shellscript",
    "zsh": "shellscript",
    "ksh": "shellscript",
    "python": "python",
    "python3": "python",
    "python2": "python",
    "pypy3": "python",
    "node": "javascript",
    "nodejs": "javascript",
    "deno": "typescript",
    "ts-node": "typescript",
    "tsx": "typescript",
    "bun": "javascript",
    "ruby": "ruby",
    "perl": "perl",
    "php": "php",
    "lua": "lua",
    "fish": "fish",
}


def language_id_for_shebang(first_line: str) -> str | None:
    """The language of a ``#!`` line (``#!/usr/bin/env -S python3 -u`` -> python), or None."""
    if not first_line.startswith("#!"):
        return None
    parts = first_line[2:].split()
    if not parts:
        return None
    program = parts[0].rsplit("/", 1)[-1]
    if program == "env":
        rest = [p for p in parts[1:] if not p.startswith("-") and "=" not in p]
        if not rest:
            return None
        program = rest[0].rsplit("/", 1)[-1]
    found = INTERPRETERS.get(program)
    if found is None:  # python3.12, pypy3.10, ...
        found = INTERPRETERS.get(program.rstrip("0123456789.") or program)
    return found


def language_id(path: str | os.PathLike[str], first_line: str | None = None) -> str | None:
    """The LSP language id of the file at ``path``, by name; the file is not read.

    When the name says nothing and the caller has the text, ``first_line`` lets a ``#!`` line
    decide (``bin/deploy`` starting with ``#!/bin/bash`` is a shell script).
    """
    name = path.name if isinstance(path, PurePath) else os.path.basename(os.fspath(path))
    found = language_id_for_name(name)
    if found is None and first_line:
        return language_id_for_shebang(first_line)
    return found
