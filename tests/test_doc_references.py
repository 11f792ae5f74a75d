"""Docs that cannot drift (issue 29): every backticked reference to the code in
`ARCHITECTURE.md`, `docs/` and ipylsp's docstrings names something that exists.

What counts as a reference, and how it resolves:
- a path (`service/answers.py`, `lsp/requests/`, `writer.py`): a file or directory of the
  checkout whose path ends with it;
- a dotted name of ours (`roots.workspace_gate`, `ipylsp.store.db.connect`,
  `ServerSpec.plain`, `report.merge.SAME_PROBLEM`): its first part a module, package or class
  of ipylsp, or its last part a name defined at the top level of one of ipylsp's modules
  (a renamed module leaves such a reference behind); followed without importing anything:
  a submodule, a top-level name (to the module it was imported from), a class's attribute
  (a method, a field, an attribute its methods set; `IPyLSP`'s traits: the knobs of
  `Settings`);
- a bare CamelCase name (`KnownFiles`): defined in ipylsp, or a name its code uses (an
  imported class, such as IPython's `TransformerManager`).
Backticked words that are none of these (JSON fields, settings, shell words) are not checked.
`NOT_CODE` lists the few backticked things that look like references and are not: files and
directories of a user's machine, fields of a local value.
"""

from __future__ import annotations

import ast
import builtins
import functools
import importlib.util
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

NOT_CODE = frozenset({
    "run/", "build/",  # <data_dir>/run/, a C project's build/ (compile_commands.json)
    "dist/",  # a project's directory that ruff and ty skip (servers/exclusions.py)
    "gen_2.py", "gen_10.py",  # file names in an example of natural sorting
    "ipylsp_config.py", "ipython_config.py", "jupyter_server_config.py",  # the user's config
    "summary.errors", "summary.warnings",  # fields of the report's JSON
    "data.cached", "data.source",  # fields of an agent tool's answer
    "result.message", "result.server_id", "result.unknown",  # a local value's fields
    "TextContent", "CachingCompiler",  # the MCP SDK's and IPython's, named in prose
})

TOKEN = re.compile(r"(?<![`\w])`([^`\s]+)`(?![`\w])")
PATH = re.compile(r"([a-z0-9_.-]+/)+([a-z0-9_.-]+\.(py|md|ts|tsx|json|sh|toml))?"
                  r"|[a-z0-9_]+\.(py|md|ts)")
DOTTED = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+")
FILE_NAME = re.compile(r".*\.(json|jsonc|toml|sqlite3|yaml|yml|cfg|ini|txt|lock|ts|md|py)")
"""A dotted word that is a file's name (`tsconfig.json`): a user's file, not code."""
CAMEL = re.compile(r"[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*")


class Module:
    """What a module of ipylsp defines, read without importing it: its top-level names (imports
    included: a re-export is a name too), each class's attributes, and where imports come from."""

    def __init__(self, tree: ast.Module) -> None:
        self.names: set[str] = set(_defined(tree.body))
        self.classes: dict[str, set[str]] = {}
        self.imported: dict[str, tuple[str, str]] = {}
        """A name imported from one of ipylsp's modules -> (that module, its name there)."""
        for node in tree.body:
            if isinstance(node, ast.Import | ast.ImportFrom):
                for alias in node.names:
                    name = alias.asname or alias.name.split(".")[0]
                    self.names.add(name)
                    if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                            "ipylsp"):
                        self.imported[name] = (node.module or "", alias.name)
            elif isinstance(node, ast.If):  # TYPE_CHECKING imports, version branches
                self.names.update(_defined(node.body))
        for cls in ast.walk(tree):
            if isinstance(cls, ast.ClassDef):
                attributes = self.classes.setdefault(cls.name, set())
                attributes.update(_defined(cls.body))
                for inner in ast.walk(cls):
                    if isinstance(inner, ast.Attribute) and isinstance(
                            inner.value, ast.Name) and inner.value.id == "self" and isinstance(
                            inner.ctx, ast.Store):
                        attributes.add(inner.attr)


