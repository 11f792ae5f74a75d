"""The cell check on real notebooks nobody here wrote says only what is true.

Every notebook of `tests/notebook_sources.py` (nbclient's test notebooks, IPython's example
notebooks, statsmodels' and python-control's, from their PyPI sdists, with what they import
installed by `scripts/bootstrap`) and of this repository's `notebooks/` runs cell by cell in a
real kernel with ipylsp loaded (`tests/notebook_sweep.py`: how, and on which servers), two
kernels at a time. Then, one test per category:

- every notebook runs to its end, and the check ran on it (its sentinel cell is reported); a
  notebook that needs what we cannot have (the network, a package we do not install, a kernel
  of its own to kill) or that takes too long for CI is excluded by name with the reason
  (`EXCLUDED`), never silently;
- no syntax ERROR on a cell IPython ran without a SyntaxError;
- no undefined-name ERROR, and no unresolved-module or missing-member ERROR, at a place a cell
  that ran without raising certainly evaluated (`notebook_sweep.EVALUATED`), except reports
  checked to be true (`TRUE`);
- every diagnostic the run demoted (`ran_without_error`) is of a (server, code) the table of
  docs/cells.md names (`ipylsp.analysis.cells.ran.DEMOTABLE`).

`IPYLSP_SWEEP=<part of a notebook id>` runs only the notebooks whose id contains it. Every
diagnostic the sweep saw is printed at the end of the module (`pytest -s`);
`benchmarks/bench_sweep.py` counts the same runs.
"""

from __future__ import annotations

import collections
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.notebook_sources import FETCH
from tests.notebook_sweep import (
    ENVIRONMENT,
    Notebook,
    NotebookRun,
    RanCell,
    Said,
    Sweep,
    count,
    false_alarms,
    notebooks,
)
from tests.real_servers import require

MINIMUM = 100
"""Notebooks nobody here wrote that the sweep must run (when it runs them all)."""

_NETWORK = "downloads its data (the network is not reachable from the tests)"
_DATAREADER = "imports pandas_datareader, which downloads its data"


def _slow(took: str) -> str:
    return (f"runs {took} with ipylsp, measured on 2 busy cores: over the sweep's share of CI's "
            "time (the whole suite runs on 2 cores)")


