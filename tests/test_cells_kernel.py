"""Cell checking on a real ipykernel driven by nbclient (issue 13): what each cell's code
introduced, located as `cell [n] line:col`, never what the kernel already proves fine.

Cells run one at a time in a temporary git worktree with the embedded default servers (ty +
ruff). JupyterLab sends each execute_request with the cell's id in its metadata (`cellId`);
nbclient sends none, so `CellKernel.run(..., cell_id=...)` adds it the way JupyterLab does.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ipylsp import private
from ipylsp.servers import cells_place
from tests.contracts import validate_report
from tests.test_ipython_kernel import (
    FAKE_SERVER,
    MIME,
    TY_RUFF,
    Cell,
    Kernel,
    block,
    kernel_dir_for,
    seed_workspace,
)

pytestmark = [pytest.mark.real, pytest.mark.timeout(180)]


class CellKernel(Kernel):
    """A kernel whose cells may carry a front-end cell id (`metadata.cellId`)."""

    def __enter__(self) -> CellKernel:
        super().__enter__()
        self._cell_id: str | None = None
        kc = self.client.kc
        assert kc is not None
        original = kc.session.msg

        def msg(msg_type: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
            message: dict[str, Any] = original(msg_type, *args, **kwargs)
            if msg_type == "execute_request" and self._cell_id is not None:
                message["metadata"]["cellId"] = self._cell_id
            return message

        kc.session.msg = msg  # type: ignore[method-assign]
        return self

    def run(self, source: str, cell_id: str | None = None) -> Cell:
        self._cell_id = cell_id
        try:
            return super().run(source)
        finally:
            self._cell_id = None


@pytest.fixture
def kernel(tmp_path: Path) -> Iterator[CellKernel]:
    ws = seed_workspace(tmp_path, {"helper.py": "def helped(n: int) -> int:\n    return n\n"})
    with CellKernel(kernel_dir_for(tmp_path), ws) as k:
        assert k.run("%load_ext ipylsp").outputs == []
        assert k.run(TY_RUFF).outputs == []
        # the first checks do not wait for servers to start; this one makes sure they run
        # (not bound to `_`: a cell that binds `_` stops IPython from updating it)
        assert k.run("import ipylsp\nwarm = ipylsp.get_service().start('warm.py')").outputs == []
        yield k


def ours(cell: Cell) -> list[str]:
    """The text/plain of ipylsp's displays (not what the cell itself displays)."""
    return [o["data"]["text/plain"] for o in cell.outputs
            if o["output_type"] == "display_data" and MIME in o["data"]]


def payload(cell: Cell) -> dict[str, Any]:
    (data,) = [o["data"][MIME] for o in cell.outputs if o["output_type"] == "display_data"]
    assert isinstance(data, dict)
    validate_report(data)
    return data


def test_a_later_call_is_reported_under_the_later_cell(kernel: CellKernel) -> None:
    define = kernel.run("def f(x: int) -> int:\n    return x")
    call = kernel.run("f('s')")
    assert define.outputs == []
    assert call.displays == [block(
        f"cell [{call.count}]",
        "ERROR [1:3] Argument to function `f` is incorrect: Expected `int`, found "
        '`Literal["s"]` [invalid-argument-type] (ty)',
    )]
    (entry,) = payload(call)["files"]
    assert (entry["path"], entry["cell"]) == (f"cell [{call.count}]", call.count)
    assert [(d["line"], d["column"]) for d in entry["diagnostics"]] == [(1, 3)]


def test_names_the_kernel_bound_are_never_undefined(kernel: CellKernel, tmp_path: Path) -> None:
    script = kernel.workspace / "made.py"
    script.write_text("from_run = 1\n")
    cells = [
        kernel.run("exec('from_exec = 1')"),
        kernel.run(f"%run {script}"),
        kernel.run("%time from_time = 1"),
        kernel.run("%%capture out\nprint('hidden')"),
        kernel.run("globals()['from_globals'] = 1"),
        kernel.run("from helper import *"),
        kernel.run("halfway = 1\nraise ValueError('stop')\nnever = 2"),
        kernel.run("print(from_exec, from_run, from_time, out.stdout, from_globals, helped(1),"
                   " halfway)"),
    ]
    assert [ours(c) for c in cells] == [[]] * len(cells), [c.outputs for c in cells]
    assert cells[-1].stdout == "1 1 1 hidden\n 1 1 1\n"
    # a name nothing bound is still reported (by ty: after a star import ruff cannot tell),
    # also after the cell that raised halfway; and the stub keeps the live type
    unbound = kernel.run("print(nobody_bound_this)")
    assert unbound.displays == [block(
        f"cell [{unbound.count}]",
        "ERROR [1:7] Name `nobody_bound_this` used when not defined [unresolved-reference] (ty)",
    )]
    typed = kernel.run("exec('import pathlib; p = pathlib.Path(\"x\")')\nprint(p.no_such)")
    assert typed.error is not None  # AttributeError at run time; the check said it first
    assert typed.displays == [block(
        f"cell [{typed.count}]",
        "ERROR [2:7] Object of type `PosixPath` has no attribute `no_such` "
        "[missing-attribute] (ty)",
    )]


