"""The kernel's modules are real: a module the kernel holds is never unresolved, a member its
module holds never missing, however they got there (a `sys.meta_path` finder importing a
notebook, a module made in code, a lazy module's `__getattr__`), and an import under a handler
of its ImportError is the cell's own business.

Below the kernel: which import a diagnostic is about (`imports.import_at`), what the kernel
holds (`namespace.holds`, on modules made here), the judgement on real servers' messages. In
real kernels (ty + ruff, basedpyright + ruff, pyright + ruff): each way in is silent, and a
module nobody has, a member nobody made and a handler of another error are still reported.
"""

from __future__ import annotations

import json
import sys
import types
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ipylsp.analysis.cells import imports
from ipylsp.analysis.cells.attribution import Kernel, by_cell
from ipylsp.analysis.cells.document import CellHistory, make_cell
from ipylsp.cells.session import CellSession
from ipylsp.ipython.namespace import holds
from ipylsp.model.diagnostics import Diagnostic, Position, Range, Report, Severity
from tests.real_servers import require
from tests.test_ipython_kernel import MIME, Cell, kernel_dir_for, seed_workspace
from tests.test_ipython_kernel import Kernel as RealKernel

# -- which import a place is on --------------------------------------------------------------------

GUARDED = """\
try:
    from StringIO import StringIO
except ImportError:
    from io import StringIO
try:
    import cPickle as pickle
except (ValueError, Exception):
    pass
try:
    import a
except ValueError:
    import b
with contextlib.suppress(ModuleNotFoundError):
    import c
try:
    def later():
        import d
except:
    pass
try:
    import e
finally:
    import f
from g.h import (
    i as j,
    k,
)
import l.m, n
"""


def test_the_import_at_a_place_and_whether_the_cell_guards_it() -> None:
    at = imports.import_at
    assert at(GUARDED, 1, 9) == imports.ImportAt("StringIO", None, True)  # the module
    assert at(GUARDED, 1, 25) == imports.ImportAt("StringIO", "StringIO", True, "StringIO")
    assert at(GUARDED, 3, 9) == imports.ImportAt("io", None, False)  # the handler's: unguarded
    assert at(GUARDED, 5, 11) == imports.ImportAt("cPickle", None, True, "pickle")  # Exception
    assert at(GUARDED, 9, 11) == imports.ImportAt("a", None, False, "a")  # ValueError: not
    assert at(GUARDED, 11, 11) == imports.ImportAt("b", None, False, "b")
    assert at(GUARDED, 13, 11) == imports.ImportAt("c", None, True, "c")  # contextlib.suppress
    assert at(GUARDED, 16, 15) == imports.ImportAt("d", None, False, "d")  # runs when called
    assert at(GUARDED, 20, 11) == imports.ImportAt("e", None, False, "e")  # try/finally
    assert at(GUARDED, 22, 11) == imports.ImportAt("f", None, False, "f")
    assert at(GUARDED, 23, 5) == imports.ImportAt("g.h", None, False)
    assert at(GUARDED, 24, 4) == imports.ImportAt("g.h", "i", False, "j")  # a line down
    assert at(GUARDED, 25, 4) == imports.ImportAt("g.h", "k", False, "k")
    assert at(GUARDED, 27, 7) == imports.ImportAt("l.m", None, False, "l")
    assert at(GUARDED, 27, 12) == imports.ImportAt("n", None, False, "n")
    assert at(GUARDED, 14, 0) is None  # not an import
    assert at("from . import x", 0, 14) == imports.ImportAt(None, "x", False, "x")
    assert at("é = 1; import os", 0, 14) == imports.ImportAt("os", None, False, "os")
    assert at("def (", 0, 0) is None


# -- what the kernel holds -------------------------------------------------------------------------


LAZY = """
__all__ = ["Listed"]
calls = []

def __getattr__(name):
    calls.append(name)
    raise AttributeError(name)

def __dir__():
    return ["Listed", "Dir"]
"""


