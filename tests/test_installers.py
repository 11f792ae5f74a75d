"""Locating and installing servers: search order, node checks, pip and npm installs, failures."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import platformdirs
import pytest

from ipylsp.model.server_spec import InstallRecipe, ServerSpec
from ipylsp.model.settings import Settings
from ipylsp.servers import executables, installers, registry
from ipylsp.servers.executables import resolve, resolve_command
from ipylsp.servers.installers import install, install_many

SYS_BIN = Path(sys.executable).parent


@pytest.fixture(autouse=True)
def _fresh_locate_cache() -> Iterator[None]:
    executables.invalidate()
    yield
    executables.invalidate()


def _spec(
    server_id: str = "fake",
    *,
    command: tuple[str, ...] = ("fake-ls", "--stdio"),
    kind: str = "npm",
    packages: tuple[str, ...] = ("fake-pkg",),
    needs: tuple[str, ...] = (),
    hint: str = "",
) -> ServerSpec:
    return ServerSpec(
        id=server_id,
        name=server_id,
        languages=("python",),
        command=command,
        install=InstallRecipe(kind, packages, hint=hint, needs=needs),  # type: ignore[arg-type]
    )


def _exe(path: Path, text: str = "#!/bin/sh\nexit 0\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def _only_path(monkeypatch: pytest.MonkeyPatch, *dirs: Path) -> None:
    monkeypatch.setenv("PATH", os.pathsep.join(str(d) for d in dirs))


def _spec_of(server_id: str) -> ServerSpec:
    spec = registry.get(server_id)
    assert spec is not None
    return spec


# ------------------------------------------------------------------------------------ data dir


def test_data_dir(tmp_path: Path) -> None:
    assert executables.data_dir(Settings(data_dir=tmp_path)) == tmp_path
    default = Path(platformdirs.user_data_dir("ipylsp", appauthor=False))
    assert executables.data_dir(Settings()) == default
    assert executables.data_dir() == default


def test_npm_prefix_names() -> None:
    assert executables.npm_prefix_name(_spec_of("typescript")) == "typescript"
    assert executables.npm_prefix_name(_spec_of("typescript-language-server")) == (
        "typescript-language-server"
    )
    assert executables.npm_prefix_name(_spec_of("yaml-language-server")) == "yaml-language-server"
    assert executables.npm_prefix_name(_spec(packages=("@vue/language-server@2",))) == (
        "vue-language-server"
    )
    # json, css and html share one recipe, hence one prefix
    assert {
        executables.npm_prefix_name(_spec_of(i))
        for i in (
            "vscode-json-language-server",
            "vscode-css-language-server",
            "vscode-html-language-server",
        )
    } == {"vscode-langservers-extracted"}
    assert executables.npm_prefix(_spec_of("pyright"), Path("/d")) == Path("/d/npm/pyright")


# ------------------------------------------------------------------------------------ resolve


def test_search_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path / "data"
    on_path = _exe(tmp_path / "bin" / "fake-ls")
    _only_path(monkeypatch, tmp_path / "bin")
    spec = _spec()
    shared = _exe(data / "npm" / "node_modules" / ".bin" / "fake-ls")
    own = _exe(data / "npm" / "fake-pkg" / "node_modules" / ".bin" / "fake-ls")
    venv = _exe(data / "venv" / "bin" / "fake-ls")
    assert resolve_command(spec, data) == (str(venv), "--stdio")
    venv.unlink()
    assert resolve_command(spec, data) == (str(own), "--stdio")
    own.unlink()
    assert resolve_command(spec, data) == (str(shared), "--stdio")
    shared.unlink()
    assert resolve_command(spec, data) == (str(on_path), "--stdio")
    on_path.unlink()
    resolution = resolve(spec, data)
    assert resolution.command is None
    assert resolution.reason.startswith("fake-ls not found")


def test_the_kernels_bin_dir_comes_before_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the test venv has ty in sys.executable's directory
    assert (SYS_BIN / "ty").exists()
    _exe(tmp_path / "bin" / "ty")
    _only_path(monkeypatch, tmp_path / "bin")
    assert resolve_command(_spec_of("ty"), tmp_path / "data") == (str(SYS_BIN / "ty"), "server")


def test_a_non_executable_file_is_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path / "data"
    plain = data / "venv" / "bin" / "fake-ls"
    plain.parent.mkdir(parents=True)
    plain.write_text("#!/bin/sh\n")
    found = _exe(tmp_path / "bin" / "fake-ls")
    _only_path(monkeypatch, tmp_path / "bin")
    assert resolve_command(_spec(), data) == (str(found), "--stdio")


def test_absolute_commands_are_taken_as_is(tmp_path: Path) -> None:
    server = _exe(tmp_path / "opt" / "server")
    assert resolve_command(_spec(command=(str(server), "-v")), tmp_path) == (str(server), "-v")
    missing = resolve(_spec(command=(str(tmp_path / "nope"),)), tmp_path)
    assert missing.command is None
    assert "does not exist" in missing.reason


def test_relative_commands_with_a_slash_are_refused(tmp_path: Path) -> None:
    resolution = resolve(_spec(command=("./bin/server",)), tmp_path)
    assert resolution.command is None
    assert "absolute path" in resolution.reason


def test_a_node_script_without_node_is_not_resolvable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    script = _exe(
        data / "npm" / "fake-pkg" / "node_modules" / ".bin" / "fake-ls",
        "#!/usr/bin/env node\nconsole.log(1)\n",
    )
    empty = tmp_path / "empty"
    empty.mkdir()
    _only_path(monkeypatch, empty)
    resolution = resolve(_spec(), data)
    assert resolution.command is None
    assert resolution.found == str(script)
    assert "needs node, which is not on PATH" in resolution.reason
    assert "Node.js" in resolution.reason
    _exe(empty / "node")
    assert resolve_command(_spec(), data) == (str(script), "--stdio")


def test_a_script_with_a_missing_absolute_interpreter(tmp_path: Path) -> None:
    script = _exe(tmp_path / "venv" / "bin" / "fake-ls", "#!/gone/python3\n")
    resolution = resolve(_spec(kind="pip"), tmp_path)
    assert resolution.command is None
    assert resolution.found == str(script)
    assert "/gone/python3" in resolution.reason


def test_recipes_that_need_node_need_it_at_run_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # pyright from PyPI: a Python entry point that fails without node on PATH
    _exe(tmp_path / "bin" / "pyright-langserver", f"#!{sys.executable}\n")
    _only_path(monkeypatch, tmp_path / "bin")
    resolution = resolve(_spec_of("pyright"), tmp_path / "data")
    assert resolution.command is None
    assert resolution.reason.startswith("Pyright needs node")
    _exe(tmp_path / "bin" / "node")
    assert resolve_command(_spec_of("pyright"), tmp_path / "data") is not None


def test_missing_companions_are_warnings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _exe(tmp_path / "bin" / "bash-language-server")
    _exe(tmp_path / "bin" / "node")
    _only_path(monkeypatch, tmp_path / "bin")
    resolution = resolve(_spec_of("bash-language-server"), tmp_path / "data")
    assert resolution.command is not None
    assert len(resolution.warnings) == 1
    assert resolution.warnings[0].startswith("shellcheck not found on PATH")
    _exe(tmp_path / "bin" / "shellcheck")
    assert resolve(_spec_of("bash-language-server"), tmp_path / "data").warnings == ()


def test_a_rustup_proxy_without_the_component(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cargo_bin = tmp_path / "cargo" / "bin"
    _exe(cargo_bin / "rustup")
    os.symlink("rustup", cargo_bin / "rust-analyzer")
    toolchain_bin = tmp_path / "rustup" / "toolchains" / "stable" / "bin"
    _exe(toolchain_bin / "rustc")
    monkeypatch.setenv("RUSTUP_HOME", str(tmp_path / "rustup"))
    _only_path(monkeypatch, cargo_bin)
    spec = _spec_of("rust-analyzer")
    resolution = resolve(spec, tmp_path / "data")
    assert resolution.command is None
    assert "rustup proxy" in resolution.reason
    assert "rustup component add rust-analyzer" in resolution.reason
    _exe(toolchain_bin / "rust-analyzer")
    assert resolve_command(spec, tmp_path / "data") == (str(cargo_bin / "rust-analyzer"),)


def _fake_tsc(root: Path, version: str) -> Path:
    package = root / "node_modules" / "typescript"
    _exe(package / "bin" / "tsc", "#!/bin/sh\n")
    (package / "package.json").write_text(json.dumps({"name": "typescript", "version": version}))
    link = root / "node_modules" / ".bin" / "tsc"
    link.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(os.path.relpath(package / "bin" / "tsc", link.parent), link)
    return link


def test_a_tsc_older_than_7_cannot_serve_lsp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    global_tsc = _fake_tsc(tmp_path / "global", "5.9.3")
    _exe(global_tsc.parent / "node")
    _only_path(monkeypatch, global_tsc.parent)
    spec = _spec_of("typescript")
    data = tmp_path / "data"
    resolution = resolve(spec, data)
    assert resolution.command is None
    assert resolution.reason.startswith(f"{global_tsc} is typescript 5.9.3; tsc --lsp needs")
    assert "ipylsp install typescript" in resolution.reason
    # ipylsp's own install (searched first) is used
    own = _fake_tsc(data / "npm" / "typescript", "7.0.2")
    assert resolve_command(spec, data) == (str(own), "--lsp", "--stdio")


def test_cached_answers_follow_directory_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _only_path(monkeypatch, bin_dir)
    monkeypatch.setattr(sys, "executable", str(tmp_path / "kernel" / "bin" / "python"))
    for d in executables.search_dirs(_spec(), data):
        Path(d).mkdir(parents=True, exist_ok=True)
    old = bin_dir.stat().st_mtime_ns - 3600 * 10**9
    for d in executables.search_dirs(_spec(), data):
        os.utime(d, ns=(old, old))
    assert resolve_command(_spec(), data) is None
    seen = bin_dir.stat().st_mtime_ns
    server = _exe(bin_dir / "fake-ls")
    os.utime(bin_dir, ns=(seen, seen))  # bin_dir looks unchanged: the cached answer is served
    assert resolve_command(_spec(), data) is None
    os.utime(bin_dir, ns=(seen + 10**9, seen + 10**9))  # changed: looked up again (and cached)
    assert resolve_command(_spec(), data) == (str(server), "--stdio")
    server.unlink()
    os.utime(bin_dir, ns=(seen + 10**9, seen + 10**9))
    assert resolve_command(_spec(), data) == (str(server), "--stdio")  # still the cached answer
    executables.invalidate()  # forgets every answer
    assert resolve_command(_spec(), data) is None


# ------------------------------------------------------------------------------------ failures


def _no_children(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("no child process may be started")

    monkeypatch.setattr(subprocess, "Popen", refuse)
    monkeypatch.setattr(subprocess, "run", refuse)


def test_apt_recipes_return_the_hint_and_run_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_children(monkeypatch)
    result = install(_spec_of("clangd"), tmp_path)
    assert not result.ok
    assert result.server_id == "clangd"
    assert result.message == (
        "clangd: ipylsp does not install system packages; to get it: apt-get install clangd"
    )
    assert result.command is None


def test_path_recipes_return_the_hint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _no_children(monkeypatch)
    result = install(_spec_of("zls"), tmp_path)
    assert not result.ok
    assert result.message.startswith("zls: ipylsp does not install this server; to get it: ")
    assert result.message.endswith(_spec_of("zls").install.hint)


def test_npm_missing_says_how_to_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    _only_path(monkeypatch, empty)
    _no_children(monkeypatch)
    result = install(_spec_of("dockerfile-language-server"), tmp_path / "data")
    assert not result.ok
    assert result.message == (
        "dockerfile-language-server: npm not found on PATH: install Node.js >= 18 "
        "(apt-get install nodejs npm) or use a pip server"
    )


def test_node_missing_says_how_to_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _exe(tmp_path / "bin" / "npm")
    _only_path(monkeypatch, tmp_path / "bin")
    _no_children(monkeypatch)
    result = install(_spec(), tmp_path / "data")
    assert not result.ok
    assert "node not found on PATH" in result.message
    assert "Node.js >= 18" in result.message


@pytest.mark.real
def test_an_old_node_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _exe(tmp_path / "bin" / "npm", "#!/bin/sh\necho npm-ran >&2\nexit 0\n")
    _exe(tmp_path / "bin" / "node", "#!/bin/sh\necho v16.20.2\n")
    _only_path(monkeypatch, tmp_path / "bin")
    result = install(_spec(), tmp_path / "data")
    assert not result.ok
    assert "node 16" in result.message and "too old" in result.message
    assert result.output == ()


def _fake_npm(bin_dir: Path, log: Path) -> None:
    """An npm that records its arguments and creates ``node_modules/.bin/<pkg>-ls`` files."""
    _exe(bin_dir / "node", "#!/bin/sh\necho v20.1.0\n")
    _exe(
        bin_dir / "npm",
        f"""#!{sys.executable}
