"""The persistent store in the service (issue 14), on real ty: a restarted service takes its
baselines from the store (the wire says so), and a server that is down, broken or still
starting is an UNKNOWN that comes with its stored answer, marked cached (and stale when the
file changed since)."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

import pytest

from ipylsp.analysis.report import FormatOptions, format_text, to_json
from ipylsp.lsp.requests.locations import DEFINITION
from ipylsp.lsp.requests.symbols import SYMBOLS
from ipylsp.model.diagnostics import UnknownReason
from ipylsp.model.server_spec import InstallRecipe, ServerOverride, ServerSpec
from ipylsp.model.settings import Settings
from ipylsp.servers import executables
from ipylsp.service.service import Service
from ipylsp.store.db import VERSION
from tests.conftest import fake_command
from tests.fixtures.lsp_tap import methods_about as wire
from tests.fixtures.lsp_tap import tapped
from tests.real_servers import DATA_DIR, require, workspace, write
from tests.test_store import STORE_LOGGERS

V1 = "x: int = 1\nprint(undefined_a)\n"
V2 = "x: int = 1\nprint(undefined_a)\nprint(undefined_b)\n"
V3 = "# a comment moves every line\nx: int = 1\nprint(undefined_a)\nprint(undefined_b)\n"
UNDEFINED = "Name `{}` used when not defined [unresolved-reference] (ty"


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    require("ty")
    return workspace(tmp_path, monkeypatch)


def ty_settings(store: Path | None, *, command: tuple[str, ...] = ()) -> Settings:
    settings = Settings(
        language_servers={"python": ("ty",)}, data_dir=DATA_DIR, wait_budget=30.0,
        store=store is not None, store_path=store,
    )
    if command:
        settings = replace(settings, servers={"ty": ServerOverride(command=command)})
    return settings


def tapped_ty(log: Path, server_id: str = "ty") -> tuple[str, ...]:
    spec = require(server_id)
    command = executables.resolve(spec, DATA_DIR).command
    assert command is not None
    return tuple(tapped(log, command))


def opened(service: Service) -> None:
    """Wait for the service's store to open: a check's first lookup waits at most `OPEN_WAIT`
    for it, and a loaded machine may take longer (the tests below read it at once)."""
    assert service._state.answers.store(wait=30) is not None


def text(report: Any) -> str:
    return format_text(report, FormatOptions(severity="all"))


@pytest.mark.real
def test_a_restarted_service_takes_its_baselines_from_the_store(
    root: Path, tmp_path: Path
) -> None:
    store = tmp_path / "store.sqlite3"
    log = tmp_path / "wire.log"  # one tap, one command: a stored answer is for the same server
    path = write(root, "app.py", V1)
    with Service(ty_settings(store, command=tapped_ty(log))) as first:  # before the restart
        assert "undefined_a" in text(first.check(path, before=""))
    path.write_text(V2)
    wires: dict[bool, list[str]] = {}
    shown: dict[bool, str] = {}
    for store_on in (True, False):  # after the restart, with and without the store
        seen = len(wire(log, "app.py"))
        with Service(ty_settings(store if store_on else None, command=tapped_ty(log))) as after:
            if store_on:
                opened(after)
            shown[store_on] = text(after.check(path, before=V1))
        wires[store_on] = wire(log, "app.py")[seen:]
    expected = f'<diagnostics file="app.py">\nERROR [3:7] {UNDEFINED.format("undefined_b")})\n'
    assert shown[True] == shown[False]
    assert shown[True].startswith(expected)
    assert wires[False] == [
        "textDocument/didOpen", "textDocument/diagnostic",  # the baseline: V1
        "textDocument/didChange", "textDocument/didSave", "textDocument/diagnostic",  # V2
    ]
    assert wires[True] == [  # V2 only
        "textDocument/didOpen", "textDocument/didSave", "textDocument/diagnostic",
    ]


def stored_by_ty(store: Path, path: Path, *texts: str) -> None:
    """A live ty answers for each text in turn (each text's before is the previous one)."""
    with Service(ty_settings(store)) as live:
        before = ""
        for body in texts:
            path.write_text(body)
            live.check(path, before=before)
            before = body


@pytest.mark.real
@pytest.mark.parametrize(
    ("command", "reason"),
    [(("no-such-ty", "server"), UnknownReason.NOT_INSTALLED),
     (("/bin/false",), UnknownReason.CRASHED)],
    ids=["missing", "crashing"],
)
def test_a_server_that_is_down_answers_from_the_store_marked_cached(
    root: Path, tmp_path: Path, command: tuple[str, ...], reason: UnknownReason
) -> None:
    store = tmp_path / "store.sqlite3"
    path = write(root, "app.py", V1)
    stored_by_ty(store, path, V1, V2)
    with Service(ty_settings(store, command=command)) as down:
        opened(down)
        exact = down.check(path, before=V1)  # the text ty last answered for: its delta
        path.write_text(V3)
        stale = down.check(path, before=V2)  # changed since: everything ty said, stale
    (file,) = exact.files
    assert [u.reason for u in file.unknown] == [reason]
    lines = text(exact).splitlines()
    assert re.fullmatch(
        re.escape(f"ERROR [3:7] {UNDEFINED.format('undefined_b')}, cached ") + r"\d+ s ago\)",
        lines[1],
    ), lines
    assert lines[0] == '<diagnostics file="app.py">' and lines[2].startswith("UNKNOWN [ty]")
    entry = cast("list[dict[str, Any]]", to_json(exact)["files"])[0]
    assert entry["source"] == "cache"
    (diagnostic,) = entry["diagnostics"]
    assert diagnostic["line"] == 3 and diagnostic["server"] == "ty"
    assert diagnostic["cached"]["source"] == "cache" and diagnostic["cached"]["stale"] is False
    stale_lines = [line for line in text(stale).splitlines() if line.startswith("ERROR")]
    assert [re.sub(r"cached \d+ s ago", "cached N s ago", line) for line in stale_lines] == [
        f"ERROR [2:7] {UNDEFINED.format('undefined_a')}, cached N s ago, stale)",
        f"ERROR [3:7] {UNDEFINED.format('undefined_b')}, cached N s ago, stale)",
    ]  # V2's positions: the store cannot move them onto a text it never saw


@pytest.mark.real
def test_a_live_answer_wins_and_refreshes_the_store(root: Path, tmp_path: Path) -> None:
    store = tmp_path / "store.sqlite3"
    path = write(root, "app.py", V1)
    stored_by_ty(store, path, V1)
    with Service(ty_settings(store)) as live:
        path.write_text(V2)
        report = live.check(path, before=V1)
    assert all(d.cached is None for f in report.files for d in f.diagnostics)
    with Service(ty_settings(store, command=(str(tmp_path / "no-such-ty"),))) as down:
        opened(down)
        report = down.check(path, before=V1)
    assert [(d.range.start.line, d.cached is not None and not d.cached.stale)
            for f in report.files for d in f.diagnostics] == [(2, True)]


def fake_shell(*flags: str, store: Path) -> Settings:
    spec = ServerSpec(id="fake", name="Fake", languages=("shellscript",),
                      command=fake_command(*flags), install=InstallRecipe("path"))
    return Settings(language_servers={"shellscript": ("fake",)}, extra_specs=(spec,),
                    store_path=store, wait_budget=5.0)


@pytest.mark.real
def test_a_server_still_starting_is_cut_and_answers_from_the_store(tmp_path: Path) -> None:
    """Still starting on demand needs a fixture: a server that never finishes initialize."""
    store = tmp_path / "store.sqlite3"
    path = tmp_path / "job.sh"
    path.write_text("ERROR:stored answer\n")
    with Service(fake_shell(store=store)) as live:
        assert live.check(path, before="").has_problems
    with Service(fake_shell("--hang-initialize", store=store)) as starting:
        opened(starting)
        report = starting.check(path, before="", timeout=0.5)
    (diagnostic,) = report.files[0].diagnostics
    assert diagnostic.message.endswith("stored answer") and diagnostic.cached is not None
    assert not diagnostic.cached.stale
    unknown = (*report.unknown, *report.files[0].unknown)
    assert [u.reason for u in unknown] == [UnknownReason.TIMED_OUT]


@pytest.mark.real
def test_the_store_off_keeps_nothing(root: Path, tmp_path: Path) -> None:
    path = write(root, "app.py", V1)
    with Service(ty_settings(None)) as live:
        live.check(path, before="")
    assert not (tmp_path / "store.sqlite3").exists()
    with Service(ty_settings(None, command=(str(tmp_path / "no-such-ty"),))) as down:
        report = down.check(path, before="")
    assert report.files[0].diagnostics == ()


@pytest.mark.real
def test_the_cli_reads_and_clears_the_store_with_no_server(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    from ipylsp.cli import EXIT_CLEAN, EXIT_FAILURE, EXIT_PROBLEMS, main

    store = tmp_path / "cli.sqlite3"
    monkeypatch.setenv("IPYLSP_STORE", str(store))
    monkeypatch.chdir(root)
    first = write(root, "pkg/a.py", V1)
    write(root, "pkg/b.py", "print(undefined_c)\n")
    write(root, "other.py", "print(undefined_d)\n")
    with Service(replace(ty_settings(None), store=True)) as live:  # $IPYLSP_STORE's file
        for path in (first, root / "pkg/b.py", root / "other.py"):
            live.check(path, before="")

    def run(*argv: str) -> tuple[int, str]:
        out = io.StringIO()
        code = main(["--data-dir", str(DATA_DIR), *argv], out=out)
        return code, out.getvalue()

    code, shown = run("diagnostics", "pkg")  # a directory: every stored file under it
    assert code == EXIT_PROBLEMS
    assert re.findall(r'file="([^"]+)"', shown) == ["pkg/a.py", "pkg/b.py"]
    assert re.sub(r"\d+ s ago", "N s ago", shown).splitlines()[1] == (
        f"ERROR [2:7] {UNDEFINED.format('undefined_a')}, cached N s ago)"
    )
    code, info = run("cache", "info")
    expected = f"{store}: 3 answers for 3 files, 0.0 MB (schema {VERSION})\n"
    assert (code, info) == (EXIT_CLEAN, expected)
    assert run("diagnostics", "no/such/dir")[0] == EXIT_FAILURE
    code, cleared = run("cache", "clear")
    assert cleared.startswith("cleared 3 answers for 3 files")
    assert run("diagnostics") == (EXIT_CLEAN, f"ipylsp: nothing stored for {root}\n")


@pytest.mark.real
def test_an_agent_gets_stored_answers_while_the_server_is_down(
    root: Path, tmp_path: Path
) -> None:
    from ipylsp.agent import Toolbox

    store = tmp_path / "store.sqlite3"
    path = write(root, "app.py", V1)
    stored_by_ty(store, path, V1)
    with Service(ty_settings(store, command=("no-such-ty", "server"))) as down:
        opened(down)
        box = Toolbox(down, root)
        fallback = box.call("lsp_diagnostics", {"path": "app.py"})
        only_store = box.call("lsp_diagnostics", {"cached": True})
    for result in (fallback, only_store):
        assert result.ok, result.text
        assert re.sub(r"\d+ s ago", "N s ago", result.text).splitlines()[:2] == [
            '<diagnostics file="app.py">',
            f"ERROR [2:7] {UNDEFINED.format('undefined_a')}, cached N s ago)",
        ]
        assert result.data["files"][0]["source"] == "cache"


SHAPES = (
    "class Square:\n    def area(self) -> int:\n        return 4\n\n\n"
    "def make() -> Square:\n    return Square()\n"
)
MAIN = "from shapes import make\n\nprint(make().area())\n"


@pytest.mark.real
def test_outlines_and_definitions_by_name_come_from_the_store(root: Path, tmp_path: Path) -> None:
    from ipylsp.agent import Toolbox

    store = tmp_path / "store.sqlite3"
    shapes = write(root, "shapes.py", SHAPES)
    main = write(root, "main.py", MAIN)
    with Service(ty_settings(store)) as live:
        outline = live.feature(SYMBOLS, shapes)
    assert [s.name for s in outline.answer] == ["Square", "area", "make"]
    with Service(ty_settings(store, command=("no-such-ty", "server"))) as down:
        opened(down)
        cached = down.feature(SYMBOLS, shapes)
        definition = down.feature(DEFINITION, main, 2, 6)  # `make` in main.py
        box = Toolbox(down, root)
        by_name = box.call("lsp_definition", {"symbol": "area"})
        shapes.write_text("# moved\n" + SHAPES)
        stale = down.feature(SYMBOLS, shapes)
    assert cached.answer == outline.answer and cached.cached is not None
    assert not cached.cached.stale and stale.cached is not None and stale.cached.stale
    assert re.fullmatch(
        r"class Square \[1:7\]\n  method area \[2:9\]\nfunction make \[6:5\]\n"
        r"\(cached \d+ s ago; ty: not installed: .*\)",
        cached.format(root),
    ), cached.format(root)
    assert [(loc.path, loc.line, loc.column) for loc in definition.answer] == [(shapes, 5, 4)]
    assert by_name.ok, by_name.text
    assert by_name.text.splitlines()[0] == "shapes.py:2:9: def area(self) -> int:"
    assert by_name.data["source"] == "cache"


@pytest.mark.real
def test_a_store_another_process_keeps_locked_holds_no_check_up(
    root: Path, tmp_path: Path
) -> None:
    """The store opens beside the service (its migration waits for the lock); the check
    answers meanwhile, and what it gave is written once the lock goes: nothing lost."""
    import sqlite3

    from ipylsp.store import Store

    store = tmp_path / "locked.sqlite3"
    holder = sqlite3.connect(store, isolation_level=None)
    holder.execute("PRAGMA journal_mode = WAL")
    holder.execute("BEGIN EXCLUSIVE")  # another process in a long write
    path = write(root, "app.py", V1)
    with Service(ty_settings(store)) as service:
        shown = text(service.check(path, before=""))
        assert service._state.answers.store(wait=0) is None  # the check did not wait for it
        holder.execute("COMMIT")  # only now may the store open
        holder.close()
    assert shown.splitlines()[1] == f"ERROR [2:7] {UNDEFINED.format('undefined_a')})"
    reader = Store(store)
    try:
        found = reader.get_diagnostics(str(path), V1, "ty")
        assert found is not None and [d.range.start.line for d in found.diagnostics] == [1]
    finally:
        reader.close()


@pytest.mark.real
def test_a_garbage_store_is_rebuilt_with_one_warning_and_the_check_goes_on(
    root: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import logging

    store = tmp_path / "store.sqlite3"
    store.write_bytes(b"\x00not a database" * 500)
    path = write(root, "app.py", V1)
    with caplog.at_level(logging.WARNING, logger="ipylsp"), Service(ty_settings(store)) as svc:
        shown = text(svc.check(path, before=""))
    assert shown.splitlines()[1] == f"ERROR [2:7] {UNDEFINED.format('undefined_a')})"
    warnings = [r.getMessage() for r in caplog.records  # the store's own, not a stray thread's
                if r.name in STORE_LOGGERS and r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "moved to store.sqlite3.corrupt-" in warnings[0], warnings
    with Service(ty_settings(store, command=("no-such-ty",))) as down:  # the rebuilt one works
        opened(down)
        assert "cached" in text(down.check(path, before=""))


@pytest.mark.real
def test_a_baseline_stored_by_another_server_configuration_is_not_used(
    root: Path, tmp_path: Path
) -> None:
    """Another venv, root or command may answer the same text differently: its stored
    answer is no baseline (a wrong one would report old problems as new)."""
    store = tmp_path / "store.sqlite3"
    path = write(root, "app.py", V1)
    stored_by_ty(store, path, V1)  # plain ty
    path.write_text(V2)
    log = tmp_path / "wire.log"
    with Service(ty_settings(store, command=tapped_ty(log))) as other:  # another command
        opened(other)
        shown = text(other.check(path, before=V1))
    assert shown.splitlines()[1] == f"ERROR [3:7] {UNDEFINED.format('undefined_b')})"
    assert wire(log, "app.py").count("textDocument/diagnostic") == 2  # it asked for V1 itself


def problems(report: Any, kind: str = "diagnostics") -> list[tuple[str, str]]:
    return [(d.severity.name, d.message.split("\n")[0])
            for f in report.files for d in getattr(f, kind)]


@pytest.mark.real
def test_a_baseline_stored_under_another_tool_ty_section_is_not_used(
    root: Path, tmp_path: Path
) -> None:
    """What `[tool.ty]` says is part of what an answer is stored for; the rest of
    pyproject.toml (another section, a comment) is not."""
    store, log = tmp_path / "store.sqlite3", tmp_path / "wire.log"
    pyproject = write(root, "pyproject.toml", '[project]\nname = "app"\n')
    path = write(root, "app.py", V1)
    settings = ty_settings(store, command=tapped_ty(log))
    with Service(settings) as first:
        first.check(path, before="")
    warn = '[project]\nname = "app"\n\n[tool.ty.rules]\nunresolved-reference = "warn"\n'
    pyproject.write_text('# a comment\n[project]\nname = "app"\nversion = "1"\n')
    path.write_text(V2)
    seen = len(wire(log, "app.py"))
    with Service(settings) as same:  # the same [tool.ty]: the stored V1 answer is its baseline
        opened(same)
        assert problems(same.check(path, before=V1)) == [
            ("ERROR", "Name `undefined_b` used when not defined")]
    assert wire(log, "app.py")[seen:].count("textDocument/diagnostic") == 1
    pyproject.write_text(warn)
    path.write_text(V3)
    seen = len(wire(log, "app.py"))
    with Service(settings) as other:  # V2 was answered under other rules: asked again
        opened(other)
        report = other.check(path, before=V2)
    assert wire(log, "app.py")[seen:].count("textDocument/diagnostic") == 2
    assert (problems(report), problems(report, "fixed")) == ([], [])  # a comment, under warn
    assert len(problems(report, "current")) == 2


CLANG_V1 = "#ifndef FEATURE\n#error FEATURE is not defined\n#endif\nint x = 1;\n"
CLANG_V2 = CLANG_V1 + "int y = undeclared;\n"


@pytest.mark.real
def test_a_baseline_stored_under_other_compile_flags_is_not_used(
    root: Path, tmp_path: Path
) -> None:
    """clangd without compile_flags.txt, then with `-DFEATURE`: the answer stored for the
    before text without the flag (its `#error`) is no baseline: it would be reported fixed."""
    store, log = tmp_path / "store.sqlite3", tmp_path / "wire.log"
    write(root, ".clangd", "")  # the same root with and without compile_flags.txt
    path = write(root, "feature.c", CLANG_V1)
    settings = replace(ty_settings(store, command=()), language_servers={"c": ("clangd",)},
                       servers={"clangd": ServerOverride(command=tapped_ty(log, "clangd"))})
    with Service(settings) as first:
        assert problems(first.check(path, before="")) == [
            ("ERROR", "FEATURE is not defined")]
    write(root, "compile_flags.txt", "-DFEATURE\n")
    path.write_text(CLANG_V2)
    seen = len(wire(log, "feature.c"))
    with Service(settings) as flagged:
        opened(flagged)
        report = flagged.check(path, before=CLANG_V1)
    assert problems(report) == [("ERROR", "Use of undeclared identifier 'undeclared'")]
    assert problems(report, "fixed") == []
    assert "textDocument/didChange" in wire(log, "feature.c")[seen:]  # CLANG_V1 asked again


@pytest.mark.real
def test_a_file_whose_name_is_not_utf8_is_checked_with_the_store_on(tmp_path: Path) -> None:
    import os

    store = tmp_path / "store.sqlite3"
    path = Path(os.fsdecode(bytes(tmp_path) + b"/caf\xe9.sh"))
    path.write_text("ERROR:boom\n")
    with Service(fake_shell(store=store)) as live:
        report = live.check(path, before="echo hi\n")
    assert [d.message for f in report.files for d in f.diagnostics] == ["boom"], report
    from ipylsp.store import Store

    reader = Store(store)
    try:
        found = reader.get_diagnostics(str(path), "ERROR:boom\n", "fake")
        assert found is not None and [d.message for d in found.diagnostics] == ["boom"]
    finally:
        reader.close()


def test_an_unusable_store_is_a_failure_not_a_clean_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import io

    from ipylsp.cli import EXIT_FAILURE, main

    folder = tmp_path / "a-directory"
    folder.mkdir()
    monkeypatch.setenv("IPYLSP_STORE", str(folder))
    monkeypatch.chdir(tmp_path)
    for argv in (["cache", "info"], ["diagnostics"]):
        assert main(argv, out=io.StringIO()) == EXIT_FAILURE
        assert "the store cannot be" in capsys.readouterr().err
    assert folder.is_dir()  # never moved aside