def test_ipython_syntax_produces_nothing(kernel: CellKernel) -> None:
    kernel.run('%config IPyLSP.severity = "all"')  # the quiet rules are warnings (ruff)
    cells = [
        kernel.run("from __future__ import annotations\nwith_future: list[int] = [1]"),
        kernel.run("%matplotlib --list"),
        kernel.run("!echo shell"),
        kernel.run("listing = !echo a b\nlisting.n"),
        kernel.run("len?"),
        kernel.run("??len"),
        kernel.run("%%bash\nundefined_in_bash=1\necho $undefined_in_bash"),
        kernel.run("%%html\n<b>not python</b>"),
        kernel.run("%%writefile notes.txt\nnot: python: at all"),
        kernel.run("import os\nimport sys\nx = 1;"),  # I001 order, F401 newest, E703
        kernel.run("import json\nos.getcwd()"),  # E402: every cell after the first
        kernel.run("import asyncio\nawait asyncio.sleep(0)"),  # top-level await
        kernel.run("class Pair:\n    async def __aenter__(self) -> int:\n        return 1\n"
                   "    async def __aexit__(self, *_: object) -> None:\n        return None"),
        kernel.run("async with Pair() as one:\n    print(one)"),  # top-level async with
        kernel.run("  indented = 1\n  print(indented)"),  # IPython dedents it
        kernel.run("%%timeit -n 1 -r 1 setup_value = sum(range(3))\nsetup_value + 1"),
        kernel.run("# C:\\\n%matplotlib --list"),  # a comment's backslash continues nothing
        kernel.run("x"),  # the cell's value is its last expression
    ]
    assert [ours(c) for c in cells] == [[]] * len(cells), [c.outputs for c in cells]
    kernel.run('%config IPyLSP.severity = "error"')


def test_the_kernel_decides_what_is_code(kernel: CellKernel) -> None:
    """Prompt-pasted cells (both prompt styles) and automagic lines run fine, so they are
    silent; a line IPython reads as Python (a name `ls` bound) is checked as Python; a real
    syntax error after a cut prompt is located in the cell's own columns."""
    (kernel.workspace / "data").mkdir()
    cells = [
        kernel.run(">>> a, b = 0, 1\n>>> while a < 10:\n...     a, b = b, a + b\n>>> print(a)"),
        kernel.run("In [1]: for i in range(3):\n   ...:     total = i\n   ...:\n"
                   "In [2]: print(total)"),
        kernel.run("In [3]: %time timed = total + 1"),
        kernel.run("ls data"),
        kernel.run("pwd"),
        kernel.run("cd data"),
        kernel.run("cd .."),
        kernel.run("print(a, total, timed)"),
    ]
    assert [c.error for c in cells] == [None] * len(cells), [c.outputs for c in cells]
    assert [ours(c) for c in cells] == [[]] * len(cells), [c.outputs for c in cells]
    assert cells[-1].stdout == "13 2 3\n"
    bound = kernel.run("ls = ['b', 'a']")
    python = kernel.run("ls data")  # now Python: the kernel raises SyntaxError, and so do we
    assert ours(bound) == [] and python.error is not None and python.error[0] == "SyntaxError"
    assert python.displays == [block(
        f"cell [{python.count}]",
        "ERROR [1:4] invalid syntax [SyntaxError] (ipylsp-syntax)",
    )]
    pasted = kernel.run(">>> x = 1\n>>> y = (x,")
    assert pasted.error is not None and pasted.error[0] == "SyntaxError"
    assert pasted.displays == [block(
        f"cell [{pasted.count}]",
        "ERROR [2:9] '(' was never closed [SyntaxError] (ipylsp-syntax)",
    )]
    typed = kernel.run("In [9]: wrong: int = 's'")  # a cut prompt: still checked, in place
    assert typed.displays == [block(
        f"cell [{typed.count}]",
        'ERROR [1:22] Object of type `Literal["s"]` is not assignable to `int` '
        "[invalid-assignment] (ty)",
    )]


