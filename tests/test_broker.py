"""The broker (issue 30, docs/broker.md) end to end: real `ipylsp check` and `ipylsp mcp`
processes, a real broker, real ty and ruff, a real second user (`nobody`, as
tests/test_private.py acts), and the wire form's values as units.

Each test gets a runtime directory of its own (`XDG_RUNTIME_DIR`, short and 0700 in /tmp, as
tests/conftest.py makes the run's) and a workspace below the run's private directory; its
processes run with the broker on (no `IPYLSP_BROKER`), and every broker it started is stopped
in its fixture's teardown (SIGTERM, its servers with it). The processes run a copy of the
package made when the module starts (`PYTHONPATH`): a broker serves only clients of its build,
a digest of the source files, so an edit made in the working tree while the module runs would
otherwise start a second broker halfway through a test.

Waits are for a condition with a deadline (`wait_exited`, `_until`); the only bounds on time
are the issue's own: a call that finds its broker killed or wedged answers within its
`--timeout`.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import pytest

import ipylsp
from ipylsp.broker import frames
from ipylsp.lsp.procfs import carrying, descendants, running, wait_exited
from ipylsp.model.checks import FileCheck
from ipylsp.model.diagnostics import (
    Cached,
    Diagnostic,
    FileReport,
    Position,
    Range,
    Report,
    Severity,
    Unknown,
    UnknownReason,
)
from ipylsp.model.environment import Environment
from ipylsp.model.server_spec import ServerOverride, custom_spec
from ipylsp.model.settings import Settings
from ipylsp.model.status import ServerState, ServerStatus
from ipylsp.model.wire import from_wire, to_wire
from tests.conftest import MARKER, MARKER_VAR, cmdline
from tests.real_servers import require
from tests.test_private import NOBODY, as_nobody, sticky_dir

if TYPE_CHECKING:
    from tests.test_mcp import Client

real = pytest.mark.real
mcp_sdk = pytest.mark.mcp_sdk
"""The test speaks MCP through the SDK: scripts/test runs it on the SDK's 1.x line too."""

BAD = 'x: int = "s"\n'
GOOD = "x: int = 1\n"
EDITED_BEFORE = BAD
EDITED = 'x: int = "s"\ny: int = "t"\n'
WARN = 'import os\nx: int = "s"\n'
FILES = {"bad.py": BAD, "good.py": GOOD, "edited.py": EDITED, "warn.py": WARN,
         "notes.xyz": "no server reads this\n"}


def block(path: str, *lines: str) -> str:
    return "\n".join([f'<diagnostics file="{path}">', *lines, "</diagnostics>"])


def ty_error(line: int, literal: str) -> str:
    return (f"ERROR [{line}:10] Object of type `Literal[\"{literal}\"]` is not assignable to "
            "`int` [invalid-assignment] (ty)")


BAD_BLOCK = block("bad.py", ty_error(1, "s"))
GOOD_MCP = "good.py: no new problems (ruff, ty)"
NO_BROKER = "ipylsp: no broker ("
"""How the CLI's one line on stderr starts when it checks in-process for want of a broker."""


class Run(NamedTuple):
    code: int
    out: str
    err: str


# -- the sites: a workspace, a runtime directory, the processes' environment --------------------


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the package, first on the processes' `PYTHONPATH` (module doc)."""
    top = tmp_path_factory.mktemp("package")
    shutil.copytree(Path(ipylsp.__file__).parent, top / "ipylsp",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return top


def short_private_dir(prefix: str) -> Path:
    """A new 0700 directory of ours in /tmp with an unpredictable name (short: socket paths)."""
    return Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))


@dataclass
class Site:
    top: Path
    ws: Path
    home: Path
    runtime: Path
    package: Path
    places: list[Path] = field(default_factory=list)
    """Directories a broker of this test may live below (stopped at teardown)."""
    made: list[Path] = field(default_factory=list)
    """Directories of this test outside `top`, removed at teardown."""

    @property
    def place(self) -> Path:
        return self.runtime / "ipylsp"

    def scratch(self, prefix: str = "ipb-") -> Path:
        directory = short_private_dir(prefix)
        self.made.append(directory)
        self.places.append(directory)
        return directory

    def env(self, *, broker: bool = True, **changes: str | None) -> dict[str, str]:
        """The processes' environment: this run's, with the broker on (or off), its home and
        runtime directory; `changes` set (None: remove) variables."""
        env = {k: v for k, v in os.environ.items()
               if k != "IPYLSP_BROKER" and not k.startswith(("XDG_", "JUPYTER_"))}
        env.update({
            "HOME": str(self.home),
            "XDG_CACHE_HOME": str(self.home / ".cache"),
            "XDG_CONFIG_HOME": str(self.home / ".config"),
            "XDG_DATA_HOME": str(self.home / ".local" / "share"),
            "XDG_RUNTIME_DIR": str(self.runtime),
            "JUPYTER_CONFIG_DIR": str(self.home / ".jupyter"),
            "PYTHONPATH": str(self.package),
            MARKER_VAR: MARKER,
        })
        if not broker:
            env["IPYLSP_BROKER"] = "0"
        for name, value in changes.items():
            if value is None:
                env.pop(name, None)
            else:
                env[name] = value
        return env

    def cli(self, *argv: str | Path, broker: bool = True, env: dict[str, str] | None = None
            ) -> Run:
        """`ipylsp ARGV` in the workspace, as a process of its own."""
        done = subprocess.run(
            [sys.executable, "-m", "ipylsp.cli", *map(str, argv)], cwd=self.ws,
            env=env if env is not None else self.env(broker=broker),
            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
        return Run(done.returncode, done.stdout, done.stderr)

    def config(self, name: str, knobs: dict[str, Any]) -> Path:
        path = self.top / name
        path.write_text(json.dumps({"IPyLSP": knobs}))
        return path

    def status(self, *options: str | Path, env: dict[str, str] | None = None
               ) -> dict[str, Any]:
        """`ipylsp [OPTIONS] broker status`'s JSON (the broker must run)."""
        done = self.cli(*options, "broker", "status", env=env)
        assert done.code == 0 and done.out.startswith("{"), done
        info: dict[str, Any] = json.loads(done.out)
        return info

    def brokers(self) -> list[int]:
        return brokers_below(*self.places)


@pytest.fixture
def site(package: Path, tmp_path: Path) -> Iterator[Site]:
    require("ty")
    require("ruff")
    ws = tmp_path / "ws"
    ws.mkdir()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    for name, text in FILES.items():
        (ws / name).write_text(text)
    home = tmp_path / "home"
    home.mkdir()
    runtime = short_private_dir("ipb-run-")
    made = Site(tmp_path, ws, home, runtime, package, places=[runtime, tmp_path],
                made=[runtime])
    try:
        yield made
    finally:
        stop_brokers(made.places)
        for directory in made.made:
            shutil.rmtree(directory, ignore_errors=True)


def _argv(pid: int) -> list[bytes]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return []


def brokers_below(*tops: Path) -> list[int]:
    """The live brokers of this run whose directory is below one of `tops`."""
    found = []
    for pid in carrying(MARKER_VAR, MARKER):
        argv = _argv(pid)
        if b"ipylsp.broker" not in argv or b"--directory" not in argv or not running(pid):
            continue
        directory = Path(os.fsdecode(argv[argv.index(b"--directory") + 1]))
        if any(directory.is_relative_to(top) for top in tops):
            found.append(pid)
    return sorted(found)


def stop_brokers(tops: list[Path]) -> None:
    """SIGTERM each broker below `tops` (it stops its servers), SIGKILL what outlives it."""
    for pid in brokers_below(*tops):
        below = descendants(pid)
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGTERM)
        for left in wait_exited([pid], 30.0) + wait_exited(below, 15.0):
            with contextlib.suppress(OSError):
                os.kill(left, signal.SIGKILL)