@pytest.fixture
def made_modules() -> Iterator[dict[str, types.ModuleType]]:
    """`made_pkg` (made in code), its submodule `made_pkg.sub`, and `made_lazy`, whose members
    a PEP 562 `__getattr__` makes on first use (listed in `__all__`, or by `__dir__`)."""
    made = types.ModuleType("made_pkg")
    made.value = 1  # type: ignore[attr-defined]
    sub = types.ModuleType("made_pkg.sub")
    made.sub = sub  # type: ignore[attr-defined]
    lazy = types.ModuleType("made_lazy")
    exec(LAZY, lazy.__dict__)
    modules = {"made_pkg": made, "made_pkg.sub": sub, "made_lazy": lazy}
    sys.modules.update(modules)
    try:
        yield {**modules, "calls": lazy.calls}
    finally:
        for name in modules:
            sys.modules.pop(name, None)


def test_holds_reads_modules_and_members_without_running_module_code(
    made_modules: dict[str, object]
) -> None:
    namespace = {"mp": made_modules["made_pkg"], "n": 3}
    yes = ["made_pkg", "made_pkg.value", "made_pkg.sub", "mp.sub", "mp.value", "made_lazy.Listed",
           "made_lazy.Dir", "json", "json.decoder"]
    no = ["made_pkg.nothing", "mp.nothing", "made_pkg.value.real", "n.real", "made_lazy.Other",
          "made_lazy.Listed.x", "nobody", "nobody.x"]
    assert [d for d in yes if not holds(namespace, d)] == []
    assert [d for d in no if holds(namespace, d)] == []
    assert made_modules["calls"] == []  # no `__getattr__` ran


def test_holds_a_module_made_without_getattr_has_only_what_it_has() -> None:
    plain = types.ModuleType("made_plain")
    plain.__all__ = ["Promised"]  # type: ignore[attr-defined]
    sys.modules["made_plain"] = plain
    try:
        assert not holds({}, "made_plain.Promised")  # nothing can make it: the import fails
    finally:
        del sys.modules["made_plain"]


# -- the judgement, on real servers' messages ------------------------------------------------------

CELL = """\
import nbpackage.mynotebook
from nbpackage import mynotebook
from pygments.lexers import PythonLexer
import pygments.lexers
pygments.lexers.PythonLexer
import importlib
importlib.util.find_spec
try:
    import cPickle as pickle
except ImportError:
    import pickle
import nobody_has_this
from os import no_such_name
os.no_such_name
"""

# (line, column, end, server, code, message): as ty 0.0.105, basedpyright and pyright say them
MESSAGES = [
    (0, 7, 27, "ty", "import-not-found", "Cannot resolve imported module `nbpackage.mynotebook`"),
    (0, 7, 27, "pyright", "reportMissingImports",
     'Import "nbpackage.mynotebook" could not be resolved'),
    (1, 22, 32, "ty", "missing-module-member", "Module `nbpackage` has no member `mynotebook`"),
    (1, 22, 32, "pyright", "reportAttributeAccessIssue", '"mynotebook" is unknown import symbol'),
    (2, 28, 39, "ty", "missing-module-member",
     "Module `pygments.lexers` has no member `PythonLexer`"),
    (4, 0, 27, "ty", "missing-attribute", "Module `pygments.lexers` has no member `PythonLexer`"),
    (6, 0, 14, "ty", "possibly-missing-submodule", "Submodule `util` might not have been imported"),
    (6, 10, 14, "pyright", "reportAttributeAccessIssue",
     '"util" is not a known attribute of module "importlib"'),
    (8, 11, 28, "ty", "import-not-found", "Cannot resolve imported module `cPickle`"),
    (8, 11, 18, "pyright", "reportMissingImports", 'Import "cPickle" could not be resolved'),
]
STILL = [
    (11, 7, 22, "ty", "import-not-found", "Cannot resolve imported module `nobody_has_this`"),
    (11, 7, 22, "pyright", "reportMissingImports",
     'Import "nobody_has_this" could not be resolved'),
    (12, 15, 27, "ty", "missing-module-member", "Module `os` has no member `no_such_name`"),
    (12, 15, 27, "pyright", "reportAttributeAccessIssue",
     '"no_such_name" is unknown import symbol'),
    (13, 0, 15, "ty", "missing-attribute", "Module `os` has no member `no_such_name`"),
    (13, 3, 15, "pyright", "reportAttributeAccessIssue",
     '"no_such_name" is not a known attribute of module "os"'),
]


