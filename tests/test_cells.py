"""Cell checking below the kernel: the kernel's reading of a cell (IPython's own transforms,
without a kernel) neutralized line for line, the document and the way back to cells, the
noise rules, the stub prelude, and `CellSession` on real ty + ruff (the kernel-level
behaviour is in test_cells_kernel.py)."""

from __future__ import annotations

import ast
import collections
import gc
import json
import os
import pathlib
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from IPython.core.inputtransformer2 import TransformerManager

from ipylsp import private
from ipylsp.analysis.cells import window
from ipylsp.analysis.cells.attribution import Kernel, by_cell
from ipylsp.analysis.cells.document import CellHistory, make_cell, unbound_loads
from ipylsp.analysis.cells.neutralize import NeutralCell, neutralize, split_cell
from ipylsp.analysis.report import format_text, to_json
from ipylsp.analysis.syntax import syntax_diagnostics
from ipylsp.cells.session import CellSession, KernelView
from ipylsp.ipython.namespace import stub_prelude
from ipylsp.ipython.reading import read_with, static_reader
from ipylsp.model.diagnostics import Diagnostic, Position, Range, Report, Severity
from ipylsp.model.settings import Settings
from ipylsp.servers import cells_place
from ipylsp.service.service import FileCheck, Service
from tests.real_servers import DATA_DIR

# -- the kernel's reading, neutralized ------------------------------------------------------------

READ = static_reader()
"""IPython's own transforms, without a kernel (the prefilters are tested in a real one)."""


def _neutral(source: str) -> NeutralCell:
    return neutralize(READ(source), READ)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("%time x = f(1)", "x = f(1)"),
        ("%timeit -n 3 f(1)", "pass"),
        ("%matplotlib inline", "pass"),
        ("!ls -la", "pass"),
        ("files = !ls", "files = __ipylsp_any__()"),
        ("a, b = %sx echo 1", "a, b = __ipylsp_any__()"),
        ("obj?", "pass"),
        ("obj.attr??", "pass"),
        ("?obj", "pass"),
        ("if x:\n    %time y = 1\n    !echo", "if x:\n    y = 1\n    pass"),
        ("print('why?')", "print('why?')"),
        ("x = 1  # why?", "x = 1  # why?"),
        ('s = """\n%not a magic\n!nor this\n"""', 's = """\n%not a magic\n!nor this\n"""'),
        ("f(1,\n  %2)", "f(1,\n  %2)"),
        ("x = 1 + \\\n  !2", "x = 1 + \\\n  !2"),
        ("%%bash\necho $HOME\nls", "\n\n"),
        ("%%html\n<b>x</b>", "\n"),
        ("%%writefile app.py\nx: int = 's'", "\n"),
        ("%%capture out\nprint(1)", "out = __ipylsp_any__()\nprint(1)"),
        ("%%time\n%time y = 2\nz = y", "\ny = 2\nz = y"),
        ("\n%%timeit\nf(1)", "\n\nf(1)"),
        ("%%timeit -n 3 x = g()\nx + 1", "x = g()\nx + 1"),
        ("%%capture out --no-stdout\nf()", "out = __ipylsp_any__()\nf()"),
        ("%%capture --no-display out\nf()", "out = __ipylsp_any__()\nf()"),
        ("from __future__ import annotations\nx: C", "pass\nx: C"),
        ("from __future__ import annotations; x = 1", "pass; x = 1"),
        ("import os\nfrom __future__ import division", "import os\npass"),  # IPython runs it
        ("def f():\n    from __future__ import division",) * 2,  # a SyntaxError: kept
        ("  a = 1\n  %time b = a", "a = 1\nb = a"),
        ("# C:\\\n%matplotlib inline", "# C:\\\npass"),
        ("a = 1\r\nb = 2", "a = 1\nb = 2"),
        ("%foo a \\\n  b\nx = 1", "pass\n\nx = 1"),  # a magic continued: one call
        (">>> a, b = 0, 1\n>>> while a < 10:\n...     print(a)\n...     a, b = b, a+b",
         "a, b = 0, 1\nwhile a < 10:\n    print(a)\n    a, b = b, a+b"),
        ("In [1]: for i in range(3):\n   ...:     print(i)\n   ...:",
         "for i in range(3):\n    print(i)\n"),
        ("In [2]: %time t = 1", "t = 1"),
    ],
)
def test_the_kernels_reading_keeps_every_line(source: str, expected: str) -> None:
    neutral = _neutral(source)
    assert neutral.text == expected
    assert len(split_cell(neutral.text)) == len(split_cell(source))