def names(pids: list[int]) -> list[str]:
    """The program names of `pids` (ty, ruff, python...)."""
    return sorted(Path(cmdline(pid).split(" ")[0]).name for pid in pids if cmdline(pid))


def servers_of(info: dict[str, Any], server: str = "ty") -> list[int]:
    """The pids of `server` in a broker's status, every context's."""
    return sorted(row["pid"] for row in info["servers"] if row["server"] == server)


def socket_of(place: Path) -> Path:
    [found] = place.glob("broker-*.sock")
    return found


def _until(condition: Callable[[], bool], timeout: float, what: str) -> None:
    """Wait until `condition()` holds; fail naming `what` at the deadline."""
    deadline = time.monotonic() + timeout
    pause = 0.01
    while not condition():
        assert time.monotonic() < deadline, f"not within {timeout} s: {what}"
        time.sleep(pause)
        pause = min(pause * 2, 0.2)


def in_process_alike(site: Site, *argv: str | Path, env: dict[str, str] | None = None) -> Run:
    """The same call with the broker off (`IPYLSP_BROKER=0`): what the broker must equal."""
    env = dict(env if env is not None else site.env())
    env["IPYLSP_BROKER"] = "0"
    return site.cli(*argv, env=env)


# -- MCP sessions through the SDK's stdio client --------------------------------------------------


@contextlib.contextmanager
def mcp_session(site: Site, errlog: Path, *, config: Path | None = None,
                env: dict[str, str] | None = None) -> Iterator[Client]:
    """`ipylsp mcp --root <workspace>` started by the SDK's stdio client, with `env` passed
    explicitly (the SDK passes on only a few variables otherwise); one session initialized."""
    pytest.importorskip("mcp", reason="the test extra installs mcp")
    from anyio.from_thread import start_blocking_portal
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from tests.test_mcp import Client

    options = ["--config", str(config)] if config is not None else []
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "ipylsp.cli", *options, "mcp", "--root", str(site.ws)],
        env=env if env is not None else site.env(), cwd=site.ws)
    with (
        errlog.open("w") as log,
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(stdio_client(params, errlog=log)) as (read, write),
        portal.wrap_async_context_manager(ClientSession(read, write)) as session,
    ):
        portal.call(session.initialize)
        yield Client(portal, session)


def mcp_process(site: Site) -> int:
    [pid] = [p for p in descendants(os.getpid())
             if f" mcp --root {site.ws}" in cmdline(p)]
    return pid


# -- 1. the thin CLI: a broker started once, reused, answering as in-process ----------------------

CASES: list[tuple[str, ...]] = [
    ("check", "bad.py"),
    ("check", "good.py"),
    ("check", "--json", "bad.py"),
    ("check", "--before", "{old}", "edited.py"),
    ("check", "--json", "--before", "{old}", "edited.py"),
    ("check", "--severity", "all", "warn.py"),
    ("check", "notes.xyz"),
    ("check", "bad.py", "good.py", "edited.py"),
    ("check", "--json", "bad.py", "good.py", "notes.xyz"),
    # forms the thin path (`broker.quick`) leaves to the parser: the full path asks the broker
    ("check", "--timeout=30", "bad.py"),
    ("check", "--json", "--", "edited.py"),
]