def test_what_the_kernel_holds_disproves_and_nothing_else() -> None:
    history = CellHistory().with_cell(make_cell("a", 1, CELL))
    document = history.document()
    start = document.starts[0]
    held = {"nbpackage", "nbpackage.mynotebook", "pygments", "pygments.lexers",
            "pygments.lexers.PythonLexer", "importlib", "importlib.util", "os"}
    kernel = Kernel(names=frozenset({"os"}), holds=held.__contains__)

    def kept(rows: list[tuple[int, int, int, str, str, str]]) -> list[tuple[int, str, str]]:
        found = by_cell([
            Diagnostic(Range(Position(start + line, column), Position(start + line, end)),
                       Severity.ERROR, message, server, code, server)
            for line, column, end, server, code, message in rows
        ], document, kernel, newest=None)
        return [(d.range.start.line, d.server_id, d.code or "")
                for _, ds in found.values() for d in ds]

    assert kept(MESSAGES) == []
    assert kept(STILL) == [(line, server, code) for line, _, _, server, code, _ in STILL]

    # a member the module neither keeps nor lists, made by the import that bound its name
    lazy = CellHistory().with_cell(make_cell("b", 2, "from lazy_pkg import Made as M")).document()
    made = [Diagnostic(Range(Position(lazy.starts[0], 23), Position(lazy.starts[0], 27)),
                       Severity.ERROR, "Module `lazy_pkg` has no member `Made`", "ty",
                       "missing-module-member", "ty")]
    bound = Kernel(names=frozenset({"M"}), holds={"lazy_pkg"}.__contains__)
    assert by_cell(made, lazy, bound, newest=None) == {}
    unbound = Kernel(holds={"lazy_pkg"}.__contains__)  # the import failed: nothing bound
    assert [d.code for _, ds in by_cell(made, lazy, unbound, newest=None).values()
            for d in ds] == ["missing-module-member"]


# -- in real kernels -------------------------------------------------------------------------------

NOTEBOOK = {
    "cells": [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
               "source": ["def foo():\n", "    return 'foo'\n"]}],
    "metadata": {}, "nbformat": 4, "nbformat_minor": 5,
}
FINDER = """\
import json, sys
from importlib.abc import Loader, MetaPathFinder
from importlib.util import spec_from_loader
from pathlib import Path

class NotebookLoader(Loader):
    def create_module(self, spec):
        return None

    def exec_module(self, module):
        spec = module.__spec__
        assert spec is not None and spec.origin is not None
        for cell in json.loads(Path(spec.origin).read_text())["cells"]:
            if cell["cell_type"] == "code":
                exec("".join(cell["source"]), module.__dict__)

class NotebookFinder(MetaPathFinder):
    def find_spec(self, name, path, target=None):
        where = Path(*name.split(".")).with_suffix(".ipynb")
        if not where.exists():
            return None
        return spec_from_loader(name, NotebookLoader(), origin=str(where))

sys.meta_path.append(NotebookFinder())"""
SILENT = {
    "a notebook imported by a sys.meta_path finder":
        "from nbpackage import mynotebook\nimport nbpackage.mynotebook\nprint(mynotebook.foo())",
    "a module made in code":
        "import types\nmade = types.ModuleType('made_in_code')\nmade.__dict__['value'] = 1\n"
        "sys.modules['made_in_code'] = made",
    "importing it": "import made_in_code\nfrom made_in_code import value\nprint(value)",
    "a lazy module's member": "from pygments.lexers import PythonLexer\nprint(PythonLexer.name)",
    "through its module, and one not made yet, in a function never called":
        "import pygments.lexers\npygments.lexers.PythonLexer\n"
        "def later():\n    return pygments.lexers.RustLexer",
    "a submodule the kernel imported": "import importlib\nimportlib.util.find_spec('os')",
    "fallbacks under handlers of ImportError":
        "try:\n    from StringIO import StringIO\nexcept ImportError:\n"
        "    from io import StringIO\n"
        "try:\n    import cPickle as pickle\nexcept Exception:\n    import pickle\n"
        "import contextlib\nwith contextlib.suppress(ModuleNotFoundError):\n"
        "    import nothing_here",
}
REPORTED = {  # what each still reports: (server, code) per case
    "import nobody_has_this": {"ty": "import-not-found", "pyright": "reportMissingImports",
                               "basedpyright": "reportMissingImports"},
    "from os import no_such_name": {"ty": "missing-module-member",
                                    "pyright": "reportAttributeAccessIssue",
                                    "basedpyright": "reportAttributeAccessIssue"},
    "try:\n    import nobody_else\nexcept ValueError:\n    pass": {
        "ty": "import-not-found", "pyright": "reportMissingImports",
        "basedpyright": "reportMissingImports"},
}


