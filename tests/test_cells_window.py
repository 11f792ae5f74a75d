"""The window (`analysis.cells.window`): which cells a check's document holds, what stands in
for the others, and the text before. Pure: no server (`CellSession` on real ty + ruff with
more history than the window holds is in test_cells.py)."""

from __future__ import annotations

from ipylsp.analysis.cells import window
from ipylsp.analysis.cells.document import CellDocument, CellHistory, make_cell


def int_stubs(names: frozenset[str]) -> str:
    """A kernel whose values are all ints, but for `model` (a class it cannot name)."""
    return "".join(window.ANY_STUB.format(n) + "\n" if n == "model" else f"{n}: int = 0\n"
                   for n in sorted(names))


class Session:
    """`CellSession`'s use of the window, without servers: each run's (document, before)."""

    def __init__(self, names: frozenset[str] = frozenset(),
                 stubs: window.Stubs | None = int_stubs) -> None:
        self.history = CellHistory(cap=1000)
        self.last: CellDocument | None = None
        self.names = names
        self.stubs = stubs

    def run(self, key: str, source: str) -> tuple[CellDocument, CellDocument]:
        cell = make_cell(f"id:{key}", len(self.history.cells) + 1, source)
        after = self.history.with_cell(cell)
        document, before = window.documents(
            self.history, after, cell, self.last, self.names, self.stubs
        )
        self.history, self.last = after.kept(), document
        return document, before


def keys(document: CellDocument) -> list[str]:
    return [c.key.removeprefix("id:") for c in document.cells]


def header(document: CellDocument) -> str:
    return "".join(document.text.splitlines(keepends=True)[: document.header_lines])


def fillers(session: Session, count: int) -> None:
    for n in range(count):
        session.run(f"fill{n}", f"fill_{n} = {n}")


def test_new_cells_are_appended_within_the_window_then_cut() -> None:
    session = Session()
    document, before = session.run("a", "a = 1")
    assert (keys(document), before) == (["a"], window.EMPTY)  # nothing before: nothing to ask
    last = document
    document, before = session.run("b", "b = 2")
    assert keys(document) == ["a", "b"]
    assert before is last  # the document the servers last checked: its diagnostics are known
    sizes = []
    for n in range(2 * window.WINDOW_LINES):
        document, before = session.run(f"fill{n}", f"fill_{n} = {n}")
        sizes.append(len(document.cells))
        assert before is window.EMPTY or keys(before) == keys(document)[:-1]
    assert max(sizes) == window.WINDOW_LINES  # one line each: the window's lines, then a cut
    assert sizes.count(1) == 2  # cut twice, to the new cell alone


def test_a_rerun_brings_back_the_cells_it_breaks_and_compares_like_with_like() -> None:
    session = Session()
    session.run("define", "def area(w: int, h: int) -> int:\n    return w * h")
    session.run("call", "total = area(2, 3)")
    session.run("double", "twice = total * 2")  # reads what the caller bound
    session.run("lazy", "def later():\n    return area(1, 1)")  # a function that calls it
    session.run("other", "unrelated = 1")
    fillers(session, window.WINDOW_LINES + 10)
    document, before = session.run("define", "def area(w: int) -> int:\n    return w")
    assert keys(document) == ["define", "call", "double", "lazy"]
    assert keys(before) == keys(document)  # the same cells, the earlier definition
    assert "h: int" in before.text and "h: int" not in document.text
    # an edit that leaves every binding as it was brings nothing back
    session.run("edit", "x = 1")
    document, before = session.run("define", "def area(w: int) -> int:\n    return w\nprint(1)")
    assert keys(document) == keys(before) == ["define"]
    # the same cells again (an edit-run loop): the last document is the text before
    last, _ = session.run("define", "def area(w: str) -> int:\n    return 1\nprint(1)")
    document, before = session.run("define", "def area(w: str) -> int:\n    return 2\nprint(1)")
    assert before is last and keys(document) == keys(last)


def test_a_new_binding_brings_back_the_functions_that_read_it() -> None:
    session = Session()
    session.run("use", "def show():\n    return limit + 1")
    fillers(session, window.WINDOW_LINES + 5)
    document, before = session.run("bind", "limit = 'text'")
    assert keys(document) == ["use", "bind"] and keys(before) == ["use"]


