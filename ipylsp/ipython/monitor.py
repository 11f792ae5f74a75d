"""What the cell's own code evaluated, recorded while it runs (`CellMonitor`).

The cell's own code is what IPython compiled from the cell: it `exec`s one code object per
top-level statement, named in its compiler's `_filename_map` with the cell's execution count,
and the functions, lambdas and class bodies the cell defines are constants of those. Nothing
else is watched: not the libraries the cell calls, not the cells before it.

- **Python 3.12+** (`sys.monitoring`): the audit hook's `exec` event hands each of the cell's
  code objects over before it runs; they (and the code objects they hold) get INSTRUCTION
  events, each instruction disabled after its first hit (a loop pays once per instruction,
  then runs at full speed), and while the cell runs RAISE events say where an exception was
  raised in, or passed through, the cell's code. The positions of those instructions
  (`co_positions`) are the evidence. At the cell's end every event is switched off again.
- **Before 3.12** nothing runs during the cell: `sys.settrace`, even with a global function
  that returns None for every frame but the cell's, makes all Python code several times slower
  (benchmarks/README.md, bench_cells.py --parts ran) because the interpreter leaves its
  specialized instructions while a trace function is set. What ran is read afterwards: every
  top-level statement before the one an exception left the cell from (its traceback) ran to its
  end, and `analysis.cells.ran` counts only what such a statement evaluates whenever it runs.

Never raises into the cell: a failure records nothing, and nothing recorded demotes nothing.
"""

from __future__ import annotations

import linecache
import logging
import sys
from types import CodeType
from typing import Any

from ipylsp.analysis.cells.ran import Position, Ran
from ipylsp.ipython import audit

log = logging.getLogger(__name__)

_monitoring: Any = getattr(sys, "monitoring", None)
"""`sys.monitoring` (Python 3.12+), or None."""
MONITORING = _monitoring is not None
_TOOL_IDS = (4, 3)
"""sys.monitoring tool ids tried, in order: the ones PEP 669 leaves unnamed (0 is debuggers',
1 coverage's, 2 profilers', 5 optimizers')."""
_TOOL_NAME = "ipylsp"


