"""Workspace roots: markers below the git worktree, the workspace gate, and the cache."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from ipylsp.servers import roots
from ipylsp.servers.roots import find_root, find_worktree, workspace_gate

PY = ("pyproject.toml", "setup.py")


@pytest.fixture(autouse=True)
def _fresh_cache() -> Iterator[None]:
    roots.clear_cache()
    yield
    roots.clear_cache()


def _touch(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch()
    return path


def _make_old(*dirs: Path) -> None:
    """Set directory mtimes an hour back, so answers about them are cacheable."""
    for directory in dirs:
        st = directory.stat()
        old = st.st_mtime_ns - 3600 * 10**9
        os.utime(directory, ns=(old, old))


# --------------------------------------------------------------------------- worktree


def test_worktree_is_the_nearest_dot_git_dir(tmp_path: Path) -> None:
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    f = _touch(tmp_path / "repo" / "src" / "pkg" / "a.py")
    assert find_worktree(f) == tmp_path / "repo"
    assert find_worktree(tmp_path / "repo" / "src") == tmp_path / "repo"


def test_worktree_accepts_a_dot_git_file(tmp_path: Path) -> None:
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    sub = tmp_path / "repo" / "vendor" / "lib"
    sub.mkdir(parents=True)
    (sub / ".git").write_text("gitdir: ../../.git/modules/lib\n")
    assert find_worktree(sub / "x.c") == sub


def test_no_worktree(tmp_path: Path) -> None:
    f = _touch(tmp_path / "a" / "b.py")
    # tmp dirs live under /tmp, which is not in a git worktree on test machines
    assert find_worktree(f) is None


# --------------------------------------------------------------------------- find_root


def test_nearest_marker_wins(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    _touch(tmp_path / "pyproject.toml")
    _touch(tmp_path / "pkgs" / "one" / "pyproject.toml")
    f = _touch(tmp_path / "pkgs" / "one" / "src" / "a.py")
    assert find_root(f, PY) == tmp_path / "pkgs" / "one"
    g = _touch(tmp_path / "pkgs" / "two" / "b.py")
    assert find_root(g, PY) == tmp_path


def test_monorepo_files_get_one_root_per_package(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    _touch(tmp_path / "svc" / "api" / "go.mod")
    _touch(tmp_path / "svc" / "web" / "go.mod")
    a = _touch(tmp_path / "svc" / "api" / "cmd" / "main.go")
    b = _touch(tmp_path / "svc" / "web" / "main.go")
    assert find_root(a, ("go.work", "go.mod")) == tmp_path / "svc" / "api"
    assert find_root(b, ("go.work", "go.mod")) == tmp_path / "svc" / "web"


def test_never_above_the_worktree_top(tmp_path: Path) -> None:
    _touch(tmp_path / "pyproject.toml")  # above the worktree: ignored
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    f = _touch(tmp_path / "repo" / "src" / "a.py")
    assert find_root(f, PY) == tmp_path / "repo"


def test_no_marker_means_the_worktree_top(tmp_path: Path) -> None:
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    f = _touch(tmp_path / "repo" / "deep" / "er" / "x.sh")
    assert find_root(f, ()) == tmp_path / "repo"
    assert find_root(f, ("Cargo.toml",)) == tmp_path / "repo"


def test_no_worktree_and_no_marker_means_the_files_directory(tmp_path: Path) -> None:
    f = _touch(tmp_path / "loose" / "x.yaml")
    assert find_root(f, ()) == tmp_path / "loose"


def test_no_worktree_but_a_marker_above(tmp_path: Path) -> None:
    _touch(tmp_path / "proj" / "package.json")
    f = _touch(tmp_path / "proj" / "src" / "x.ts")
    assert find_root(f, ("package.json",)) == tmp_path / "proj"


def test_explicit_worktree_is_the_ceiling(tmp_path: Path) -> None:
    _touch(tmp_path / "pyproject.toml")
    f = _touch(tmp_path / "ws" / "sub" / "a.py")
    assert find_root(f, PY) == tmp_path
    assert find_root(f, PY, git_worktree=tmp_path / "ws") == tmp_path / "ws"


def test_explicit_worktree_that_does_not_contain_the_file_is_ignored(tmp_path: Path) -> None:
    _touch(tmp_path / "a" / "setup.py")
    f = _touch(tmp_path / "a" / "b" / "x.py")
    assert find_root(f, PY, git_worktree=tmp_path / "elsewhere") == tmp_path / "a"


def test_the_file_need_not_exist_yet(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    _touch(tmp_path / "web" / "package.json")
    (tmp_path / "web" / "src").mkdir()
    assert find_root(tmp_path / "web" / "src" / "new.ts", ("package.json",)) == tmp_path / "web"


def test_a_directory_path_starts_at_itself(tmp_path: Path) -> None:
    _touch(tmp_path / "p" / "Cargo.toml")
    assert find_root(tmp_path / "p", ("Cargo.toml",)) == tmp_path / "p"


def test_glob_markers(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    _touch(tmp_path / "hs" / "demo.cabal")
    f = _touch(tmp_path / "hs" / "src" / "Main.hs")
    assert find_root(f, ("hie.yaml", "*.cabal")) == tmp_path / "hs"


def test_relative_paths_are_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _touch(tmp_path / "proj" / "pyproject.toml")
    _touch(tmp_path / "proj" / "m" / "a.py")
    monkeypatch.chdir(tmp_path / "proj" / "m")
    assert find_root("a.py", PY) == tmp_path / "proj"
    assert find_root("../m/./a.py", PY) == tmp_path / "proj"


def test_a_marker_that_is_a_symlink_loop_counts_as_absent(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    sub = tmp_path / "sub"
    sub.mkdir()
    os.symlink(sub / "setup.py", sub / "pyproject.toml")
    os.symlink(sub / "pyproject.toml", sub / "setup.py")
    f = _touch(sub / "a.py")
    assert find_root(f, PY) == tmp_path


def test_a_symlink_loop_in_the_path_is_contained_by_the_depth_cap(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "d").mkdir()
    os.symlink(tmp_path / "d", tmp_path / "d" / "loop")
    deep = tmp_path / "d" / Path(*(["loop"] * (roots.MAX_DEPTH + 6)))
    f = deep / "x.py"
    # The walk is lexical (no symlink is followed upward) and capped: the .git above the cap is
    # not reached, so there is no worktree and the root is the file's directory.
    assert find_worktree(f) is None
    assert find_root(f, PY) == deep
    assert workspace_gate(f, home=tmp_path / "home") is None
    # A shallow path through the same loop finds the worktree.
    shallow = tmp_path / "d" / "loop" / "loop" / "y.py"
    assert find_root(shallow, PY) == tmp_path


def test_permission_errors_count_as_absent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / ".git").mkdir()
    locked = tmp_path / "locked"
    _touch(locked / "pyproject.toml")
    f = _touch(locked / "inner" / "a.py")
    real_stat = os.stat

    def stat(path: str | os.PathLike[str], *args: object, **kwargs: object) -> os.stat_result:
        if os.fspath(path).startswith(str(locked)) and os.fspath(path).endswith(".toml"):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_stat(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "stat", stat)
    assert find_root(f, PY) == tmp_path


def test_permission_error_on_listing_for_glob_markers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / ".git").mkdir()
    f = _touch(tmp_path / "x" / "a.ml")

    real_listdir = os.listdir

    def listdir(path: str) -> list[str]:
        if os.fspath(path).startswith(str(tmp_path)):
            raise PermissionError(13, "Permission denied")
        return real_listdir(path)

    monkeypatch.setattr(os, "listdir", listdir)
    assert find_root(f, ("*.opam",)) == tmp_path


# --------------------------------------------------------------------------- workspace gate


def test_gate_git_worktree(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "code" / "repo" / ".git").mkdir(parents=True)
    f = _touch(home / "code" / "repo" / "src" / "a.py")
    assert workspace_gate(f, home=home) == home / "code" / "repo"


def test_gate_prefers_the_worktree_over_a_nearer_marker(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "repo" / ".git").mkdir(parents=True)
    _touch(home / "repo" / "pkg" / "pyproject.toml")
    f = _touch(home / "repo" / "pkg" / "a.py")
    assert workspace_gate(f, home=home) == home / "repo"


def test_gate_project_marker_without_git(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _touch(home / "proj" / "package.json")
    f = _touch(home / "proj" / "src" / "index.ts")
    assert workspace_gate(f, home=home) == home / "proj"


def test_gate_a_bare_home_directory_never_qualifies(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    assert workspace_gate(_touch(home / "notes.py"), home=home) is None
    assert workspace_gate(_touch(home / "scratch" / "x.py"), home=home) is None
    # even with a marker or a dotfiles repository at ~
    _touch(home / "package.json")
    (home / ".git").mkdir()
    assert workspace_gate(home / "notes.py", home=home) is None
    assert workspace_gate(home / "scratch" / "x.py", home=home) is None
    # below ~, markers still count (inside a dotfiles worktree too)
    _touch(home / "proj" / "pyproject.toml")
    assert workspace_gate(_touch(home / "proj" / "a.py"), home=home) == home / "proj"


def test_gate_outside_any_project(tmp_path: Path) -> None:
    f = _touch(tmp_path / "loose" / "x.py")
    assert workspace_gate(f, home=tmp_path / "home") is None


def test_gate_custom_markers(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _touch(home / "p" / "requirements.txt")
    f = _touch(home / "p" / "a.py")
    assert workspace_gate(f, home=home) == home / "p"
    assert workspace_gate(f, ("only-this",), home=home) is None
    _touch(home / "p" / "only-this")
    assert workspace_gate(f, ("only-this",), home=home) == home / "p"


def test_gate_default_home_is_the_users(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "h"
    (home / ".git").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    assert workspace_gate(_touch(home / "x.py")) is None


# --------------------------------------------------------------------------- cache


def _keep_mtime(directory: Path, mtime_ns: int) -> None:
    """Put back a directory's mtime: a change the mtime-validated cache cannot see."""
    os.utime(directory, ns=(mtime_ns, mtime_ns))


