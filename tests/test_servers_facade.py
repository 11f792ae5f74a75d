"""The facade's server table, `which` rows and installs with progress (service/servers.py):
what `ipylsp list/status/which/install` and `%lsp list/status/which/install` print."""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ipylsp.lsp import locate
from ipylsp.service import servers
from ipylsp.settings import Settings
from ipylsp.spec import InstallRecipe, ServerSpec


@pytest.fixture(autouse=True)
def _fresh_locate_cache() -> Iterator[None]:
    locate.invalidate()
    yield
    locate.invalidate()


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
    text = servers.format_columns([["a", "installed", "/x/y --stdio"],
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
    table = servers.table(settings)
    by_id = {row.server_id: row for row in table.rows}
    assert by_id["mine"].command == (str(tmp_path / "bin" / "mine-ls"),)
    assert by_id["ty"].installed is False
    assert by_id["ty"].which() == (
        "ty: no-such-ty not found (searched ipylsp's data dir, the kernel's environment and "
        "PATH). get it somewhere"
    )
    mine_line = next(line for line in str(table).splitlines() if line.startswith("mine "))
    assert mine_line.split() == ["mine", "installed", "a" * 20 + "," + "b" * 10 + "…"]
    assert repr(table) == str(table) == table.format()
    installed = [row for row in table.rows if row.installed]
    assert servers.table(settings, installed_only=True).rows == tuple(installed)
    assert by_id["mine"] in installed and by_id["ty"] not in installed
    assert table.summary() == f"{len(installed)} of {len(table.rows)} servers installed"


def test_unknown_ids_and_empty_installs_are_one_line_errors(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path)
    unknown = r"^unknown server 'nope' \(see `ipylsp list`\)$"
    with pytest.raises(servers.UnknownServer, match=unknown):
        servers.row(settings, "nope")
    with pytest.raises(servers.UnknownServer, match=r"^unknown server\(s\): nope, nada$"):
        servers.install_targets(settings, ["ty", "nope", "nada"])
    with pytest.raises(ValueError, match=r"^name servers"):
        servers.install_targets(settings, [])
    every = servers.install_targets(settings, [], install_all=True)
    assert {spec.install.kind for spec in every} == {"pip", "npm"}
    assert [s.id for s in servers.install_targets(settings, ["ruff", "ty", "ruff"])] == [
        "ruff", "ty"
    ]


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
    settings = Settings(data_dir=tmp_path / "data", extra_specs=(_spec("one", "one-ls"),))
    seen: list[tuple[str, str]] = []
    [result] = servers.install(settings, servers.install_targets(settings, ["one"]),
                               lambda server_id, line: seen.append((server_id, line)))
    assert result.ok, result.message
    assert ("one", "added 1 package") in seen
    assert servers.row(settings, "one").installed  # the locate cache was refreshed