_PYMC3 = "imports pymc3 (and theano), which do not install beside numpy 2"
EXCLUDED = {
    "nbclient-0.11.0/Autokill.ipynb": "kills its own kernel (os.kill(os.getpid(), SIGTERM))",
    "nbclient-0.11.0/Interrupt.ipynb": "loops forever until the kernel is interrupted",
    "nbclient-0.11.0/Parallel Execute A.ipynb": "waits for its twin notebook run in parallel, "
    "in a directory nbclient's test framework passes in NBEXECUTE_TEST_PARALLEL_TMPDIR",
    "nbclient-0.11.0/Parallel Execute B.ipynb": "waits for its twin notebook run in parallel, "
    "in a directory nbclient's test framework passes in NBEXECUTE_TEST_PARALLEL_TMPDIR",
    "ipython-8.39.0/Rich Output.ipynb": "embeds a video it downloads (the network is not "
    "reachable from the tests)",
    "ipython-8.39.0/Script Magics.ipynb": "reads a `%%script --bg` pipe in a loop that never "
    "ends under nbclient (also without ipylsp: its cell times out)",
    "ipython-8.39.0/Terminal Usage.ipynb": "imports PyQt4 (Qt 4 bindings for Python 2)",
    "ipython-8.39.0/Third Party Rich Output.ipynb": "imports vincent and pandas.io.data, gone "
    "from PyPI and pandas, and downloads its data",
    "ipython-8.39.0/Working With External Code.ipynb": _NETWORK,
    "statsmodels-0.14.6/autoregressions.ipynb": _DATAREADER,
    "statsmodels-0.14.6/autoregressive_distributed_lag.ipynb": _NETWORK,
    "statsmodels-0.14.6/contrasts.ipynb": _NETWORK,
    "statsmodels-0.14.6/formulas.ipynb": _NETWORK,
    "statsmodels-0.14.6/generic_mle.ipynb": _NETWORK,
    "statsmodels-0.14.6/interactions_anova.ipynb": _NETWORK,
    "statsmodels-0.14.6/linear_regression_diagnostics_plots.ipynb": _NETWORK,
    "statsmodels-0.14.6/markov_autoregression.ipynb": _DATAREADER,
    "statsmodels-0.14.6/markov_regression.ipynb": _DATAREADER,
    "statsmodels-0.14.6/mixed_lm_example.ipynb": _NETWORK,
    "statsmodels-0.14.6/mstl_decomposition.ipynb": _NETWORK,
    "statsmodels-0.14.6/ordinal_regression.ipynb": _NETWORK,
    "statsmodels-0.14.6/recursive_ls.ipynb": _DATAREADER,
    "statsmodels-0.14.6/regression_diagnostics.ipynb": _NETWORK,
    "statsmodels-0.14.6/regression_plots.ipynb": _NETWORK,
    "statsmodels-0.14.6/robust_models_1.ipynb": _NETWORK,
    "statsmodels-0.14.6/rolling_ls.ipynb": _DATAREADER,
    "statsmodels-0.14.6/statespace_chandrasekhar.ipynb": _DATAREADER,
    "statsmodels-0.14.6/statespace_custom_models.ipynb": _PYMC3,
    "statsmodels-0.14.6/statespace_cycles.ipynb": _DATAREADER,
    "statsmodels-0.14.6/statespace_dfm_coincident.ipynb": _DATAREADER,
    "statsmodels-0.14.6/statespace_fixed_params.ipynb": _DATAREADER,
    "statsmodels-0.14.6/statespace_local_linear_trend.ipynb": _NETWORK,
    "statsmodels-0.14.6/statespace_news.ipynb": _DATAREADER,
    "statsmodels-0.14.6/statespace_sarimax_internet.ipynb": _NETWORK,
    "statsmodels-0.14.6/statespace_sarimax_pymc3.ipynb": _PYMC3,
    "statsmodels-0.14.6/statespace_sarimax_stata.ipynb": _NETWORK,
    "statsmodels-0.14.6/statespace_structural_harvey_jaeger.ipynb": _DATAREADER,
    "statsmodels-0.14.6/statespace_varmax.ipynb": _NETWORK,
    "statsmodels-0.14.6/theta-model.ipynb": _DATAREADER,
    "statsmodels-0.14.6/variance_components.ipynb": _slow("159 s (simulations)"),
    "statsmodels-0.14.6/statespace_tvpvar_mcmc_cfa.ipynb": _slow("a cell past 120 s (MCMC)"),
    "statsmodels-0.14.6/statespace_seasonal.ipynb": _slow("115 s (state space fits)"),
    "statsmodels-0.14.6/gee_score_test_simulation.ipynb": _slow("86 s (simulations)"),
    "statsmodels-0.14.6/mediation_survival.ipynb": _slow("33 s (simulations)"),
    "statsmodels-0.14.6/stl_decomposition.ipynb": _slow("31 s"),
    "control-0.10.2/cds112-L9_mhe-pvtol.ipynb": _slow("a cell past 120 s (moving horizon)"),
    "control-0.10.2/mhe-pvtol.ipynb": _slow("a cell past 120 s (moving horizon)"),
    "control-0.10.2/mpc_aircraft.ipynb": _slow("85 s (model predictive control)"),
    "control-0.10.2/cds110-L6a_kincar-trajgen.ipynb": _slow("48 s (trajectory optimization)"),
    "control-0.10.2/cds112-L3b_optimal.ipynb": _slow("45 s (optimal control)"),
    "control-0.10.2/cds112-L5_rhc-doubleint.ipynb": _slow("43 s (receding horizon control)"),
    "control-0.10.2/cds110-L6c_doubleint-rhc.ipynb": _slow("32 s (receding horizon control)"),
}
"""Notebooks not run, by id, and why (`test_the_notebooks_are_there` keeps the list true)."""

TRUE: dict[tuple[str, int, str, str], str] = {}
"""(notebook id, code cell index, server, code) -> why a report of a kind the sweep holds
against cells that ran clean is true there (the code it points at did not run)."""

pytestmark = [pytest.mark.real]


def _only() -> str | None:
    return os.environ.get("IPYLSP_SWEEP") or None


CHOSEN, MISSING = notebooks(EXCLUDED, _only())


def _true(notebook: str, cell: RanCell, said: Said) -> bool:
    return (notebook, cell.index, said.server, said.code) in TRUE


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sweep]:
    require("ty")
    require("ruff")
    running = Sweep(CHOSEN, tmp_path_factory.mktemp("sweep"), workers=2)
    try:
        yield running
    finally:
        running.close()
    _summary(list(running.results()))


