"""The cells sweep's machinery: real notebooks run cell by cell in real kernels with ipylsp
loaded, and what its reports said about each cell. `tests/test_cells_sweep.py` asserts on it;
`benchmarks/bench_sweep.py` counts it.

Each notebook runs in a kernel of its own (ipykernel through nbclient, `allow_errors`), in a
fresh git worktree holding a copy of the notebook's directory (its data files and local
modules), between cells of ours: `%load_ext ipylsp` with ty + ruff (`SERVERS`) and every
severity shown, uncapped; a preflight check that waits for the servers to start (the notebook's
cells are checked on warm servers, never cut by a first cell's budget); the notebook's code
cells; last, a cell that reads an undefined name, which every server must report in that cell,
so the check ran on this notebook and nothing hid it (ruff excepted after a star import: its
defaults then leave undefined names alone). Matplotlib draws with Agg: no images are rendered.

What each display's `application/vnd.ipylsp.diagnostics+json` says is located by cell: a
problem of an earlier cell shown under a later cell carries the earlier cell's execution count.
"""

from __future__ import annotations

import ast
import collections
import re
import shutil
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import nbformat
from nbclient.util import run_sync

from ipylsp.analysis.cells.attribution import UNDEFINED_NAME
from ipylsp.analysis.cells.imports import IMPORT_CODES, MODULE_MEMBER_CODES, MODULE_MEMBER_MESSAGES
from tests.notebook_sources import REPO, SOURCES
from tests.test_ipython_kernel import MIME, Kernel, kernel_dir_for, seed_workspace

SERVERS = ("ty", "ruff")
"""The servers the sweep checks with (the embedded default); `benchmarks/bench_sweep.py
--servers` measures others."""
UNDEFINED = {
    "ty": "unresolved-reference", "ruff": "F821", "basedpyright": "reportUndefinedVariable",
    "pyright": "reportUndefinedVariable", "pyrefly": "unknown-name",
}
"""Each server's code for the sentinel's undefined name."""


def setup(servers: Sequence[str]) -> str:
    return (
        "%load_ext ipylsp\n"
        f'%config IPyLSP.language_servers = {{"python": {list(servers)!r}}}\n'
        '%config IPyLSP.severity = "all"\n'
        "%config IPyLSP.max_per_file = 1000\n"
        "%config IPyLSP.max_per_report = 1000\n"
        "%config IPyLSP.max_report_chars = 0\n"
        "%config IPyLSP.wait_budget = 30"  # a busy machine: a check cut short proves nothing
    )
WARM = ("__import__('ipylsp').get_service().start('_ipylsp_warm.py', timeout=120)\n"
        "__import__('ipylsp').check('_ipylsp_warm.py', content='x = 1\\n');")
"""Started, then a first answer: basedpyright's first check of an environment with pandas and
statsmodels takes seconds, and a cell checked while its server starts is cut short."""
SENTINEL = "ipylsp_sweep_sentinel_name"
CELL_TIMEOUT = 120
"""Seconds one cell may run (nbclient's timeout): a notebook past it could not run."""

_STAR = re.compile(r"^\s*from\s+[\w.]+\s+import\s+\*", re.M)
SYNTAX_CODES = frozenset({"SyntaxError", "IndentationError", "TabError", "invalid-syntax"})
_MODULE = (*MODULE_MEMBER_MESSAGES, re.compile(r"is unknown import symbol"),
                   re.compile(r"^Submodule `\w+` might not have been imported"))


@dataclass(frozen=True)
class Notebook:
    """A notebook and the directory copied as its working directory."""

    source: str
    """Where it comes from: `<package>-<version>` of its sdist, or `notebooks` (ours)."""
    path: Path

    @property
    def id(self) -> str:
        return f"{self.source}/{self.path.name}"


def notebooks(
    excluded: Iterable[str] = (), only: str | None = None
) -> tuple[list[Notebook], list[str]]:
    """Every notebook of `SOURCES` and of this repository's `notebooks/` not `excluded` (by
    id), or those whose id contains `only`; and the sources whose notebooks are missing."""
    found = [Notebook("notebooks", p) for p in sorted((REPO / "notebooks").glob("*.ipynb"))]
    missing = []
    for source in SOURCES:
        paths = source.notebooks()
        if not paths:
            missing.append(source.name)
        found.extend(Notebook(source.name, p) for p in paths)
    skip = set(excluded)
    return [n for n in found if n.id not in skip and (only is None or only in n.id)], missing


