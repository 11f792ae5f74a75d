"""The Service facade against the fake server (serving shell files: no syntax tier there):
budgets, the broken set, restarts, caps, odd files. Every failure must come back as an
`Unknown`, never as an exception or a clean result."""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from ipylsp.lsp.client import ClientError
from ipylsp.lsp.process import descendants, running, wait_exited
from ipylsp.lsp.requests.code_actions import CODE_ACTIONS
from ipylsp.lsp.requests.hover import HOVER
from ipylsp.lsp.requests.locations import DEFINITION, REFERENCES
from ipylsp.lsp.requests.symbols import SYMBOLS
from ipylsp.model.diagnostics import Report, UnknownReason
from ipylsp.model.server_spec import InstallRecipe, ServerSpec
from ipylsp.model.settings import Settings
from ipylsp.service.runtime.pool import ClientPool
from ipylsp.service.service import FileCheck, Service
from tests.conftest import fake_command
from tests.real_servers import require


def fake_spec(*flags: str, server_id: str = "fake") -> ServerSpec:
    return ServerSpec(
        id=server_id,
        name="Fake",
        languages=("shellscript",),
        command=fake_command(*flags),
        install=InstallRecipe("path", hint="it is a test fixture"),
    )


def settings(*flags: str, **changes: object) -> Settings:
    base = Settings(
        language_servers={"shellscript": ("fake",)},
        extra_specs=(fake_spec(*flags),),
        wait_budget=5.0,
    )
    from dataclasses import replace

    return replace(base, **changes)  # type: ignore[arg-type]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    return tmp_path


def messages(report: Report) -> list[tuple[str, int, int, str]]:
    return [
        (f.display_path, d.range.start.line + 1, d.range.start.column + 1, d.message)
        for f in report.files
        for d in f.diagnostics
    ]


def unknowns(report: Report) -> list[tuple[str, UnknownReason]]:
    return [(u.server_id, u.reason) for f in report.files for u in f.unknown]


@pytest.fixture
def service_factory() -> Iterator[list[Service]]:
    made: list[Service] = []
    yield made
    for service in made:
        service.close()


def make(made: list[Service], config: Settings) -> Service:
    service = Service(config)
    made.append(service)
    return service


@pytest.mark.real
def test_check_reports_introduced_and_fixed(
    workspace: Path, service_factory: list[Service]
) -> None:
    service = make(service_factory, settings("--diagnostics", "pull"))
    path = workspace / "app.sh"
    path.write_text("a = 1\nb ERROR:first\n")
    first = service.check(path)
    assert messages(first) == [("app.sh", 2, 3, "first")]
    path.write_text("new line\na = 1\nb ERROR:first\nERROR:second\n")
    second = service.check(path)
    assert messages(second) == [("app.sh", 4, 1, "second")]
    path.write_text("a = 1\n")
    third = service.check(path)
    assert messages(third) == []
    assert sorted(d.message for f in third.files for d in f.fixed) == ["first", "second"]


@pytest.mark.real
def test_hung_initialize_costs_one_budget_then_nothing(
    workspace: Path, service_factory: list[Service]
) -> None:
    service = make(service_factory, settings("--hang-initialize", wait_budget=0.5))
    path = workspace / "h.sh"
    path.write_text("x = 1\n")
    t0 = time.monotonic()
    first = service.check(path)
    assert time.monotonic() - t0 < 0.5 + 1.5
    assert unknowns(first) == [("fake", UnknownReason.TIMED_OUT)]
    assert "initialize unanswered" in first.files[0].unknown[0].detail
    for _ in range(3):
        t1 = time.monotonic()
        again = service.check(path)
        assert time.monotonic() - t1 < 0.4  # far below the 0.5 s budget: no second wait
        assert unknowns(again) == [("fake", UnknownReason.TIMED_OUT)]
        assert "still starting" in again.files[0].unknown[0].detail


