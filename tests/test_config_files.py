"""What a server's configuration files say, as the digest in the store's key: the sections
that matter change it, the rest of a shared file does not, and a file is read again only when
its stat changed. A FIFO in a file's place is never opened: `digest` and `table` return at
once (they run on the service's loop)."""

from __future__ import annotations

import contextlib
import os
import stat
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from ipylsp.servers import config_files, registry, regular_file

T = TypeVar("T")

TY = ("ty.toml", "pyproject.toml:tool.ty")
PYPROJECT = '[project]\nname = "app"\n\n[tool.ty.rules]\nunresolved-reference = "warn"\n'


@pytest.fixture(autouse=True)
def fresh_cache() -> Iterator[None]:
    config_files.forget()
    yield
    config_files.forget()


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the files `config_files` reads, in order; a file's stat trusted at once
    (`settled` moves the mtime back, but utime moves the ctime to now)."""
    opened: list[str] = []
    real_read = regular_file.read

    def counting_read(path: str | os.PathLike[str], *args: Any) -> bytes:
        opened.append(os.path.basename(path))
        return real_read(path, *args)

    monkeypatch.setattr(regular_file, "read", counting_read)
    monkeypatch.setattr(config_files, "RACY_NS", 0)
    return opened


REGULAR = stat.S_IFREG | 0o644
"""A regular file's `st_mode`, for a patched stat."""


def at_once(call: Callable[[], T], fifo: Path, timeout: float = 10.0) -> T:
    """`call()`'s value, called in a thread: a call that opens `fifo` to read it would block for
    ever, and fails the test instead of hanging it (then a writer opens the FIFO and closes it,
    which lets the reader go)."""
    outcome: list[T] = []
    failed: list[BaseException] = []

    def run() -> None:
        try:
            outcome.append(call())
        except BaseException as exc:
            failed.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        with contextlib.suppress(OSError):
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        thread.join(timeout)
        pytest.fail(f"still blocked after {timeout} s: it opened the FIFO {fifo}")
    if failed:
        raise failed[0]
    return outcome[0]


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
    monkeypatch.setattr(config_files, "_signature", lambda path: (4, now, now, 1, 1, REGULAR))
    path = tmp_path / "compile_flags.txt"
    path.write_text("-DA\n")
    first = config_files.digest(tmp_path, ("compile_flags.txt",))
    path.write_text("-DB\n")  # the same size, and (as patched) the same stat
    assert config_files.digest(tmp_path, ("compile_flags.txt",)) != first
    then = now - 10**10
    monkeypatch.setattr(config_files, "_signature", lambda path: (4, then, then, 1, 1, REGULAR))
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


def test_a_fifo_in_a_files_place_is_never_opened(tmp_path: Path, reads: list[str]) -> None:
    """A FIFO named pyproject.toml (whoever can write to a root can put one there): `table`
    and `digest` return at once and open nothing. To `table` it is absent; to `digest` it is
    its stat: not what no file says, the same while it is unchanged, and another one once a
    regular file takes its place."""
    fifo = tmp_path / "pyproject.toml"
    absent = config_files.digest(tmp_path, TY)
    os.mkfifo(fifo)
    assert at_once(lambda: config_files.table(fifo, "tool.ty"), fifo) is None
    assert at_once(lambda: config_files.table(fifo), fifo) is None
    special = at_once(lambda: config_files.digest(tmp_path, TY), fifo)
    assert special != absent
    config_files.forget()
    assert at_once(lambda: config_files.digest(tmp_path, TY), fifo) == special
    assert reads == []
    fifo.unlink()
    settled(fifo, PYPROJECT)
    assert config_files.digest(tmp_path, TY) not in (absent, special)
    assert reads == ["pyproject.toml"]


def test_a_fifo_swapped_in_after_the_stat_is_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stat that saw a regular file, then a FIFO in its place: `regular_file.read` opens it
    without blocking and refuses it; `table` says nothing, and `digest` what it says of a file
    it could not read (nothing), not trusted: the next call, with the FIFO's own stat, counts
    that stat."""
    fifo = tmp_path / "pyproject.toml"
    absent = config_files.digest(tmp_path, TY)
    os.mkfifo(fifo)
    special = at_once(lambda: config_files.digest(tmp_path, TY), fifo)
    config_files.forget()
    real_stat = os.stat

    def stale_stat(path: Any, *args: Any, **kwargs: Any) -> Any:
        info = real_stat(path, *args, **kwargs)
        if os.fspath(path) != str(fifo):
            return info
        fields = list(info)
        fields[stat.ST_MODE] = REGULAR
        return os.stat_result(fields)

    monkeypatch.setattr(os, "stat", stale_stat)
    with pytest.raises(regular_file.NotRegular) as refused:
        at_once(lambda: regular_file.read(fifo), fifo)
    assert stat.S_ISFIFO(refused.value.mode)
    assert at_once(lambda: config_files.table(fifo, "tool.ty"), fifo) is None
    assert at_once(lambda: config_files.digest(tmp_path, TY), fifo) == absent
    monkeypatch.setattr(os, "stat", real_stat)
    assert at_once(lambda: config_files.digest(tmp_path, TY), fifo) == special
