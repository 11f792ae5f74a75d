"""Who binds and who reads each name (`analysis.cells.bindings`): a cell's scopes, and a
history's index, extended cell by cell as the same as one built at once. Pure."""

from __future__ import annotations

from ipylsp.analysis.cells import bindings
from ipylsp.analysis.cells.document import Cell, CellHistory, make_cell


def test_a_cells_reads_as_it_runs_and_in_its_functions() -> None:
    cell = make_cell("a", 1, "x = [v for v in data]\ndef f():\n    return g(y)\n"
                             "h = lambda: z\nclass C:\n    k = base\n"
                             "    def m(self):\n        return w")
    now, later = bindings.cell_reads(cell)
    assert {"data", "base"} <= now and not {"y", "z", "w"} & now
    assert later == {"g", "y", "z", "w"}
    plain = make_cell("b", 2, "total = price * count")
    assert bindings.cell_reads(plain) == (frozenset({"price", "count"}), frozenset())
    (statement,) = bindings.facts("@wrap\ndef f(a: int) -> int:\n    return a").statements
    assert statement.definition and statement.text.startswith("@wrap\n")


def _seen(index: bindings.Index) -> dict[str, object]:
    """What an index answers for each cell and name, whatever its history's past."""
    names = sorted({n for c in index.cells for n in c.binds | bindings.cell_reads(c)[1]})
    return {
        "cells": [index.position(c.key) for c in index.cells],
        "binders": {n: [index.cell(p).key for p in index.binders(n, index.end)] for n in names},
        "readers": {n: [index.cell(p).key for p in index.readers(n, index.end)] for n in names},
    }


def test_an_index_extended_cell_by_cell_answers_as_one_built_at_once() -> None:
    history = CellHistory(cap=5)
    cells: list[Cell] = []
    lineage = None
    for n in range(12):
        source = f"x{n % 3} = {n}\ndef f{n}():\n    return x{(n + 1) % 3}"
        cells.append(make_cell(f"k{n}", n, source))
        history = history.with_cell(cells[-1])
        grown = bindings.index(history.cells)
        fresh = bindings.Index.of(history.cells)
        assert _seen(grown) == {**_seen(fresh), "cells": [
            p + grown.base for p in _seen(fresh)["cells"]]}  # type: ignore[attr-defined]
        assert grown.base == max(0, n + 1 - 5)
        assert lineage is None or grown._shared is lineage  # extended, not rebuilt
        lineage = grown._shared
    assert grown.base == 7  # the cap dropped seven: positions stay where they were
    assert [grown.cell(p).key for p in grown.binders("x0", grown.end)] == ["k9"]
    # a cell replaced in place is another history: built anew, the same answers as ever
    replaced = history.with_cell(make_cell("k9", 99, "y = 1"))
    index = bindings.index(replaced.cells)
    assert list(index.binders("x0", index.end)) == []
    assert [index.cell(p).key for p in index.binders("y", index.end)] == ["k9"]
