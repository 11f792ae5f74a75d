"""What a server's configuration files say, as the digest in the store's key: the sections
that matter change it, the rest of a shared file does not, and a file is read again only when
its stat changed."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ipylsp.servers import config_files, registry

TY = ("ty.toml", "pyproject.toml:tool.ty")
PYPROJECT = '[project]\nname = "app"\n\n[tool.ty.rules]\nunresolved-reference = "warn"\n'


@pytest.fixture(autouse=True)
def fresh_cache() -> Iterator[None]:
    config_files.forget()
    yield
    config_files.forget()


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the files `config_files` opens, in order; a file's stat trusted at once
    (`settled` moves the mtime back, but utime moves the ctime to now)."""
    opened: list[str] = []
    real_open = open

    def counting_open(path: str, *args: Any, **kwargs: Any) -> Any:
        opened.append(os.path.basename(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(config_files, "open", counting_open, raising=False)
    monkeypatch.setattr(config_files, "RACY_NS", 0)
    return opened


def settled(path: Path, text: str) -> Path:
    """`text` written, its mtime moved a minute back (out of the racy window)."""
    path.write_text(text)
    info = path.stat()
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns - 60_000_000_000))
    return path


@pytest.mark.parametrize(
    ("text", "same"),
    [
        ('# a comment\n[project]\nname = "app"\nversion = "2"\n\n[tool.ty.rules]\n'
         'unresolved-reference = "warn"  # why\n', True),
        ('[project]\nname = "app"\n\n[tool.ruff]\nline-length = 100\n'
         '[tool.ty.rules]\nunresolved-reference = "warn"\n', True),
        ('[project]\nname = "app"\n\n[tool.ty.rules]\nunresolved-reference = "error"\n', False),
        ('[project]\nname = "app"\n', False),
        ("[project\nbroken", False),
    ],
    ids=["comment-and-project", "another-tool", "its-rules", "no-section", "unparsable"],
)
def test_only_the_servers_own_section_of_a_shared_file_counts(
    tmp_path: Path, text: str, same: bool
) -> None:
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    before = config_files.digest(tmp_path, TY)
    (tmp_path / "pyproject.toml").write_text(text)
    assert (config_files.digest(tmp_path, TY) == before) is same


def test_whole_files_ini_sections_and_absent_files(tmp_path: Path) -> None:
    clangd = registry.get("clangd")
    assert clangd is not None and "compile_flags.txt" in clangd.config_files
    none = config_files.digest(tmp_path, clangd.config_files)
    (tmp_path / "compile_flags.txt").write_text("-DFEATURE\n")
    flagged = config_files.digest(tmp_path, clangd.config_files)
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "compile_commands.json").write_text("[]\n")
    assert len({none, flagged, config_files.digest(tmp_path, clangd.config_files)}) == 3
    entries = ("setup.cfg:mypy",)
    empty = config_files.digest(tmp_path, entries)
    (tmp_path / "setup.cfg").write_text("[metadata]\nname = app\n")
    assert config_files.digest(tmp_path, entries) == empty  # no [mypy]: says nothing
    (tmp_path / "setup.cfg").write_text("[metadata]\nname = app\n[mypy-numpy.*]\nignore = 1\n")
    assert config_files.digest(tmp_path, entries) != empty
    assert config_files.digest(tmp_path, ()) == ""


def test_a_file_is_read_only_when_its_stat_changed(tmp_path: Path, reads: list[str]) -> None:
    pyproject = settled(tmp_path / "pyproject.toml", PYPROJECT)
    first = config_files.digest(tmp_path, TY)
    for _ in range(3):
        assert config_files.digest(tmp_path, TY) == first
    assert reads == ["pyproject.toml"]  # ty.toml is absent: a stat, no read
    settled(pyproject, PYPROJECT.replace("warn", "error"))
    assert config_files.digest(tmp_path, TY) != first
    assert reads == ["pyproject.toml", "pyproject.toml"]


def test_a_file_changed_within_the_racy_window_is_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write within the file system's timestamp tick may keep every field of the stat: a
    file changed less than `RACY_NS` before it was read is not trusted from its stat."""
    now = time.time_ns()
    monkeypatch.setattr(config_files, "_signature", lambda path: (4, now, now, 1, 1))
    path = tmp_path / "compile_flags.txt"
    path.write_text("-DA\n")
    first = config_files.digest(tmp_path, ("compile_flags.txt",))
    path.write_text("-DB\n")  # the same size, and (as patched) the same stat
    assert config_files.digest(tmp_path, ("compile_flags.txt",)) != first
    then = now - 10**10
    monkeypatch.setattr(config_files, "_signature", lambda path: (4, then, then, 1, 1))
    settled_digest = config_files.digest(tmp_path, ("compile_flags.txt",))
    path.write_text("-DC\n")  # changed under an unchanged stat long after: not seen, as designed
    assert config_files.digest(tmp_path, ("compile_flags.txt",)) == settled_digest


def test_a_table_is_read_as_the_digest_is(tmp_path: Path, reads: list[str]) -> None:
    """`table`: a TOML file's table (the whole file for ""), None when the file, the table or
    TOML itself is missing; read again only when the file's stat changed."""
    pyproject = settled(tmp_path / "pyproject.toml", PYPROJECT)
    for _ in range(2):
        assert config_files.table(pyproject, "tool.ty") == {
            "rules": {"unresolved-reference": "warn"}
        }
    assert reads == ["pyproject.toml"]
    assert config_files.table(pyproject, "tool.ruff") is None
    assert config_files.table(pyproject)["project"] == {"name": "app"}  # type: ignore[index]
    assert config_files.table(tmp_path / "ruff.toml") is None
    settled(pyproject, "[tool.ty\n")
    assert config_files.table(pyproject, "tool.ty") is None