@dataclass(frozen=True)
class Said:
    """One diagnostic as a report showed it, in its cell's lines (1-based)."""

    server: str
    code: str
    severity: str
    message: str
    line: int
    column: int
    demoted: bool
    """Shown as a warning because the cell's run disproved it (`ran_without_error`)."""

    @property
    def kind(self) -> str | None:
        """What the sweep holds against a false one: `syntax`, `undefined` (an undefined
        name) or `module` (an unresolved module or a missing member); None for the rest."""
        if self.code in SYNTAX_CODES or self.server == "ipylsp-syntax":
            return "syntax"
        if self.code in UNDEFINED_NAME:
            return "undefined"
        if self.code in IMPORT_CODES and self.code not in MODULE_MEMBER_CODES:
            return "module"
        if self.code in MODULE_MEMBER_CODES and any(p.search(self.message) for p in _MODULE):
            return "module"
        return None

    def __str__(self) -> str:
        mark = " (ran without error)" if self.demoted else ""
        return (f"{self.severity.upper()} [{self.line}:{self.column}] {self.message}{mark} "
                f"[{self.code}] ({self.server})")


@dataclass
class RanCell:
    """One of the notebook's code cells as it ran."""

    index: int
    """Its place among the notebook's code cells (0-based)."""
    source: str
    count: int | None
    error: tuple[str, str] | None
    """(exception name, message) when the cell raised."""
    said: list[Said] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return self.error is None and self.count is not None

    def evaluated(self, said: Said) -> bool:
        """Whether the cell's run certainly evaluated the place `said` points at (`EVALUATED`)."""
        return self.clean and (said.line, said.column) in _certain(self.source)

    def line(self, said: Said) -> str:
        lines = self.source.split("\n")
        return lines[said.line - 1].strip() if 0 < said.line <= len(lines) else "?"


@dataclass
class NotebookRun:
    notebook: Notebook
    cells: list[RanCell] = field(default_factory=list)
    failure: str | None = None
    """Why the notebook could not run to its end (a dead kernel, a cell past its timeout, our
    own cells failing); None when every cell ran."""
    sentinel: frozenset[str] = frozenset()
    """The codes reported in the sentinel cell."""
    sentinel_servers: frozenset[str] = frozenset()
    """The servers that answered the sentinel cell's check."""

    def sentinel_missing(self, servers: Sequence[str] = SERVERS) -> list[str]:
        """What the sentinel cell lacks: every server's answer and its report of the undefined
        name, but ruff's when a cell star-imports (ruff then leaves every undefined name alone
        by default)."""
        star = any(_STAR.search(cell.source) for cell in self.cells)
        wanted = {UNDEFINED[s] for s in servers if s in UNDEFINED and not (star and s == "ruff")}
        return sorted((wanted - self.sentinel) | (set(servers) - self.sentinel_servers))
    seconds: float = 0.0


EVALUATED = """The places a cell that ran without raising certainly evaluated, as the sweep
judges them on its own (not with ipylsp's code): its top-level statements as IPython reads
them, but not function, class or lambda bodies, the bodies of `if`, `for`, `while`, `try`,
`with` and `match`, nor the parts of an expression Python may skip (the operands after the
first of `and`/`or`, a conditional expression's branches, a comprehension's parts after its
first iterable). A report elsewhere on a clean cell is about code that may not have run."""

_SKIPPED_BODIES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


@lru_cache(maxsize=64)
def _certain(source: str) -> frozenset[tuple[int, int]]:
    """(line, column), 1-based code points, of every character `EVALUATED` counts."""
    from IPython.core.inputtransformer2 import TransformerManager

    try:
        text = TransformerManager().transform_cell(source)
        with warnings.catch_warnings():  # `'\d'` in a notebook's string: not ours to say
            warnings.simplefilter("ignore")
            tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return frozenset()
    lines = text.split("\n")
    if text.rstrip("\n").count("\n") != source.rstrip("\n").count("\n"):
        return frozenset()  # a cell magic folded the cell into one call: unsure
    spans: list[tuple[int, int, int, int]] = []
    for statement in tree.body:
        _evaluated(statement, spans)
    places = set()
    for line, column, end_line, end_column in spans:
        for n in range(line, end_line + 1):
            text_line = lines[n - 1].encode("utf-8")
            start = column if n == line else 0
            end = end_column if n == end_line else len(text_line)
            first = len(text_line[:start].decode("utf-8", "replace"))
            last = len(text_line[:end].decode("utf-8", "replace"))
            places.update((n, c + 1) for c in range(first, last))
    return frozenset(places)


