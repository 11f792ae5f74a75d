"""The Jupyter server extension on the user's broker (issue 31, docs/broker.md): a real
`jupyter server` process whose routes, tools and MCP over HTTP are answered by the broker's ty
and ruff, in the server's own session, exactly as its own servers answer them with the broker
off; none of those servers is the Jupyter server's child; and with the broker off, or none to be
had, everything runs in the Jupyter server as before, said once in its log, in the status route
and in `lsp_status`.

Each test has a runtime directory of its own (short and 0700 in /tmp: a socket path has at most
107 bytes) and its workspaces below the run's private directory (`site`, tests/test_broker.py);
the Jupyter servers run the copy of the package the broker's tests run (a broker serves only
clients of its build), and every broker is stopped at teardown."""

from __future__ import annotations

import http.client
import json
import logging
import os
import signal
import urllib.parse
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ipylsp.lsp.procfs import descendants, wait_exited
from ipylsp.server.state import IN_PROCESS
from tests.contracts import validate_status
from tests.test_broker import Site, names, package, site, without_runtime_dir
from tests.test_server_mcp_http import TOKEN, _post, _session, _start, _stop

real = pytest.mark.real

__all__ = ["package", "site"]  # the fixtures, used by name

APP = "def total(xs: list[int]) -> int:\n    return sum(xs)\n\n\nprint(total([1]), totl)\n"
CHECKED = (
    '<diagnostics file="app.py">\n'
    "ERROR [5:19] Name `totl` used when not defined [unresolved-reference, F821] (ty, Ruff)\n"
    "</diagnostics>"
)
CELL = (
    '<diagnostics file="cell [ ]">\n'
    "ERROR [1:7] Name `undefined_name` used when not defined [unresolved-reference, F821] "
    "(ty, Ruff)\n"
    "</diagnostics>"
)
OFF = "the broker is off (IPyLSP.broker, IPYLSP_BROKER)"
BROKER_LOG = "ipylsp: language servers of the user's broker (pid "
IN_PROCESS_LOG = IN_PROCESS.split("%s")[0]

CALLS: list[tuple[str, str, dict[str, Any]]] = [
    ("POST", "check", {"path": "app.py"}),
    ("POST", "check", {"path": "app.py"}),  # the server's session knows it now: nothing new
    ("POST", "tools/lsp_check", {"path": "app.py", "content": APP + "x: int = 'no'\n"}),
    ("GET", "diagnostics", {"path": "app.py"}),
    ("GET", "diagnostics", {"path": "app.py", "max_per_file": "0", "severity": "all"}),
    ("GET", "diagnostics", {}),
    ("GET", "pending", {}),
    ("POST", "tools/lsp_check_cell", {"code": "print(undefined_name)\n"}),
    ("POST", "tools/lsp_hover", {"path": "app.py", "line": 5, "symbol": "total"}),
    ("POST", "tools/lsp_definition", {"path": "app.py", "line": 5, "symbol": "total"}),
    ("POST", "tools/lsp_references", {"path": "app.py", "line": 1, "symbol": "total"}),
    ("POST", "tools/lsp_symbols", {"path": "app.py"}),
    ("POST", "tools/lsp_definition", {"symbol": "total"}),  # by name: a workspace search
    ("POST", "check", {"path": "../outside.py"}),
]
"""The routes' calls whose answers must be the same on the broker as in-process, in order."""


