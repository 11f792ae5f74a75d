"""The persistent store across a kernel restart (issue 14), on real kernels driven by nbclient
and real ty behind a wire tap: the restarted kernel's first write of a file the store knows
costs no baseline round trip, and says the same; `%lsp diagnostics --cached` and
`%lsp cache` read the store; the CLI reads it with no server and no kernel running."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ipylsp.servers import executables
from ipylsp.store.db import VERSION
from tests.fixtures.lsp_tap import methods_about as wire
from tests.fixtures.lsp_tap import tapped
from tests.real_servers import DATA_DIR, require
from tests.test_ipython_kernel import Kernel, block, kernel_dir_for, seed_workspace

pytestmark = [pytest.mark.real, pytest.mark.timeout(240)]

V1 = "x: int = 1\nprint(undefined_a)\n"
V2 = "x: int = 1\nprint(undefined_a)\nprint(undefined_b)\n"


def configure(kernel: Kernel, log: Path, *, store: bool) -> None:
    command = executables.resolve(require("ty"), DATA_DIR).command
    assert command is not None
    for line in (
        "%load_ext ipylsp",
        '%config IPyLSP.language_servers = {"python": ["ty"]}',
        f'%config IPyLSP.servers = {{"ty": {{"command": {json.dumps(tapped(log, command))}}}}}',
        "%config IPyLSP.check_cells = False",
        f"%config IPyLSP.store = {store}",
        "%lsp stop",  # `%load_ext` started ty for the cells already: the tapped one replaces it
    ):
        cell = kernel.run(line)
        assert cell.error is None and not cell.displays, (line, cell.outputs)


def test_a_restarted_kernel_takes_its_baselines_from_the_store(tmp_path: Path) -> None:
    ws = seed_workspace(tmp_path)
    kernels = kernel_dir_for(tmp_path)
    log = tmp_path / "wire.log"  # one tap, one command: a stored answer is for the same server
    with Kernel(kernels, ws) as before_restart:
        configure(before_restart, log, store=True)
        first = before_restart.run(f"%%writefile app.py\n{V1}")
    assert "undefined_a" in first.displays[0]
    shown: dict[bool, list[str]] = {}
    wires: dict[bool, list[str]] = {}
    for store in (True, False):  # the same restart, with and without the store
        (ws / "app.py").write_text(V1)
        seen = len(wire(log, "app.py"))
        with Kernel(kernels, ws) as restarted:
            configure(restarted, log, store=store)
            shown[store] = restarted.run(f"%%writefile app.py\n{V2}").displays
        wires[store] = wire(log, "app.py")[seen:]
    expected = block(
        "app.py", "ERROR [3:7] Name `undefined_b` used when not defined [unresolved-reference] (ty)"
    )
    assert shown[True] == shown[False] == [expected]
    assert wires[False].count("textDocument/diagnostic") == 2  # the baseline, then V2
    assert wires[True] == [
        "textDocument/didOpen", "textDocument/didSave", "textDocument/diagnostic",
    ]


def test_the_store_is_read_with_no_server_running(tmp_path: Path) -> None:
    ws = seed_workspace(tmp_path)
    with Kernel(kernel_dir_for(tmp_path), ws) as kernel:
        configure(kernel, tmp_path / "wire.log", store=True)
        kernel.run(f"%%writefile app.py\n{V1}")
        kernel.run("import ipylsp\nipylsp.get_service().stop()")
        (ws / "app.py").write_text(V2)  # changed since ty answered
        cached = kernel.run("%lsp diagnostics --cached app.py")
        info = kernel.run("%lsp cache info")
    (text,) = [o["data"]["text/plain"] for o in cached.outputs if "data" in o]
    lines = text.splitlines()
    assert lines[0] == '<diagnostics file="app.py">'
    assert lines[1].startswith(
        "ERROR [2:7] Name `undefined_a` used when not defined [unresolved-reference] (ty, cached "
    ) and lines[1].endswith(" s ago, stale)")
    (summary,) = [o["data"]["text/plain"] for o in info.outputs if "data" in o]
    assert summary.endswith(f"(schema {VERSION})") and " answers for " in summary
    # no kernel, no server: the CLI reads the same store (IPYLSP_STORE, inherited)
    cli = subprocess.run(
        [str(Path(sys.executable).parent / "ipylsp"), "diagnostics", "app.py", "--json"],
        cwd=ws, capture_output=True, text=True, timeout=60, check=False,
    )
    assert cli.returncode == 1, cli.stderr
    (entry,) = json.loads(cli.stdout)["files"]
    assert entry["source"] == "cache"
    assert [(d["line"], d["cached"]["stale"]) for d in entry["diagnostics"]] == [(2, True)]