class CellMonitor:
    """Per shell: `begin` before a cell runs, `end` after it with IPython's result."""

    def __init__(self, shell: Any) -> None:
        self._shell = shell
        self._tool: int | None = None
        self._floor = -1
        """The highest execution count the compiler had named before this cell."""
        self._codes: dict[int, CodeType] = {}
        """The cell's code objects by id (a code object's hash reads its whole contents)."""
        self._hits: dict[int, list[int]] = {}
        """Offsets of the instructions that executed, per code object (by id)."""
        self._raised: dict[int, list[int]] = {}
        self._watching = False
        self._began = False
        self._listener = self._on_audit
        """The one bound method added to and removed from the audit hook's listeners (removal
        is by identity: a new `self._on_audit` each time would never be removed)."""
        self._recorded = False
        """This cell's run was watched (else only what IPython's result says is known)."""

    # -- while the cell runs -----------------------------------------------------------------

    def begin(self) -> None:
        try:
            self._codes, self._hits, self._raised = {}, {}, {}
            self._began, self._recorded = True, False
            names = self._names()
            self._floor = max(names.values(), default=-1) if names is not None else -1
            if not MONITORING or names is None or self._claim() is None:
                return
            _monitoring.set_events(self._tool_id, _monitoring.events.RAISE)
            audit.add_listener(self._listener)
            self._watching = self._recorded = True
        except Exception:  # never break the user's cell
            log.exception("ipylsp: could not watch what the cell runs")

    def _on_audit(self, event: str, args: tuple[Any, ...]) -> None:
        if event != "exec" or not self._watching:
            return
        try:
            code = args[0]
            names = self._names()
            if type(code) is CodeType and names is not None and (
                names.get(code.co_filename, -1) > self._floor
            ):
                self._watch(code)
        except Exception:  # an audit listener must never raise into exec()
            log.exception("ipylsp: could not watch a code object of the cell")

    def _watch(self, code: CodeType) -> None:
        if id(code) in self._codes:
            return
        self._codes[id(code)] = code
        self._hits[id(code)] = []
        _monitoring.set_local_events(self._tool_id, code, _monitoring.events.INSTRUCTION)
        for const in code.co_consts:
            if type(const) is CodeType:
                self._watch(const)

    def _on_instruction(self, code: CodeType, offset: int) -> object:
        self._hits[id(code)].append(offset)
        return _monitoring.DISABLE

    def _on_raise(self, code: CodeType, offset: int, exception: BaseException) -> None:
        if id(code) in self._codes:
            self._raised.setdefault(id(code), []).append(offset)

    # -- after it ----------------------------------------------------------------------------

    def end(self, result: Any) -> Ran | None:
        """What the cell that just ran evaluated (None: nothing to say, e.g. it did not
        compile, or its text is unknown, or `begin` did not run before it)."""
        if not self._began:
            return None
        self._began = False
        try:
            self._stop()
            return self._ran(result)
        except Exception:
            log.exception("ipylsp: could not read what the cell ran")
            return None
        finally:
            self._codes, self._hits, self._raised = {}, {}, {}

    def _stop(self) -> None:
        if not self._watching:
            return
        self._watching = False
        audit.remove_listener(self._listener)
        tool = self._tool_id
        _monitoring.set_events(tool, 0)
        for code in self._codes.values():
            _monitoring.set_local_events(tool, code, 0)

    def _ran(self, result: Any) -> Ran | None:
        info = getattr(result, "info", None)
        cell = getattr(info, "raw_cell", None)
        count = getattr(result, "execution_count", None)
        names = self._names()
        if (not isinstance(cell, str) or names is None
                or getattr(result, "error_before_exec", None) is not None):
            return None
        filename = next((n for n in reversed(names) if names[n] == count), None)
        if filename is None:
            return None
        entry: Any = linecache.cache.get(filename)  # IPython keeps the compiled text there
        if not isinstance(entry, tuple) or len(entry) < 3 or not isinstance(entry[2], list):
            return None
        source = "".join(entry[2])
        failed = _failed_line(getattr(result, "error_in_exec", None), filename)
        if not self._recorded:
            return Ran(cell, source, None, failed=failed)
        mine = {i: c for i, c in self._codes.items() if c.co_filename == filename}
        return Ran(cell, source, _positions(self._hits, mine, 0),
                   _positions(self._raised, mine, 1), failed)

    # -- the tool id --------------------------------------------------------------------------

    @property
    def _tool_id(self) -> int:
        assert self._tool is not None
        return self._tool

    def _claim(self) -> int | None:
        """A sys.monitoring tool id of ours (claimed once; None when all are taken)."""
        if self._tool is not None:
            return self._tool
        monitoring = _monitoring
        for tool in _TOOL_IDS:
            if monitoring.get_tool(tool) is not None:
                continue
            monitoring.use_tool_id(tool, _TOOL_NAME)
            monitoring.register_callback(tool, monitoring.events.INSTRUCTION, self._on_instruction)
            monitoring.register_callback(tool, monitoring.events.RAISE, self._on_raise)
            self._tool = tool
            return tool
        return None

    def close(self) -> None:
        """Switch everything off and give the tool id back (`%unload_ext`)."""
        try:
            self._stop()
            if self._tool is not None:
                _monitoring.free_tool_id(self._tool)
        except Exception:
            log.exception("ipylsp: could not stop watching cells")
        self._tool = None

    def _names(self) -> dict[str, int] | None:
        """The compiler's cell names -> execution counts (IPython's `CachingCompiler`)."""
        names = getattr(getattr(self._shell, "compile", None), "_filename_map", None)
        return names if isinstance(names, dict) else None


def _failed_line(error: object, filename: str) -> int | None:
    """The 0-based line of the cell's top-level code that an exception left the cell from."""
    tb = getattr(error, "__traceback__", None)
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            return int(tb.tb_lineno) - 1
        tb = tb.tb_next
    return None


def _positions(
    offsets: dict[int, list[int]], codes: dict[int, CodeType], following: int
) -> tuple[Position, ...]:
    """Where the instructions at these offsets of `codes` are (with the `following` next code
    units': a frame an exception passes through reports the code unit before the call), as
    `co_positions` says (one entry per 2-byte code unit)."""
    out: set[Position] = set()
    for key, found in offsets.items():
        code = codes.get(key)
        if code is None or not found:
            continue
        table: list[Position] = list(code.co_positions())  # type: ignore[attr-defined]
        units = [offset >> 1 for offset in found]
        out.update(map(table.__getitem__, units))
        for k in range(1, following + 1):
            out.update(table[min(unit + k, len(table) - 1)] for unit in units)
    return tuple(out)