@pytest.mark.real
def test_initialize_that_never_answers_becomes_broken_until_restart(
    workspace: Path, service_factory: list[Service]
) -> None:
    service = make(
        service_factory, settings("--hang-initialize", wait_budget=1.0, initialize_timeout=0.3)
    )
    path = workspace / "b.sh"
    path.write_text("x = 1\n")
    first = service.check(path)
    assert unknowns(first) == [("fake", UnknownReason.TIMED_OUT)]
    assert "initialize got no answer within 0.3 s" in first.files[0].unknown[0].detail
    second = service.check(path)
    assert unknowns(second) == [("fake", UnknownReason.BROKEN)]
    assert [row.state for row in service.status()] == ["broken"]
    assert service.restart("fake") == 1
    assert service.status() == []


@pytest.mark.real
def test_stop_before_a_start_ran_leaves_the_slot_usable(tmp_path: Path) -> None:
    """A start cancelled before its first step never ran its `finally`; the slot must not
    keep the cancelled task (every later acquire raised CancelledError)."""
    spec = fake_spec()

    async def main() -> None:
        pool = ClientPool(settings())
        slot = pool.add(spec, tmp_path, spec.command, tmp_path)
        first, _ = await asyncio.gather(
            pool.acquire(slot, time.monotonic() + 5), pool.stop(), return_exceptions=True
        )
        assert isinstance(first, ClientError) and first.reason is UnknownReason.FAILED
        assert (await pool.acquire(slot, time.monotonic() + 5)).alive
        await pool.close()

    asyncio.run(main())


@pytest.mark.real
def test_stop_while_a_check_waits_for_a_start_is_an_unknown(
    workspace: Path, service_factory: list[Service]
) -> None:
    """`stop` from another thread cancels the start a check waits for: the check reports an
    Unknown instead of raising CancelledError into its caller."""
    service = make(service_factory, settings("--slow-initialize-ms", "3000"))
    path = workspace / "s.sh"
    path.write_text("echo hi\n")
    waiting = threading.Event()  # the check says, via its progress line, that it waits
    lines: list[str] = []

    def progress(line: str) -> None:
        lines.append(line)
        waiting.set()

    with concurrent.futures.ThreadPoolExecutor(1) as executor:
        future = executor.submit(service.check_files, [FileCheck(path, before="")],
                                 progress=progress)
        assert waiting.wait(10), "the check never reported waiting for the starting server"
        assert lines[0] == "ipylsp: waiting for fake (starting)"
        assert [row.state for row in service.status()] == ["starting"]
        service.stop()
        report = future.result(10)
    assert unknowns(report) == [("fake", UnknownReason.FAILED)]


@pytest.mark.real
def test_a_query_on_a_file_the_check_does_not_read_says_why_as_the_check_does(
    workspace: Path, service_factory: list[Service]
) -> None:
    """Issue 28: a query on a directory, a FIFO or a file over `max_file_mb` answered `no such
    file: /abs/path` (a directory once raised IsADirectoryError into the caller). It says
    the check's sentence, the path as the workspace shows it, and the file one byte under
    the limit is read; a missing file is `no such file`, shown the same way."""
    service = make(service_factory, settings(max_file_mb=0.001))  # 1,048 bytes
    sub = workspace / "sub"
    sub.mkdir()
    (sub / "d.sh").mkdir()
    os.mkfifo(sub / "pipe.sh")
    (sub / "over.sh").write_bytes(b"#" * 1048 + b"\n")  # the limit + 1 byte
    (sub / "at.sh").write_bytes(b"#" * 1047 + b"\n")  # the limit
    refused = {
        "d.sh": "sub/d.sh is a directory, not a regular file",
        "pipe.sh": "sub/pipe.sh is a FIFO, not a regular file",
        "over.sh": "sub/over.sh is 1,049 bytes, over the 1,048-byte limit (IPyLSP.max_file_mb)",
    }
    for name, why in refused.items():
        for feature in (HOVER, DEFINITION, REFERENCES, SYMBOLS, CODE_ACTIONS):
            result = service.feature(feature, sub / name)
            assert (result.reason, result.error) == (UnknownReason.NOT_READ, why), feature.kind
        assert service.check(sub / name).notes == (f"not checked: {why}",)
    assert service.feature(HOVER, sub / "at.sh").error == ""
    missing = service.feature(HOVER, sub / "gone.sh")
    assert (missing.reason, missing.error) == (UnknownReason.NO_FILE, "no such file: sub/gone.sh")