@real
def test_the_first_check_starts_a_broker_the_next_reuse_it_and_all_answer_as_in_process(
    site: Site,
) -> None:
    assert site.brokers() == []
    assert site.cli("check", "bad.py") == Run(1, BAD_BLOCK + "\n", "")
    # the place: a directory of ours that no one else may enter, a socket and a secret only
    # we may use
    assert stat.S_IMODE(site.place.stat().st_mode) == 0o700
    assert site.place.stat().st_uid == os.geteuid()
    sock = socket_of(site.place)
    info = os.lstat(sock)
    assert stat.S_ISSOCK(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o600
    [key] = site.place.glob("broker-*.key")
    info = os.lstat(key)
    assert stat.S_ISREG(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o600
    assert info.st_uid == os.geteuid()
    first = site.status()
    [broker] = site.brokers()
    assert first["pid"] == broker
    [ty] = servers_of(first)
    assert ty in descendants(broker)

    old = site.top / "edited.py.before"
    old.write_text(EDITED_BEFORE)
    answers = {}
    for case in CASES:
        argv = [word.format(old=old) for word in case]
        answers[case] = via_broker = site.cli(*argv)
        assert via_broker == in_process_alike(site, *argv), argv
    assert answers[CASES[0]] == Run(1, BAD_BLOCK + "\n", "")
    assert answers[CASES[1]] == Run(0, "", "")
    assert json.loads(answers[CASES[2]].out)["summary"]["errors"] == 1
    # --before: only what the edit introduced
    assert answers[CASES[3]] == Run(1, block("edited.py", ty_error(2, "t")) + "\n", "")
    assert [d["line"] for f in json.loads(answers[CASES[4]].out)["files"]
            for d in f["diagnostics"]] == [2]
    code, out, err = answers[CASES[5]]
    assert (code, err) == (1, "")
    assert "[F401] (Ruff)" in out and ty_error(2, "s") in out
    assert answers[CASES[6]] == Run(2, "", "ipylsp check: no language server for notes.xyz\n")
    assert answers[CASES[7]].code == 1
    assert answers[CASES[7]].out.count("<diagnostics file=") == 2  # good.py is clean
    assert answers[CASES[8]].code == 2
    assert answers[CASES[9]] == answers[CASES[0]]
    assert answers[CASES[10]].code == 1

    # one broker, one ty all along; `ipylsp status` shows it
    again = site.status()
    assert (again["pid"], servers_of(again)) == (broker, [ty])
    assert site.brokers() == [broker]
    assert f"broker: pid {broker} " in site.cli("status").out


# -- 2. `ipylsp mcp` relays ----------------------------------------------------------------------


@real
@mcp_sdk
def test_mcp_sessions_relay_to_one_broker_each_session_with_its_own_baseline(
    site: Site, tmp_path: Path,
) -> None:
    served = []
    for n in (1, 2):
        errlog = tmp_path / f"mcp-{n}.txt"
        with mcp_session(site, errlog) as mcp:
            # a fresh session's first check reports what the file has: its baseline is its own
            assert mcp.ok("lsp_check", {"path": "bad.py"}) == BAD_BLOCK
            # and its second, what changed since its first: nothing
            assert mcp.ok("lsp_check", {"path": "bad.py"}) == (
                "bad.py: no new problems (ruff, ty)")
            status = mcp.ok("lsp_status", {})
            assert "ty: running" in status and "broker: pid " in status, status
            info = site.status()
            served.append((info["pid"], servers_of(info)))
            # the MCP process runs no server of its own: the broker's serve it (the broker
            # is its child when it started it)
            own = set(descendants(mcp_process(site))) - {info["pid"], *descendants(info["pid"])}
            assert not {"ty", "ruff"} & set(names(sorted(own)))
            assert f"broker: pid {info['pid']} " in status
        assert errlog.read_text() == ""
    assert served[0] == served[1]  # one broker, one ty for both
    broker, ty = served[0]
    assert site.brokers() == [broker]
    assert len(ty) == 1


# -- 3. contexts -----------------------------------------------------------------------------------


@real
def test_clients_of_another_context_get_their_own_servers_the_same_context_shares(
    site: Site,
) -> None:
    only_ty = site.config("only-ty.json", {"language_servers": {"python": ["ty"]}})
    ty_and_ruff = site.config("ty-ruff.json", {"language_servers": {"python": ["ty", "ruff"]}})
    assert site.cli("--config", only_ty, "check", "bad.py") == Run(1, BAD_BLOCK + "\n", "")
    [first] = servers_of(site.status())
    assert site.cli("--config", only_ty, "check", "good.py") == Run(0, "", "")
    assert servers_of(site.status()) == [first]  # the same context shares its ty

    assert site.cli("--config", ty_and_ruff, "check", "bad.py") == Run(1, BAD_BLOCK + "\n", "")
    info = site.status()
    [second] = set(servers_of(info)) - {first}
    assert servers_of(info, "ruff") != []

    extra = site.top / "bin"
    extra.mkdir()
    other_path = site.env(PATH=f"{extra}{os.pathsep}{os.environ['PATH']}")
    assert site.cli("--config", only_ty, "check", "bad.py", env=other_path) == Run(
        1, BAD_BLOCK + "\n", "")
    info = site.status()
    [third] = set(servers_of(info)) - {first, second}
    rows = {row["pid"]: row["context"] for row in info["servers"] if row["server"] == "ty"}
    assert len({rows[first], rows[second], rows[third]}) == 3
    assert len(site.brokers()) == 1


@real
@mcp_sdk
def test_clients_that_differ_only_in_their_directory_share_one_context_and_its_servers(
    site: Site, tmp_path: Path,
) -> None:
    """The CLI (no directory of its own), an `ipylsp mcp` (the root is its directory and its
    cells') and a second CLI in a plain directory below the workspace's parent: one context,
    one ty and one ruff per root, each client's own baseline."""
    assert site.cli("check", "bad.py") == Run(1, BAD_BLOCK + "\n", "")
    info = site.status()
    [ty] = servers_of(info)
    [ruff] = servers_of(info, "ruff")
    with mcp_session(site, tmp_path / "mcp.txt") as mcp:
        assert mcp.ok("lsp_check", {"path": "bad.py"}) == BAD_BLOCK  # its own baseline
        info = site.status()
        assert (servers_of(info), servers_of(info, "ruff")) == ([ty], [ruff])
        assert info["contexts"] == 1
    assert (tmp_path / "mcp.txt").read_text() == ""


@real
@mcp_sdk
def test_two_agents_cells_on_one_root_are_two_documents_of_one_server(
    site: Site, tmp_path: Path,
) -> None:
    """Each `ipylsp mcp` session's `lsp_check_cell` document is its own (named after its
    process), in the root's ty: two agents never rewrite one document."""
    with (mcp_session(site, tmp_path / "a.txt") as first,
          mcp_session(site, tmp_path / "b.txt") as second):
        assert first.ok("lsp_check_cell", {"code": 'a: int = "s"\n'}) == block(
            "cell [ ]", ty_error(1, "s"))
        clean = "the cell: no new problems (ruff, ty); nothing was run"
        assert second.ok("lsp_check_cell", {"code": "b = 1\n"}) == clean
        [ty] = [row for row in site.status()["servers"] if row["server"] == "ty"]
        assert ty["open_documents"] == 2, ty  # one document per agent


# -- 4. faults -----------------------------------------------------------------------------------


@real
def test_a_killed_broker_takes_its_servers_and_the_next_check_starts_another_in_budget(
    site: Site,
) -> None:
    assert site.cli("check", "bad.py") == Run(1, BAD_BLOCK + "\n", "")
    [broker] = site.brokers()
    below = descendants(broker)
    assert {"ty", "ruff"} <= set(names(below))
    sock = socket_of(site.place)
    bound = sock.stat().st_ino
    os.kill(broker, signal.SIGKILL)
    assert wait_exited([broker, *below], 30.0) == []  # the watchdog kills its servers
    # its socket is left behind, and no one answers on it
    assert sock.exists()
    with socket.socket(socket.AF_UNIX) as probe, pytest.raises(ConnectionRefusedError):
        probe.connect(str(sock))

    timeout = 30.0
    began = time.monotonic()
    assert site.cli("check", "--timeout", str(timeout), "bad.py") == Run(
        1, BAD_BLOCK + "\n", "")
    assert time.monotonic() - began < timeout
    [replaced] = site.brokers()
    assert replaced != broker
    assert site.status()["pid"] == replaced
    assert socket_of(site.place).stat().st_ino != bound  # the stale socket was replaced


@real
@mcp_sdk
def test_an_mcp_session_carries_on_with_a_new_broker_when_its_broker_is_killed(
    site: Site, tmp_path: Path,
) -> None:
    with mcp_session(site, tmp_path / "mcp.txt") as mcp:
        assert mcp.ok("lsp_check", {"path": "bad.py"}) == BAD_BLOCK
        [broker] = site.brokers()
        below = descendants(broker)
        os.kill(broker, signal.SIGKILL)
        assert wait_exited([broker, *below], 30.0) == []
        # the next call: a new broker, a new session there (its baseline empty again)
        assert mcp.ok("lsp_check", {"path": "bad.py"}) == BAD_BLOCK
        [replaced] = site.brokers()
        assert replaced != broker
        assert mcp.ok("lsp_check", {"path": "good.py"}) == GOOD_MCP
    assert (tmp_path / "mcp.txt").read_text() == ""


@real
def test_a_stopped_broker_removes_its_socket_and_stops_its_servers(site: Site) -> None:
    assert site.cli("check", "good.py") == Run(0, "", "")
    [broker] = site.brokers()
    below = descendants(broker)
    assert site.cli("broker", "stop") == Run(0, f"broker {broker} stopped\n", "")
    assert wait_exited([broker, *below], 30.0) == []
    assert list(site.place.glob("broker-*.sock")) == []
    done = site.cli("broker", "status")
    assert done.code == 0 and done.out.startswith("ipylsp broker: no broker runs"), done
    assert site.brokers() == []  # asking never starts one


@real
def test_a_wedged_broker_costs_a_check_its_hello_time_then_it_checks_in_process(
    site: Site,
) -> None:
    assert site.cli("check", "good.py") == Run(0, "", "")
    [broker] = site.brokers()
    os.kill(broker, signal.SIGSTOP)  # it takes connections (the kernel queues them), no calls
    try:
        timeout = 20.0
        began = time.monotonic()
        code, out, err = site.cli("check", "--timeout", str(timeout), "bad.py")
        assert time.monotonic() - began < timeout
    finally:
        os.kill(broker, signal.SIGCONT)
    assert (code, out) == (1, BAD_BLOCK + "\n")
    [said] = err.splitlines()
    assert said.startswith(NO_BROKER) and said.endswith("; checking in-process"), said
    # no second broker beside it, and once it runs again it answers (the client it kept
    # waiting, gone meanwhile, disturbs it not)
    assert site.brokers() == [broker]
    assert site.cli("check", "bad.py") == Run(1, BAD_BLOCK + "\n", "")
    assert site.status()["pid"] == broker


@real
def test_a_broker_that_never_says_hello_costs_a_check_one_wait_not_one_per_path(
    site: Site,
) -> None:
    """The thin path (`broker.quick`) and then the full one each waited `HELLO_WITHIN` for a
    broker that took their connection and never answered: twice the wait it is said to cost."""
    assert site.cli("check", "good.py") == Run(0, "", "")  # the thin path's prerequisites
    [broker] = site.brokers()
    below = descendants(broker)
    sock = socket_of(site.place)
    assert site.cli("broker", "stop").code == 0
    assert wait_exited([broker, *below], 30.0) == []
    key = sock.with_suffix(".key")
    key.write_text("0" * 64)
    os.chmod(key, 0o600)
    accepted = []
    with socket.socket(socket.AF_UNIX) as silent:  # it listens, and says nothing
        silent.bind(str(sock))
        try:
            silent.listen(16)
            code, out, err = site.cli("check", "bad.py")
            silent.setblocking(False)
            with contextlib.suppress(BlockingIOError):
                while True:
                    accepted.append(silent.accept()[0])
        finally:
            sock.unlink()
            for conn in accepted:
                conn.close()
    assert (code, out) == (1, BAD_BLOCK + "\n")
    assert err == (f"{NO_BROKER}the broker did not answer: no answer in time); "
                   "checking in-process\n")
    assert len(accepted) == 1
    assert site.brokers() == []


def _connect(sock: Path) -> socket.socket:
    conn = socket.socket(socket.AF_UNIX)
    conn.connect(str(sock))
    return conn


def _closed_by_peer(conn: socket.socket, timeout: float) -> bool:
    """Whether the broker closes `conn` within `timeout` (what it sends first is read)."""
    deadline = time.monotonic() + timeout
    with contextlib.suppress(ConnectionResetError):
        while (left := deadline - time.monotonic()) > 0:
            conn.settimeout(left)
            try:
                if conn.recv(65536) == b"":
                    return True
            except TimeoutError:
                return False
        return False
    return True


def _hello(site: Site, *, secret: str | None = None, build: str | None = None,
           path: str = "/nowhere") -> dict[str, Any]:
    """A client's hello (the secret read from the place unless given), in a context of its
    own: its `PATH` is `path`."""
    sock = socket_of(site.place)
    if secret is None:
        secret = sock.with_suffix(".key").read_text()
    return {"call": "hello", "args": {
        "secret": secret, "build": build or sock.name[len("broker-"):-len(".sock")],
        "pid": os.getpid(), "session": os.urandom(8).hex(), "settings": None,
        "mounts": os.readlink("/proc/self/ns/mnt"),
        "environment": {"executable": sys.executable, "prefix": sys.prefix,
                        "variables": [["PATH", path]]},
        "cells_dir": None}}


def _ask(conn: socket.socket, message: dict[str, Any]) -> dict[str, Any]:
    deadline = time.monotonic() + 30.0
    frames.send(conn, message, deadline)
    return frames.receive(conn, deadline)


@real
def test_garbage_clients_disturb_neither_the_broker_nor_other_clients(site: Site) -> None:
    assert site.cli("check", "good.py") == Run(0, "", "")
    [broker] = site.brokers()
    sock = socket_of(site.place)
    silent = _connect(sock)  # connects and says nothing
    huge = _connect(sock)
    huge.sendall(b"\xff\xff\xff\xff")  # a length over the cap
    http = _connect(sock)
    http.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    not_json = _connect(sock)
    not_json.sendall(len(b"{not json").to_bytes(4, "big") + b"{not json")
    noise = _connect(sock)
    noise.sendall(os.urandom(4096))
    after_hello = _connect(sock)  # a good hello, then garbage
    assert "ok" in _ask(after_hello, _hello(site))
    after_hello.sendall(b"\x00\x00\x00\x05[1,2]")  # JSON, but no object
    garbage = [silent, huge, http, not_json, noise, after_hello]
    try:
        # another client is served meanwhile
        assert site.cli("check", "bad.py") == Run(1, BAD_BLOCK + "\n", "")
        # the broker closes each of them (the silent one when its time to say hello is over)
        for conn in garbage:
            assert _closed_by_peer(conn, 30.0), garbage.index(conn)
    finally:
        for conn in garbage:
            conn.close()
    # the garbage left no session: the status call's is the only one (once the broker has
    # seen the CLI calls' connections close)
    _until(lambda: len(site.status()["clients"]) == 1, 30.0, "the sessions end")
    assert site.status()["pid"] == broker
    assert site.cli("check", "bad.py") == Run(1, BAD_BLOCK + "\n", "")


@real
def test_a_wrong_secret_or_build_is_refused_and_creates_no_service(site: Site) -> None:
    assert site.cli("check", "good.py") == Run(0, "", "")
    sock = socket_of(site.place)
    contexts = site.status()["contexts"]
    with _connect(sock) as conn:
        assert _ask(conn, _hello(site, secret="0" * 64)) == {
            "error": {"kind": "denied", "message": "wrong secret"}}
        assert _closed_by_peer(conn, 30.0)
    with _connect(sock) as conn:
        assert _ask(conn, _hello(site, build="0.0.0-000000000000"))["error"]["kind"] == "build"
        assert _closed_by_peer(conn, 30.0)
    with _connect(sock) as conn:  # a first call that is not hello
        assert _ask(conn, {"call": "status", "args": {}})["error"]["kind"] == "protocol"
        assert _closed_by_peer(conn, 30.0)
    assert site.status()["contexts"] == contexts
    # the same hello with the secret is a context more: the refusals above made none
    with _connect(sock) as conn:
        assert _ask(conn, _hello(site))["ok"]["pid"] == site.brokers()[0]
        assert site.status()["contexts"] == contexts + 1


# -- 5. privacy, with a real second user ---------------------------------------------------------


NOBODY_CONNECTS = """
import socket, sys
conn = socket.socket(socket.AF_UNIX)
try:
    conn.connect(sock)
except PermissionError:
    pass
else:
    sys.exit("connected to " + sock)
try:
    open(key).read()
except PermissionError:
    pass
else:
    sys.exit("read " + key)
"""


def nobody_python() -> str:
    python = shutil.which("python3", path="/usr/local/bin:/usr/bin:/bin")
    assert python, "no python3 on the system PATH for the other user"
    return python


@real
def test_another_user_can_neither_connect_nor_read_the_secret(site: Site) -> None:
    assert os.geteuid() == 0, "acting as another user needs root (CI runs as root)"
    assert site.cli("check", "good.py") == Run(0, "", "")
    sock = socket_of(site.place)
    key = sock.with_suffix(".key")

    def attempt() -> None:
        as_nobody(f"sock, key = {str(sock)!r}, {str(key)!r}\n{NOBODY_CONNECTS}")

    attempt()  # the runtime directory stops them
    # each layer holds on its own: with the directories open to them, the socket and the
    # secret (0600) still refuse them
    try:
        os.chmod(site.runtime, 0o711)
        os.chmod(site.place, 0o711)
        attempt()
    finally:
        os.chmod(site.place, 0o700)
        os.chmod(site.runtime, 0o700)
    assert site.cli("check", "bad.py") == Run(1, BAD_BLOCK + "\n", "")


LISTENER = """
import os, socket, sys
path, log = sys.argv[1:]
os.makedirs(os.path.dirname(path), exist_ok=True)
server = socket.socket(socket.AF_UNIX)
server.bind(path)
os.chmod(path, 0o777)
server.listen()
print("listening", flush=True)
while True:
    conn, _ = server.accept()
    got = b""
    while chunk := conn.recv(65536):
        got += chunk
    with open(log, "a") as out:
        out.write(f"{len(got)}\\n")
    conn.close()
"""


@contextlib.contextmanager
def nobodys_broker(path: Path, log: Path) -> Iterator[None]:
    """A process of `nobody` listening at `path`; each connection's byte count goes to `log`."""
    process = subprocess.Popen(
        [nobody_python(), "-c", LISTENER, str(path), str(log)], user=NOBODY, group=NOBODY,
        env={"PATH": "/usr/bin:/bin"}, cwd="/", stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        assert process.stdout.readline() == "listening\n"
        yield
    finally:
        process.kill()
        process.wait()


def build_of(site: Site) -> str:
    done = subprocess.run(
        [sys.executable, "-c", "from ipylsp.broker.place import build_id; print(build_id())"],
        env=site.env(), cwd=site.ws, capture_output=True, text=True, check=True, timeout=60)
    return done.stdout.strip()


def _owned_by_nobody(path: Path, mode: int) -> Path:
    path.mkdir(mode=mode)
    os.chmod(path, mode)
    os.chown(path, NOBODY, NOBODY)
    return path


@real
@pytest.mark.parametrize("runtime", ["another user's", "open to others", "a symbolic link"])
def test_a_runtime_directory_that_is_not_ours_alone_is_not_used(
    site: Site, runtime: str,
) -> None:
    """The broker then lives in the data directory's `run/`; a socket another user listens
    on in their runtime directory is never reached."""
    assert os.geteuid() == 0, "acting as another user needs root (CI runs as root)"
    theirs = site.scratch()
    os.chmod(theirs, 0o755)
    if runtime == "another user's":
        directory = _owned_by_nobody(theirs / "runtime", 0o700)
    elif runtime == "open to others":
        directory = theirs / "runtime"
        directory.mkdir()
        os.chmod(directory, 0o755)
    else:
        target = theirs / "target"
        target.mkdir(mode=0o700)
        directory = theirs / "runtime"
        directory.symlink_to(target)
    data = site.scratch() / "data"
    env = site.env(XDG_RUNTIME_DIR=str(directory))
    log = theirs / "connections.log"
    with contextlib.ExitStack() as stack:
        if runtime == "another user's":
            log.touch()
            os.chown(log, NOBODY, NOBODY)
            sock = directory / "ipylsp" / f"broker-{build_of(site)}.sock"
            stack.enter_context(nobodys_broker(sock, log))
        planted = sorted(theirs.rglob("*"))
        argv = ("--data-dir", data, "check", "bad.py")
        assert site.cli(*argv, env=env) == in_process_alike(site, *argv, env=env) == Run(
            1, BAD_BLOCK + "\n", "")
        assert sorted(theirs.rglob("*")) == planted  # nothing made there
        if runtime == "another user's":
            assert log.read_text() == ""  # never connected to
    [broker] = site.brokers()
    assert socket_of(data / "run").exists()
    assert stat.S_IMODE((data / "run").stat().st_mode) == 0o700
    assert site.status("--data-dir", data, env=env)["pid"] == broker


@real
@pytest.mark.parametrize("planted", [
    "their directory", "a world-writable data directory", "a symbolic link", "their socket",
    "their symbolic link",
])
def test_a_place_another_user_made_or_could_swap_is_refused(
    site: Site, planted: str,
) -> None:
    """`<data dir>/run` (the runtime directory unusable) that another user made, or could
    replace, or where they listen: the CLI checks in-process, says so once, and answers as
    without a broker."""
    assert os.geteuid() == 0, "acting as another user needs root (CI runs as root)"
    unusable = site.top / "not-private"
    unusable.mkdir()
    os.chmod(unusable, 0o755)
    with sticky_dir() as shared, contextlib.ExitStack() as stack:
        data = shared / "data"
        log = shared / "connections.log"
        if planted == "their directory":
            _owned_by_nobody(data, 0o755)
            _owned_by_nobody(data / "run", 0o700)
        elif planted == "a world-writable data directory":
            data.mkdir()
            os.chmod(data, 0o777)
        elif planted == "a symbolic link":
            data.mkdir(mode=0o700)
            (data / "run").symlink_to(site.scratch())
        elif planted == "their symbolic link":  # to a private directory of ours
            as_nobody(f"import os; os.symlink({str(site.scratch())!r}, {str(data)!r})")
        else:  # their socket, in a `run/` of ours that was open to everyone
            data.mkdir()
            os.chmod(data, 0o755)
            (data / "run").mkdir()
            os.chmod(data / "run", 0o777)
            log.touch()
            os.chown(log, NOBODY, NOBODY)
            sock = data / "run" / f"broker-{build_of(site)}.sock"
            stack.enter_context(nobodys_broker(sock, log))
        site.places.append(shared)
        env = site.env(XDG_RUNTIME_DIR=str(unusable))
        argv = ("--data-dir", data, "check", "bad.py")
        code, out, err = site.cli(*argv, env=env)
        alone = in_process_alike(site, *argv, env=env)
        assert (code, out) == (alone.code, alone.out) == (1, BAD_BLOCK + "\n")
        assert err, "nothing said on stderr: a broker answered"
        said, *rest = err.splitlines(keepends=True)
        assert "".join(rest) == alone.err
        assert said.startswith(NO_BROKER) and said.endswith("; checking in-process\n"), said
        if planted == "their socket":
            assert "is another user's" in said
            # our client connected, saw whose it is, and sent nothing (no secret of ours)
            assert log.read_text() == "0\n"
        else:
            assert "no private place for it" in said
        assert site.brokers() == []


# -- 6. lifetime -----------------------------------------------------------------------------------

IDLE = 2.0


@real
@mcp_sdk
def test_an_idle_broker_ends_with_its_servers_but_not_while_a_session_is_connected(
    site: Site, tmp_path: Path,
) -> None:
    idle = site.config("idle.json", {"broker_idle": IDLE})
    assert site.cli("--config", idle, "check", "bad.py") == Run(1, BAD_BLOCK + "\n", "")
    [broker] = site.brokers()
    below = descendants(broker)
    assert {"ty", "ruff"} <= set(names(below))
    assert wait_exited([broker, *below], 60.0) == []
    assert list(site.place.glob("broker-*.sock")) == []

    with mcp_session(site, tmp_path / "mcp.txt", config=idle) as mcp:
        assert mcp.ok("lsp_check", {"path": "bad.py"}) == BAD_BLOCK
        [broker] = site.brokers()
        below = descendants(broker)
        # connected, and idle for longer than its idle time: it stays
        assert wait_exited([broker], 2 * IDLE) == [broker]
        assert mcp.ok("lsp_check", {"path": "good.py"}) == GOOD_MCP
        assert site.brokers() == [broker]
    assert wait_exited([broker, *below], 60.0) == []
    assert list(site.place.glob("broker-*.sock")) == []


# -- 7. without a broker ---------------------------------------------------------------------------


@real
@mcp_sdk
@pytest.mark.parametrize("off", ["IPYLSP_BROKER=0", "IPyLSP.broker = False"])
def test_a_broker_turned_off_is_never_started_nor_mentioned(
    site: Site, tmp_path: Path, off: str,
) -> None:
    options: list[str | Path] = []
    env = site.env()
    if off == "IPYLSP_BROKER=0":
        env["IPYLSP_BROKER"] = "0"
    else:
        options = ["--config", site.config("off.json", {"broker": False})]
    assert site.cli(*options, "check", "bad.py", env=env) == Run(1, BAD_BLOCK + "\n", "")
    config = Path(options[1]) if options else None
    with mcp_session(site, tmp_path / "mcp.txt", config=config, env=env) as mcp:
        assert mcp.ok("lsp_check", {"path": "bad.py"}) == BAD_BLOCK
        assert {"ty", "ruff"} <= set(names(descendants(mcp_process(site))))
    assert (tmp_path / "mcp.txt").read_text() == ""
    assert site.brokers() == []
    assert list(site.place.glob("broker-*")) == []


def without_runtime_dir(env: dict[str, str], site: Site) -> dict[str, str]:
    """`env` with no usable runtime directory: `XDG_RUNTIME_DIR` unset when
    `/run/user/<uid>` (its stand-in) is none either, else pointing at one that is not private."""
    env = dict(env)
    if os.path.lexists(f"/run/user/{os.geteuid()}"):
        shared = site.top / "shared-runtime"
        shared.mkdir(mode=0o755, exist_ok=True)
        os.chmod(shared, 0o755)
        env["XDG_RUNTIME_DIR"] = str(shared)
    else:
        env.pop("XDG_RUNTIME_DIR", None)
    return env


@real
@mcp_sdk
def test_a_place_whose_socket_path_is_too_long_falls_back_in_process_saying_so_once(
    site: Site, tmp_path: Path,
) -> None:
    data = site.top / ("d" * 100)
    env = without_runtime_dir(site.env(), site)
    argv = ("--data-dir", data, "check", "bad.py")
    code, out, err = site.cli(*argv, env=env)
    assert (code, out) == (1, BAD_BLOCK + "\n")
    [line] = err.splitlines()
    assert line.startswith(NO_BROKER + "no private place for it: the broker's socket path is "
                           "longer than 107 bytes: ")
    assert line.endswith("; checking in-process")
    assert in_process_alike(site, *argv, env=env) == Run(1, BAD_BLOCK + "\n", "")
    with mcp_session(site, tmp_path / "mcp.txt", env=env, config=None) as mcp:
        assert mcp.ok("lsp_check", {"path": "bad.py"}) == BAD_BLOCK
    [said] = (tmp_path / "mcp.txt").read_text().splitlines()
    assert said.startswith("ipylsp mcp: no broker (") and said.endswith("; serving in-process")
    assert site.brokers() == []


# -- 9. the thin client stays thin ---------------------------------------------------------------

IMPORTS = """
import sys
before = set(sys.modules)
from ipylsp.cli import main
code = main(sys.argv[2:])
imported = sorted(set(sys.modules) - before)
import json
with open(sys.argv[1], "w") as out:
    json.dump(imported, out)
sys.exit(code)
"""

HEAVY = ("ipylsp.service", "ipylsp.lsp", "traitlets", "ipylsp.broker.serve", "ipylsp.agent")
"""What a thin client never imports: the service, the servers' clients, traitlets' settings,
the broker's own side, the agent's tools."""
SLOW = ("argparse", "pathlib", "typing", "dataclasses", "json", "re", "socket", "enum",
        "functools")
"""What the thinnest path (`broker.quick`: a plain command line) does without besides
(`json_text` reads and writes JSON, `_socket` connects)."""


@real
def test_the_thin_check_imports_neither_the_service_nor_the_servers_nor_traitlets(
    site: Site,
) -> None:
    assert site.cli("check", "good.py") == Run(0, "", "")  # the broker runs
    modules = site.top / "modules.json"

    def imported(*argv: str, broker: bool = True) -> list[str]:
        """The modules `ipylsp ARGV` imports (beyond the interpreter's own)."""
        done = subprocess.run(
            [sys.executable, "-c", IMPORTS, str(modules), *argv], cwd=site.ws,
            env=site.env(broker=broker), capture_output=True, text=True, timeout=120)
        assert (done.returncode, done.stdout, done.stderr) == (1, BAD_BLOCK + "\n", "")
        found: list[str] = json.loads(modules.read_text())
        return found

    def heavy(found: list[str], names: tuple[str, ...] = HEAVY) -> list[str]:
        return [m for m in found if m.startswith(names)]

    quick = imported("check", "bad.py")
    assert heavy(quick) == []
    assert [m for m in quick if m in SLOW] == []
    assert "ipylsp.broker.quick" in quick
    parsed = imported("check", "--timeout=30", "bad.py")  # the parser's path to the broker
    assert heavy(parsed) == []
    assert "argparse" in parsed
    # the probe sees them where they are imported: in-process
    assert {"ipylsp.service", "ipylsp.lsp"} <= set(imported("check", "bad.py", broker=False))


# -- 8. the wire form (units) --------------------------------------------------------------------


def test_the_thin_clis_file_dicts_are_file_checks_wire_form(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """cli.py and broker/quick.py build `FileCheck`'s wire form by hand (a thin client
    imports no model): what each sends is the wire form of the `FileCheck` it means."""
    import io

    from ipylsp import cli
    from ipylsp.broker import client, quick
    from ipylsp.broker.place import Place
    from ipylsp.model.verdict import Verdict

    sent: dict[str, list[list[dict[str, Any]]]] = {"full": [], "quick": []}

    def in_process(settings: object, files: list[dict[str, Any]], args: object) -> Verdict:
        sent["full"].append(files)
        return Verdict("", (), 0)

    class Broker:
        def __enter__(self) -> Broker:
            return self

        def __exit__(self, *exc: object) -> None:
            return None

        def check(self, files: list[dict[str, Any]], **options: object) -> Verdict:
            sent["quick"].append(files)
            return Verdict("", (), 0)

    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text(GOOD)
    (tmp_path / "b.py").write_text(BAD)
    (tmp_path / "old.py").write_text("é\n")
    calls = (["check", "a.py", "b.py"], ["check", "--before", "old.py", "a.py"])
    monkeypatch.setattr(cli, "_in_process_verdict", in_process)
    monkeypatch.setenv("IPYLSP_BROKER", "0")
    for argv in calls:
        assert cli.main(argv) == 0
    # the thin path, with a broker of this build as it finds one
    monkeypatch.delenv("IPYLSP_BROKER")
    monkeypatch.setattr(quick.place, "existing", lambda *a: Place(str(tmp_path), "build"))
    monkeypatch.setattr(quick, "known_none", lambda directory: True)
    monkeypatch.setattr(client.Broker, "attach", staticmethod(lambda *a, **k: Broker()))
    for argv in calls:
        assert quick.check(argv, io.StringIO()) == 0

    a, b = (tmp_path / "a.py").resolve(), (tmp_path / "b.py").resolve()
    expected = [[FileCheck(a, before=""), FileCheck(b, before="")],
                [FileCheck(a, before="é\n")]]
    assert sent["quick"] == sent["full"]
    for files, checks in zip(sent["full"], expected, strict=True):
        for hand_built, check in zip(files, checks, strict=True):
            full = to_wire(check)
            # the keys it has carry the wire form's values; those it leaves out are defaults
            assert hand_built == {key: full[key] for key in hand_built}
            assert from_wire(FileCheck, hand_built) == check
            assert to_wire(from_wire(FileCheck, hand_built)) == full


def _through_json(kind: Any, value: Any) -> Any:
    """`value` sent as the socket sends it (JSON text) and read back as `kind`."""
    return from_wire(kind, json.loads(json.dumps(to_wire(value))))


def _every_field_set(value: Any, seen: str = "") -> None:
    """Every init field of `value` and of the values it holds differs from its default."""
    import dataclasses

    if isinstance(value, (tuple, list)):
        assert value, f"{seen} is empty"
        for item in value:
            _every_field_set(item, seen)
        return
    if not dataclasses.is_dataclass(value) or isinstance(value, type):
        return
    for f in dataclasses.fields(value):
        got = getattr(value, f.name)
        if f.default is not dataclasses.MISSING:
            assert got != f.default, f"{seen}.{f.name} is its default"
        _every_field_set(got, f"{seen}.{f.name}")


def test_settings_round_trip() -> None:
    assert _through_json(Settings, Settings()) == Settings()
    custom = Settings(
        wait_budget=2.5, severity="all", max_per_file=3,
        language_servers={"python": ("ty", "ruff"), "go": ("gopls",)},
        servers={"ty": ServerOverride(disabled=True, command=("ty", "server", "--x"),
                                      env={"TY_LOG": "debug"},
                                      settings={"a": [1, {"b": None}], "c": 1.5},
                                      initialization_options={"d": True}),
                 "ruff": ServerOverride()},
        extra_specs=(custom_spec("mylsp", {"command": ["mylsp", "--stdio"],
                                           "languages": ["python"],
                                           "root_markers": ["setup.cfg"],
                                           "settings": {"k": "v"}}),),
        trusted_roots=(Path("/srv/shared"), Path("/opt/team")),
        data_dir=Path("/data/ipylsp"), store_path=Path("/data/store.sqlite3"),
        directory=Path("/home/u/nb"), install_strategy="auto", broker=False, broker_idle=5.0,
        workspace_markers=(".git", "setup.py"),
    )
    assert _through_json(Settings, custom) == custom


def _diagnostic(line: int, **extra: Any) -> Diagnostic:
    return Diagnostic(Range(Position(line, 1), Position(line, 4)), Severity.WARNING,
                      f"problem {line}", **extra)


def test_a_report_with_every_field_round_trips() -> None:
    unknown = Unknown("ruff", UnknownReason.TIMED_OUT, "after 1.0 s", "retry later")
    report = Report(
        files=(FileReport(
            path=Path("/w/a.py"), display_path="a.py",
            diagnostics=(_diagnostic(1, source="ty", code="x1", server_id="ty",
                                     cached=Cached(1700000000.5, stale=True),
                                     ran_without_error=True),),
            current=(_diagnostic(2, source="Ruff", code="F401", server_id="ruff",
                                 cached=Cached(1.0, stale=True), ran_without_error=True),),
            fixed=(_diagnostic(3, source="ty", code="y", server_id="ty",
                               cached=Cached(2.0, stale=True), ran_without_error=True),),
            unknown=(unknown,), servers=("ty", "ruff"), elsewhere=True, cell=7, cell_id="c-1",
        ),),
        root=Path("/w"), notes=("a note",),
        unknown=(Unknown("ty", UnknownReason.REFUSED, "why", "fix"),),
    )
    _every_field_set(report)
    assert _through_json(Report, report) == report
    assert _through_json(Report, Report()) == Report()


def test_status_file_check_and_environment_round_trip() -> None:
    status = ServerStatus("ty", Path("/w"), ServerState.CRASHED, "indexing 4/9", pid=12,
                          owner=3, open_documents=2, crashes=1)
    _every_field_set(status)
    assert _through_json(ServerStatus, status) == status
    for check in (FileCheck(Path("/w/a.py")),
                  FileCheck(Path("/w/cells"), before="a\n", content="b\n", virtual=True,
                            preflight=True)):
        assert _through_json(FileCheck, check) == check
    assert _through_json(tuple[FileCheck, ...], (FileCheck(Path("/a")),)) == (
        FileCheck(Path("/a")),)
    environment = Environment("/venv/bin/python", "/venv",
                              (("PATH", "/bin"), ("VIRTUAL_ENV", "/venv"), ("GOPATH", "/go")))
    assert _through_json(Environment, environment) == environment


@pytest.mark.parametrize(("kind", "data"), [
    (Settings, []),
    (Settings, "defaults"),
    (Settings, {"wait_budget": "soon"}),
    (Settings, {"severity": "loud"}),
    (Settings, {"max_per_file": 2.5}),
    (Settings, {"max_per_file": True}),
    (Settings, {"language_servers": {"python": "ty"}}),
    (Settings, {"language_servers": ["ty"]}),
    (Settings, {"servers": {"ty": {"command": "ty server"}}}),
    (Settings, {"extra_specs": [{"id": "x"}]}),
    (Settings, {"trusted_roots": [1]}),
    (Settings, {"data_dir": 3}),
    (Report, {"files": [{}]}),
    (Report, {"files": [{"path": 1, "display_path": "a"}]}),
    (Report, {"files": [{"path": "/a", "display_path": "a", "diagnostics": [
        {"range": {"start": {"line": 0, "column": 0}}, "severity": 1, "message": "m"}]}]}),
    (Report, {"files": [{"path": "/a", "display_path": "a", "diagnostics": [
        {"range": {"start": {"line": 0, "column": 0}, "end": {"line": 0, "column": 1}},
         "severity": 99, "message": "m"}]}]}),
    (Report, {"unknown": [{"server_id": "ty", "reason": "bored"}]}),
    (Report, None),
    (ServerStatus, {"server_id": "ty", "root": "/", "state": "dancing"}),
    (ServerStatus, {"server_id": "ty", "root": "/", "state": "running", "pid": "12"}),
    (FileCheck, {}),
    (FileCheck, {"path": "/a", "virtual": "yes"}),
    (FileCheck, {"path": "/a", "before": 1}),
    (tuple[FileCheck, ...], {"path": "/a"}),
    (Environment, {"executable": "python"}),
    (Environment, {"executable": "p", "prefix": "/", "variables": [["PATH"]]}),
    (Environment, {"executable": "p", "prefix": "/", "variables": [["PATH", 1]]}),
    (Environment, {"executable": "p", "prefix": "/", "variables": {"PATH": "/bin"}}),
])
def test_malformed_data_is_a_value_error(kind: Any, data: Any) -> None:
    with pytest.raises(ValueError):
        from_wire(kind, data)


def test_a_starting_broker_sweeps_old_builds_secrets_and_logs_but_no_lock(
    tmp_path: Path,
) -> None:
    """Each upgrade or edit is a build with files of its own: a broker that starts removes
    another build's secret and log once a week old, unless that build's broker runs (its socket
    is there); locks stay, and so do its own files and what is newer."""
    from ipylsp.broker.place import Place
    from ipylsp.broker.serve import OLD_BUILDS_AFTER, _sweep

    here = Place(tmp_path, "0.1.0-new")
    old = time.time() - OLD_BUILDS_AFTER - 60
    names = ["broker-0.1.0-gone.key", "broker-0.1.0-gone.log", "broker-0.1.0-gone.lock",
             "broker-0.1.0-live.key", "broker-0.1.0-live.log", "broker-0.1.0-live.sock",
             "broker-0.1.0-new.key", "broker-0.1.0-new.log", "other.txt"]
    for name in names:
        (tmp_path / name).write_text("x")
        os.utime(tmp_path / name, (old, old))
    (tmp_path / "broker-0.1.0-recent.log").write_text("x")
    _sweep(here)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        {*names, "broker-0.1.0-recent.log"} - {"broker-0.1.0-gone.key", "broker-0.1.0-gone.log"})


def test_relayed_tools_answer_in_process_once_no_broker_can_be_had(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A broker that is gone and cannot be started again (its directory removed at logout,
    a newer build installed): this call and every later one are answered by the process's
    own tools, said once; a call the broker took and never answered fails (its budget is
    spent), and the next is answered here."""
    from ipylsp.agent.result import ToolResult
    from ipylsp.broker import client

    class Gone:
        def __init__(self, error: Exception) -> None:
            self.error, self.calls, self.closed = error, 0, False

        def tool(self, *args: object, **kwargs: object) -> dict[str, Any]:
            self.calls += 1
            raise self.error

        def close(self) -> None:
            self.closed = True

    class Local:
        def __init__(self) -> None:
            self.calls: list[str] = []

        def call(self, name: str, arguments: dict[str, Any] | None = None) -> ToolResult:
            self.calls.append(name)
            return ToolResult(ok=True, text=f"local {name}")

    made: list[Local] = []

    def local() -> Local:
        made.append(Local())
        return made[-1]

    gone = Gone(client.BrokerUnavailable("none runs"))
    tools = client.RelayedTools(gone, Path("/w"), max_chars=None, timeout=1.0,  # type: ignore[arg-type]
                                local=local)
    assert tools.call("lsp_check", {"path": "a.py"}).text == "local lsp_check"
    assert tools.call("lsp_status").text == "local lsp_status"
    assert (gone.calls, len(made), made[0].calls) == (1, 1, ["lsp_check", "lsp_status"])
    assert capsys.readouterr().err.count("serving in-process") == 1
    assert gone.closed  # its session ends: nothing of this client's stays in a broker

    hung = Gone(client.BrokerLate("the broker did not answer within 1.0 s"))
    tools = client.RelayedTools(hung, Path("/w"), max_chars=None, timeout=1.0,  # type: ignore[arg-type]
                                local=local)
    first = tools.call("lsp_check", {"path": "a.py"})
    assert not first.ok and first.error_code == "server_unavailable"
    assert tools.call("lsp_check", {"path": "a.py"}).text == "local lsp_check"
    assert hung.calls == 1


def test_relayed_tools_that_fail_at_once_make_one_local_service() -> None:
    """Calls that find the broker gone at the same time (each tool call of `ipylsp mcp` has
    its thread) make one local service, which alone takes the ledger's copy."""
    import threading

    from ipylsp.agent.result import ToolResult
    from ipylsp.broker import client

    both = threading.Barrier(2)

    class Gone:
        def tool(self, *args: object, **kwargs: object) -> dict[str, Any]:
            both.wait(30)
            raise client.BrokerUnavailable("killed")

        def close(self) -> None:
            pass

    made: list[str] = []

    class Local:
        def call(self, name: str, arguments: dict[str, Any] | None = None) -> ToolResult:
            return ToolResult(ok=True, text="local")

    def local() -> Local:
        made.append("local")
        return Local()

    tools = client.RelayedTools(Gone(), Path("/w"), max_chars=None, timeout=1.0,  # type: ignore[arg-type]
                                local=local)
    answers: list[str] = []
    threads = [threading.Thread(target=lambda: answers.append(tools.call("lsp_status").text))
               for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert (answers, made) == (["local", "local"], ["local"])


def test_a_clients_store_and_data_directory_are_its_own_not_the_brokers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The broker runs in the environment of whichever client started it: what a client's
    own environment decides (the store's file, the data directory) comes from that client's,
    unless its settings name them; and the broker keeps none of git's or ipylsp's choices."""
    from ipylsp.broker import serve
    from ipylsp.model.settings import Settings

    client = [["HOME", "/home/c"], ["IPYLSP_STORE", "/c/store.sqlite3"]]
    mine = serve._as_the_client_has_them(Settings(), client)
    assert (mine.store_path, mine.data_dir) == (
        Path("/c/store.sqlite3"), Path("/home/c/.local/share/ipylsp"))
    xdg = serve._as_the_client_has_them(Settings(), [["XDG_DATA_HOME", "/x"], ["HOME", "/h"]])
    assert (xdg.store_path, xdg.data_dir) == (None, Path("/x/ipylsp"))
    named = Settings(store_path=Path("/s"), data_dir=Path("/d"))
    assert serve._as_the_client_has_them(named, client) == named

    for name in ("GIT_DIR", "GIT_INDEX_FILE", "IPYLSP_STORE", "IPYLSP_BROKER"):
        monkeypatch.setenv(name, "the starter's")
    monkeypatch.setenv("GOPATH", "the starter's")
    serve._scrub()
    assert [n for n in ("GIT_DIR", "GIT_INDEX_FILE", "IPYLSP_STORE", "IPYLSP_BROKER")
            if n in os.environ] == []
    assert os.environ["GOPATH"] == "the starter's"  # a client's own value wins at spawn


def test_a_context_no_session_used_for_its_idle_timeout_is_closed() -> None:
    """A context per client environment and settings: one that no client has used for its
    servers' `idle_timeout` is closed (its servers with it), not kept for the broker's life;
    one in use, or newly quiet, stays."""
    from ipylsp.broker import serve
    from ipylsp.broker.place import Place
    from ipylsp.model.settings import Settings

    class Stub:
        def __init__(self, idle: float) -> None:
            self.settings, self.closed = Settings(idle_timeout=idle), False

        def close(self) -> None:
            self.closed = True

    broker = serve.BrokerProcess(Place("/nowhere", "b"), "secret", 900.0)
    long_ago = time.monotonic() - 1000
    cases = {"quiet": (Stub(600), 0, long_ago), "in use": (Stub(600), 1, long_ago),
             "newly quiet": (Stub(600), 0, time.monotonic()), "never": (Stub(0), 0, long_ago)}
    for key, (stub, sessions, since) in cases.items():
        broker._contexts[key] = serve.Context(key, stub, sessions, since)  # type: ignore[arg-type]
    broker.reap()
    assert sorted(broker._contexts) == ["in use", "never", "newly quiet"]
    assert [key for key, (stub, _, _) in cases.items() if stub.closed] == ["quiet"]


def test_one_venv_reached_through_a_symlinked_directory_is_one_context(
    tmp_path: Path,
) -> None:
    """A kernel whose spec names a venv through a symlinked directory and an `ipylsp mcp`
    whose shebang names where it points: one environment, one context (one ty, one ruff);
    another venv is another context."""
    from ipylsp.broker import serve
    from ipylsp.broker.place import Place

    real = tmp_path / "venvs" / "project"
    (real / "bin").mkdir(parents=True)
    (real / "bin" / "python").write_text("")
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / ".venv").symlink_to(real)
    other = tmp_path / "other"
    (other / "bin").mkdir(parents=True)
    broker = serve.BrokerProcess(Place("/nowhere", "b"), "secret", 900.0)

    def context(prefix: Path) -> str:
        environment = {"executable": str(prefix / "bin" / "python"), "prefix": str(prefix),
                       "variables": [["VIRTUAL_ENV", str(real)]]}
        found, _ = broker._context({"settings": None, "environment": environment})
        return found.key

    linked = context(tmp_path / "project" / ".venv")
    assert linked == context(real)
    assert context(other) != linked
    for found in broker._contexts.values():
        found.service.close()
