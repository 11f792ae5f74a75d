"""ipylsp where admins run it: a real JupyterHub (tests/hub.py: its local-process spawner,
configurable-http-proxy, two system users), each user's server running as that user in their
home directory, reached through the hub's proxy with the user's own API token.

- a user's routes (`/user/NAME/ipylsp/api/...`) and MCP over HTTP answer with their token, and
  refuse the other user's;
- a kernel in the home directory (where the hub opens every user) reports what a write
  introduced;
- the other user plants, in the TMPDIR every user shares, every path a clean run made there
  and the configuration servers read from parent directories: nothing of it is adopted;
- the hub stops a server that served MCP calls (with SIGINT) at once and cleanly: its language
  servers and its kernel's gone, no status file left.

Needs root, the users, their environment and configurable-http-proxy (`scripts/bootstrap`): without
them this fails, naming the fix. Timing is in benchmarks/bench_hub.py, not here.
"""

from __future__ import annotations

import asyncio
import os
import pwd
from collections.abc import Iterator
from pathlib import Path

import pytest

from ipylsp.agent import tool_schemas
from ipylsp.lsp.procfs import descendants, wait_exited
from ipylsp.lsp.procfs import running as is_running
from ipylsp.server.handlers import NO_TOKEN
from tests.conftest import MARKER, MARKER_VAR, cmdline
from tests.hub import (
    USERS,
    Hub,
    RemoteKernel,
    call,
    empty_home,
    home,
    processes_of,
    require_hub,
    write_as,
)
from tests.test_cells_kernel import ours
from tests.test_ipython_kernel import block
from tests.test_private import (
    UNDEFINED,
    UNDEFINED_LINE,
    planting,
    result,
    sticky_dir,
    tree,
)
from tests.test_server_mcp_http import BROKEN, _session

pytestmark = [pytest.mark.real, pytest.mark.timeout(240)]

ALICE, BOB = USERS
TOTL = "ERROR [4:7] Name `totl` used when not defined [unresolved-reference, F821] (ty, Ruff)"
WARM = "import ipylsp\n_ = ipylsp.check_cell('pass')"
"""A cell that waits for the cells' servers to start (a cell's own check does not: it would
report without ty while ty starts)."""
PROMPT_S = 45
"""How long a test waits for a stopped server to exit: generous, and shorter than the hub's
wait after SIGINT (`Hub(interrupt_timeout=60)`), so an exit within it was SIGINT's doing."""


class Site:
    """The hub, the shared TMPDIR, the users' tokens and Alice's kernel in her home."""

    def __init__(self, hub: Hub, shared: Path) -> None:
        self.hub = hub
        self.shared = shared
        self.tokens = {name: hub.token(name) for name in USERS}

    def url(self, name: str, path: str) -> str:
        return f"{self.hub.server_url(name)}{path}"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    require_hub()
    for name in USERS:
        left = processes_of(name)
        assert not left, f"{name} still runs processes of an earlier run: {left}"
        empty_home(name)
    for name in USERS:
        write_as(name, home(name) / "app.py", BROKEN)  # MCP checks it
        write_as(name, home(name) / "rest.py", BROKEN)  # the REST route checks it
    # The broker off, as for the rest of the suite (the spawner passes on none of its
    # environment): these servers and kernels run their own language servers, below them.
    with sticky_dir() as shared, Hub(
        tmp_path_factory.mktemp("hub"),
        {"TMPDIR": str(shared), MARKER_VAR: MARKER, "IPYLSP_BROKER": "0"},
        interrupt_timeout=60,
    ) as hub:
        hub.spawn(*USERS)
        yield Site(hub, shared)


@pytest.fixture(scope="module")
def alice_kernel(site: Site) -> Iterator[RemoteKernel]:
    """A kernel of Alice's server, started in her home directory."""
    with RemoteKernel(site.hub.server_url(ALICE), site.tokens[ALICE]) as kernel:
        yield kernel


def test_a_users_routes_answer_with_their_token(site: Site) -> None:
    token = site.tokens[ALICE]
    status, answer = call(site.url(ALICE, "ipylsp/api/status"), token=token)
    assert status == 200, answer
    status, answer = call(site.url(ALICE, "ipylsp/api/check"), "POST", token, {"path": "rest.py"})
    assert status == 200, answer
    (checked,) = answer["files"]
    assert checked["absolute_path"] == str(home(ALICE) / "rest.py")
    assert [(d["code"], d["line"]) for d in checked["diagnostics"]] == [
        ("unresolved-reference", 4), ("F821", 4)
    ]


def test_mcp_over_http_through_the_proxy(site: Site) -> None:
    names, checked, refused = asyncio.run(_session(
        site.url(ALICE, "ipylsp/mcp"), {"Authorization": f"token {site.tokens[ALICE]}"}
    ))
    assert names == [t["name"] for t in tool_schemas("mcp")]
    assert checked == (False, [block("app.py", TOTL)])  # (isError, the text blocks)
    assert refused[0]  # ../outside.py: outside her home, the server's root