@pytest.mark.real
def test_crashed_server_is_restarted_and_answers(
    workspace: Path, service_factory: list[Service]
) -> None:
    service = make(service_factory, settings("--diagnostics", "pull"))
    path = workspace / "k.sh"
    path.write_text("ERROR:one\n")
    assert messages(service.check(path)) == [("k.sh", 1, 1, "one")]
    (pid,) = service.server_pids()
    os.killpg(pid, signal.SIGKILL)
    path.write_text("ERROR:one\nERROR:two\n")
    report = service.check(path)
    assert messages(report) == [("k.sh", 2, 1, "two")]
    (new_pid,) = service.server_pids()
    assert new_pid != pid
    assert [row.crashes for row in service.status()] == [1]


@pytest.mark.real
def test_server_crashing_every_time_is_broken_after_max_restarts(
    workspace: Path, service_factory: list[Service]
) -> None:
    service = make(
        service_factory,
        settings("--crash-on", "textDocument/didOpen", max_restarts=1, wait_budget=3.0),
    )
    path = workspace / "c.sh"
    path.write_text("x = 1\n")
    reasons = [unknowns(service.check(path))[0][1] for _ in range(3)]
    assert reasons[0] is UnknownReason.CRASHED
    assert reasons[-1] is UnknownReason.BROKEN
    assert "crashed 2 times" in service.check(path).files[0].unknown[0].detail


@pytest.mark.real
def test_repeated_timeouts_mark_broken(workspace: Path, service_factory: list[Service]) -> None:
    service = make(
        service_factory,
        settings("--diagnostics", "pull", "--hang-on", "textDocument/diagnostic",
                 wait_budget=0.4, max_timeouts=2),
    )
    path = workspace / "t.sh"
    path.write_text("x = 1\n")
    first, second = service.check(path), service.check(path)
    assert unknowns(first) == unknowns(second) == [("fake", UnknownReason.TIMED_OUT)]
    t0 = time.monotonic()
    third = service.check(path)
    assert time.monotonic() - t0 < 0.3
    assert unknowns(third) == [("fake", UnknownReason.BROKEN)]
    assert service.server_pids() == []


@pytest.mark.real
def test_missing_server_gives_the_hint_once_then_a_short_line(
    workspace: Path, service_factory: list[Service]
) -> None:
    missing = ServerSpec(
        id="fake", name="Fake", languages=("shellscript",), command=("no-such-server-binary",),
        install=InstallRecipe("path", hint="install it from the fake store"),
    )
    service = make(
        service_factory,
        Settings(language_servers={"shellscript": ("fake",)}, extra_specs=(missing,)),
    )
    path = workspace / "m.sh"
    path.write_text("x = 1\n")
    first = service.check(path).files[0].unknown[0]
    second = service.check(path).files[0].unknown[0]
    assert first.reason is UnknownReason.NOT_INSTALLED
    assert "install it from the fake store" in first.hint
    assert second.reason is UnknownReason.NOT_INSTALLED and second.hint == ""
    # a client of the same servers (a broker's) is told as a process of its own would be
    client = Service(shares=service)
    try:
        told = client.check(path).files[0].unknown[0]
        assert "install it from the fake store" in told.hint
        assert client.check(path).files[0].unknown[0].hint == ""
        assert service.check(path).files[0].unknown[0].hint == ""
    finally:
        client.close()