import os, sys
args = sys.argv[1:]
with open({str(log)!r}, "a") as f:
    f.write(" ".join(args) + "\\n")
prefix = args[args.index("--prefix") + 1]
bin_dir = os.path.join(prefix, "node_modules", ".bin")
os.makedirs(bin_dir, exist_ok=True)
print("added 1 package")
for pkg in [a for a in args[1:] if not a.startswith("-") and a != prefix]:
    name = pkg.split("@")[0] + "-ls"
    path = os.path.join(bin_dir, name)
    with open(path, "w") as f:
        f.write("#!/bin/sh\\n")
    os.chmod(path, 0o755)
""",
    )


@pytest.mark.real
def test_npm_install_arguments_and_result(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "npm.log"
    _fake_npm(tmp_path / "bin", log)
    _only_path(monkeypatch, tmp_path / "bin")
    data = tmp_path / "data"
    lines: list[str] = []
    spec = _spec(command=("fake-ls",), packages=("fake@2",), needs=("node", "npm"))
    result = install(spec, data, progress=lines.append)
    prefix = data / "npm" / "fake"
    assert result.ok, result.message
    assert log.read_text().split() == [
        "install",
        "--prefix",
        str(prefix),
        "--no-audit",
        "--no-fund",
        "--no-update-notifier",
        "fake@2",
    ]
    expected = str(prefix / "node_modules" / ".bin" / "fake-ls")
    assert result.command == (expected,)
    assert result.message == f"fake: installed fake@2 -> {expected}"
    assert lines[0].startswith("$ ") and "npm install --prefix" in lines[0]
    assert "added 1 package" in lines
    assert resolve_command(spec, data) == (expected,)


@pytest.mark.real
def test_install_many_runs_a_shared_recipe_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "npm.log"
    _fake_npm(tmp_path / "bin", log)
    _only_path(monkeypatch, tmp_path / "bin")
    a = _spec("a", command=("shared-ls",), packages=("shared",))
    b = _spec("b", command=("shared-ls", "--other"), packages=("shared",))
    c = _spec_of("gopls")
    results = install_many([a, b, c], tmp_path / "data")
    assert [r.ok for r in results] == [True, True, False]
    assert results[1].command is not None and results[1].command[1:] == ("--other",)
    assert len(log.read_text().splitlines()) == 1


def _fake_venv(data: Path, python_script: str) -> None:
    venv = data / "venv"
    venv.mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    _exe(venv / "bin" / "python", python_script)


@pytest.mark.real
def test_pip_failure_reports_exit_status_and_output(tmp_path: Path) -> None:
    data = tmp_path / "data"
    _fake_venv(data, "#!/bin/sh\necho 'ERROR: no matching distribution'\necho second >&2\nexit 3\n")
    lines: list[str] = []
    result = install(_spec(kind="pip", packages=("ruff",)), data, progress=lines.append)
    assert not result.ok
    assert result.message == "fake: pip install failed (exit status 3); see its output above"
    assert "ERROR: no matching distribution" in result.output
    assert "second" in result.output  # stderr is merged
    assert lines == list(result.output)
    assert lines[0].endswith(
        "-m pip install --disable-pip-version-check --no-input --progress-bar off ruff"
    )


@pytest.mark.real
def test_a_hanging_installer_is_stopped(tmp_path: Path) -> None:
    data = tmp_path / "data"
    _fake_venv(data, "#!/bin/sh\necho starting\nexec sleep 60\n")
    result = install(_spec(kind="pip", packages=("ruff",)), data, timeout=0.5)
    assert not result.ok
    assert "did not finish within 0.5 s" in result.message
    assert "starting" in result.output


@pytest.mark.real
def test_a_failing_progress_callback_does_not_break_the_install(tmp_path: Path) -> None:
    data = tmp_path / "data"
    _fake_venv(data, "#!/bin/sh\necho one\nexit 0\n")

    def broken(line: str) -> None:
        raise RuntimeError("display gone")

    result = install(
        _spec(command=("fake-ls",), kind="pip", packages=("x",)), data, progress=broken
    )
    # pip "succeeded" but installed nothing runnable: that is said, not raised
    assert not result.ok
    assert result.message.startswith("fake: installed x, but the server cannot run: fake-ls not")
    assert (data / ".install.lock").exists()


@pytest.mark.real
def test_pip_installs_never_leave_the_venv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path / "data"
    env_dump = tmp_path / "env.txt"
    _fake_venv(data, f"#!/bin/sh\nenv > {env_dump}\n")
    monkeypatch.setenv("PIP_USER", "1")
    monkeypatch.setenv("PIP_TARGET", "/somewhere")
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    install(_spec(kind="pip", packages=("x",)), data)
    names = {line.split("=", 1)[0] for line in env_dump.read_text().splitlines()}
    assert not names & {"PIP_USER", "PIP_TARGET", "PYTHONPATH"}


def test_installable_means_a_pip_or_npm_recipe() -> None:
    assert installers.installable(_spec_of("ty"))
    assert not installers.installable(_spec_of("clangd"))


# ------------------------------------------------------------------------------------ real installs


@pytest.mark.real
def test_real_pip_install_of_ruff(tmp_path: Path) -> None:
    data = tmp_path / "data"
    spec = _spec_of("ruff")
    lines: list[str] = []
    result = install(spec, data, progress=lines.append)
    assert result.ok, f"{result.message}\n" + "\n".join(result.output)
    ruff = data / "venv" / "bin" / "ruff"
    assert result.command == (str(ruff), "server")
    assert resolve_command(spec, data) == (str(ruff), "server")
    assert any("creating ipylsp's Python environment" in line for line in lines)
    version = subprocess.run([str(ruff), "--version"], capture_output=True, text=True, check=True)
    assert version.stdout.startswith("ruff ")
    # installing again reuses the venv
    again: list[str] = []
    assert install(spec, data, progress=again.append).ok
    assert not any("creating" in line for line in again)


@pytest.mark.real
def test_real_npm_install_of_the_dockerfile_server(tmp_path: Path) -> None:
    assert shutil.which("npm") and shutil.which("node"), "needs node and npm (CI: .ci/run)"
    data = tmp_path / "data"
    spec = _spec_of("dockerfile-language-server")
    lines: list[str] = []
    result = install(spec, data, progress=lines.append)
    assert result.ok, f"{result.message}\n" + "\n".join(result.output)
    binary = (
        data
        / "npm"
        / "dockerfile-language-server-nodejs"
        / "node_modules"
        / ".bin"
        / ("docker-langserver")
    )
    assert result.command == (str(binary), "--stdio")
    assert resolve_command(spec, data) == (str(binary), "--stdio")
    assert lines and lines[0].startswith("$ ")
    # it is a node script, and it starts: an LSP initialize gets an answer
    body = (
        b'{"jsonrpc":"2.0","id":1,"method":"initialize",'
        b'"params":{"processId":null,"rootUri":null,"capabilities":{}}}'
    )
    message = b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
    proc = subprocess.Popen(
        [str(binary), "--stdio"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(message)
        proc.stdin.flush()
        header = proc.stdout.readline()
        assert header.startswith(b"Content-Length:")
    finally:
        proc.kill()
        proc.wait()