def test_ipythons_own_names_keep_their_types(kernel: CellKernel) -> None:
    """`_`, `__`, `_N`, `_iN`, `In[n]` and `Out[n]` read after a cell whose value is a string:
    nothing, and the earlier cells that read them are not re-reported."""
    first = kernel.run("40 + 1")
    cells = [
        kernel.run("_ + 1"),
        kernel.run(f"_{first.count} + 1"),
        kernel.run(f"Out[{first.count}] + 1"),
        kernel.run(f"In[{first.count}].upper()"),
        kernel.run(f"_i{first.count}.upper()"),
        kernel.run("'now a string'"),
        kernel.run("_.upper()"),
        kernel.run("len(__)"),
        kernel.run("print(len(_oh), _dh[0] is not None, len(_ih) > 0)"),
    ]
    assert [c.error for c in cells] == [None] * len(cells), [c.outputs for c in cells]
    assert [c.displays for c in cells] == [[]] * len(cells), [c.outputs for c in cells]


def test_capture_cells_and_cells_run_by_cells_are_checked(kernel: CellKernel) -> None:
    """`%%capture` runs its body with `run_cell` (inner cell events): the outer cell is what
    is checked, once."""
    captured = kernel.run("%%capture out\nwrong: int = 's'")
    assert captured.displays == [block(
        f"cell [{captured.count}]",
        'ERROR [2:14] Object of type `Literal["s"]` is not assignable to `int` '
        "[invalid-assignment] (ty)",
    )]
    nested = kernel.run("get_ipython().run_cell('inner_ok = 1')\nprint(out.stdout)")
    assert ours(nested) == []


def test_a_preflight_changes_nothing_the_next_run_compares_with(kernel: CellKernel) -> None:
    proposed = kernel.run("%lsp check_cell\tlen(1, 2)")  # any whitespace after the word
    assert proposed.result is not None and "cell [ ]" in proposed.result
    ran = kernel.run("len(1, 2)")
    assert ran.error is not None  # TypeError; the check had said so, and says it again
    assert ours(ran) == [proposed.result.replace("cell [ ]", f"cell [{ran.count}]")]


def test_rerunning_a_cell_with_a_new_signature_updates_the_next_check(
    kernel: CellKernel,
) -> None:
    kernel.run("def area(w: int, h: int) -> int:\n    return w * h", cell_id="define")
    use = kernel.run("total = area(2, 3)", cell_id="use")
    assert use.outputs == []
    rerun = kernel.run("def area(w: int) -> int:\n    return w", cell_id="define")
    assert rerun.displays == [block(
        f"cell [{use.count}]",
        "ERROR [1:17] Too many positional arguments to function `area`: expected 1, got 2 "
        "[too-many-positional-arguments] (ty)",
    )]
    fixed = kernel.run("total = area(2)", cell_id="use")
    assert fixed.displays == [f"fixed 1 error in cell [{fixed.count}]"]


def test_a_syntax_error_is_located_at_the_cells_own_line(kernel: CellKernel) -> None:
    kernel.run("a = 1\nb = 2")
    broken = kernel.run("x = 1\ny = (2,\n")
    assert broken.error is not None and broken.error[0] == "SyntaxError"
    assert broken.displays == [block(
        f"cell [{broken.count}]", "ERROR [2:5] '(' was never closed [SyntaxError] (ipylsp-syntax)"
    )]
    after = kernel.run("print(a + b)")  # the broken cell ran nothing and is left out
    assert after.outputs == [{"output_type": "stream", "name": "stdout", "text": "3\n"}]


