"""Nothing pending is lost when the user's broker is killed (docs/broker.md, "Lifetime and
faults"; `broker/ledger.py`): real brokers, SIGKILLed; real kernels (nbclient) and a real
`ipylsp mcp` driven by the official MCP SDK's client; the scriptable fake server answering
late, or never.

Every problem owed is counted: before the kill, after it (a new broker's session took over
the client's copy), handed over exactly once, never twice, none of another client's. And a
call the broker dies in is retried on a new broker within what is left of its budget, which
the test reads in the budget the new broker was given (no assertion on wall time).

Processes run the module's copy of the package, in a runtime directory of their own
(tests/test_broker.py's `site`); waits are for a condition with a deadline.
"""

from __future__ import annotations

import os
import re
import signal
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from ipylsp.lsp.procfs import descendants, wait_exited
from tests import test_broker
from tests.conftest import FAKE_SERVER
from tests.test_broker import Site, mcp_session
from tests.test_broker_kernels import kernel

pytestmark = [pytest.mark.real, pytest.mark.timeout(240)]

package = test_broker.package  # the module's copy of the package
site = test_broker.site

LATE_MS = 1500
"""How late the fake server answers every pull: after the check's budget (0.5 s)."""

PROBLEM = re.compile(r"^ERROR \[\d+:\d+\] (.+?) \[", re.M)


def handed(text: str) -> list[str]:
    """The message of each ERROR line of a hand-over (or a report)."""
    return PROBLEM.findall(text)


def fake(*flags: str) -> list[str]:
    return [sys.executable, str(FAKE_SERVER), "--lifetime-s", "200", "--diagnostics", "pull",
            *flags]


def kill_broker(site: Site) -> int:
    """SIGKILL the one broker, and wait for it and its servers (their watchdog) to end."""
    [broker] = site.brokers()
    below = descendants(broker)
    os.kill(broker, signal.SIGKILL)
    assert wait_exited([broker, *below], 30.0) == []
    return broker


# -- a kernel's late answers ------------------------------------------------------------------


def late_kernel_cells() -> list[str]:
    late = fake("--pull-delay-ms", str(LATE_MS))
    return [
        "%load_ext ipylsp",
        f"%config IPyLSP.custom_servers = {{'late': {{'command': {late!r}, "
        "'languages': ['shellscript']}}",
        "%config IPyLSP.language_servers = {'shellscript': ['late'], 'python': []}",
        "%config IPyLSP.wait_budget = 0.5",
        "import ipylsp\n_ = ipylsp.get_service().start('warm.sh')",  # waits for its start
    ]


def write_late(name: str, *messages: str) -> str:
    return f"%%writefile {name}\n" + "".join(f"ERROR:{m}\n" for m in messages)


SETTLE = "print(ipylsp.get_service().settle_late(60))"
"""Until every late answer is in the session's pending channel (in the broker)."""


def test_a_kernels_late_answers_survive_a_killed_broker_each_handed_over_once(
    site: Site,
) -> None:
    first_owed = [f"a{n}" for n in range(12)] + ["b0"]
    with kernel(site) as mine, kernel(site) as other:
        for k in (mine, other):
            for cell in late_kernel_cells():
                assert k.run(cell).outputs == [], cell
        # each check is cut by its budget: the server's answers arrive later, in pending
        # (each awaited: a server's late answer says it is slow, not wedged)
        for k, name, messages in ((mine, "a.sh", first_owed[:12]), (mine, "b.sh", ["b0"]),
                                  (other, "c.sh", ["c0"])):
            shown = "\n".join(k.run(write_late(name, *messages)).displays)
            assert "timed out" in shown and handed(shown) == [], shown
            assert k.run(SETTLE).stdout == "True\n"
        assert mine.run("print(ipylsp.get_service().pending_count)").stdout == "13\n"
        # a hand-over before the kill: 10 of a.sh's and b.sh's one (newest first)
        before = mine.run("%lsp pending").result or ""
        assert before.endswith("... and 2 more pending: %lsp pending"), before
        given = handed(before)
        assert len(given) == 11 and "b0" in given

        killed = kill_broker(site)
        # what the killed broker owed: in a new broker, this kernel's alone
        assert mine.run("print(ipylsp.get_service().pending_count)").stdout == "2\n"
        [replaced] = site.brokers()
        assert replaced != killed
        after = mine.run("%lsp pending").result or ""
        assert "more pending" not in after
        given += handed(after)
        assert mine.run("%lsp pending").result == "nothing pending"
        assert Counter(given) == Counter(first_owed)  # each once, none of the other's
        assert handed(other.run("%lsp pending").result or "") == ["c0"]
        assert other.run("%lsp pending").result == "nothing pending"