class Checkout:
    """The checkout's files, ipylsp's modules, and the names its code defines and uses."""

    def __init__(self, root: Path) -> None:
        listed = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=root,
            capture_output=True, text=True, check=True,
        ).stdout.split()
        self.root = root
        self.files = [f for f in listed if (root / f).is_file()]
        self.dirs = {str(parent) for f in self.files for parent in Path(f).parents
                     if str(parent) != "."}
        self.modules: dict[str, Module] = {}
        self.sources: dict[str, str] = {}
        """A module's file."""
        self.used: set[str] = set()
        for file in self.files:
            if not (file.startswith("ipylsp/") and file.endswith(".py")):
                continue
            name = file[: -len("/__init__.py")] if file.endswith("/__init__.py") else file[:-3]
            tree = ast.parse((root / file).read_text(encoding="utf-8"))
            self.modules[name.replace("/", ".")] = Module(tree)
            self.sources[name.replace("/", ".")] = file
            for node in ast.walk(tree):
                if isinstance(node, ast.Name):
                    self.used.add(node.id)
                elif isinstance(node, ast.Attribute):
                    self.used.add(node.attr)
                elif isinstance(node, ast.alias):
                    self.used.add(node.asname or node.name.rsplit(".", 1)[-1])
        config = self.modules.get("ipylsp.config")
        if config is not None and "IPyLSP" in config.classes:  # its traits are made of these
            settings = ast.parse((root / "ipylsp/model/settings.py").read_text(encoding="utf-8"))
            config.classes["IPyLSP"].update(_knobs(settings))
        self.module_names = {m.rsplit(".", 1)[-1] for m in self.modules}
        self.classes = {c for m in self.modules.values() for c in m.classes}
        self.top_level = {n for m in self.modules.values() for n in _defined_names(m)}

    def broken(self, text: str) -> list[str]:
        """The references in `text` that name nothing."""
        found = []
        for token in TOKEN.findall(text):
            token = token.removesuffix("()")
            if token in NOT_CODE:
                continue
            if PATH.fullmatch(token):
                ok = self._path(token)
            elif FILE_NAME.fullmatch(token):
                continue
            elif DOTTED.fullmatch(token):
                ok = self._dotted(token)
            elif CAMEL.fullmatch(token):
                ok = (token in self.classes or token in self.top_level or token in self.used
                      or hasattr(builtins, token))
            else:
                continue
            if not ok:
                found.append(token)
        return found

    def _path(self, token: str) -> bool:
        bare = token.rstrip("/")
        known = self.dirs if token.endswith("/") else set(self.files)
        return any(p == bare or p.endswith("/" + bare) for p in known)

    def _dotted(self, token: str) -> bool:
        parts = token.split(".")
        first = parts[0]
        ours = (first in self.module_names or first in self.classes
                or parts[-1] in self.top_level)
        if not ours or (first not in self.module_names and _importable(first)):
            return True  # not a reference to ipylsp (a field, os.replace, lsprotocol.types)
        for cut in range(len(parts), 0, -1):
            prefix = ".".join(parts[:cut])
            for module in self.modules:
                if (module == prefix or module.endswith("." + prefix)) and self._follow(
                        module, parts[cut:]):
                    return True
        return any(first in _defined_names(m) and self._follow(name, parts)
                   for name, m in self.modules.items())

    def _follow(self, module: str, names: list[str]) -> bool:
        """`names` one after the other from `module`: a submodule, a top-level name (followed
        to where it was imported from), then a class's attribute; past that, anything."""
        if not names:
            return True
        first, rest = names[0], names[1:]
        if f"{module}.{first}" in self.modules:
            return self._follow(f"{module}.{first}", rest)
        defined = self.modules[module]
        if first not in defined.names:
            return False
        if first in defined.imported:
            source, original = defined.imported[first]
            if source in self.modules and source != module:
                return self._follow(source, [original, *rest])
        if first in defined.classes and rest:
            return rest[0] in defined.classes[first]
        return True