def _summary(runs: list[NotebookRun]) -> None:
    counts = count(runs, _true)
    seen: collections.Counter[tuple[str, str, str, str]] = collections.Counter()
    where: dict[tuple[str, str, str, str], list[str]] = collections.defaultdict(list)
    for run in runs:
        for cell in run.cells:
            for said in cell.said:
                key = (said.severity + (" (demoted)" if said.demoted else ""), said.code,
                       said.server, said.message)
                seen[key] += 1
                state = "raised" if cell.error else "clean"
                where[key].append(f"{run.notebook.id} [{cell.index}] {state} {said.line}:"
                                  f"{said.column}: {cell.line(said)[:70]!r}")
    lines = [f"cells sweep: {counts}", f"diagnostics seen ({sum(seen.values())}):"]
    for key, n in seen.most_common():
        lines.append(f"  {n:3d}x {key[0]} [{key[1]}] ({key[2]}) {key[3]}")
        lines.extend(f"         at {w}" for w in where[key][:3])
    print("\n" + "\n".join(lines))


def test_the_notebooks_are_there() -> None:
    """Fails (never skips) when a source is missing: the sweep would silently shrink."""
    assert not MISSING, f"no notebooks of {MISSING} in .cache/notebooks: run {FETCH}"
    if _only() is None:
        theirs = [n for n in CHOSEN if n.source != "notebooks"]
        assert len(theirs) >= MINIMUM, (len(theirs), MINIMUM)
        every = {n.id for n in notebooks()[0]}
        assert set(EXCLUDED) <= every, sorted(set(EXCLUDED) - every)  # the list is not stale
        assert {notebook for notebook, *_ in TRUE} <= every


def _ran(run: NotebookRun) -> str:
    return f"{run.notebook.id} ({run.seconds:.0f} s)"


@pytest.mark.timeout(1800)
@pytest.mark.parametrize("notebook", CHOSEN, ids=lambda n: n.id)
def test_the_notebook_runs_and_is_checked(notebook: Notebook, sweep: Sweep) -> None:
    run = sweep.result(notebook)
    assert run.failure is None, f"{_ran(run)} could not run: {run.failure}"
    environment = [(cell.index, cell.error) for cell in run.cells
                   if cell.error is not None and cell.error[0] in ENVIRONMENT]
    assert not environment, (
        f"{_ran(run)} needs what the sweep does not have: {environment}; install it "
        "(tests/notebook_sources.py REQUIREMENTS) or exclude the notebook in EXCLUDED, with why")
    assert not run.sentinel_missing(), (
        f"{_ran(run)}: the sentinel cell lacks {run.sentinel_missing()} (codes "
        f"{sorted(run.sentinel)}): the check did not run, or an earlier cell hid it")


def _offenders(sweep: Sweep, kind: str) -> list[str]:
    found = []
    for run in sweep.results():
        for cell, said in false_alarms(run, _true):
            if said.kind == kind:
                found.append(f"{run.notebook.id} code cell {cell.index} (In [{cell.count}]): "
                             f"{said}  <- {cell.line(said)[:80]!r}")
    return found


@pytest.mark.timeout(1800)
def test_no_syntax_error_on_a_cell_ipython_ran(sweep: Sweep) -> None:
    wrong: list[str] = []
    for run in sweep.results():
        for cell in run.cells:
            if cell.count is None or (cell.error is not None and cell.error[0] in (
                    "SyntaxError", "IndentationError", "TabError")):
                continue
            wrong.extend(f"{run.notebook.id} code cell {cell.index} (In [{cell.count}]): {s}  "
                         f"<- {cell.line(s)[:80]!r}" for s in cell.said
                         if s.kind == "syntax" and s.severity == "error")
    assert not wrong, "\n".join(wrong)


@pytest.mark.timeout(1800)
def test_no_undefined_name_on_a_cell_that_ran_clean(sweep: Sweep) -> None:
    wrong = _offenders(sweep, "undefined")
    assert not wrong, "\n".join(wrong)


@pytest.mark.timeout(1800)
def test_no_unresolved_module_or_missing_member_on_a_cell_that_ran_clean(sweep: Sweep) -> None:
    wrong = _offenders(sweep, "module")
    assert not wrong, "\n".join(wrong)


@pytest.mark.timeout(1800)
def test_every_demoted_diagnostic_is_of_a_code_the_docs_name(sweep: Sweep) -> None:
    from ipylsp.analysis.cells.ran import DEMOTABLE

    doc = (Path(__file__).resolve().parent.parent / "docs" / "cells.md").read_text()
    demoted: collections.Counter[tuple[str, str]] = collections.Counter(
        (said.server, said.code) for run in sweep.results() for cell in run.cells
        for said in cell.said if said.demoted)
    unnamed = {key: n for key, n in demoted.items()
               if key not in DEMOTABLE or f"| {key[0]} | `{key[1]}` |" not in doc}
    assert not unnamed, unnamed