def test_preflight_by_magic_function_and_tool(kernel: CellKernel) -> None:
    kernel.run("def f(x: int) -> int:\n    return x\nvalue = 3")
    expected = block(
        "cell [ ]",
        "ERROR [1:3] Argument to function `f` is incorrect: Expected `int`, found "
        '`Literal["s"]` [invalid-argument-type] (ty)',
    )
    line = kernel.run("%lsp check_cell f('s')")
    body = kernel.run("%%lsp check_cell\nf('s')")
    api = kernel.run("import ipylsp\nipylsp.check_cell(\"f('s')\")")
    tool = kernel.run(
        "from ipylsp.agent import call_tool\n"
        "print(call_tool('lsp_check_cell', {'code': \"f('s')\"}).text)"
    )
    assert [line.result, body.result, api.result] == [expected] * 3
    assert tool.stdout == expected + "\n"
    clean = kernel.run("%lsp check_cell f(value)")
    assert clean.result == "the cell: no new problems (nothing was run)"
    # nothing ran: `f('s')` never became part of the history
    later = kernel.run("print(f(value))")
    assert later.outputs == [{"output_type": "stream", "name": "stdout", "text": "3\n"}]
    bad = kernel.run("%lsp check_cell")
    assert bad.stderr.startswith("UsageError: %lsp check_cell: no code")
    wrong = kernel.run("%%lsp status\nbody")
    assert wrong.stderr == "UsageError: %%lsp: only `%%lsp check_cell` takes a cell body\n"


def test_check_cells_off_and_the_history_cap(kernel: CellKernel) -> None:
    kernel.run("%config IPyLSP.check_cells = False")
    assert kernel.run("print(nowhere_defined_name)").displays == []
    kernel.run("%config IPyLSP.check_cells = True")
    kernel.run("%config IPyLSP.cell_history = 3")
    kernel.run("from_old_cell = 1")
    for n in range(4):
        kernel.run(f"n{n} = {n}")
    size = kernel.run(
        "from ipylsp.ipython.extension import current\n"
        "print(len(current(get_ipython()).cells.session.history.cells))"
    )
    assert size.stdout == "3\n"
    # the oldest cell left the document; the name it bound is still known from the kernel
    assert kernel.run("print(from_old_cell)").displays == []


def test_the_first_cell_after_load_ext_does_not_wait_for_a_server(tmp_path: Path) -> None:
    """A server that takes 3 s to initialize: the first cell's check is cut at once (the
    server is still starting after the cell), and its problem comes with the next cell."""
    ws = seed_workspace(tmp_path)
    slow = [sys.executable, str(FAKE_SERVER), "--slow-initialize-ms", "3000", "--lifetime-s", "60"]
    with CellKernel(kernel_dir_for(tmp_path), ws) as k:
        k.run("%config IPyLSP.check_cells = False")
        k.run("%load_ext ipylsp")
        k.run(f"%config IPyLSP.custom_servers = {{'slow': {{'command': {slow!r}, "
              "'languages': ['python']}}")
        k.run("%config IPyLSP.language_servers = {'python': ['slow']}")
        k.run("%config IPyLSP.check_cells = True")
        first = k.run("x = 1  # ERROR:bad")
        status = k.run("import ipylsp\nprint(ipylsp.status()[0].state)")
        assert (first.outputs, status.stdout) == ([], "starting\n")
        later = [
            k.run("_ = ipylsp.get_service().start('w.py')"),  # waits on the start (no polling)
            k.run("y = 2"),
        ]
    # the check of the first cell after the start catches up (that cell's own check may still
    # be cut when the server answers after its 50 ms; then the next one does): exactly once
    shown = [text for cell in later for text in ours(cell)]
    assert shown == [block(f"cell [{first.count}]", "ERROR [1:10] bad [E1] (fake)")]
    (caught_up,) = [payload(c) for c in later if ours(c)]
    assert caught_up["files"][0]["cell"] == first.count


def test_a_slower_server_checks_cells_once_started(tmp_path: Path) -> None:
    """basedpyright answers a cell in more than the 50 ms of a check while servers start:
    once it runs, the cells' checks wait for it like any check (not cut forever)."""
    ws = seed_workspace(tmp_path)
    with CellKernel(kernel_dir_for(tmp_path), ws) as k:
        k.run("%load_ext ipylsp")
        k.run('%config IPyLSP.language_servers = {"python": ["basedpyright", "ruff"]}')
        k.run("import ipylsp\n_ = ipylsp.get_service().start('warm.py')")
        k.run("def f(x: int) -> int:\n    return x")
        calls = {letter: k.run(f"f('{letter}')") for letter in "st"}
    for letter, call in calls.items():
        assert call.displays == [block(
            f"cell [{call.count}]",
            f'ERROR [1:3] Argument of type "Literal[\'{letter}\']" cannot be assigned to '
            f'parameter "x" of type "int" in function "f"; "Literal[\'{letter}\']" is not '
            'assignable to "int" [reportArgumentType] (basedpyright)',
        )]