@pytest.mark.parametrize("route", ["api/status", "api/check", "mcp"])
def test_the_other_users_token_is_refused(site: Site, route: str) -> None:
    bobs = site.tokens[BOB]
    method, body = ("GET", None) if route == "api/status" else ("POST", {"path": "rest.py"})
    if route == "mcp":
        body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"}}}
    status, answer = call(site.url(ALICE, f"ipylsp/{route}"), method, bobs, body, headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
    assert status == 403, answer
    assert answer["message"] == NO_TOKEN
    status, answer = call(site.url(BOB, f"ipylsp/{route}"), method, bobs, body, headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
    assert status == 200, answer  # his own server lets him in


# Issue 22, item 6 (another engineer's): a notebook in a home directory gets its writes
# checked. Until that lands the kernel at the home directory reports nothing here.
def test_a_kernel_in_the_home_directory_reports_a_write(alice_kernel: RemoteKernel) -> None:
    assert alice_kernel.run("%load_ext ipylsp").outputs == []
    cell = alice_kernel.run("%%writefile bad.py\n" + BROKEN)
    assert cell.error is None, cell.outputs
    assert ours(cell) == [block("bad.py", TOTL)]
    assert (home(ALICE) / "bad.py").stat().st_uid == pwd.getpwnam(ALICE).pw_uid


def test_paths_the_other_user_planted_are_never_adopted(
    site: Site, alice_kernel: RemoteKernel
) -> None:
    """Bob plants, from a kernel of his own, in the TMPDIR both users' servers share: every
    path Alice's clean run made there, and the configuration files ruff, ty and pyright read
    from parent directories (undefined names would go unreported); her next service adopts
    none of it."""
    k = alice_kernel
    k.run("%unload_ext ipylsp")  # whatever an earlier test loaded: a fresh service now
    before = tree(site.shared)
    assert k.run("%load_ext ipylsp").outputs == []
    assert ours(k.run(WARM)) == []
    clean = k.run(UNDEFINED)
    assert ours(clean) == [block(f"cell [{clean.count}]", UNDEFINED_LINE)]
    created = tree(site.shared) - before
    assert k.run("%unload_ext ipylsp").outputs == []

    names = sorted({p.relative_to(site.shared).parts[0] for p in created})
    with RemoteKernel(site.hub.server_url(BOB), site.tokens[BOB]) as bobs:
        planted = bobs.run(planting(site.shared, names))
    assert planted.error is None, planted.outputs
    assert (site.shared / "ty.toml").stat().st_uid == pwd.getpwnam(BOB).pw_uid

    assert k.run("%load_ext ipylsp").outputs == []
    assert ours(k.run(WARM)) == []
    again = k.run(UNDEFINED)
    assert ours(again) == [block(f"cell [{again.count}]", UNDEFINED_LINE)]
    status = result(k.run("%lsp status"))
    roots = [Path(line.split()[2]) for line in status.splitlines() if " running " in line]
    assert len(roots) >= 2, status  # her cells' ty and ruff, at least
    alice = pwd.getpwnam(ALICE).pw_uid
    for root in roots:
        assert not root.is_relative_to(site.shared), status
        assert os.stat(root).st_uid == alice, status


def test_the_hub_stops_a_server_that_served_mcp_at_once_and_cleanly(
    site: Site, alice_kernel: RemoteKernel
) -> None:
    """The hub stops a server with SIGINT (idle culling too): after MCP calls, with a kernel
    that checked cells still running, it exits before the hub would resort to SIGTERM, its
    language servers and kernel with it, and no status file is left."""
    hub = site.hub
    names, checked, _ = asyncio.run(_session(
        site.url(ALICE, "ipylsp/mcp"), {"Authorization": f"token {site.tokens[ALICE]}"}
    ))
    assert "lsp_check" in names and not checked[0]
    pid = hub.server_pid(ALICE)
    below = {p: Path(argv[0]).name for p in descendants(pid)
             if (argv := cmdline(p).split())}  # not one that ended meanwhile
    assert alice_kernel.pid(pid) in below
    servers = sorted(name for name in below.values() if name in ("ty", "ruff"))
    assert servers.count("ty") >= 1 and servers.count("ruff") >= 1, below
    run_dir = home(ALICE) / ".local/share/ipylsp/run"
    assert list(run_dir.glob(f"status-*-{pid}-*.json")), "the server published no status"
    log_before = len(hub.log_path.read_bytes())

    hub.stop_server(ALICE)
    assert wait_exited([pid], PROMPT_S) == [], f"not stopped on SIGINT:\n{hub.log()}"
    wait_exited(list(below), 10)  # the stop ended them; a reaped process may linger a moment
    assert {p: n for p, n in below.items() if is_running(p)} == {}
    assert list(run_dir.glob("status-*.json")) == []
    stopping = hub.log_path.read_bytes()[log_before:].decode(errors="replace")
    assert "Traceback" not in stopping, stopping