def _get(port: int, route: str, params: dict[str, Any]) -> tuple[int, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        conn.request("GET", f"/ipylsp/api/{route}{query}",
                     headers={"Authorization": f"token {TOKEN}"})
        answer = conn.getresponse()
        return answer.status, json.loads(answer.read())
    finally:
        conn.close()


def _answers(server: Jupyter) -> list[tuple[int, Any]]:
    """Every call of `CALLS`, its status and body, the root written `<root>` and the cells'
    document `<root>/.ipylsp-cells-<server>.py` (the Jupyter server's own: its pid)."""
    found = []
    for method, route, body in CALLS:
        code, answer = (_post(server.port, route, body) if method == "POST"
                        else _get(server.port, route, body))
        text = json.dumps(answer).replace(str(server.root), "<root>")
        found.append((code, json.loads(text.replace(f"/.ipylsp-cells-{server.pid}.py",
                                                    "/.ipylsp-cells-<server>.py"))))
    return found


def _status(port: int) -> dict[str, Any]:
    code, status = _get(port, "status", {})
    assert code == 200, status
    validate_status(status)
    return status  # type: ignore[no-any-return]


def _lsp_status(port: int) -> str:
    code, result = _post(port, "tools/lsp_status", {})
    assert code == 200 and result["ok"], result
    return str(result["text"])


def _servers_below(pid: int) -> list[int]:
    """The ty and ruff processes below `pid`."""
    return [p for p in descendants(pid) if names([p]) in (["ty"], ["ruff"])]


class Jupyter:
    """A running `jupyter server` of a test (`_start`, its log in `base`), stopped by the
    `jupyters` fixture."""

    def __init__(self, base: Path, env: dict[str, str], config: str = "") -> None:
        base.mkdir()
        self.base = base
        # in `base`: not in the source tree, whose package would come before `PYTHONPATH`
        self.process, self.port, self.root = _start(base, base, env=env, config=config,
                                                    app=APP)
        (base / "outside.py").write_text("x = 1\n")

    @property
    def pid(self) -> int:
        return self.process.pid

    def log(self) -> str:
        return (self.base / "server.log").read_text(errors="replace")


@pytest.fixture
def jupyters() -> Iterator[list[Jupyter]]:
    made: list[Jupyter] = []
    try:
        yield made
    finally:
        for server in made:
            _stop(server.process)


def _in_process(site: Site, jupyters: list[Jupyter], name: str, config: str = "",
                env: dict[str, str] | None = None) -> Jupyter:
    server = Jupyter(site.top / name, site.env(broker=False) if env is None else env, config)
    jupyters.append(server)
    return server


@real
def test_the_server_extension_runs_on_the_brokers_servers_and_answers_as_in_process(
    site: Site, jupyters: list[Jupyter],
) -> None:
    # the broker off (IPYLSP_BROKER=0): the Jupyter server's own servers, as before the broker
    off = _in_process(site, jupyters, "off")
    expected = _answers(off)
    assert expected[0][1]["files"][0]["path"] == "app.py"
    assert _post(off.port, "tools/lsp_check", {"path": "app.py"})[1]["text"] == (
        "app.py: no new problems (ruff, ty)")
    status = _status(off.port)
    assert status["in_process"] == OFF
    own = {row["server"] for row in status["servers"] if row["owner"] == off.pid}
    assert own == {"ty", "ruff"}
    assert _lsp_status(off.port).endswith(
        f"\nservers run in this process, not in the user's broker: {OFF}")
    assert sorted(names(_servers_below(off.pid))) == ["ruff", "ty"]  # its children
    _stop(off.process)
    assert off.log().count(IN_PROCESS_LOG) == 1
    assert f"{IN_PROCESS_LOG}{OFF}" in off.log() and BROKER_LOG not in off.log()
    assert site.brokers() == []

    # the broker on: the same answers, from the broker's servers
    on = Jupyter(site.top / "on", site.env())
    jupyters.append(on)
    [broker] = site.brokers()
    assert _answers(on) == expected
    checked = _post(on.port, "tools/lsp_check", {"path": "app.py", "content": APP})
    assert checked[1]["text"] == (
        "proposed content of app.py: no new problems (ruff, ty); not written")
    code, fresh = _post(on.port, "tools/lsp_check_cell", {"code": "print(undefined_name)\n"})
    assert (code, fresh["text"]) == (200, CELL)

    status = _status(on.port)
    assert status["in_process"] is None
    assert {row["server"] for row in status["servers"] if row["owner"] == broker} >= {
        "ty", "ruff"}
    assert not [row for row in status["servers"] if row["owner"] == on.pid]
    text = _lsp_status(on.port)
    assert f"\nbroker: pid {broker} " in text and "not in the user's broker" not in text

    info = site.status()
    [client] = [c for c in info["clients"] if c["pid"] == on.pid]
    servers = {row["server"]: row["pid"] for row in info["servers"]
               if row["context"] == client["context"] and row["state"] == "running"}
    assert sorted(servers) == ["ruff", "ty"]
    # the broker's servers; none is the Jupyter server's child (the broker, which it
    # started, is: they are below it)
    assert set(servers.values()) <= set(descendants(broker))
    assert not [p for p in _servers_below(on.pid) if p not in descendants(broker)]
    assert not [p for p in descendants(on.pid) if p not in (broker, *descendants(broker))
                and names([p]) in (["ty"], ["ruff"])]
    assert on.log().count(f"{BROKER_LOG}{broker})") == 1
    assert IN_PROCESS_LOG not in on.log()


@real
@pytest.mark.mcp_sdk
def test_mcp_over_http_and_a_second_jupyter_server_are_answered_by_the_one_broker(
    site: Site, jupyters: list[Jupyter],
) -> None:
    """MCP over HTTP is answered by the broker's servers; so is a second Jupyter server of the
    user, by the same broker (its root, another workspace, has its own ty and ruff)."""
    import asyncio

    first = Jupyter(site.top / "first", site.env())
    jupyters.append(first)
    url = f"http://127.0.0.1:{first.port}/ipylsp/mcp"
    _, checked, refused = asyncio.run(_session(url, {"Authorization": f"token {TOKEN}"}))
    assert checked == (False, [CHECKED])
    assert refused[0] and refused[1][0].startswith("error [outside_workspace]: ")
    second = Jupyter(site.top / "second", site.env())
    jupyters.append(second)
    code, answer = _post(second.port, "tools/lsp_check", {"path": "app.py"})
    assert (code, answer["text"]) == (200, CHECKED)
    [broker] = site.brokers()
    info = site.status()
    assert {c["pid"] for c in info["clients"]} >= {first.pid, second.pid}
    assert sorted((row["root"], row["server"]) for row in info["servers"]
                  if row["state"] == "running") == [
        (str(server.root), name) for server in (first, second) for name in ("ruff", "ty")]
    for server in (first, second):
        assert not [p for p in _servers_below(server.pid) if p not in descendants(broker)]


@real
def test_a_killed_broker_is_replaced_within_the_next_call(
    site: Site, jupyters: list[Jupyter],
) -> None:
    """A broker killed (SIGKILL) takes its servers with it (their watchdogs); the Jupyter
    server's next call starts another broker and is answered by its servers, a new session
    (its baseline its own), never by servers of the Jupyter server's own."""
    on = Jupyter(site.top / "on", site.env())
    jupyters.append(on)
    [old] = site.brokers()
    assert _post(on.port, "tools/lsp_check", {"path": "app.py"})[1]["text"] == CHECKED
    servers = _servers_below(old)
    assert sorted(names(servers)) == ["ruff", "ty"]
    os.kill(old, signal.SIGKILL)
    assert wait_exited([old, *servers], 30) == []
    code, answer = _post(on.port, "tools/lsp_check", {"path": "app.py"})
    assert (code, answer["text"]) == (200, CHECKED)
    [new] = site.brokers()
    assert new != old and _status(on.port)["in_process"] is None
    assert sorted(names(_servers_below(new))) == ["ruff", "ty"]
    assert not [p for p in _servers_below(on.pid) if p not in descendants(new)]
    assert IN_PROCESS_LOG not in on.log()


@real
@pytest.mark.parametrize("why", ["IPyLSP.broker = False", "no place for a broker"])
def test_without_a_broker_the_server_checks_in_process_and_says_why_once(
    site: Site, jupyters: list[Jupyter], why: str,
) -> None:
    if why == "IPyLSP.broker = False":
        server = _in_process(site, jupyters, "off", "c.IPyLSP.broker = False\n", site.env())
        reason = OFF
    else:  # no runtime directory, and a data directory whose socket path would be too long
        long = site.top / ("d" * 100)
        server = _in_process(site, jupyters, "none", f"c.IPyLSP.data_dir = {str(long)!r}\n",
                             without_runtime_dir(site.env(), site))
        reason = _status(server.port)["in_process"]
        assert reason.startswith("no broker (no private place for it: the broker's socket "
                                 "path is longer than 107 bytes: ")
    code, answer = _post(server.port, "tools/lsp_check", {"path": "app.py"})
    assert (code, answer["text"]) == (200, CHECKED)
    code, cell = _post(server.port, "tools/lsp_check_cell", {"code": "print(undefined_name)\n"})
    assert (code, cell["text"]) == (200, CELL)
    assert _status(server.port)["in_process"] == reason
    assert _lsp_status(server.port).endswith(
        f"\nservers run in this process, not in the user's broker: {reason}")
    assert sorted(names(_servers_below(server.pid))) == ["ruff", "ty"]
    assert site.brokers() == []
    log = server.log()
    assert log.count(IN_PROCESS_LOG) == 1 and f"{IN_PROCESS_LOG}{reason}" in log
    level = "[I " if why == "IPyLSP.broker = False" else "[W "
    [line] = [line for line in log.splitlines() if IN_PROCESS_LOG in line]
    assert line.startswith(level), line


class FakeBroker:
    """What a `RelayedService` asks of a `client.Broker` for tools: each answer in turn (an
    exception is raised)."""

    pid = 4242

    def __init__(self, *answers: dict[str, Any] | Exception) -> None:
        self.answers = list(answers)
        self.asked: list[tuple[str, Path]] = []

    def tool(self, name: str, arguments: object, *, root: Path, **options: object
             ) -> dict[str, Any]:
        self.asked.append((name, root))
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    def release_ledger(self) -> None:
        """No copy of what a session owes (`Broker.release_ledger`): it owes nothing."""

    def close(self) -> None:
        pass


@pytest.fixture
def on_fake_broker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                   ) -> Iterator[Callable[..., tuple[Any, FakeBroker]]]:
    """A `ServerState` whose service attaches to a `FakeBroker` with the given answers (the
    broker wanted, as by default), logging to `test.server`; closed at the end."""
    from ipylsp.broker.relay import RelayedService
    from ipylsp.model.settings import Settings
    from ipylsp.server import state

    monkeypatch.delenv("IPYLSP_BROKER")
    made: list[state.ServerState] = []

    def make(*answers: dict[str, Any] | Exception) -> tuple[state.ServerState, FakeBroker]:
        broker = FakeBroker(*answers)

        def attach(settings: Settings, cells_dir: Path, ends_broker: bool) -> RelayedService:
            assert ends_broker  # the broker ends with the Jupyter server once alone
            return RelayedService(broker, settings,  # type: ignore[arg-type]
                                  make_broker=lambda _, owed=None: broker,  # type: ignore[arg-type,return-value]
                                  cells_dir=cells_dir)

        monkeypatch.setattr(state, "attach", attach)
        made.append(state.ServerState(tmp_path, Settings(data_dir=tmp_path / "data"),
                                      logging.getLogger("test.server")))
        return made[-1], broker

    try:
        yield make
    finally:
        for server in made:
            server.close()