@pytest.mark.real
def test_a_sharing_client_works_in_a_directory_of_its_own_and_shares_the_rest(
    tmp_path: Path, service_factory: list[Service]
) -> None:
    """A broker's client: the directory it works in decides where a file in no project
    belongs (and its server's root); every other setting is the shared service's."""
    plain = tmp_path / "plain"  # no git, no marker: a plain directory
    (plain / "sub").mkdir(parents=True)
    path = plain / "sub" / "a.sh"
    path.write_text("ERROR:here\n")
    owner = make(service_factory, settings())  # no directory of its own: the CLI's
    alone = owner.check(path)
    assert (alone.root, messages(alone)) == (None, [(str(path), 1, 1, "here")])
    client = Service(replace(owner.settings, directory=plain), shares=owner)
    try:
        assert client.settings.directory == plain and owner.settings.directory is None
        report = client.check(path)
        assert (report.root, messages(report)) == (plain, [("sub/a.sh", 1, 1, "here")])
        assert owner.check(path).root is None  # the owner's directory is still its own
        with pytest.raises(ValueError, match="the shared one's settings"):
            Service(replace(owner.settings, wait_budget=9.0), shares=owner)
        # its own knobs change in it (`%cd`, a severity), keeping what it checked; not others
        client.configure(replace(client.settings, directory=plain / "sub", severity="all"))
        assert client.diagnostics(path).files[0].current != ()  # known, not forgotten
        assert client.check(path).root == plain / "sub"
        client.configure(replace(client.settings, directory=plain))
        with pytest.raises(ValueError, match="the shared one's settings"):
            client.configure(replace(client.settings, wait_budget=9.0))
        # its in-memory document (a kernel's cells) is open in the shared server until it ends
        cells = FileCheck(plain / "sub" / ".cells.sh", content="ERROR:cell\n", virtual=True)
        assert messages(client.check_files([cells])) == [("sub/.cells.sh", 1, 1, "cell")]
        opened = {row.root: row.open_documents for row in owner.status()}
        assert opened == {plain / "sub": 1, plain: 2}  # the owner's root, the client's
    finally:
        client.close()
    opened = {row.root: row.open_documents for row in owner.status()}
    assert opened == {plain / "sub": 1, plain: 1}  # the file stays, the cells are closed


@pytest.mark.real
def test_open_document_cap_closes_least_recently_used(
    workspace: Path, service_factory: list[Service]
) -> None:
    service = make(service_factory, settings("--diagnostics", "pull", max_open_documents=2))
    for name in ("a.sh", "b.sh", "c.sh"):
        (workspace / name).write_text(f"ERROR:{name}\n")
        service.check(workspace / name)
    assert [row.open_documents for row in service.status()] == [2]


@pytest.mark.real
def test_non_utf8_and_non_ascii_files_are_checked(
    workspace: Path, service_factory: list[Service]
) -> None:
    service = make(service_factory, settings("--diagnostics", "push", "--encoding", "utf-16"))
    path = workspace / "latin1.sh"
    path.write_bytes(b"caf\xe9 = 1\n\xf0\x9f\x98\x80 ERROR:after emoji\n")
    assert messages(service.check(path)) == [("latin1.sh", 2, 3, "after emoji")]


@pytest.mark.real
def test_file_that_vanishes_is_removed_not_fixed(
    workspace: Path, service_factory: list[Service]
) -> None:
    """A delete fixes nothing (issue 9): no "fixed" line, a note saying it was removed."""
    service = make(service_factory, settings())
    path = workspace / "gone.sh"
    path.write_text("ERROR:bye\n")
    service.check(path)
    path.unlink()
    report = service.check(path)
    assert messages(report) == []
    assert [d.message for f in report.files for d in f.fixed] == []
    assert report.notes == ("gone.sh was removed (1 known problem not counted as fixed)",)
    never = service.check(workspace / "never-existed.sh")
    assert messages(never) == [] and unknowns(never) == []


@pytest.mark.real
def test_path_outside_any_workspace_is_shown_absolute(
    tmp_path: Path, service_factory: list[Service]
) -> None:
    outside = tmp_path / "loose"
    outside.mkdir()
    service = make(service_factory, settings())
    path = outside / "x.sh"
    path.write_text("ERROR:loose\n")
    report = service.check(path)
    assert [f.display_path for f in report.files] == [str(path)]


def test_bad_arguments_raise_clear_errors(service_factory: list[Service]) -> None:
    service = make(service_factory, settings())
    with pytest.raises(TypeError, match="path must be a str"):
        service.check(42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="invalid path"):
        service.check("")
    with pytest.raises(TypeError, match="content must be a str"):
        service.check("x.sh", content=b"x")  # type: ignore[arg-type]


@pytest.mark.real
def test_check_files_one_report_for_many(workspace: Path, service_factory: list[Service]) -> None:
    service = make(service_factory, settings("--diagnostics", "pull"))
    a, b = workspace / "a.sh", workspace / "b.sh"
    a.write_text("ERROR:in a\n")
    b.write_text("fine\n")
    report = service.check_files([FileCheck(a), FileCheck(b)])
    assert messages(report) == [("a.sh", 1, 1, "in a")]
    assert [f.display_path for f in report.files] == ["a.sh", "b.sh"]


