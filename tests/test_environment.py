"""A service's servers are found and run in its client's `Environment`, not in the process's
own: the client's PATH finds a server's executable, the client's interpreter is the Python
environment handed to Python servers, and a server is spawned with the client's variables.
The value itself: which variables it keeps, its digest, its JSON."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from ipylsp.model.environment import Environment, relevant
from ipylsp.model.server_spec import InstallRecipe, ServerSpec
from ipylsp.model.settings import Settings
from ipylsp.servers import executables, python_env, registry
from ipylsp.service.runtime.pool import ClientPool
from ipylsp.service.runtime.resolver import NewSlot, Resolver
from ipylsp.service.service import Service
from tests.conftest import fake_command

# -------------------------------------------------------------------------------- the value


def test_only_the_variables_servers_read_are_kept_sorted() -> None:
    env = Environment("/py/bin/python", "/py", (
        ("PATH", "/a"), ("JPY_PARENT_PID", "7"), ("GOPATH", "/go"), ("KERNEL_ID", "k"),
        ("IPYLSP_SERVER_TAG", "1.2.3"), ("GOOGLE_CLOUD_PROJECT", "p"), ("SHLVL", "2"),
        ("LC_ALL", "C"), ("npm_config_prefix", "/n"), ("PATH", "/b"),
    ))
    assert env.variables == (
        ("GOPATH", "/go"), ("LC_ALL", "C"), ("PATH", "/b"), ("npm_config_prefix", "/n")
    )
    for name in ("PATH", "HOME", "VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_DEFAULT_ENV",
                 "PYTHONPATH", "PYTHONHOME", "GO111MODULE", "GOFLAGS", "GOROOT", "GOWORK",
                 "CGO_ENABLED", "CC", "CXX", "CPATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH",
                 "LIBRARY_PATH", "NODE_OPTIONS", "NPM_CONFIG_PREFIX", "RUSTUP_HOME",
                 "CARGO_HOME", "RUFF_CACHE_DIR", "TY_LOG", "PYRIGHT_PYTHON", "BASEDPYRIGHT_X",
                 "PYREFLY_X", "MYPYPATH", "CLANGD_FLAGS", "JAVA_HOME", "LANG", "LC_CTYPE",
                 "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "TMPDIR"):
        assert relevant(name), name
    for name in ("JPY_PARENT_PID", "JPY_SESSION_NAME", "KERNEL_ID", "IPYLSP_SERVER_TAG",
                 "IPYLSP_STORE", "PWD", "SHLVL", "TERM", "GOOGLE_APPLICATION_CREDENTIALS"):
        assert not relevant(name), name


def test_current_is_this_processs_interpreter_and_variables(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GOFLAGS", "-mod=mod")
    monkeypatch.setenv("JPY_PARENT_PID", "1")
    env = Environment.current()
    assert (env.executable, env.prefix) == (sys.executable, sys.prefix)
    assert env.get("GOFLAGS") == "-mod=mod"
    assert env.get("PATH") == os.environ.get("PATH")
    assert env.get("JPY_PARENT_PID") is None
    assert env.get("IPYLSP_TEST_MARKER") is None  # this run's marker: a process's, not a server's


def test_digest_is_stable_and_changes_with_what_servers_read_only() -> None:
    variables = (("PATH", "/usr/bin"), ("HOME", "/home/u"), ("GOPATH", "/go"))
    env = Environment("/py/bin/python", "/py", variables)
    assert env.digest() == Environment("/py/bin/python", "/py", variables[::-1]).digest()
    assert len(env.digest()) == 64 and int(env.digest(), 16) >= 0
    with_pid = Environment("/py/bin/python", "/py", (*variables, ("JPY_PARENT_PID", "42")))
    assert with_pid.digest() == env.digest()
    other_gopath = Environment("/py/bin/python", "/py", (*variables, ("GOPATH", "/other")))
    assert other_gopath.digest() != env.digest()
    assert replace(env, executable="/other/bin/python").digest() != env.digest()
    assert Environment("/py/bin/python", "/py", (*variables, ("PYTHONPATH", "/x"))
                       ).digest() != env.digest()


def test_its_one_json_form_round_trips_and_refuses_what_is_not_one() -> None:
    from ipylsp.model.wire import read, to_wire

    env = Environment("/py/bin/python", "/py", (("PATH", "/a:/b"), ("HOME", "/h")))
    data = to_wire(env)
    assert data == {"executable": "/py/bin/python", "prefix": "/py",
                    "variables": [["HOME", "/h"], ["PATH", "/a:/b"]]}
    assert read(Environment, data) == env
    for bad in ([], {"executable": 1, "prefix": ""}, {"executable": "", "prefix": None},
                {"executable": "", "prefix": "", "variables": [["PATH", 1]]},
                {"executable": "", "prefix": "", "variables": {"PATH": "/a"}}):
        with pytest.raises(ValueError):
            read(Environment, bad)


def test_a_server_is_spawned_with_the_clients_variables_over_the_processs() -> None:
    own = {"PATH": "/broker/bin", "CONDA_PREFIX": "/broker/conda", "SHLVL": "1",
           "IPYLSP_TEST_MARKER": "m", "GOPATH": "/broker/go"}
    env = Environment("/c/bin/python", "/c", (("PATH", "/client/bin"), ("GOPATH", "/client/go")))
    assert env.spawn_environ(own) == {
        "PATH": "/client/bin", "GOPATH": "/client/go",  # the client's win
        "SHLVL": "1", "IPYLSP_TEST_MARKER": "m",  # the process's own, which servers don't read
    }  # CONDA_PREFIX: the client has none, so the server has none


# ---------------------------------------------------------------------------- finding servers


def _fake_executable(directory: Path, name: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def _client(path: str, executable: str = "/nonexistent/bin/python") -> Environment:
    return Environment(executable, os.path.dirname(os.path.dirname(executable)),
                       (("PATH", path),))


def test_the_clients_path_finds_a_server_the_processs_does_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = registry.get("marksman")  # a catalogue server this process's environment lacks
    assert spec is not None and spec.install.kind == "path"
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    executables.invalidate()
    found = _fake_executable(tmp_path / "client-bin", spec.command[0])
    data = tmp_path / "data"
    client = _client(str(tmp_path / "client-bin"))
    assert executables.resolve(spec, data, client).command == (str(found), *spec.command[1:])
    assert executables.resolve(spec, data).command is None  # the process's PATH: not there
    assert executables.resolve(spec, data, client).command is not None  # no shared answer
    assert str(tmp_path / "client-bin") in executables.search_dirs(spec, data, client)
    # beside the client's interpreter, as beside a kernel's
    beside = _fake_executable(tmp_path / "venv" / "bin", spec.command[0])
    interpreter = _client("", str(tmp_path / "venv" / "bin" / "python"))
    assert executables.resolve(spec, data, interpreter).command == (str(beside), *spec.command[1:])

    # the facade's tables say the same, each for its own client
    settings = Settings(data_dir=data, store=False)
    with_client = Service(settings, environment=client)
    without = Service(settings)
    try:
        assert with_client.which("marksman").command == (str(found), *spec.command[1:])
        assert without.which("marksman").command is None
        assert "marksman" in [r.server_id for r in with_client.servers(installed_only=True).rows]
        # without one, the process's own, read at each use: a kernel's `%env PATH=...`
        monkeypatch.setenv("PATH", str(tmp_path / "client-bin"))
        executables.invalidate()
        assert without.which("marksman").command == (str(found), *spec.command[1:])
    finally:
        with_client.close()
        without.close()


def test_a_script_needs_its_interpreter_on_the_clients_path(tmp_path: Path) -> None:
    spec = registry.get("marksman")
    assert spec is not None
    script = tmp_path / "client-bin" / spec.command[0]
    _fake_executable(tmp_path / "client-bin", spec.command[0])
    script.write_text("#!/usr/bin/env ipylsp-test-interpreter\n")
    data = tmp_path / "data"
    without = executables.resolve(spec, data, _client(str(tmp_path / "client-bin")))
    assert without.command is None and "ipylsp-test-interpreter" in without.reason
    _fake_executable(tmp_path / "tools", "ipylsp-test-interpreter")
    both = os.pathsep.join([str(tmp_path / "client-bin"), str(tmp_path / "tools")])
    assert executables.resolve(spec, data, _client(both)).command == (str(script), "server")


# ------------------------------------------------------------------- the Python environment


def _fake_venv(prefix: Path) -> Path:
    (prefix / "bin").mkdir(parents=True)
    (prefix / "pyvenv.cfg").write_text("home = /usr/bin\n")
    python = prefix / "bin" / "python"
    python.write_text("")
    return python


@pytest.fixture
def resolver_for() -> Iterator[list[Resolver]]:
    made: list[Resolver] = []
    yield made
    for resolver in made:
        resolver.close()


def test_python_servers_get_the_clients_interpreter(
    tmp_path: Path, resolver_for: list[Resolver]
) -> None:
    python = _fake_venv(tmp_path / "client-venv")
    bin_dir = tmp_path / "client-bin"
    server = _fake_executable(bin_dir, "basedpyright-langserver")
    client = Environment(str(python), str(tmp_path / "client-venv"), (("PATH", str(bin_dir)),))
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text("")
    settings = Settings(data_dir=tmp_path / "data", store=False,
                        language_servers={"python": ("basedpyright",)})
    resolver = Resolver(settings, ClientPool(settings, client), client)
    resolver_for.append(resolver)
    spec = registry.get("basedpyright")
    assert spec is not None
    admitted = resolver.admit(spec, project / "a.py", project)
    assert isinstance(admitted, NewSlot), admitted
    assert admitted.command == (str(server), *spec.command[1:])
    assert admitted.spec.settings["python"]["pythonPath"] == str(python)
    assert admitted.spec.settings["python"]["venv"] == "client-venv"
    # the prefix is the client's, not guessed from the interpreter's place
    elsewhere = _fake_venv(tmp_path / "conda-env")
    handed = python_env.for_server(registry.get("ty") or spec, project,
                                   executable=str(python), prefix=str(elsewhere.parent.parent))
    assert handed.settings["ty"]["configuration"]["environment"]["python"] == str(
        tmp_path / "conda-env")
    # a client without an interpreter hands none over (not this process's)
    assert python_env.kernel_env("", "") is None


# ------------------------------------------------------------------------------------ spawning


def _environ(pid: int) -> dict[str, str]:
    with open(f"/proc/{pid}/environ", "rb") as handle:
        entries = handle.read().split(b"\0")
    pairs = (e.decode("utf-8", "surrogateescape").partition("=") for e in entries if e)
    return {name: value for name, _, value in pairs}


@pytest.mark.real
def test_a_services_server_runs_with_the_clients_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    monkeypatch.setenv("CONDA_PREFIX", "/broker/conda")  # the process's own: not the client's
    own = Environment.current()
    client = Environment(own.executable, own.prefix, (
        *(pair for pair in own.variables if pair[0] != "CONDA_PREFIX"),
        ("GOPATH", str(tmp_path / "client-go")),
    ))
    spec = ServerSpec(id="fake", name="Fake", languages=("shellscript",),
                      command=fake_command(), install=InstallRecipe("path", hint="a fixture"))
    settings = Settings(language_servers={"shellscript": ("fake",)}, extra_specs=(spec,),
                        store=False, wait_budget=10.0)
    service = Service(settings, environment=client)
    try:
        (tmp_path / "a.sh").write_text("echo\n")
        lines = service.start(tmp_path / "a.sh")
        assert any("running" in line for line in lines), lines
        [pid] = service.server_pids()
        seen = _environ(pid)
    finally:
        service.close()
    assert seen["GOPATH"] == str(tmp_path / "client-go")
    assert "CONDA_PREFIX" not in seen
    assert seen["PATH"] == client.get("PATH")
    assert seen["IPYLSP_TEST_MARKER"] == os.environ["IPYLSP_TEST_MARKER"]  # the process's own
    assert seen["IPYLSP_SERVER_TAG"]