def test_offsets_of_cut_prompts_indentation_and_setup_lines() -> None:
    assert _neutral("  a = 1\n  %time b = a").column_offsets == (2, 2 + len("%time "))
    assert _neutral("%%timeit -n 3 x = g()\nx").column_offsets == (len("%%timeit -n 3 "), 0)
    assert _neutral("x = 1\n%time y = f(x)").column_offsets == (0, len("%time "))
    assert _neutral(">>> x = 1\n... ").column_offsets == (4, 4)
    assert _neutral("In [1]: %time y = 2").column_offsets == (len("In [1]: %time "),)
    assert _neutral("  %%time\n  x = 1").column_offsets == (2, 2)
    assert _neutral("x = 1").foreign is False
    assert _neutral("%%bash\nls").foreign is True


CORPUS = [
    "x = 1", "x = (1,", "%matplotlib inline\nx = 1", "!ls\nfiles = !ls", "len?", "??len",
    "%%bash\nnot python at all (", "%%time\nx = (", "%%time\nx = 1", ">>> x = 1\n>>> y = x",
    ">>> x = (1,\n>>> y = 2", "In [1]: x = 1\n   ...: y = x", "In [3]: def f(:\n   ...:  pass",
    "  a = 1\n  b = 2", "  a = 1\n b = 2", "if x:\n    %time y = 1", "if x:\n%time y = 1",
    "x = %time", "a = !echo\nb = %who_ls", "%time -x", "%time y = (", "def f():\n    %pwd",
    "f(1,\n  %2)", "x = 1 + \\\n  !2", "from __future__ import annotations\nx: int = 1",
    "await f()", "s = '''\n%x\n'''", "print(x)?", "x = 1 ?", "%%capture out\n>>> y = 1",
    "%%timeit -n 1 z = (\nz", "x = 1\n\n\n", "\n\n  x = 1\n  y = (",
    "class C:\n    !ls\n    x = 1", "%config IPyLSP.severity = 'all'", "x = [\n%time 1\n]",
    "lambda: %x", ">>> if x:\n...     y = 1\n... else:\n...   y = 2",
    "%foo a \\\n  b\nx = 1", "!a \\\nb\nb", "x = 1\n%a \\\n  b\n%c\ny = 2",
    "len?\nx = 1\nlen??", "f(a,\n  b)?", "x = !ls \\\n  -l\n%a\n%a",
]
PYTHON_BODIES = ("time", "timeit", "capture", "prun", "debug")


@pytest.mark.parametrize("source", CORPUS)
def test_our_reading_compiles_exactly_when_the_kernels_does(source: str) -> None:
    """The kernel compiles `transform_cell`'s text (top-level await allowed); the cell in the
    document must parse exactly then, so no cell IPython runs gets a syntax report, and one
    it rejects does. A Python cell magic's body is compiled when the magic runs (it raises
    the SyntaxError then): it counts as the cell's code; another magic's body is not Python."""
    manager = TransformerManager()
    transformed = manager.transform_cell(source)
    runs = transformed
    call = ast.parse(transformed).body[0] if _compiles(transformed) else None
    if (isinstance(call, ast.Expr) and isinstance(call.value, ast.Call)
            and isinstance(call.value.func, ast.Attribute)
            and call.value.func.attr == "run_cell_magic"):
        name, head, body = (ast.literal_eval(a) for a in call.value.args)
        runs = manager.transform_cell(body) if name in PYTHON_BODIES else "pass"
        if name == "timeit":  # `%%timeit [options] setup`: the setup is compiled too
            runs = re.sub(r"^(\s*-\w+(\s+\d+)?)*", "", head).strip() + "\n" + runs
    document = CellHistory().with_cell(make_cell("a", 1, source, READ)).document()
    assert _compiles(document.text) == _compiles(runs), (transformed, document.text)
    assert len(READ(source).lines) == len(split_cell(source))


