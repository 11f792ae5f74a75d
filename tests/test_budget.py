"""The budget holds on every path (issue 9, items 2 and 3), against the fixture server.

A check returns within its budget + 0.25 s whatever the server does: stops reading its input,
streams header lines that never end, answers pulls 20 s late, never answers. A server that
answers nothing twice in a row is set aside as broken (one notice naming `%lsp restart`), and
the third check is answered from the broken set. A batch that outlives the budget because the
server is slow is a cut, said once, and the server stays healthy; its late answers reach the
pending channel. The fixture serves shell files (no syntax tier in the way).
"""

from __future__ import annotations

import asyncio
import subprocess
import threading
import time
from collections.abc import Coroutine, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ipylsp.analysis.report import format_text
from ipylsp.model.diagnostics import Report, UnknownReason
from ipylsp.model.server_spec import InstallRecipe, ServerSpec
from ipylsp.model.settings import Settings
from ipylsp.service.service import FileCheck, Service
from tests.conftest import fake_command

pytestmark = pytest.mark.real

BUDGET = 1.0
PROMISE = BUDGET + 0.25  # the promise: a check returns within budget + 0.25 s


def settings(*flags: str, **changes: object) -> Settings:
    spec = ServerSpec(
        id="fake", name="Fake", languages=("shellscript",), command=fake_command(*flags),
        install=InstallRecipe("path", hint="it is a test fixture"),
    )
    base = Settings(
        language_servers={"shellscript": ("fake",)}, extra_specs=(spec,), wait_budget=BUDGET
    )
    return replace(base, **changes)  # type: ignore[arg-type]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    return tmp_path


@pytest.fixture
def services() -> Iterator[list[Service]]:
    made: list[Service] = []
    yield made
    for service in made:
        service.close()


def timed_check(service: Service, files: list[FileCheck], how: str = "facade",
                ) -> tuple[Report, float]:
    """A check and its wall time, through the facade or awaited on the service's loop (as
    the broker's connections do: `check_files_async`)."""
    started = time.monotonic()
    report = service.check_files(files) if how == "facade" else on_its_loop(
        service, service.check_files_async(files))
    return report, time.monotonic() - started


def on_its_loop(service: Service, awaited: Coroutine[Any, Any, Report]) -> Report:
    loop = service.event_loop()
    assert loop is not None
    return asyncio.run_coroutine_threadsafe(awaited, loop).result(30.0)


def file_unknowns(report: Report) -> list[tuple[str, UnknownReason]]:
    return [(u.server_id, u.reason) for f in report.files for u in f.unknown]


FAULTS = {
    "stops reading": ("--diagnostics", "pull", "--stop-reading"),
    "endless headers": ("--diagnostics", "pull", "--endless-headers"),
    "pulls answered 20 s late": ("--diagnostics", "pull", "--pull-delay-ms", "20000"),
    "pulls never answered": ("--diagnostics", "pull", "--hang-on", "textDocument/diagnostic"),
    "pushes nothing": ("--diagnostics", "none"),
}


@pytest.mark.parametrize("how", ["facade", "on its loop"])
@pytest.mark.parametrize("fault", list(FAULTS))
def test_every_check_keeps_the_budget_and_the_third_is_answered_from_the_broken_set(
    workspace: Path, services: list[Service], fault: str, how: str
) -> None:
    service = Service(settings(*FAULTS[fault]))
    services.append(service)
    path = workspace / "w.sh"
    reports = []
    for n in range(3):
        if n == 2:  # late work of check 2 (a retry finding the server broken) is done first:
            service.settle_late(5)  # it reaches no report, so it must not use up the notice
        path.write_text(f"echo {n}\nERROR:e{n}\n")
        report, took = timed_check(service, [FileCheck(path)], how)
        assert took <= PROMISE, f"check {n + 1} took {took:.2f} s ({fault}, {how})"
        reports.append(report)
    assert file_unknowns(reports[0]) == [("fake", UnknownReason.TIMED_OUT)]
    assert file_unknowns(reports[1]) == [("fake", UnknownReason.TIMED_OUT)]
    assert file_unknowns(reports[2]) == [("fake", UnknownReason.BROKEN)]
    assert format_text(reports[2]) == "\n".join([
        '<diagnostics file="w.sh">',
        "UNKNOWN [fake] broken after 2 checks without an answer: results for this file are "
        "incomplete; `%lsp restart fake` starts it again",
        "</diagnostics>",
    ])
    assert [(row.server_id, row.state) for row in service.status()] == [("fake", "broken")]
    # The notice is given once; later writes carry the short line only.
    path.write_text("echo 4\n")
    fourth = service.check(path)
    assert fourth.files[0].unknown[0].hint == ""


def test_a_check_on_the_services_loop_says_what_it_waits_for_as_the_facade_does(
    workspace: Path, services: list[Service]
) -> None:
    """`check_files_async`: its progress lines, called on the loop, are the facade's (after
    half a second, then every quarter); awaited on another loop, it refuses."""
    service = Service(settings(*FAULTS["pulls never answered"], wait_budget=1.2))
    services.append(service)
    said: dict[str, list[str]] = {"facade": [], "on its loop": []}
    threads: set[int | None] = set()
    for how, lines in said.items():
        path = workspace / f"{how.replace(' ', '_')}.sh"
        path.write_text("ERROR:e\n")

        def say(line: str, lines: list[str] = lines) -> None:
            lines.append(line)
            threads.add(threading.get_ident())

        checks = [FileCheck(path)]
        if how == "facade":
            service.check_files(checks, progress=say)
            threads.clear()  # the facade's: the caller's thread
        else:
            on_its_loop(service, service.check_files_async(checks, progress=say))
    assert said["facade"][0] == "ipylsp: waiting for diagnostics"
    assert said["on its loop"] == said["facade"][:len(said["on its loop"])]
    assert len(said["on its loop"]) >= 2
    assert threads == {service.thread_ident}
    with pytest.raises(RuntimeError, match="own loop"):
        asyncio.run(service.check_files_async([FileCheck(workspace / "other.sh")]))


