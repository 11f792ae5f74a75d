"""Kernels on the broker (issue 31, docs/broker.md): real ipykernels driven by nbclient
(tests/test_ipython_kernel.py's harness) with the broker on, real brokers, real ty and ruff.

Each test gets a runtime directory of its own (`XDG_RUNTIME_DIR`, short and 0700 in /tmp: the
broker's place), a git workspace below the run's private directory, and kernels whose
environment is tests/test_broker.py's `Site.env` (the broker on, unless a kernel is the
in-process reference with `IPYLSP_BROKER=0`). Kernels and brokers run a copy of the package
made when the module starts (`PYTHONPATH`, as in test_broker): a broker serves only clients of
its build, and an edit in the working tree meanwhile would otherwise split one test's kernels
between two brokers. The test process asks the broker with `ipylsp broker status` (a process of
its own, whose session the status lists among the clients: its pid is known).

Every wait is for a condition with a deadline (`wait_exited`, `_until`); nothing sleeps to
synchronize and nothing asserts a duration. Every broker a test started is stopped at its
teardown.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ipylsp.lsp.procfs import carrying, descendants, running, wait_exited
from tests import test_broker
from tests.conftest import cmdline
from tests.test_broker import Site, _until, names, servers_of
from tests.test_ipython_kernel import MIME, Cell, Kernel, block, kernel_dir_for, ty_assign

pytestmark = [pytest.mark.real, pytest.mark.timeout(240)]

package = test_broker.package  # the module's copy of the package (module doc)
site = test_broker.site  # a git workspace (its files are test_broker's) and a runtime directory

BAD = 'x: int = "s"\n'
WRITE_BAD = f"%%writefile bad.py\n{BAD}"
CELL_ERROR = 'y: int = "s"'
"""A cell whose own code has an error (reported at `cell [n]`)."""
ERROR = ty_assign(1, 'Literal["s"]')
SHARED = ("nothing {done}: these servers are shared with 1 other client of the broker "
          "(kernels, `ipylsp mcp`); `%lsp {line} --shared` {action}s them for all")
IN_PROCESS = "this kernel's servers run in it, not in the broker: "
"""How `%lsp status` says why a kernel does not use the broker."""
OFF = f"{IN_PROCESS}the broker is off (IPyLSP.broker, IPYLSP_BROKER)"


def kernel(site: Site, *, broker: bool = True, kernel_dir: Path | None = None) -> Kernel:
    """A kernel in the workspace with the site's environment (the broker on, or off)."""
    made = Kernel(kernel_dir or kernel_dir_for(site.top), site.ws,
                  ipython_dir=site.top / "ipython")
    made.env = {**site.env(broker=broker), "IPYTHONDIR": str(site.top / "ipython"),
                "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
    return made


def ours(cell: Cell) -> list[dict[str, Any]]:
    """ipylsp's displays of a cell (text, HTML and JSON)."""
    return [dict(o["data"]) for o in cell.outputs
            if o["output_type"] == "display_data" and MIME in o["data"]]


def texts(cell: Cell) -> list[str]:
    return [data["text/plain"] for data in ours(cell)]


def same_display(cell: Cell, pid: int) -> list[str]:
    """A cell's displays, every MIME type, with its kernel's pid (which names the cells'
    document) made neutral: what kernels on the broker and in-process must show alike."""
    text = json.dumps(ours(cell), sort_keys=True)
    return [text.replace(f".ipylsp-cells-{pid}.py", ".ipylsp-cells-PID.py")]


def write_bad(k: Kernel, site: Site) -> Cell:
    """`%%writefile bad.py` as a new file (the test removes the one an earlier kernel wrote:
    what this kernel's write introduced is then the whole file, in every kernel)."""
    (site.ws / "bad.py").unlink(missing_ok=True)
    return k.run(WRITE_BAD)


def broker_status(site: Site) -> tuple[dict[str, Any], int]:
    """`ipylsp broker status`'s JSON and the pid of the process that asked (a client of the
    broker while it asks)."""
    with subprocess.Popen(
        [sys.executable, "-m", "ipylsp.cli", "broker", "status"], cwd=site.ws, env=site.env(),
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    ) as asker:
        out, err = asker.communicate(timeout=60)
    assert asker.returncode == 0 and out.startswith("{"), (out, err)
    info: dict[str, Any] = json.loads(out)
    return info, asker.pid


def clients(info: dict[str, Any]) -> list[int]:
    return sorted(row["pid"] for row in info["clients"])


def own_servers(pid: int, broker: int) -> list[str]:
    """The language servers in a kernel's process tree, the broker's left out (a kernel that
    started the broker is its parent)."""
    tree = set(descendants(pid)) - {broker, *descendants(broker)}
    return [name for name in names(sorted(tree)) if name in ("ty", "ruff")]


def servers_below(pid: int, server: str) -> list[int]:
    """The live `server` processes below `pid` (a broker's or a kernel's language servers)."""
    return [below for below in descendants(pid) if names([below]) == [server]]


def ours_alive(site: Site) -> list[tuple[int, str]]:
    """Live processes of this test: its kernels and everything they started (brokers, their
    servers and watchdogs) inherit its runtime directory."""
    return [(pid, cmdline(pid)) for pid in carrying("XDG_RUNTIME_DIR", str(site.runtime))
            if running(pid)]


def summary_line(broker: int, build: str, others: int) -> str:
    """`client.summary`'s line for a broker of one context serving ty and ruff (their memory
    and its own as digits)."""
    return (rf"broker: pid {broker} \(build {re.escape(build)}\), {others} other "
            rf"client{'s' if others != 1 else ''}, 1 context\(s\); servers: "
            r"(ty running \d+ MB, ruff|ruff running \d+ MB, ty) running \d+ MB; itself \d+ MB; "
            r"ends after "
            r"\d+ s idle \(`ipylsp broker stop` ends it now\)")


# -- 1, 2. two kernels, one broker, the in-process kernel's reports ------------------------------


def test_two_kernels_share_one_brokers_servers_and_report_what_an_in_process_kernel_does(
    site: Site,
) -> None:
    with kernel(site, broker=False) as alone, kernel(site) as first, kernel(site) as second:
        shown: dict[int, tuple[Cell, Cell]] = {}
        for k in (alone, first, second):
            assert k.run("%load_ext ipylsp").outputs == []
            wrote, cell = write_bad(k, site), k.run(CELL_ERROR)
            assert texts(wrote) == [block("bad.py", ERROR)], wrote.outputs
            assert texts(cell) == [block(f"cell [{cell.count}]", ERROR)], cell.outputs
            shown[k.pid] = wrote, cell
        # the broker's kernels show what the in-process kernel shows, every MIME type
        reference = [same_display(c, alone.pid) for c in shown[alone.pid]]
        for k in (first, second):
            assert [same_display(c, k.pid) for c in shown[k.pid]] == reference

        # 2. `%lsp status`: the broker's line, and its servers; the in-process kernel says
        # why its servers run in it, and nothing of the broker that runs
        status = (first.run("%lsp status").result or "").splitlines()
        [broker] = site.brokers()
        info, asker = broker_status(site)
        [ty], [ruff] = servers_of(info), servers_of(info, "ruff")
        assert info["pid"] == broker
        assert re.fullmatch(summary_line(broker, info["build"], 1), status[0]), status
        assert {f"ty    running  {site.ws}  pid {ty}  (process {broker})",
                f"ruff  running  {site.ws}  pid {ruff}  (process {broker})",
                "checking cell writes: on, cells' code: on"} <= set(status), status
        assert not any(line.startswith(IN_PROCESS) for line in status), status
        alone_status = (alone.run("%lsp status").result or "").splitlines()
        [own_ty], [own_ruff] = servers_below(alone.pid, "ty"), servers_below(alone.pid, "ruff")
        assert {OFF, f"ty    running  {site.ws}  pid {own_ty}  (this process)",
                f"ruff  running  {site.ws}  pid {own_ruff}  (this process)",
                "checking cell writes: on, cells' code: on"} <= set(alone_status), alone_status
        assert not any(line.startswith("broker:") for line in alone_status), alone_status

        # 1. one ty and one ruff for the workspace, the broker's; two kernels (and the asker)
        # in one context
        assert sorted((row["server"], row["root"]) for row in info["servers"]) == [
            ("ruff", str(site.ws)), ("ty", str(site.ws))], info["servers"]
        assert clients(info) == sorted([first.pid, second.pid, asker])
        contexts = {row["pid"]: row["context"] for row in info["clients"]}
        assert contexts[first.pid] == contexts[second.pid]
        assert {ty, ruff} <= set(descendants(broker))
        # no language server in either kernel's process tree; the in-process kernel's has
        # its own (what the check would see)
        assert own_servers(first.pid, broker) == []
        assert own_servers(second.pid, broker) == []
        assert own_servers(alone.pid, broker) == ["ruff", "ty"]

        # the Python API in a kernel is its extension's service: it hands over what the cell
        # hooks found, and its checks start no server in the kernel
        handed = [k.run("import ipylsp; ipylsp.pending()").result for k in (alone, first)]
        assert handed[0] == handed[1] == block("bad.py", ERROR), handed
        checked = [k.run("ipylsp.check('bad.py', before='')").result for k in (alone, first)]
        assert checked[0] == checked[1] == block("bad.py", ERROR), checked
        assert own_servers(first.pid, broker) == []


# -- 3. %lsp stop and restart reach shared servers only with --shared -----------------------------


def test_restart_leaves_servers_another_kernel_uses_unless_shared(site: Site) -> None:
    with kernel(site) as first, kernel(site) as second:
        for k in (first, second):
            assert k.run("%load_ext ipylsp").outputs == []
            assert texts(write_bad(k, site)) == [block("bad.py", ERROR)]
        # the servers as /proc has them: a status asked here would be a session of its own
        # in the broker until it has seen the asker go, and count as another client
        [broker] = site.brokers()
        [ty], [ruff] = servers_below(broker, "ty"), servers_below(broker, "ruff")

        assert first.run("%lsp restart").result == SHARED.format(
            done="restarted", line="restart", action="restart")
        assert second.run("%lsp stop ty").result == SHARED.format(
            done="stopped", line="stop ty", action="stop")
        assert (servers_below(broker, "ty"), servers_below(broker, "ruff")) == ([ty], [ruff])

        assert first.run("%lsp restart --shared").result == (
            "restarted 2 servers (they start on next use) (the broker's, for every client)")
        assert wait_exited([ty, ruff], 30.0) == []
        # the next checks, in both kernels, on servers started again
        assert texts(first.run("%%writefile c.py\n" + BAD)) == [block("c.py", ERROR)]
        assert texts(second.run("%%writefile d.py\n" + BAD)) == [block("d.py", ERROR)]
        cell = second.run(CELL_ERROR)
        assert texts(cell) == [block(f"cell [{cell.count}]", ERROR)]
        cell = first.run(CELL_ERROR)
        assert texts(cell) == [block(f"cell [{cell.count}]", ERROR)]
        after, _ = broker_status(site)
        [new_ty], [new_ruff] = servers_of(after), servers_of(after, "ruff")
        assert new_ty not in (ty, ruff) and new_ruff not in (ty, ruff)
        assert after["pid"] == broker
        assert [row["state"] for row in after["servers"]] == ["running", "running"]


# -- 4, 5. a killed kernel leaves; a killed broker is replaced within the next check --------------


def test_a_killed_kernel_leaves_the_broker_and_a_killed_broker_is_replaced_in_the_call(
    site: Site,
) -> None:
    # a broker started by these kernels ends 1 s after its last client (the end of the test)
    kernels = kernel_dir_for(site.top, "--IPyLSP.broker_idle=1")
    with kernel(site, kernel_dir=kernels) as first, kernel(site, kernel_dir=kernels) as second:
        for k in (first, second):
            assert k.run("%load_ext ipylsp").outputs == []
            assert texts(write_bad(k, site)) == [block("bad.py", ERROR)]
        info, asker = broker_status(site)
        broker = info["pid"]
        assert info["idle_after"] == 1.0
        assert clients(info) == sorted([first.pid, second.pid, asker])
        [ty], [ruff] = servers_of(info), servers_of(info, "ruff")

        # 5. SIGKILL a kernel (the one whose cells started the broker: its parent): the
        # broker drops its session and carries on, its servers with it
        assert broker in descendants(first.pid)
        os.kill(first.pid, signal.SIGKILL)
        assert wait_exited([first.pid], 30.0) == []
        seen: list[tuple[dict[str, Any], int]] = []

        def dropped() -> bool:
            seen.append(broker_status(site))
            return first.pid not in clients(seen[-1][0])

        _until(dropped, 30.0, "the broker drops the killed kernel's session")
        found, asking = seen[-1]
        assert clients(found) == sorted([second.pid, asking])
        assert (found["pid"], servers_of(found), servers_of(found, "ruff")) == (
            broker, [ty], [ruff])
        assert texts(second.run("%%writefile c.py\n" + BAD)) == [block("c.py", ERROR)]
        cell = second.run(CELL_ERROR)
        assert texts(cell) == [block(f"cell [{cell.count}]", ERROR)]

        # 4. SIGKILL the broker between two cells: its watchdog kills its servers; the next
        # cell's check starts a new broker and reports as before, cells included
        below = descendants(broker)
        assert {ty, ruff} <= set(below)
        os.kill(broker, signal.SIGKILL)
        assert wait_exited([broker, *below], 30.0) == []
        assert texts(second.run("%%writefile d.py\n" + BAD)) == [block("d.py", ERROR)]
        cell = second.run('w: int = "s"')
        assert texts(cell) == [block(f"cell [{cell.count}]", ERROR)]
        [replaced] = site.brokers()
        assert replaced != broker and replaced in descendants(second.pid)
        # what the end of the test must see gone: the broker, its watchdog and servers
        assert {replaced, *descendants(replaced)} <= {pid for pid, _ in ours_alive(site)}
        assert {"ty", "ruff"} <= set(names(descendants(replaced)))
        assert own_servers(second.pid, replaced) == []  # on the broker, not in-process
        status = (second.run("%lsp status").result or "").splitlines()
        now, _ = broker_status(site)
        assert (now["pid"], now["idle_after"]) == (replaced, 1.0)
        assert re.fullmatch(summary_line(replaced, now["build"], 0), status[0]), status
        assert not any(line.startswith(IN_PROCESS) for line in status), status
        # what the killed broker owed this kernel, the new broker's session took over: one
        # hand-over of it and of what the new one owes (tests/test_broker_owed.py counts them)
        assert second.run("%lsp pending").result == "\n".join([
            block("bad.py", ERROR), block("c.py", ERROR), block("d.py", ERROR)])
        assert second.run("%lsp pending").result == "nothing pending"

    # everything ended: the kernels, then the broker (idle for 1 s), its servers and its
    # watchdog with it; nothing of this test is left
    alive = ours_alive(site)
    wait_exited([pid for pid, _ in alive], 30.0)
    assert ours_alive(site) == []
    assert site.brokers() == []


# -- a kernel's own knobs change in its session ----------------------------------------------------


def test_cd_and_a_display_knob_keep_the_kernels_session_its_pending_and_its_servers(
    site: Site,
) -> None:
    """`%cd` and `%config IPyLSP.severity` change the kernel's own knobs in its broker
    session: what its writes introduced stays pending, and its servers stay the context's."""
    (site.ws / "sub").mkdir()
    with kernel(site) as k:
        assert k.run("%load_ext ipylsp").outputs == []
        assert texts(write_bad(k, site)) == [block("bad.py", ERROR)]
        [ty] = servers_below(site.brokers()[0], "ty")
        assert k.run("%cd sub").error is None
        assert k.run("%config IPyLSP.severity = 'all'").error is None
        assert k.run("%lsp pending").result == block("bad.py", ERROR)  # still owed
        info, _ = broker_status(site)
        assert info["contexts"] == 1 and servers_of(info) == [ty]
        status = k.run("%lsp status").result or ""
        assert IN_PROCESS not in status, status


def test_a_kernel_that_checked_nothing_there_does_not_hold_back_a_restart(site: Site) -> None:
    """A client counts as using a server once it checked a file (or sent its cells) below its
    root: an idle kernel attached to the broker does not make the servers shared."""
    with kernel(site) as first, kernel(site) as second:
        for k in (first, second):
            assert k.run("%load_ext ipylsp").outputs == []
        assert texts(write_bad(first, site)) == [block("bad.py", ERROR)]
        assert "broker: pid" in (second.run("%lsp status").result or "")  # attached, idle
        assert first.run("%lsp restart").result == (
            "restarted 2 servers (they start on next use)")
        assert texts(write_bad(second, site)) == [block("bad.py", ERROR)]  # now it uses them
        assert first.run("%lsp restart").result == SHARED.format(
            done="restarted", line="restart", action="restart")


# -- queries: `%lsp hover` and its kin are the broker's ------------------------------------------

AREA = (
    "def area(side: float) -> float:\n"
    "    return side * side\n"
    "\n"
    "\n"
    "def report() -> float:\n"
    "    return area(2.0) + area(3.0)\n"
)
QUERIES = (
    "%lsp hover area.py:6:12",
    "%lsp references area.py:1:5",
    # a feature with parameters, through the Python API: the kernel's service is the broker's
    "import ipylsp\nfrom ipylsp.lsp.requests.calls import CALLS\n"
    "ipylsp.get_service().feature(CALLS.given('outgoing'), 'area.py', 4, 4)",
    # an agent's tool in the kernel: relayed whole (its features would start servers here)
    "from ipylsp.agent import call_tool\n"
    "print(call_tool('lsp_references', {'path': 'area.py', 'line': 1, 'symbol': 'area'}).text)",
)


def test_a_kernels_queries_are_answered_by_the_brokers_servers_as_in_process(
    site: Site,
) -> None:
    """`%lsp hover`, `%lsp references`, calls (outgoing) and an agent's tool
    (`ipylsp.agent.call_tool`) in a kernel on the broker answer what an in-process kernel
    answers, from the broker's servers: none starts in the kernel, and `%lsp status` shows
    none of its own."""
    with kernel(site, broker=False) as alone, kernel(site) as k:
        answers: dict[int, list[str | None]] = {}
        for each in (alone, k):
            assert each.run("%load_ext ipylsp").outputs == []
            assert texts(each.run("%%writefile area.py\n" + AREA)) == []  # clean
            answers[each.pid] = [each.run(query).result for query in QUERIES[:3]]
            answers[each.pid].append(each.run(QUERIES[3]).stdout)
        hover, references, calls, tool = answers[k.pid]
        assert answers[k.pid] == answers[alone.pid]
        assert hover is not None and "def area(side: float) -> float" in hover, hover
        assert references == "area.py:1:5\narea.py:6:12\narea.py:6:24", references
        assert calls == "function report [area.py:5:5]\n  function area [area.py:1:5]", calls
        assert tool is not None and "area.py:6:12" in tool and "area.py:1:5" in tool, tool

        [broker] = site.brokers()
        assert own_servers(k.pid, broker) == []
        assert servers_below(broker, "ty") != []
        status = (k.run("%lsp status").result or "").splitlines()
        assert status[0].startswith(f"broker: pid {broker} "), status
        assert not any("(this process)" in line or line.startswith(IN_PROCESS)
                       for line in status), status
        assert k.run("ipylsp.get_service()._local is None").result == "True"