def _defined(body: list[ast.stmt]) -> Iterator[str]:
    for node in body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            yield node.name
        elif isinstance(node, ast.Assign):
            yield from (t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            yield node.target.id


def _knobs(tree: ast.Module) -> Iterator[str]:
    """The knobs `Settings` declares: its fields with `metadata=knob(...)`, by the knob's
    `name` where it gives one."""
    for cls in tree.body:
        if not (isinstance(cls, ast.ClassDef) and cls.name == "Settings"):
            continue
        for node in cls.body:
            if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
                    and isinstance(node.value, ast.Call)):
                continue
            for keyword in node.value.keywords:
                knob = keyword.value
                if keyword.arg == "metadata" and isinstance(knob, ast.Call) and isinstance(
                        knob.func, ast.Name) and knob.func.id == "knob":
                    named = [k.value for k in knob.keywords if k.arg == "name"]
                    yield (named[0].value if named and isinstance(named[0], ast.Constant)
                           else node.target.id)


@functools.cache
def _importable(name: str) -> bool:
    """A top-level module or package of the environment (not one of ipylsp's own names)."""
    if hasattr(builtins, name):
        return True
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _defined_names(module: Module) -> set[str]:
    return module.names - set(module.imported)


def docstrings(source: str) -> Iterator[str]:
    """A module's docstrings: of the module, its classes and functions, and the string
    statements that document an attribute or constant."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(
                node.value.value, str):
            yield node.value.value


@functools.lru_cache(maxsize=1)
def checkout() -> Checkout:
    return Checkout(ROOT)


def documents() -> list[str]:
    return ["ARCHITECTURE.md", *sorted(f for f in checkout().files
                                       if f.startswith("docs/") and f.endswith(".md"))]


@pytest.mark.real  # git ls-files
@pytest.mark.parametrize("document", ["ARCHITECTURE.md", "docs/", "ipylsp/"])
def test_every_reference_names_something_that_exists(document: str) -> None:
    code = checkout()
    broken: list[str] = []
    if document == "ipylsp/":
        for file in code.sources.values():
            for text in docstrings((ROOT / file).read_text(encoding="utf-8")):
                broken += [f"{file}: `{ref}`" for ref in code.broken(text)]
    else:
        for file in [d for d in documents() if d.startswith(document)]:
            text = (ROOT / file).read_text(encoding="utf-8")
            broken += [f"{file}: `{ref}`" for ref in code.broken(text)]
    assert broken == []


@pytest.mark.real  # git ls-files
def test_a_broken_reference_is_found() -> None:
    """The check itself fails on references that name nothing, and only on those."""
    text = (
        "`service/answers.py` holds `Answers`; `lsp/requests/` and `writer.py` exist, and so do"
        " `roots.workspace_gate`, `ipylsp.store.db.connect`, `ServerSpec.plain` and"
        " `TransformerManager` (IPython's). `summary.shown` is a JSON field, `os.replace` is"
        " the standard library's, `text/plain` a MIME type. `IPyLSP.show_clean` and"
        " `IPyLSP.custom_servers` are knobs.\n"
        "Gone: `lsp.server_rows`, `storage.config_key`, `ServerSpec.plain_settings`,"
        " `service/checked.py`, `lsp/gone/`, `NoSuchClass`, `analysis.positions.split_lines`,"
        " `IPyLSP.extra_specs` (a field, its knob is custom_servers), `IPyLSP.no_such_knob`."
    )
    assert checkout().broken(text) == [
        "lsp.server_rows", "storage.config_key", "ServerSpec.plain_settings",
        "service/checked.py", "lsp/gone/", "NoSuchClass", "analysis.positions.split_lines",
        "IPyLSP.extra_specs", "IPyLSP.no_such_knob",
    ]