def test_a_rerun_reports_a_caller_far_older_than_the_window(kernel: CellKernel) -> None:
    """The document holds a window of recent cells (`analysis.cells.window`): a definition
    re-run with a new signature brings back every later cell that calls it, however many
    cells ran between."""
    from ipylsp.analysis.cells.window import WINDOW_LINES

    kernel.run("def area(w: int, h: int) -> int:\n    return w * h", cell_id="define")
    caller = kernel.run("total = area(2, 3)", cell_id="caller")
    between = [kernel.run(f"step_{n} = {n} * 2", cell_id=f"step{n}")
               for n in range(WINDOW_LINES + 10)]
    assert [c.outputs for c in between] == [[]] * len(between)
    shown = kernel.run(
        "from ipylsp.ipython.extension import current\n"
        "print(sorted(c.count for c in current(get_ipython()).cells.session.document.cells))"
    )
    assert str(caller.count) not in shown.stdout.strip("[]\n").split(", ")  # out of the window
    rerun = kernel.run("def area(w: int) -> int:\n    return w", cell_id="define")
    assert rerun.displays == [block(
        f"cell [{caller.count}]",
        "ERROR [1:17] Too many positional arguments to function `area`: expected 1, got 2 "
        "[too-many-positional-arguments] (ty)",
    )]


SESSION_PATH = ("from ipylsp.ipython.extension import current\n"
                "print(current(get_ipython()).cells.session.path)")
"""A cell printing where the kernel's cells' document says it lives."""


@pytest.mark.parametrize("others_write", [False, True], ids=["private", "others-can-write"])
def test_kernels_in_one_plain_directory_have_their_cells_checked_at_one_root(
    tmp_path: Path, others_write: bool
) -> None:
    """Two kernels working in one directory that is in no project (no git, no marker):
    their cells' documents say they live in one directory, so the servers of one root check
    them all (a broker's pool: one server for both); each kernel's document is its own, and
    so are its problems, reported as in a workspace. Only the user can write there: that
    directory itself; another user can (a group's shared directory): a sealed directory in
    the data dir that every kernel working there shares (ipylsp.servers.cells_place). Nothing
    is written in the user's directory."""
    where = tmp_path / "plain"
    where.mkdir(mode=0o700)
    if others_write:
        where.chmod(0o1777)
    data = tmp_path / "data"
    kernels = [CellKernel(kernel_dir_for(tmp_path), where, ipython_dir=tmp_path / f"ipy{n}")
               for n in (1, 2)]
    for k in kernels:
        k.env["XDG_DATA_HOME"] = str(data)
    with kernels[0] as first, kernels[1] as second:
        documents = []
        for k in (first, second):
            assert k.run("%load_ext ipylsp").outputs == []
            assert k.run(TY_RUFF).outputs == []
            document = Path(k.run(SESSION_PATH).stdout.strip())
            documents.append(document)
            # the first checks do not wait for servers to start; this one makes sure they run
            assert k.run(f"import ipylsp\nwarm = ipylsp.get_service().start({str(document)!r})"
                         ).outputs == []
        place = (data / "ipylsp" / "cells" / cells_place.shared_name(where) if others_write
                 else where)
        assert [d.parent for d in documents] == [place, place]
        assert [d.name for d in documents] == [f".ipylsp-cells-{k.pid}.py"
                                               for k in (first, second)]
        assert others_write == private.is_sealed(place)
        defined = first.run("def f(x: int) -> int:\n    return x")
        call = first.run("f('s')")
        unbound = second.run("print(f)")  # f is the first kernel's, never the second's
        typed = second.run("x: int = 's'")
        assert [defined.outputs, ours(call), ours(unbound), ours(typed)] == [[], [block(
            f"cell [{call.count}]",
            "ERROR [1:3] Argument to function `f` is incorrect: Expected `int`, found "
            '`Literal["s"]` [invalid-argument-type] (ty)',
        )], [block(
            f"cell [{unbound.count}]",
            "ERROR [1:7] Name `f` used when not defined [unresolved-reference, F821] (ty, Ruff)",
        )], [block(
            f"cell [{typed.count}]",
            'ERROR [1:10] Object of type `Literal["s"]` is not assignable to `int` '
            "[invalid-assignment] (ty)",
        )]]
        for k in (first, second):
            status = k.run("print(*(row.root for row in ipylsp.get_service().status()))")
            assert set(status.stdout.split()) == {str(place)}, status.outputs
    assert list(where.iterdir()) == []