def test_cache_hits_skip_the_marker_probes_and_a_new_marker_is_seen(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    a = tmp_path / "a"
    b = a / "b"
    f = _touch(b / "x.py")
    _make_old(tmp_path, a, b)
    assert find_root(f, PY) == tmp_path
    seen = a.stat().st_mtime_ns
    _touch(a / "pyproject.toml")
    _keep_mtime(a, seen)  # a looks unchanged: the cached answer is served, no probe
    assert find_root(f, PY) == tmp_path
    _keep_mtime(a, seen + 10**9)  # a's mtime changed: the answer is looked up again
    assert find_root(f, PY) == a


def test_recently_modified_directories_are_not_cached(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    p = tmp_path / "p"
    f = _touch(p / "x.py")  # p was just modified
    assert find_root(f, PY) == tmp_path
    seen = p.stat().st_mtime_ns
    _touch(p / "setup.py")
    _keep_mtime(p, seen)  # a cached answer would still hold: there is none, p is looked at again
    assert find_root(f, PY) == p


def test_removing_a_marker_is_seen(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    marker = _touch(tmp_path / "p" / "setup.py")
    f = _touch(tmp_path / "p" / "x.py")
    _make_old(tmp_path, tmp_path / "p")
    assert find_root(f, PY) == tmp_path / "p"
    marker.unlink()
    assert find_root(f, PY) == tmp_path


def test_gate_cache_sees_git_init(tmp_path: Path) -> None:
    home = tmp_path / "home"
    f = _touch(home / "w" / "x.py")
    _make_old(home, home / "w")
    assert workspace_gate(f, home=home) is None
    (home / "w" / ".git").mkdir()
    assert workspace_gate(f, home=home) == home / "w"