def _evaluated(node: ast.AST, spans: list[tuple[int, int, int, int]]) -> None:
    """Adds the spans of `node` the run certainly evaluated (UTF-8 columns, as ast's)."""
    if isinstance(node, _SKIPPED_BODIES):
        for decorator in getattr(node, "decorator_list", ()):
            _evaluated(decorator, spans)
        return
    if isinstance(node, (ast.If, ast.While)):
        _evaluated(node.test, spans)
        return
    if isinstance(node, (ast.For, ast.AsyncFor)):
        _evaluated(node.iter, spans)
        return
    if isinstance(node, (ast.With, ast.AsyncWith)):
        for item in node.items:
            _evaluated(item.context_expr, spans)
        return
    if isinstance(node, ast.Match):
        _evaluated(node.subject, spans)
        return
    if isinstance(node, _TRY):
        return  # its body may have stopped anywhere
    if isinstance(node, ast.BoolOp):
        _evaluated(node.values[0], spans)
        return
    if isinstance(node, ast.Compare):
        _evaluated(node.left, spans)
        _evaluated(node.comparators[0], spans)
        return
    if isinstance(node, ast.IfExp):
        _evaluated(node.test, spans)
        return
    if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
        _evaluated(node.generators[0].iter, spans)
        return
    for child in ast.iter_child_nodes(node):
        _evaluated(child, spans)
    if isinstance(node, (ast.Name, ast.Constant, ast.Attribute, ast.Import, ast.ImportFrom)):
        spans.append((node.lineno, node.col_offset, node.end_lineno or node.lineno,
                      node.end_col_offset or node.col_offset))


_TRY = tuple(getattr(ast, name) for name in ("Try", "TryStar") if hasattr(ast, name))


def run(notebook: Notebook, tmp: Path, servers: Sequence[str] = SERVERS) -> NotebookRun:
    """`notebook` run in a kernel of its own, in a workspace under `tmp`."""
    started = time.monotonic()
    result = NotebookRun(notebook)
    for attempt in range(2):
        try:
            _run(notebook, tmp / f"try{attempt}", result, servers)
            result.failure = None
        except Exception as exc:  # a dead kernel, a timeout, nbclient's own errors
            result.failure = f"{type(exc).__name__}: {exc}".strip()[:2000]
            if isinstance(exc, RuntimeError) and str(exc).startswith(_NOT_STARTED):
                continue  # before any cell: the kernel's start, not the notebook
        break
    result.seconds = time.monotonic() - started
    return result


_NOT_STARTED = ("Kernel died before replying to kernel_info", "Kernel didn't respond")
"""How a kernel that never started fails (jupyter_client): on a busy machine a TCP port it was
given can be taken by another process's kernel first. It is started once more."""


def _run(notebook: Notebook, tmp: Path, result: NotebookRun, servers: Sequence[str]) -> None:
    nb = nbformat.read(notebook.path, as_version=4)
    tmp.mkdir(parents=True, exist_ok=True)
    ws = seed_workspace(tmp)
    shutil.copytree(notebook.path.parent, ws, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns(".git"))
    code = [c for c in nb.cells if c.cell_type == "code"]
    ours = [nbformat.v4.new_code_cell(text) for text in (setup(servers), WARM)]
    sentinel = nbformat.v4.new_code_cell(SENTINEL)
    # a last cell: where a server that answered the sentinel's check late reports it
    cells = [*ours, *code, sentinel, nbformat.v4.new_code_cell("pass")]
    kernel = Kernel(kernel_dir_for(tmp), ws, timeout=CELL_TIMEOUT)
    kernel.env["MPLBACKEND"] = "agg"
    with kernel as k:
        k.nb.cells = cells
        for index, cell in enumerate(cells):
            cell.outputs = []
            k.client.execute_cell(cell, index)
            if cell in ours and _error(cell) is not None:
                raise RuntimeError(f"our cell {cell.source!r} failed: {_error(cell)}")
        # killed, not asked to stop (2 s a notebook): ipylsp's watchdog ends its servers
        run_sync(k.client.km.shutdown_kernel)(now=True)  # type: ignore[union-attr]
    said = _said_by_count(cells)
    result.cells = [
        RanCell(i, c.source, c.get("execution_count"), _error(c),
                said.get(c.get("execution_count"), []))
        for i, c in enumerate(code)
    ]
    count = sentinel.get("execution_count")
    result.sentinel = frozenset(s.code for s in said.get(count, []))
    result.sentinel_servers = frozenset(
        server for output in sentinel.get("outputs", [])
        for entry in output.get("data", {}).get(MIME, {}).get("files", [])
        if entry.get("cell") == count for server in entry.get("servers", []))


def _error(cell: Any) -> tuple[str, str] | None:
    for output in cell.get("outputs", []):
        if output["output_type"] == "error":
            return str(output.get("ename")), str(output.get("evalue"))[:300]
    return None