def test_the_servers_tools_answer_here_once_no_broker_can_be_had_said_once(
    on_fake_broker: Callable[..., tuple[Any, FakeBroker]], tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The server extension's tools are relayed whole while the broker answers; once none
    can be had, every call is answered in this process, never asked of a broker again, and
    why is said once in the log (a warning: the broker was wanted), and in the status and
    `lsp_status` from then on."""
    from ipylsp.broker.client import BrokerUnavailable

    relayed = {"ok": True, "text": "the broker's", "data": {"n": 1}, "error_code": None}
    server, broker = on_fake_broker(relayed, BrokerUnavailable("none runs"))
    why = "no broker (none runs)"
    with caplog.at_level(logging.INFO, "test.server"):
        first = server.toolbox.call("lsp_pending")
        assert (first.ok, first.text, first.data) == (True, "the broker's", {"n": 1})
        assert server.in_process is None
        here = server.toolbox.call("lsp_status")
        assert here.ok and here.text.endswith(
            f"\nservers run in this process, not in the user's broker: {why}")
        assert here.data["in_process"] == why
        assert server.toolbox.call("lsp_pending").text == "nothing pending"
        assert server.status()["in_process"] == why
    assert broker.asked == [("lsp_pending", tmp_path), ("lsp_status", tmp_path)]
    said = [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "test.server"]
    assert said == [(logging.INFO, "ipylsp: language servers of the user's broker (pid 4242)"),
                    (logging.WARNING, IN_PROCESS % why)]


def test_a_tool_call_the_broker_took_and_never_answered_is_a_timeout(
    on_fake_broker: Callable[..., tuple[Any, FakeBroker]],
) -> None:
    from ipylsp.broker.client import BrokerLate

    server, _ = on_fake_broker(BrokerLate("the broker did not answer within 5.0 s"))
    late = server.toolbox.call("lsp_hover", {"symbol": "f"})
    assert (late.ok, late.error_code, late.text) == (
        False, "timeout", "error [timeout]: the broker did not answer within 5.0 s; retry")


def test_a_server_stopping_while_its_first_call_attaches_does_not_wait_for_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`ServerState.close` during the first call's attach (up to the attach's budget) returns
    at once; the attach's service, once made, is closed, and the call that asked ends on
    it."""
    import threading

    from ipylsp.model.settings import Settings
    from ipylsp.server import state as server_state

    attaching, release = threading.Event(), threading.Event()

    def slow_attach(*args: object, **kwargs: object) -> str:
        attaching.set()
        assert release.wait(30)
        return "the broker is off (a test)"

    monkeypatch.setattr(server_state, "attach", slow_attach)
    state = server_state.ServerState(tmp_path, Settings(broker=False))
    got: list[Any] = []
    first = threading.Thread(target=lambda: got.append(state.service))
    first.start()
    assert attaching.wait(30)
    state.close()  # returns while the attach still waits
    assert state.in_process is None and got == []
    release.set()
    first.join(30)
    (service,) = got
    assert state.in_process == "the broker is off (a test)"
    with pytest.raises(RuntimeError, match="closed"):
        service.check(tmp_path / "a.py")

    attached: list[object] = []
    monkeypatch.setattr(server_state, "attach", lambda *a, **k: attached.append(a))
    stopped = server_state.ServerState(tmp_path, Settings(broker=False))
    stopped.close()  # before any call: none attaches (nor starts a broker) after it
    with pytest.raises(RuntimeError, match="closed"):
        stopped.service.check(tmp_path / "a.py")
    assert attached == []
