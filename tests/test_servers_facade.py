"""The facade's server table, `which` rows and installs with progress (service/server_table.py):
what `ipylsp list/status/which/install` and `%lsp list/status/which/install` print."""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ipylsp.model.server_spec import InstallRecipe, ServerSpec
from ipylsp.model.settings import Settings
from ipylsp.servers import executables
from ipylsp.servers.installers import InstallResult
from ipylsp.service.admin import server_table
from ipylsp.service.service import Service


@pytest.fixture(autouse=True)
def _fresh_locate_cache() -> Iterator[None]:
    executables.invalidate()
    yield
    executables.invalidate()


def _exe(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def _spec(server_id: str, command: str, kind: str = "npm",
          languages: tuple[str, ...] = ("python",)) -> ServerSpec:
    packages = (f"{command.removesuffix('-ls')}@1",) if kind in ("pip", "npm") else ()
    return ServerSpec(id=server_id, name=server_id, languages=languages, command=(command,),
                      install=InstallRecipe(kind, packages, hint="get it somewhere",
                                            needs=("node", "npm") if kind == "npm" else ()))  # type: ignore[arg-type]


def test_columns_align_and_the_last_one_runs_free() -> None:
    text = server_table.format_columns([["a", "installed", "/x/y --stdio"],
                                   ["longer-id", "missing", "ipylsp install longer-id"]])
    assert text.splitlines() == [
        "a          installed  /x/y --stdio",
        "longer-id  missing    ipylsp install longer-id",
    ]


def test_table_rows_user_servers_and_long_language_lists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    _exe(tmp_path / "bin" / "mine-ls", "#!/bin/sh\n")
    settings = Settings(data_dir=tmp_path / "data", extra_specs=(
        _spec("mine", "mine-ls", kind="path", languages=("a" * 20, "b" * 20)),
        _spec("ty", "no-such-ty", kind="path"),  # a user's row replaces the registry's by id
    ))
    table = server_table.table(settings)
    by_id = {row.server_id: row for row in table.rows}
    assert by_id["mine"].command == (str(tmp_path / "bin" / "mine-ls"),)
    assert by_id["ty"].installed is False
    assert by_id["ty"].which() == (
        "ty: no-such-ty not found (searched ipylsp's data dir, the kernel's environment and "
        "PATH). get it somewhere"
    )
    mine_line = next(line for line in str(table).splitlines() if line.startswith("mine "))
    assert mine_line.split() == [
        "mine", "installed", "a" * 20 + "," + "b" * 10 + "…", str(tmp_path / "bin" / "mine-ls")
    ]
    assert repr(table) == str(table) == table.format()
    short = next(line for line in table.format(commands=False).splitlines()
                 if line.startswith("mine "))
    assert short.split() == mine_line.split()[:3]
    installed = [row for row in table.rows if row.installed]
    assert server_table.table(settings, installed_only=True).rows == tuple(installed)
    assert by_id["mine"] in installed and by_id["ty"] not in installed
    assert table.summary() == f"{len(installed)} of {len(table.rows)} servers installed"


def test_unknown_ids_and_empty_installs_are_one_line_errors(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path)
    with pytest.raises(server_table.UnknownServer, match=r"^unknown server 'nope'$"):
        server_table.row(settings, "nope")
    with pytest.raises(server_table.UnknownServer, match=r"^unknown server\(s\): nope, nada$"):
        server_table.install_targets(settings, ["ty", "nope", "nada"])
    with pytest.raises(ValueError, match=r"^name servers, or --all$"):
        server_table.install_targets(settings, [])
    every = server_table.install_targets(settings, [], install_all=True)
    assert {spec.install.kind for spec in every} == {"pip", "npm"}
    assert [s.id for s in server_table.install_targets(settings, ["ruff", "ty", "ruff"])] == [
        "ruff", "ty"
    ]


@pytest.mark.real
def test_install_reports_progress_per_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    _exe(bin_dir / "node", "#!/bin/sh\necho v20.1.0\n")
    _exe(bin_dir / "npm", f"""#!{sys.executable}
import os, sys
args = sys.argv[1:]
prefix = args[args.index("--prefix") + 1]
bin_dir = os.path.join(prefix, "node_modules", ".bin")
os.makedirs(bin_dir, exist_ok=True)
print("added 1 package")
path = os.path.join(bin_dir, "one-ls")
open(path, "w").write("#!/bin/sh\\n")
os.chmod(path, 0o755)
""")
    monkeypatch.setenv("PATH", os.pathsep.join([str(bin_dir), os.environ["PATH"]]))
    settings = Settings(data_dir=tmp_path / "data", extra_specs=(
        _spec("one", "one-ls"), _spec("two", "two-ls", kind="path")
    ))
    seen: list[tuple[str, ...]] = []

    class Recorder(server_table.InstallProgress):
        def started(self, spec: ServerSpec) -> None:
            seen.append(("started", spec.id))

        def output(self, server_id: str, line: str) -> None:
            seen.append(("output", server_id, line))

        def finished(self, result: InstallResult) -> None:
            seen.append(("finished", result.server_id, str(result.ok)))

    assert not server_table.row(settings, "one").installed
    with Service(settings) as service:  # closed: its store is never left open for others
        one, two = service.install(["one", "two"], progress=Recorder())
    assert one.ok and not two.ok, (one.message, two.message)
    # each server in turn: started, its own output, finished
    assert [e for e in seen if e[0] != "output"] == [
        ("started", "one"), ("finished", "one", "True"),
        ("started", "two"), ("finished", "two", "False"),
    ]
    first = seen[: seen.index(("finished", "one", "True"))]
    assert ("output", "one", "added 1 package") in first
    assert all(e[1] == "one" for e in first)
    assert all(e[1] == "two" for e in seen[len(first) + 1:])
    assert server_table.row(settings, "one").installed  # the locate cache was refreshed


def test_status_rows_of_this_service_and_other_processes(tmp_path: Path) -> None:
    """The asking service's rows come from its pool (its own status file is skipped, it may be
    older); other services' and processes' from their files; a dead process's file is gone."""
    from ipylsp.model.status import ServerState, ServerStatus
    from ipylsp.service.runtime.status_file import write_status

    settings = Settings(data_dir=tmp_path / "data")
    stale = ServerStatus("ty", tmp_path, ServerState.STARTING, "starting")
    write_status(tmp_path / "data", 7, [stale])  # this service's last published rows
    write_status(tmp_path / "data", 8, [  # another service of this process
        ServerStatus("typescript-language-server", Path("/w"), ServerState.BROKEN,
                     "crashed 3 times", owner=os.getpid())
    ])
    run = tmp_path / "data" / "run"
    parent = os.getppid()
    (run / f"status-{parent}-1.json").write_text(json.dumps({"pid": parent, "servers": [
        {"server": "ruff", "root": "/k", "state": "running", "detail": "running", "pid": 42}
    ]}))
    (run / "status-999999999-1.json").write_text(json.dumps({"pid": 999999999, "servers": [
        {"server": "gone", "root": "/g", "state": "running", "detail": "", "pid": 1}
    ]}))
    own = [ServerStatus("ty", tmp_path, ServerState.RUNNING, "indexing 4/9", 11, os.getpid())]
    table = server_table.status(settings, own, own_token=7)
    root = len(str(tmp_path))
    this, other = "(this process)", f"(process {parent})"
    owner = max(len(this), len(other))
    assert str(table).splitlines()[:-1] == [  # this process first, whatever the pids
        f"ty                          running  {tmp_path!s:<{root}}  pid 11  {this:<{owner}}"
        "  indexing 4/9",
        f"typescript-language-server  broken   {'/w':<{root}}          {this:<{owner}}"
        "  crashed 3 times",
        f"ruff                        running  {'/k':<{root}}  pid 42  {other}",
    ]
    assert not (run / "status-999999999-1.json").exists()
    assert str(table).splitlines()[-1] == "installed: " + ", ".join(
        row.server_id for row in server_table.table(settings, installed_only=True).rows
    )
    assert repr(table) == str(table)
    assert str(server_table.status(Settings(data_dir=tmp_path / "empty"))).splitlines()[0] == (
        "no server running (servers start when a file is checked)"
    )


def test_status_files_of_other_hosts_and_reused_pids(tmp_path: Path) -> None:
    """A home shared between machines holds another host's files: not shown, not removed. A
    file whose pid now names another process (its start time differs) is removed; one whose
    process still runs is kept."""
    from ipylsp.lsp.procfs import HOST, start_time
    from ipylsp.service.runtime.status_file import read_status

    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    parent = os.getppid()

    def publish(name: str, host: str, started: int) -> Path:
        path = run / f"status-{name}.json"
        path.write_text(json.dumps({"pid": parent, "host": host, "started": started,
                                    "servers": [{"server": name, "root": "/r",
                                                 "state": "running"}]}))
        return path

    elsewhere = publish(f"other_host-{parent}-1", "other_host", 1)
    reused = publish(f"{HOST}-{parent}-2", HOST, start_time(parent) + 1)
    live = publish(f"{HOST}-{parent}-3", HOST, start_time(parent))
    assert [row.server_id for row in read_status(tmp_path)] == [live.stem[len("status-"):]]
    assert elsewhere.exists() and live.exists() and not reused.exists()