@pytest.mark.real
def test_close_stops_every_server_and_is_idempotent(
    workspace: Path, service_factory: list[Service]
) -> None:
    service = make(service_factory, settings("--spawn-child", "--leave-child"))
    path = workspace / "z.sh"
    path.write_text("x\n")
    service.check(path)
    (pid,) = service.server_pids()
    tree = [pid, *descendants(pid)]
    service.close()
    service.close()
    assert not any(running(p) for p in tree)
    with pytest.raises(RuntimeError, match="closed"):
        service.check(path)


@pytest.mark.real
@pytest.mark.parametrize("how", ["normal", "exception", "sigkill"])
def test_no_server_outlives_the_python_process(workspace: Path, how: str) -> None:
    script = textwrap.dedent(
        f"""
        import os, signal, sys
        sys.path.insert(0, {str(Path(__file__).parent.parent)!r})
        from tests.test_service import settings
        from ipylsp.service.service import Service
        s = Service(settings("--spawn-child", "--leave-child"))
        s.check({str(workspace / "p.sh")!r})
        pids = s.server_pids()
        from ipylsp.lsp.process import descendants, running, wait_exited
        print(" ".join(str(p) for pid in pids for p in [pid, *descendants(pid)]), flush=True)
        if {how!r} == "exception":
            raise SystemExit("boom") from ValueError("x")
        if {how!r} == "sigkill":
            os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    (workspace / "p.sh").write_text("ERROR:x\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, check=False)
    pids = [int(p) for p in done.stdout.split()]
    assert len(pids) >= 2, done.stderr
    # The watchdog acts after the parent's death: wait on the processes' exits (pidfds).
    assert wait_exited(pids, 5.0) == []


@pytest.mark.real
def test_auto_install_runs_in_the_background_then_serves(
    workspace: Path, service_factory: list[Service], monkeypatch: pytest.MonkeyPatch
) -> None:
    """install_strategy = "auto": the first check says "installing", a later one is served."""
    from ipylsp.servers import executables, installers

    data_dir = workspace / "data"
    spec = ServerSpec(
        id="fake", name="Fake", languages=("shellscript",), command=("fake-lsp",),
        install=InstallRecipe("pip", ("fake-lsp-package",)),
    )
    release = __import__("threading").Event()

    def fake_install(spec: ServerSpec, data: Path, **_: object) -> installers.InstallResult:
        release.wait(30)
        binary = executables.venv_bin(data) / "fake-lsp"
        binary.parent.mkdir(parents=True, exist_ok=True)
        binary.write_text("#!/bin/sh\nexec " + " ".join(fake_command()) + "\n")
        binary.chmod(0o755)
        return installers.InstallResult(spec.id, True, "installed fake-lsp")

    monkeypatch.setattr(installers, "install", fake_install)
    service = make(
        service_factory,
        Settings(language_servers={"shellscript": ("fake",)}, extra_specs=(spec,),
                 install_strategy="auto", data_dir=data_dir),
    )
    path = workspace / "auto.sh"
    path.write_text("ERROR:served\n")
    first = service.check(path).files[0].unknown[0]
    assert first.reason is UnknownReason.NOT_INSTALLED
    assert first.detail == "installing now (install_strategy = auto); results from a later check"
    second = service.check(path).files[0].unknown[0]
    assert second.detail == "still installing (install_strategy = auto)"
    release.set()
    service._state.resolver.installs["fake"].result(30)
    executables.invalidate()
    assert messages(service.check(path)) == [("auto.sh", 1, 1, "served")]


@pytest.mark.real
def test_a_typo_in_language_servers_is_reported_not_silent(
    workspace: Path, service_factory: list[Service]
) -> None:
    service = make(service_factory, Settings(language_servers={"shellscript": ("fakee",)},
                                             extra_specs=(fake_spec(),)))
    path = workspace / "typo.sh"
    path.write_text("ERROR:x\n")
    report = service.check(path)
    assert unknowns(report) == [("fakee", UnknownReason.FAILED)]
    assert report.files[0].unknown[0].detail == (
        "no server named 'fakee' (IPyLSP.language_servers; see `ipylsp list`)"
    )


@pytest.mark.real
def test_a_server_configured_anew_runs_its_new_command_once_stopped(
    workspace: Path, service_factory: list[Service]
) -> None:
    """`%config IPyLSP.servers = {...}` after a server ran: the running one is kept, and once
    stopped the new command starts (the pool's slot used to keep the old command forever)."""
    from dataclasses import replace

    from ipylsp.model.server_spec import ServerOverride

    service = make(service_factory, settings(wait_budget=1.0, initialize_timeout=0.5))
    path = workspace / "again.sh"
    path.write_text("ERROR:first\n")
    assert unknowns(service.check(path, before="")) == []
    hanging = ServerOverride(command=fake_command("--hang-initialize"))
    service.configure(replace(service.settings, servers={"fake": hanging}))
    path.write_text("ERROR:second\n")
    assert unknowns(service.check(path, before="")) == []  # still the running one
    assert service.stop() == 1
    assert unknowns(service.check(path, before="")) == [("fake", UnknownReason.TIMED_OUT)]


@pytest.mark.real
def test_a_server_whose_executable_changed_is_restarted_at_its_next_use(
    workspace: Path, service_factory: list[Service]
) -> None:
    """A long-lived service (a broker's) never answers with the version a server started as:
    another file at the executable's path (an upgrade) restarts it at the next check."""
    binary = workspace / "bin" / "fake-lsp"
    binary.parent.mkdir()

    def install() -> None:
        new = binary.with_name("fake-lsp.new")
        new.write_text("#!/bin/sh\nexec " + " ".join(fake_command()) + "\n")
        new.chmod(0o755)
        os.replace(new, binary)  # as pip and npm do: a new file in its place

    install()
    spec = ServerSpec(id="fake", name="Fake", languages=("shellscript",),
                      command=(str(binary),), install=InstallRecipe("path", hint="a fixture"))
    service = make(service_factory, Settings(language_servers={"shellscript": ("fake",)},
                                             extra_specs=(spec,), wait_budget=5.0))
    path = workspace / "up.sh"
    path.write_text("ERROR:one\n")
    assert messages(service.check(path)) == [("up.sh", 1, 1, "one")]
    [before] = service.server_pids()
    path.write_text("ERROR:one\nERROR:two\n")
    assert messages(service.check(path)) == [("up.sh", 2, 1, "two")]
    assert service.server_pids() == [before]  # the same file: the same process
    install()
    path.write_text("ERROR:one\nERROR:two\nERROR:three\n")
    assert messages(service.check(path)) == [("up.sh", 3, 1, "three")]
    [after] = service.server_pids()
    assert after != before
    assert wait_exited([before], 5.0) == []


def test_clients_working_in_nested_plain_directories_get_servers_configured_for_each(
    tmp_path: Path,
) -> None:
    """Below a plain directory ty is rooted at the file's own directory and configured for the
    directory the client works in (its first-party root): a broker's two clients working in
    `home` and in `home/sub` each get theirs for `home/sub/mod.py`, never the other's."""
    from ipylsp.servers import registry
    from ipylsp.service.runtime.pool import Slot
    from ipylsp.service.state import ServiceState

    require("ty")
    home = tmp_path / "home"
    sub = home / "sub"
    sub.mkdir(parents=True)
    path = sub / "mod.py"
    path.write_text("x = 1\n")
    ty = registry.get("ty")
    assert ty is not None
    owner = ServiceState(Settings())
    outer = owner.sharing(replace(owner.settings, directory=home))
    inner = owner.sharing(replace(owner.settings, directory=sub))
    try:
        first, second = outer.resolver.slot(ty, path), inner.resolver.slot(ty, path)
        assert isinstance(first, Slot) and isinstance(second, Slot)
        assert first.root == second.root == sub
        assert (first.gate, second.gate) == (home, sub)
        assert first.spec != second.spec  # configured for each one's directory
        assert outer.resolver.slot(ty, path) is first  # one client's is shared, not remade
    finally:
        owner.close()