def test_a_cut_is_one_line_per_server_across_its_workspace_roots(
    workspace: Path, services: list[Service]
) -> None:
    """One server running for two roots of one batch, both cut by the budget: one line."""
    spec = ServerSpec(
        id="fake", name="Fake", languages=("shellscript",), root_markers=("root.marker",),
        command=fake_command("--diagnostics", "pull", "--pull-cost-ms", "100"),
        install=InstallRecipe("path", hint="it is a test fixture"),
    )
    service = Service(settings(extra_specs=(spec,)))
    services.append(service)
    files = []
    for part in ("a", "b"):
        (workspace / part).mkdir()
        (workspace / part / "root.marker").write_text("")
        for n in range(20):
            path = workspace / part / f"gen_{n}.sh"
            path.write_text(f"ERROR:problem {n}\n")
            files.append(FileCheck(path, before=""))
    report, took = timed_check(service, files)
    assert took <= PROMISE
    assert len({row.root for row in service.status()}) == 2  # two roots, one server id
    [cut] = report.unknown
    missing = 40 - len([f for f in report.files if f.diagnostics])
    assert cut.detail == f"{missing} of 40 files not checked within 1.0 s"
    assert format_text(report).count("UNKNOWN") == 1


def test_a_write_the_server_cannot_take_costs_the_budget_not_the_write_timeout(
    workspace: Path, services: list[Service]
) -> None:
    """1.2 MB to a server that stopped reading: the pipe stays full; the check gives up at its
    deadline (the frame stays queued), and the server is set aside after two such checks."""
    service = Service(settings("--diagnostics", "pull", "--stop-reading"))
    services.append(service)
    path = workspace / "big.sh"
    for n in range(2):
        path.write_text(f"x{n}=1\n" * 200_000)
        report, took = timed_check(service, [FileCheck(path)])
        assert took <= PROMISE
        assert file_unknowns(report) == [("fake", UnknownReason.TIMED_OUT)]
    path.write_text("x=2\n")
    report, took = timed_check(service, [FileCheck(path)])
    assert took <= PROMISE
    assert file_unknowns(report) == [("fake", UnknownReason.BROKEN)]


def test_a_batch_cut_by_the_budget_is_one_line_and_the_server_stays_healthy(
    workspace: Path, services: list[Service]
) -> None:
    """A slow server (50 ms a pull, one at a time) and 40 files in a 1 s budget: one summary
    line for the server, no per-file blocks, not a timeout; the next write is answered; the
    late answers reach the pending channel, every problem exactly once."""
    service = Service(settings("--diagnostics", "pull", "--pull-cost-ms", "50"))
    services.append(service)
    warm = workspace / "warm.sh"
    warm.write_text("echo warm\n")
    assert service.check(warm).files[0].servers == ("fake",)  # started: the cut is the pulls'
    files = []
    for n in range(40):
        path = workspace / f"gen_{n}.sh"
        path.write_text(f"ERROR:problem {n}\n")
        files.append(FileCheck(path, before=""))
    report, took = timed_check(service, files)
    assert took <= PROMISE
    [cut] = report.unknown
    answered = [f for f in report.files if f.diagnostics]
    missing = 40 - len(answered)
    assert 0 < missing < 40
    assert (cut.server_id, cut.reason) == ("fake", UnknownReason.TIMED_OUT)
    assert cut.detail == f"{missing} of 40 files not checked within 1.0 s"
    assert format_text(report).count("UNKNOWN") == 1
    assert file_unknowns(report) == []
    assert [row.state for row in service.status()] == ["running"]
    # Late answers: the rest arrives in the background, then to the pending channel.
    assert service.settle_late(30)
    pending = service.pending()
    cut_count = service.pending_count  # what the hand-over left for the next call
    handed = [d.message for f in pending.files for d in f.diagnostics]
    assert len(handed) + cut_count == 40
    assert len(set(handed)) == len(handed)
    # The server is healthy: a single write is reported normally, no UNKNOWN.
    single = workspace / "single.sh"
    single.write_text("echo one\nERROR:single problem\n")
    after = service.check(single)
    assert format_text(after) == "\n".join([
        '<diagnostics file="single.sh">',
        "ERROR [2:1] single problem [E1] (fake)",
        "</diagnostics>",
    ])


def test_a_newer_check_takes_a_document_from_its_late_question(
    workspace: Path, services: list[Service]
) -> None:
    """A pull answered 3 s late holds its document past the check; the next check of the same
    file does not wait for it (the late question gives way) and keeps its own budget."""
    service = Service(settings("--diagnostics", "pull", "--pull-delay-ms", "3000",
                               max_timeouts=5))
    services.append(service)
    path = workspace / "late.sh"
    path.write_text("ERROR:first\n")
    first, took = timed_check(service, [FileCheck(path)])
    assert took <= PROMISE and file_unknowns(first) == [("fake", UnknownReason.TIMED_OUT)]
    path.write_text("ERROR:second\n")
    second, took = timed_check(service, [FileCheck(path)])
    assert took <= PROMISE and file_unknowns(second) == [("fake", UnknownReason.TIMED_OUT)]