@pytest.mark.parametrize("source", CORPUS)
def test_one_diff_places_the_kernels_lines_as_following_each_transformer_does(
    source: str,
) -> None:
    manager = TransformerManager()
    text = manager.transform_cell(source)
    assert read_with(manager, source, text) == read_with(manager, source, text, stepwise=True)


def _compiles(text: str) -> bool:
    try:
        compile(text, "<cell>", "exec", ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    except SyntaxError:
        return False
    return True


def test_a_syntax_error_after_a_prompt_is_located_in_the_cells_own_columns() -> None:
    cell = make_cell("a", 1, ">>> x = 1\n>>> y = (2,", READ)
    document = CellHistory().with_cell(cell).document()
    (error,) = syntax_diagnostics(Path("cells.py"), document.text) or ()
    ((_, (moved,)),) = by_cell([error], document, Kernel(), "a").values()
    assert (moved.range.start.line, moved.range.start.column) == (1, len(">>> y = "))


# -- the document ---------------------------------------------------------------------------------


def test_a_rerun_replaces_its_cell_in_place_and_places_map_back() -> None:
    history = CellHistory()
    for key, count, source in [("id:a", 1, "def f(x: int) -> int:\n    return x"),
                               ("id:b", 2, "f('s')"),
                               ("id:a", 3, "def f(x: str) -> str:\n    return x")]:
        history = history.with_cell(make_cell(key, count, source))
    assert [(c.key, c.count) for c in history.cells] == [("id:a", 3), ("id:b", 2)]
    # no id (the console, nbclient): the same source run again is run last
    again = CellHistory()
    for key, count, source in [("src:1", 1, "total = 0"), ("src:2", 2, "total = 'label'"),
                               ("src:1", 3, "total = 0")]:
        again = again.with_cell(make_cell(key, count, source))
    assert [(c.key, c.count) for c in again.cells] == [("src:2", 2), ("src:1", 3)]
    document = history.document("import os\n")
    lines = document.text.split("\n")
    second = document.starts[1]
    assert lines[second] == "f('s')"
    place = document.place(second)
    assert place is not None and (place.cell.count, place.line) == (2, 0)
    assert document.place(0) is None  # the header is ours
    assert document.place(document.header_lines - 1) is None


def test_a_top_level_raise_does_not_make_later_cells_unreachable() -> None:
    cell = make_cell("a", 1, "x = 1\nraise ValueError(x)\nwith x:\n    raise KeyError\n"
                             "if x: raise OSError\ndef f():\n    raise TypeError")
    assert cell.neutral.text.split("\n") == [
        "x = 1", "if __ipylsp_any__(): raise ValueError(x)", "with x:",
        "    if __ipylsp_any__(): raise KeyError", "if x: raise OSError", "def f():",
        "    raise TypeError",
    ]
    document = CellHistory().with_cell(cell).document()
    line = document.starts[0] + 1
    column = len("if __ipylsp_any__(): raise ValueError(")
    ((_, (moved,)),) = by_cell([_diag(line, column, column + 1, "F821")], document, Kernel(),
                               "a").values()
    assert (moved.range.start.line, moved.range.start.column) == (1, len("raise ValueError("))


def test_a_name_error_the_cell_catches_is_its_own_business() -> None:
    cell = make_cell("a", 1, "try:\n    input = raw_input\nexcept:\n    pass\n"
                             "try:\n    y = z\nexcept KeyError:\n    pass")
    document = CellHistory().with_cell(cell).document()
    at = document.starts[0]
    found = by_cell([_diag(at + 1, 12, 21, "F821"), _diag(at + 5, 8, 9, "F821")], document,
                    Kernel(), "a")
    assert [d.range.start.line for _, ds in found.values() for d in ds] == [5]
    # `except Exception` is how notebooks print errors: a typo there is still reported
    broad = CellHistory().with_cell(make_cell("b", 2, "try:\n    n = len(dataa)\n"
                                                      "except Exception as e:\n    print(e)"))
    line = broad.document().starts[0] + 1
    assert by_cell([_diag(line, 12, 17, "F821")], broad.document(), Kernel(), "b")


def test_history_cap_and_unparsable_cells() -> None:
    history = CellHistory(cap=2)
    for n in range(1, 5):
        history = history.with_cell(make_cell(f"k{n}", n, f"x{n} = {n}"))
    assert [c.count for c in history.cells] == [3, 4]
    broken = history.with_cell(make_cell("bad", 5, "x = (1,"))
    assert broken.cells[-1].parses is False
    assert [c.count for c in broken.kept().cells] == [4]  # capped at 2, then the bad one dropped


def test_unbound_loads_are_the_names_a_prelude_may_declare() -> None:
    cells = (make_cell("a", 1, "import os\nx = 1\ndef g(y):\n    z = y\n    return q"),
             make_cell("b", 2, "print(x, os, zz, z)"))
    assert unbound_loads(cells) == {"q", "y", "print", "zz", "z"}


# -- the way back to cells, without the noise ------------------------------------------------------


def _diag(line: int, col: int, end: int, code: str, message: str = "m") -> Diagnostic:
    return Diagnostic(Range(Position(line, col), Position(line, end)), Severity.ERROR, message,
                      "src", code, "srv")


def test_by_cell_drops_cell_noise_and_moves_the_rest() -> None:
    history = CellHistory()
    history = history.with_cell(make_cell("a", 1, "import os\nos.getcwd()"))
    history = history.with_cell(make_cell("b", 2, "import sys\n%time y = zz\nawait go()\nw",
                                                 READ))
    document = history.document()
    at = document.starts
    kernel = Kernel(names=frozenset({"zz"}), modules=frozenset({"os"}))
    found = by_cell(
        [
            _diag(at[1] + 1, 4, 6, "unresolved-reference"),  # zz: in the namespace
            _diag(at[1] + 3, 0, 1, "F821"),  # w: unknown to the kernel -> kept
            _diag(at[1] + 0, 7, 10, "F401"),  # unused import in the newest cell
            _diag(at[0] + 0, 7, 9, "F401"),  # ... in an earlier cell: kept
            _diag(at[0] + 0, 7, 9, "unresolved-import"),  # os: imported by the kernel
            _diag(at[1] + 0, 0, 10, "E402"),
            _diag(at[1] + 2, 0, 10, "F704", "`await` statement outside of a function"),
            _diag(at[1] + 3, 0, 1, "reportUnusedExpression"),  # the cell's value
            _diag(0, 0, 4, "F401"),  # in the header
        ],
        document, kernel, newest="b",
    )
    assert {key: [(d.code, d.range.start.line, d.range.start.column) for d in ds]
            for key, (_, ds) in found.items()} == {"b": [("F821", 3, 0)], "a": [("F401", 0, 7)]}


def test_a_time_magic_statement_is_located_in_the_cells_own_columns() -> None:
    document = CellHistory().with_cell(make_cell("a", 1, "%time y = zz", READ)).document()
    found = by_cell([_diag(document.starts[0], 4, 6, "F821")], document, Kernel(), "a")
    ((_, (moved,)),) = found.values()
    assert (moved.range.start.column, moved.range.end.column) == (10, 12)


# -- the stub prelude ------------------------------------------------------------------------------


def test_stub_prelude_gives_live_types_where_exact() -> None:
    namespace = {
        "np": os, "op": os.path, "p": pathlib.Path("x"), "C": collections.OrderedDict,
        "d": {}, "n": 3, "dumps": json.dumps, "g": lambda: 1, "unused": 1,
    }
    wanted = ["C", "d", "dumps", "g", "n", "np", "op", "p", "missing"]
    assert stub_prelude(namespace, wanted).splitlines() == [
        "import pathlib as __ipylsp_m0__",
        "from collections import OrderedDict as C",
        "d: dict[__ipylsp_Any__, __ipylsp_Any__] = __ipylsp_any__()",
        "from json import dumps as dumps",
        "g: __ipylsp_Any__ = __ipylsp_any__()",
        "n: int = __ipylsp_any__()",
        "import os as np",
        "import posixpath as op",
        f"p: __ipylsp_m0__.{type(pathlib.Path('x')).__name__} = __ipylsp_any__()",
    ]


def test_ipythons_own_names_keep_one_declaration_whatever_they_hold() -> None:
    wanted = ["In", "Out", "_", "__", "___", "_3", "_dh", "_i", "_i3", "_ih", "_oh",
              "get_ipython", "x3"]

    def prelude(last: object) -> list[str]:
        namespace = {name: last for name in wanted} | {
            "In": ["", "1"], "Out": {3: last}, "_dh": [], "_ih": [], "_oh": {}, "x3": 1}
        return stub_prelude(namespace, wanted).splitlines()

    assert prelude("a string") == prelude(3) == [
        "In: list[str] = __ipylsp_any__()",
        "Out: dict[int, __ipylsp_Any__] = __ipylsp_any__()",
        "_: __ipylsp_Any__ = __ipylsp_any__()",
        "__: __ipylsp_Any__ = __ipylsp_any__()",
        "___: __ipylsp_Any__ = __ipylsp_any__()",
        "_3: __ipylsp_Any__ = __ipylsp_any__()",
        "_dh: list[__ipylsp_Any__] = __ipylsp_any__()",
        "_i: str = __ipylsp_any__()",
        "_i3: str = __ipylsp_any__()",
        "_ih: list[str] = __ipylsp_any__()",
        "_oh: dict[int, __ipylsp_Any__] = __ipylsp_any__()",
        "get_ipython: __ipylsp_Any__ = __ipylsp_any__()",
        "x3: int = __ipylsp_any__()",  # a name of the user's: its live type
    ]


class _Meta(type):
    @property
    def __module__(cls) -> str:  # type: ignore[override]
        raise RuntimeError("a metaclass that raises")


class _Raising(metaclass=_Meta):
    pass


def test_stub_prelude_never_raises_nor_runs_module_code() -> None:
    import types

    lazy = types.ModuleType("lazy_mod")
    loaded: list[str] = []

    def getattr_hook(name: str) -> object:
        loaded.append(name)
        raise ImportError(name)

    lazy.__getattr__ = getattr_hook  # type: ignore[method-assign]
    namespace = {"weird": _Raising, "lazy": lazy}
    assert stub_prelude(namespace, ["lazy", "weird"]).splitlines() == [
        "lazy: __ipylsp_Any__ = __ipylsp_any__()",  # not importable under its own name
        "weird: __ipylsp_Any__ = __ipylsp_any__()",
    ]
    assert loaded == []


# -- CellSession on real ty + ruff -----------------------------------------------------------------


@pytest.fixture
def service(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Service]:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PYTHONPATH", raising=False)
    settings = Settings(language_servers={"python": ("ty", "ruff")}, data_dir=DATA_DIR)
    with Service(settings) as svc:
        yield svc


def _text(report: object) -> list[str]:
    return format_text(report).splitlines()  # type: ignore[arg-type]


@pytest.mark.real
def test_a_later_cell_breaking_a_call_is_reported_under_it(service: Service) -> None:
    cells = CellSession.over(service)
    assert _text(cells.run("def f(x: int) -> int:\n    return x", count=1)) == []
    report = cells.run("y = 1\nf('s')", count=2)
    assert _text(report) == [
        '<diagnostics file="cell [2]">',
        "ERROR [2:3] Argument to function `f` is incorrect: Expected `int`, found "
        '`Literal["s"]` [invalid-argument-type] (ty)',
        "</diagnostics>",
    ]
    (entry,) = to_json(report)["files"]  # type: ignore[index]
    assert (entry["path"], entry["cell"]) == ("cell [2]", 2)
    # a re-run of the first cell (same id) with a new signature: the earlier call breaks
    cells.clear()
    cells.run("def f(x: int) -> int:\n    return x", count=1, cell_id="one")
    cells.run("f(1)", count=2, cell_id="two")
    rerun = cells.run("def f(x: str) -> str:\n    return x", count=3, cell_id="one")
    assert _text(rerun) == [
        '<diagnostics file="cell [2]">',
        "ERROR [1:3] Argument to function `f` is incorrect: Expected `str`, found "
        "`Literal[1]` [invalid-argument-type] (ty)",
        "</diagnostics>",
    ]


@pytest.mark.real
def test_preflight_leaves_the_history_and_the_virtual_document_stays_private(
    service: Service, tmp_path: Path,
) -> None:
    cells = CellSession.over(service)
    cells.run("def f(x: int) -> int:\n    return x", count=1)
    history = cells.history
    proposed = cells.preflight("f('s')\nundefined_name")
    assert _text(proposed) == [
        '<diagnostics file="cell [ ]">',
        "ERROR [1:3] Argument to function `f` is incorrect: Expected `int`, found "
        '`Literal["s"]` [invalid-argument-type] (ty)',
        "ERROR [2:1] Name `undefined_name` used when not defined [unresolved-reference, F821] "
        "(ty, Ruff)",
        "</diagnostics>",
    ]
    assert cells.history == history
    clean = cells.preflight("f(2)")
    assert [(f.display_path, f.diagnostics, f.servers) for f in clean.files] == [
        ("cell [ ]", (), ("ty", "ruff"))
    ]
    # never a pending problem, never a known file, never re-checked as changed on disk
    assert service.pending().files == ()
    assert service.diagnostics().files == ()
    assert service.changed_on_disk() == []
    assert not cells.path.exists() and cells.path.parent == tmp_path


@pytest.mark.real
def test_kernel_names_are_never_undefined_and_stubs_keep_types(service: Service) -> None:
    namespace = {"made_by_exec": pathlib.Path("x"), "star_name": 1}

    def view() -> KernelView:
        names = frozenset(namespace) | frozenset(dir(__builtins__))
        return KernelView(Kernel(names, frozenset()), lambda w: stub_prelude(namespace, w))

    cells = CellSession.over(service)
    cells.attach(cells.read, view)
    report = cells.run(
        "print(made_by_exec.stem)\nstar_name + 1\nprint(made_by_exec.no_such_attribute)\n"
        "print(not_bound)", count=1
    )
    assert sorted((d.range.start.line, d.code) for f in report.files for d in f.diagnostics) == [
        (2, "missing-attribute"), (3, "F821"), (3, "unresolved-reference"),
    ]  # the prelude declared made_by_exec a PosixPath: its attributes are still checked


@pytest.mark.real
def test_a_file_write_that_breaks_cell_code_is_reported_under_the_cell(
    service: Service, tmp_path: Path,
) -> None:
    lib = tmp_path / "lib.py"
    lib.write_text("def area(w: int, h: int) -> int:\n    return w * h\n")
    cells = CellSession.over(service)
    assert _text(cells.run("from lib import area\narea(2, 3)", count=1)) == []
    lib.write_text("def area(w: int) -> int:\n    return w\n")
    service.check_files([FileCheck(lib)])
    report = cells.run("print('next')", count=2)
    assert _text(report) == [
        '<diagnostics file="cell [1]">',
        "ERROR [2:9] Too many positional arguments to function `area`: expected 1, got 2 "
        "[too-many-positional-arguments] (ty)",
        "</diagnostics>",
    ]


@pytest.mark.real
def test_fixed_problems_are_located_in_the_document_they_were_in(service: Service) -> None:
    """The prelude grows between two checks (a name only the kernel holds): what the re-run
    fixed is still located in the cell it was in, and an unused import is never 'fixed'."""
    namespace: dict[str, object] = {}

    def view() -> KernelView:
        names = frozenset(namespace) | frozenset(dir(__builtins__))
        return KernelView(Kernel(names, frozenset()), lambda w: stub_prelude(namespace, w))

    cells = CellSession.over(service)
    cells.attach(cells.read, view)
    cells.run("import os\ndef f(x: int) -> int:\n    return x", count=1, cell_id="a")
    broken = cells.run("print(os.sep)\nf('s')", count=2, cell_id="b")
    assert [(f.display_path, d.range.start.line) for f in broken.files
            for d in f.diagnostics] == [("cell [2]", 1)]
    namespace["helper_fn"] = len
    rerun = cells.run("import os\ndef f(x: str) -> str:\n    return x\nhelper_fn", count=3,
                      cell_id="a")
    assert format_text(rerun) == "fixed 1 error in cell [2]"
    ((entry,),) = [f.fixed for f in rerun.files]
    assert (entry.code, entry.range.start.line, entry.range.start.column) == (
        "invalid-argument-type", 1, 2)


@pytest.mark.real
def test_a_preflight_leaves_the_next_runs_baseline(service: Service) -> None:
    cells = CellSession.over(service)
    cells.run("x = 1", count=1)
    proposed = cells.preflight("len(1, 2)")
    ran = cells.run("len(1, 2)", count=2)
    assert format_text(ran) == format_text(proposed).replace("cell [ ]", "cell [2]") != ""


@pytest.mark.real
def test_in_no_project_the_cells_are_checked_at_the_notebooks_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A notebook in a directory that is in no project (the home directory, say): its cells
    are checked by servers rooted at the notebook's directory (`Settings.directory`), the
    same servers as the files it writes there, their own file discovery bounded; the
    document is never written there. (Where another user can write, the document gets a
    sealed directory of its own: tests/test_private.py.)"""
    home = tmp_path / "notebooks-at-home"
    home.mkdir()
    monkeypatch.chdir(home)
    monkeypatch.delenv("PYTHONPATH", raising=False)
    settings = Settings(language_servers={"python": ("ty", "ruff")}, data_dir=DATA_DIR,
                        directory=home)
    with Service(settings) as service:
        cells = CellSession.over(service)
        assert cells.path.parent == home
        report = cells.run("x: int = 's'", count=1)
        assert [d.code for f in report.files for d in f.diagnostics] == ["invalid-assignment"]
        assert {row.root for row in service.status()} == {home}
        assert list(home.iterdir()) == []


class _NoServers:
    """What a session's own directory needs of a service: nothing is checked."""

    def check_files(self, files: object, **options: object) -> Report:
        return Report()


def test_a_sessions_shared_directory_stays_for_the_others_when_it_goes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Outside a workspace (a directory others can write to), the document gets a sealed
    directory shared by the sessions working in that directory: one closed, or collected (or
    at exit), releases its hold and the directory stays for the others; the sweep removes it
    once nobody holds it and it went unused for `SHARED_KEPT` (tests/test_cells_place.py)."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    monkeypatch.chdir(shared)
    closed = CellSession(_NoServers(), private_parent=tmp_path / "data")
    place = closed.path.parent
    assert place == tmp_path / "data" / "cells" / cells_place.shared_name(shared)
    assert closed.path == cells_place.document_in(place) and private.is_sealed(place)
    dropped = CellSession(_NoServers(), private_parent=tmp_path / "data")
    assert dropped.path.parent == place
    closed.close()
    del dropped
    gc.collect()
    assert private.is_sealed(place)
    week = time.time() - cells_place.SHARED_KEPT - 60
    os.utime(place.with_name(place.name + ".lock"), (week, week))
    cells_place._sweep(place.parent)  # nobody holds it, unused for a week: removed
    assert not place.exists()


def test_each_surface_holds_its_session_and_the_process_one_follows_the_service(
    tmp_path: Path,
) -> None:
    """No service holds a session: a `Toolbox` made over a service holds its own, rooted where
    the service's `cells_dir` says; the Python API's and a service-less `Toolbox`'s is the
    process's, made again over a new process-wide service."""
    import ipylsp
    from ipylsp.agent.toolbox import Toolbox
    from ipylsp.cells.session import process_session

    with Service(Settings(store=False), cells_dir=tmp_path) as service:
        box = Toolbox(service, tmp_path)
        assert box.cells is box.cells is not CellSession.over(service)
        assert box.cells.service is service and box.cells.path.parent == tmp_path
        assert not hasattr(service, "cells")
        # a broker's client session: its context's cells' directory (`ipylsp mcp --root`)
        with Service(shares=service) as client:
            assert client.cells_dir == tmp_path
            assert Toolbox(client, tmp_path).cells.path.parent == tmp_path
        with Service(shares=service, cells_dir=tmp_path / "own") as client:
            assert client.cells_dir == tmp_path / "own"
    ipylsp._reset_service()
    try:
        first = process_session()
        assert first.service is ipylsp.get_service() and process_session() is first
        assert Toolbox().cells is first
        ipylsp._reset_service()
        assert process_session() is not first
    finally:
        ipylsp._reset_service()


def test_a_seeded_cell_run_again_with_its_id_is_replaced_in_place() -> None:
    history = CellHistory()
    for key, count, source in [("src:1", 1, "def f(x: int) -> int:\n    return x"),
                               ("src:2", 2, "f(1)")]:  # run before %load_ext: no ids known
        history = history.with_cell(make_cell(key, count, source))
    history = history.with_cell(make_cell("id:a", 3, "def f(x: int) -> int:\n    return x"))
    assert [(c.key, c.count) for c in history.cells] == [("id:a", 3), ("src:2", 2)]


def test_ends_on_other_lines_keep_their_lines_offsets_and_compound_last_statements_count(
) -> None:
    document = CellHistory().with_cell(make_cell("a", 1, "  y = (1 +\n  zz)", READ)).document()
    at = document.starts[0]  # an all-indented cell: every line's columns shift by 2
    ((_, (moved,)),) = by_cell(
        [Diagnostic(Range(Position(at, 4), Position(at + 1, 2)), Severity.ERROR, "m", "s",
                    "E1", "srv")], document, Kernel(), "a").values()
    assert (moved.range.start.column, moved.range.end.line, moved.range.end.column) == (6, 1, 4)
    loop = CellHistory().with_cell(make_cell("b", 1, "for x in y:\n    x == 1")).document()
    found = by_cell([_diag(loop.starts[0] + 1, 4, 10, "B018")], loop, Kernel(), "b")
    assert found  # a useless comparison inside the last loop is not the cell's value


# -- CellSession on real ty + ruff, more history than the window holds ---------------------------


@pytest.mark.real
def test_a_caller_older_than_the_window_is_reported_when_a_rerun_breaks_it(
    service: Service,
) -> None:
    cells = CellSession.over(service)
    cells.run("def area(w: int, h: int) -> int:\n    return w * h", count=1, cell_id="define")
    assert format_text(cells.run("total = area(2, 3)", count=2, cell_id="call")) == ""
    for n in range(window.WINDOW_LINES + 10):
        assert format_text(cells.run(f"fill_{n} = area({n}, 1)", count=3 + n,
                                     cell_id=f"f{n}")) == ""
    assert cells.document is not None and "id:call" not in {
        c.key for c in cells.document.cells}  # the caller is out of the window
    rerun = cells.run("def area(w: int) -> int:\n    return w", count=100, cell_id="define")
    shown = [(f.display_path, d.code) for f in rerun.files for d in f.diagnostics]
    assert ("cell [2]", "too-many-positional-arguments") in shown
    assert ("cell [3]", "too-many-positional-arguments") in shown
    assert len(shown) == window.WINDOW_LINES + 11  # every caller, each once


@pytest.mark.real
def test_moving_the_window_reports_nothing(service: Service) -> None:
    """Cells with errors that stay, then clean cells past several cuts: no cell's check says
    anything about the cells the window dropped or the declarations that replaced them."""
    cells = CellSession.over(service)
    cells.run("def f(a: int, b: int = 1) -> int:\n    return a * b", count=1)
    cells.run("class C:\n    def __init__(self, n: int) -> None:\n        self.n = n", count=2)
    broken = cells.run("wrong: int = 'not an int'\nitems = [1, 2, 3]", count=3)
    assert [d.code for f in broken.files for d in f.diagnostics] == ["invalid-assignment"]
    reports = [
        format_text(cells.run(f"v_{n} = f({n}) + C({n}).n + len(items)", count=4 + n))
        for n in range(2 * window.WINDOW_LINES + 5)
    ]
    assert reports == [""] * len(reports)
    late = cells.run("f('s')\nC(1).missing", count=500)
    assert sorted(d.code for f in late.files for d in f.diagnostics) == [
        "invalid-argument-type", "missing-attribute",
    ]