# -- an `ipylsp mcp` session's lsp_pending ------------------------------------------------------

MANY = "".join(f'x{n}: int = "s{n}"\n' for n in range(12))
"""Twelve ty errors: more than a hand-over takes of one file (10)."""


def pending_count(status: str) -> int:
    [count] = re.findall(r"^pending problems: (\d+)$", status, re.M)
    return int(count)


@pytest.mark.mcp_sdk
def test_an_mcp_sessions_pending_survives_a_killed_broker_each_handed_over_once(
    site: Site, tmp_path: Path,
) -> None:
    (site.ws / "many.py").write_text(MANY)
    (site.ws / "other.py").write_text('z: int = "other"\n')
    with (mcp_session(site, tmp_path / "mine.txt") as mine,
          mcp_session(site, tmp_path / "other.txt") as other):
        assert len(handed(mine.ok("lsp_check", {"path": "many.py"}))) >= 1
        assert len(handed(mine.ok("lsp_check", {"path": "bad.py"}))) == 1
        assert len(handed(other.ok("lsp_check", {"path": "other.py"}))) == 1
        assert pending_count(mine.ok("lsp_status", {})) == 13
        before = mine.ok("lsp_pending", {})
        given = handed(before)
        left = 13 - len(given)
        assert left > 0 and before.endswith(f"... and {left} more pending: lsp_pending"), before

        killed = kill_broker(site)
        assert pending_count(mine.ok("lsp_status", {})) == left  # a new broker took it over
        [replaced] = site.brokers()
        assert replaced != killed
        given += handed(mine.ok("lsp_pending", {}))
        assert mine.ok("lsp_pending", {}) == "nothing pending"
        owed = [f'Object of type `Literal["s{n}"]` is not assignable to `int`' for n in range(12)]
        assert Counter(given) == Counter(
            [*owed, 'Object of type `Literal["s"]` is not assignable to `int`'])
        assert handed(other.ok("lsp_pending", {})) == [
            'Object of type `Literal["other"]` is not assignable to `int`']
        assert other.ok("lsp_pending", {}) == "nothing pending"
    for log in ("mine.txt", "other.txt"):
        assert (tmp_path / log).read_text() == ""


# -- a call the broker dies in --------------------------------------------------------------------


@pytest.fixture
def as_site(site: Site, monkeypatch: pytest.MonkeyPatch) -> Iterator[Site]:
    """This process in the site's environment: its runtime directory, home and marker (a
    broker it starts is the site's, stopped at its teardown)."""
    wanted = site.env()
    for name in list(os.environ):
        if name not in wanted:
            monkeypatch.delenv(name)
    for name, value in wanted.items():
        monkeypatch.setenv(name, value)
    yield site


def test_a_call_whose_broker_dies_in_it_is_retried_within_what_is_left_of_its_budget(
    as_site: Site,
) -> None:
    from ipylsp.broker.relay import RelayedService, attach
    from ipylsp.model.checks import FileCheck
    from ipylsp.model.diagnostics import UnknownReason
    from ipylsp.model.server_spec import custom_spec
    from ipylsp.model.settings import Settings

    site = as_site
    spec = custom_spec("mute", {"command": fake("--hang-on", "textDocument/diagnostic"),
                                "languages": ["shellscript"]})
    settings = Settings(directory=site.ws, language_servers={"shellscript": ("mute",)},
                        extra_specs=(spec,), wait_budget=4.0)
    files = [FileCheck(site.ws / name, before="") for name in ("h1.sh", "h2.sh")]
    for check in files:
        check.path.write_text("ERROR:never answered\n")
    service = attach(settings)
    assert isinstance(service, RelayedService), service
    killed: list[int] = []

    def progress(line: str) -> None:
        """The first line says the broker waits in the call: it is killed there."""
        if not killed:
            killed.append(kill_broker(site))

    try:
        budget = settings.wait_budget
        report = service.check_files(files, timeout=budget, progress=progress)
        assert killed and service.fallback is None
        [replaced] = site.brokers()
        assert replaced != killed[0] and service.broker_pid == replaced
        # the new broker's check was given what was left of the budget: less than all of it
        [cut] = report.unknown
        assert cut.reason is UnknownReason.TIMED_OUT
        found = re.fullmatch(r"2 of 2 files not checked within (\d+\.\d) s", cut.detail)
        assert found is not None, cut.detail
        assert float(found[1]) < budget
    finally:
        service.close()