def _ours(cell: Cell) -> list[dict[str, Any]]:
    return [o for o in cell.outputs if o["output_type"] == "display_data" and MIME in o["data"]]


def _raised(cell: Cell) -> bool:
    return any(o["output_type"] == "error" for o in cell.outputs)


def _errors(cell: Cell) -> list[tuple[str, str]]:
    """(server, code) of every diagnostic ipylsp reported in this cell's displays."""
    return [(str(d["source"]), str(d["code"])) for o in _ours(cell)
            for f in o["data"][MIME]["files"] if f.get("cell") == cell.count
            for d in f["diagnostics"]]


@pytest.mark.real
@pytest.mark.timeout(180)
@pytest.mark.parametrize("checker", ["ty", "basedpyright", "pyright"])
def test_the_kernels_modules_are_real_and_true_reports_stay(checker: str, tmp_path: Path) -> None:
    require(checker)
    require("ruff")
    ws = seed_workspace(tmp_path, {
        "nbpackage/__init__.py": "", "nbpackage/mynotebook.ipynb": json.dumps(NOTEBOOK)})
    with RealKernel(kernel_dir_for(tmp_path), ws) as k:
        assert k.run("%load_ext ipylsp").outputs == []
        servers = json.dumps({"python": [checker, "ruff"]})
        assert k.run(f"%config IPyLSP.language_servers = {servers}").outputs == []
        k.run("import ipylsp\nwarm = ipylsp.get_service().start('warm.py')")  # may say it waited
        finder = k.run(FINDER)
        assert not _ours(finder) and not _raised(finder), finder.outputs
        silent = {what: k.run(code) for what, code in SILENT.items()}
        reported = {code: k.run(code) for code in REPORTED}
    assert {what: c.outputs for what, c in silent.items() if _ours(c) or _raised(c)} == {}
    source = {"basedpyright": "basedpyright", "pyright": "Pyright", "ty": "ty"}[checker]
    assert {code: _errors(c) for code, c in reported.items()} == {
        code: [(source, by_server[checker])] for code, by_server in REPORTED.items()}


# -- a cell's own warnings are the kernel's to show ----------------------------------------------


class _Answers:
    """A service that checks nothing (`CellSession` needs only `check_files`)."""

    def check_files(self, files: object, **options: object) -> Report:
        return Report()


def test_a_cells_syntax_warning_is_not_raised_again_by_its_check(tmp_path: Path) -> None:
    """`'\\d'` in a string warns when the kernel compiles the cell (a SyntaxWarning on 3.12+,
    a DeprecationWarning before); the check parses the cell again and again, silently."""
    session = CellSession(_Answers(), path=tmp_path / "cells.py")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        session.run("import re\npattern = re.compile('\\d+')\n", count=1)
        session.preflight("other = '\\w'")
    assert [str(w.message) for w in caught] == []