def _said_by_count(cells: Sequence[Any]) -> dict[int, list[Said]]:
    found: dict[int, list[Said]] = collections.defaultdict(list)
    for cell in cells:
        for output in cell.get("outputs", []):
            if output["output_type"] not in ("display_data", "update_display_data"):
                continue
            report = output.get("data", {}).get(MIME)
            if not isinstance(report, dict):
                continue
            for entry in report.get("files", []):
                count = entry.get("cell")
                if not isinstance(count, int):
                    continue
                found[count].extend(
                    Said(str(d.get("server") or d.get("source")), str(d.get("code")),
                         str(d["severity"]), str(d["message"]).split("\n")[0], int(d["line"]),
                         int(d["column"]), bool(d.get("ran_without_error")))
                    for d in entry.get("diagnostics", [])
                )
    return {n: list(dict.fromkeys(said)) for n, said in found.items()}  # shown twice: once


class Sweep:
    """The notebooks run `workers` at a time, in the background, in their order; `result`
    waits for one."""

    def __init__(
        self, chosen: Sequence[Notebook], tmp: Path, workers: int = 2,
        servers: Sequence[str] = SERVERS,
    ) -> None:
        self.servers = tuple(servers)
        self._pool = ThreadPoolExecutor(max(1, workers), thread_name_prefix="sweep")
        self._futures: dict[str, Future[NotebookRun]] = {
            n.id: self._pool.submit(run, n, tmp / f"nb{i}", self.servers)
            for i, n in enumerate(chosen)
        }

    def result(self, notebook: Notebook) -> NotebookRun:
        return self._futures[notebook.id].result()

    def results(self) -> Iterator[NotebookRun]:
        for future in self._futures.values():
            yield future.result()

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


# -- what the runs show ---------------------------------------------------------------------------

ENVIRONMENT = frozenset({
    "ModuleNotFoundError", "URLError", "HTTPError", "ConnectionError", "gaierror",
    "RemoteDisconnected", "TimeoutError", "SSLError", "ProxyError", "ConnectTimeout",
})
"""Exceptions that say the notebook needs what the sweep does not have (a package, the
network): a notebook that raises one cannot run here, and is excluded by name or fails."""


@dataclass
class Counts:
    """The sweep's numbers (benchmarks/README.md: the cells sweep)."""

    notebooks: int = 0
    cells: int = 0
    cells_ran_clean: int = 0
    cells_raised: int = 0
    reports: int = 0
    """Diagnostics located in the notebooks' cells, every severity, demoted ones included."""
    errors: int = 0
    demoted: int = 0
    demoted_by_code: dict[str, int] = field(default_factory=dict)
    false_alarms: int = 0
    """ERRORs of a kind a clean run disproves (syntax, undefined name, unresolved module or
    missing member) on cells that ran without raising, not listed as true."""
    false_alarms_by_kind: dict[str, int] = field(default_factory=dict)
    errors_on_clean_cells: int = 0
    """Every ERROR on a cell that ran clean: the false alarms and the type checkers' other
    claims (argument types, ...), which a run does not disprove."""
    true_reports_on_raised_cells: int = 0
    """ERRORs located in cells that raised."""
    seconds: float = 0.0


def false_alarms(
    run_: NotebookRun, true: Callable[[str, RanCell, Said], bool]
) -> list[tuple[RanCell, Said]]:
    """ERRORs of a kind a clean run disproves, on cells that ran clean, unless `true` (the
    sweep's list of reports checked to be true: code that did not run)."""
    return [(cell, said) for cell in run_.cells if cell.clean for said in cell.said
            if said.severity == "error" and said.kind is not None and cell.evaluated(said)
            and not true(run_.notebook.id, cell, said)]


def count(runs: Iterable[NotebookRun], true: Callable[[str, RanCell, Said], bool]) -> Counts:
    counts = Counts()
    demoted: collections.Counter[str] = collections.Counter()
    kinds: collections.Counter[str] = collections.Counter()
    for run_ in runs:
        counts.notebooks += 1
        counts.seconds += run_.seconds
        for cell in run_.cells:
            counts.cells += 1
            counts.cells_ran_clean += cell.clean
            counts.cells_raised += cell.error is not None
            for said in cell.said:
                counts.reports += 1
                counts.errors += said.severity == "error"
                if said.demoted:
                    demoted[f"{said.server} {said.code}"] += 1
                if said.severity == "error" and cell.clean:
                    counts.errors_on_clean_cells += 1
                if said.severity == "error" and cell.error is not None:
                    counts.true_reports_on_raised_cells += 1
        for _, said in false_alarms(run_, true):
            kinds[said.kind or "?"] += 1
    counts.demoted = sum(demoted.values())
    counts.demoted_by_code = dict(demoted.most_common())
    counts.false_alarms = sum(kinds.values())
    counts.false_alarms_by_kind = dict(kinds.most_common())
    counts.seconds = round(counts.seconds, 1)
    return counts