def test_what_older_cells_defined_is_declared_by_their_own_statements() -> None:
    session = Session(names=frozenset({"rebound", "count", "np"}))
    session.run("imports", "import numpy as np")
    session.run("shape", "class Shape:\n    def __init__(self, n: int) -> None:\n"
                         "        self.n = n")
    session.run("helper", "def helper(s: Shape) -> int:\n    return s.n + count")
    session.run("count", "count = 3")
    session.run("rebound", "def rebound() -> int:\n    return 1")
    session.run("rebind", "rebound = 2")
    fillers(session, window.WINDOW_LINES + 5)
    document, _ = session.run("uses", "helper(Shape(2)) + rebound + np.pi")
    assert keys(document)[-1] == "uses" and not {"shape", "helper"} & set(keys(document))
    assert header(document).splitlines()[2:] == [
        "count: int = 0",  # what the kernel holds: its stub
        "np: int = 0",
        "rebound: int = 0",  # a def since rebound by an assignment: the kernel's value
        "class Shape:",  # the class the function's signature names comes first
        "    def __init__(self, n: int) -> None:",
        "        self.n = n",
        "def helper(s: Shape) -> int:",
        "    return s.n + count",
    ]
    assert document.place(document.header_lines - 1) is None  # the header is never reported


def test_a_value_the_kernel_cannot_type_or_no_kernel_is_declared_by_its_statement() -> None:
    cells = [("shape", "class Shape:\n    pass"), ("model", "import os\nmodel = Shape()"),
             ("size", "size = len(os.sep)\nsize = size + 1"), ("gone", "failed = 1")]
    kernel = Session(names=frozenset({"model", "size", "os", "Shape"}))
    alone = Session(stubs=None)  # outside a kernel: nothing holds a value
    for session in (kernel, alone):
        for key, source in cells:
            session.run(key, source)
        fillers(session, window.WINDOW_LINES + 5)
    with_kernel, _ = kernel.run("uses", "model, size, failed")
    assert header(with_kernel).splitlines()[2:] == [
        "size: int = 0",
        "class Shape:",
        "    pass",
        "model = Shape()",  # the kernel's stub said Any: the statement says Shape
    ]  # `failed` is not in the kernel: its cell failed, the name is undefined
    without, _ = alone.run("uses", "model, size, failed")
    assert header(without).splitlines()[2:] == [
        "class Shape:", "    pass", "import os", "model = Shape()",
        "size = len(os.sep)", "size = size + 1", "failed = 1",
    ]


def test_the_window_only_grows_at_the_end_of_the_history() -> None:
    """After a re-run brought old cells back, the next new cell does not grow that document
    (the cells between would be missing): it is cut to the new cell."""
    session = Session()
    session.run("define", "def f(x: int) -> int:\n    return x")
    session.run("call", "f(1)")
    fillers(session, window.WINDOW_LINES + 5)
    session.run("define", "def f(x: str) -> int:\n    return 1")
    document, before = session.run("next", "y = 1")
    assert (keys(document), before) == (["next"], window.EMPTY)


def test_a_seeded_cell_rerun_with_its_id_is_its_earlier_version() -> None:
    """Cells run before `%load_ext` are known by their source: run again with the front end's
    id, the seeded cell is its earlier version (replaced in place, compared with itself)."""
    session = Session()
    define = "def area(w: int, h: int) -> int:\n    return w * h"
    for key, source in [("src:define", define), ("src:call", "total = area(2, 3)")]:
        cell = make_cell(key, len(session.history.cells) + 1, source)
        session.history = session.history.with_cell(cell)
    fillers(session, window.WINDOW_LINES + 5)
    document, before = session.run("define", define)
    assert keys(document) == keys(before) == ["define"]  # the same code: nothing comes back
    assert document.text == before.text
    document, before = session.run("define", "def area(w: int) -> int:\n    return w")
    assert [c.key for c in document.cells] == [c.key for c in before.cells] == [
        "id:define", "src:call"]
