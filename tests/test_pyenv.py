"""Python environments: detection, the per-server hand-over, and real servers resolving imports.

The real-server tests build a venv (``python -m venv --without-pip``, offline) holding a package
the kernel's environment does not have, and check with a minimal push-diagnostics client that the
server reports the import as unresolved without the hand-over and resolves it with it.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from ipylsp.model.server_spec import ServerSpec
from ipylsp.servers import executables, python_env, registry
from ipylsp.servers.python_env import PythonEnv
from tests.test_config_files import at_once

PACKAGE = "ipylsp_only_in_venv"
SOURCE = f'import {PACKAGE}\n\nx: int = "s"\n'
PLANTED = re.compile(r"assignable|incompatible", re.I)
UNRESOLVED = re.compile(
    rf"(could not be resolved|cannot resolve|cannot find module).*{PACKAGE}"
    rf"|{PACKAGE}.*(could not be resolved|cannot resolve|not found)",
    re.I | re.S,
)


def _spec(server_id: str) -> ServerSpec:
    spec = registry.get(server_id)
    assert spec is not None
    return spec


def _fake_env(prefix: Path, *, conda: bool = False) -> Path:
    """A directory that looks like a venv (pyvenv.cfg or conda-meta, and bin/python)."""
    (prefix / "bin").mkdir(parents=True)
    if conda:
        (prefix / "conda-meta").mkdir()
    else:
        (prefix / "pyvenv.cfg").write_text("home = /usr/bin\n")
    python = prefix / "bin" / "python"
    os.symlink(sys.executable, python)
    return python


# ------------------------------------------------------------------------------------ detection


def test_project_dot_venv_at_the_root(tmp_path: Path) -> None:
    python = _fake_env(tmp_path / ".venv")
    assert python_env.project_env(tmp_path) == PythonEnv(tmp_path / ".venv", python, "project")


def test_project_venv_named_venv(tmp_path: Path) -> None:
    python = _fake_env(tmp_path / "venv")
    assert python_env.detect(tmp_path, executable="/nonexistent/bin/python") == PythonEnv(
        tmp_path / "venv", python, "project"
    )


def test_dot_venv_wins_over_venv(tmp_path: Path) -> None:
    _fake_env(tmp_path / "venv")
    python = _fake_env(tmp_path / ".venv")
    env = python_env.project_env(tmp_path)
    assert env is not None and env.interpreter == python


def test_conda_style_env_in_the_project(tmp_path: Path) -> None:
    python = _fake_env(tmp_path / ".venv", conda=True)
    env = python_env.project_env(tmp_path)
    assert env is not None and env.interpreter == python


def test_a_plain_directory_named_venv_is_not_an_env(tmp_path: Path) -> None:
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    os.symlink(sys.executable, tmp_path / ".venv" / "bin" / "python")
    assert python_env.project_env(tmp_path) is None


def test_a_venv_with_a_dangling_interpreter_is_skipped(tmp_path: Path) -> None:
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / ".venv" / "pyvenv.cfg").write_text("home = /gone\n")
    os.symlink("/gone/python3.99", tmp_path / ".venv" / "bin" / "python")
    assert python_env.project_env(tmp_path) is None


def test_the_search_climbs_to_the_ceiling_only(tmp_path: Path) -> None:
    python = _fake_env(tmp_path / ".venv")
    root = tmp_path / "packages" / "api"
    root.mkdir(parents=True)
    assert python_env.project_env(root) is None
    env = python_env.project_env(root, ceiling=tmp_path)
    assert env is not None and env.interpreter == python
    assert python_env.project_env(root, ceiling=tmp_path / "packages") is None
    # a ceiling that does not contain the root is ignored
    assert python_env.project_env(root, ceiling=tmp_path / "elsewhere") is None


def test_the_kernels_env_when_it_is_a_venv(tmp_path: Path) -> None:
    python = _fake_env(tmp_path / "kenv")
    assert python_env.kernel_env(str(python)) == PythonEnv(tmp_path / "kenv", python, "kernel")
    # the project's venv comes first
    proj = tmp_path / "proj"
    proj_python = _fake_env(proj / ".venv")
    env = python_env.detect(proj, executable=str(python))
    assert env is not None and env.interpreter == proj_python and env.source == "project"
    # without one, the kernel's
    env = python_env.detect(tmp_path / "other", executable=str(python))
    assert env is not None and env.interpreter == python and env.source == "kernel"


def test_the_kernels_interpreter_is_not_resolved_through_its_symlink() -> None:
    # this test process runs in a venv: its python is a symlink to the base interpreter
    env = python_env.kernel_env()
    if sys.prefix == sys.base_prefix:
        assert env is None
        return
    assert env is not None
    assert env.interpreter == Path(sys.executable)
    assert env.prefix == Path(sys.prefix)


def test_a_kernel_outside_any_venv_hands_nothing(tmp_path: Path) -> None:
    (tmp_path / "usr" / "bin").mkdir(parents=True)
    python = tmp_path / "usr" / "bin" / "python3"
    os.symlink(sys.executable, python)
    assert python_env.kernel_env(str(python)) is None
    assert python_env.detect(tmp_path / "proj", executable=str(python)) is None


# ------------------------------------------------------------------------------------ hand-over


ENV = PythonEnv(Path("/p/.venv"), Path("/p/.venv/bin/python"), "project")


def test_env_config_per_server() -> None:
    pyright = {"python": {"pythonPath": "/p/.venv/bin/python", "venvPath": "/p", "venv": ".venv"}}
    assert python_env.env_config("pyright", ENV) == (pyright, None)
    assert python_env.env_config("basedpyright", ENV) == (pyright, None)
    assert python_env.env_config("ty", ENV) == (
        {"ty": {"configuration": {"environment": {"python": "/p/.venv"}}}},
        None,
    )
    assert python_env.env_config("pyrefly", ENV) == (
        {"python": {"pythonPath": "/p/.venv/bin/python"}},
        None,
    )
    settings, init = python_env.env_config("pylsp", ENV)
    assert settings["pylsp"]["plugins"]["jedi"] == {"environment": "/p/.venv/bin/python"}
    assert init is None
    assert python_env.env_config("jedi-language-server", ENV) == (
        {},
        {"workspace": {"environmentPath": "/p/.venv/bin/python"}},
    )
    assert python_env.env_config("ruff", ENV) == ({}, None)
    assert python_env.env_config("clangd", ENV) == ({}, None)


def test_apply_merges_under_the_specs_own_settings() -> None:
    pyrefly = python_env.apply(_spec("pyrefly"), ENV)
    assert pyrefly.settings == {
        "python": {
            "pythonPath": "/p/.venv/bin/python",
            "pyrefly": {"displayTypeErrors": "force-on"},
        }
    }
    user = ServerSpec(
        id="pyright",
        name="Pyright",
        languages=("python",),
        command=("pyright-langserver", "--stdio"),
        install=_spec("pyright").install,
        settings={"python": {"pythonPath": "/mine/python", "analysis": {"x": 1}}},
    )
    merged = python_env.apply(user, ENV)
    assert merged.settings == {
        "python": {
            "pythonPath": "/mine/python",  # the user's explicit choice wins
            "venvPath": "/p",
            "venv": ".venv",
            "analysis": {"x": 1},
        }
    }
    jedi = python_env.apply(_spec("jedi-language-server"), ENV)
    assert jedi.initialization_options == {"workspace": {"environmentPath": "/p/.venv/bin/python"}}
    assert python_env.apply(_spec("ruff"), ENV) is _spec("ruff")
    assert python_env.apply(_spec("ty"), None) is _spec("ty")


def test_apply_does_not_mutate_the_registry() -> None:
    before = json.dumps(dict(_spec("pyrefly").settings), sort_keys=True)
    python_env.apply(_spec("pyrefly"), ENV)
    assert json.dumps(dict(_spec("pyrefly").settings), sort_keys=True) == before


@pytest.mark.parametrize(
    ("filename", "text", "configured"),
    [
        ("ty.toml", '[environment]\npython = "./env"\n', True),
        ("ty.toml", '[environment]\npython-version = "3.12"\n', False),
        ("ty.toml", '[rules]\npython = "x"\n', False),
        ("pyproject.toml", '[tool.ty.environment]\npython = ".env"\n', True),
        ("pyproject.toml", "[tool.ty.environment]\nextra-paths = []\n[x]\npython = 1\n", False),
        ("pyproject.toml", '[project]\nname = "x"\n', False),
    ],
)
def test_ty_is_not_overridden_when_its_config_sets_the_environment(
    tmp_path: Path, filename: str, text: str, configured: bool
) -> None:
    (tmp_path / filename).write_text(text)
    settings, _ = python_env.env_config("ty", ENV, root=tmp_path)
    assert (settings == {}) is configured


@pytest.mark.parametrize("filename", ["ty.toml", "pyproject.toml"])
def test_a_fifo_in_tys_config_is_never_opened(tmp_path: Path, filename: str) -> None:
    """A FIFO in the place of ty's configuration (the service reads it on its loop) sets
    nothing, and is never opened: the hand-over returns at once."""
    fifo = tmp_path / filename
    os.mkfifo(fifo)
    handed = at_once(lambda: python_env.env_config("ty", ENV, root=tmp_path), fifo)
    assert handed == ({"ty": {"configuration": {"environment": {"python": "/p/.venv"}}}}, None)


def test_for_server_skips_non_python_servers(tmp_path: Path) -> None:
    _fake_env(tmp_path / ".venv")
    clangd = _spec("clangd")
    assert python_env.for_server(clangd, tmp_path) is clangd
    ty = python_env.for_server(_spec("ty"), tmp_path)
    assert ty.settings == {
        "ty": {"configuration": {"environment": {"python": str(tmp_path / ".venv")}}}
    }


# ------------------------------------------------------------------------------------ real servers


class PushClient:
    """Just enough LSP to open one file and collect pushed diagnostics."""

    def __init__(
        self,
        command: tuple[str, ...],
        root: Path,
        home: Path,
        settings: Mapping[str, Any],
        init_options: Mapping[str, Any] | None,
    ) -> None:
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("VIRTUAL_ENV", "CONDA_PREFIX", "PYTHONPATH", "PYTHONHOME")
        }
        env.update(HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"))
        self.settings = settings
        self.proc = subprocess.Popen(
            list(command),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=root,
            env=env,
            start_new_session=True,
        )
        self.inbox: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()
        self.root = root
        self.init_options = init_options

    def _read(self) -> None:
        assert self.proc.stdout is not None
        stream = self.proc.stdout
        while True:
            length = None
            while True:
                line = stream.readline()
                if not line:
                    self.inbox.put(None)
                    return
                if line in (b"\r\n", b"\n"):
                    break
                name, _, value = line.decode("ascii").partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
            assert length is not None
            self.inbox.put(json.loads(stream.read(length)))

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        self.proc.stdin.flush()

    def request(self, method: str, params: Any = None) -> int:
        self.next_id += 1
        message: dict[str, Any] = {"id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return self.next_id

    def _section(self, section: str | None) -> Any:
        value: Any = self.settings
        for part in section.split(".") if section else []:
            value = value.get(part) if isinstance(value, Mapping) else None
        return value

    def _answer(self, message: dict[str, Any]) -> None:
        result: Any = None
        if message["method"] == "workspace/configuration":
            items = message.get("params", {}).get("items", [])
            result = [self._section(item.get("section")) for item in items]
        elif message["method"] == "workspace/workspaceFolders":
            result = [{"uri": self.root.as_uri(), "name": self.root.name}]
        self.send({"id": message["id"], "result": result})

    def next_message(self, deadline: float) -> dict[str, Any]:
        try:
            message = self.inbox.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise AssertionError("the server did not answer in time") from None
        if message is None:
            raise AssertionError("the server exited")
        if "method" in message and "id" in message:
            self._answer(message)
        return message

    def diagnostics(self, path: Path, text: str, *, timeout: float = 60.0) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        init = self.request(
            "initialize",
            {
                "processId": os.getpid(),
                "rootUri": self.root.as_uri(),
                "workspaceFolders": [{"uri": self.root.as_uri(), "name": self.root.name}],
                "capabilities": {
                    "workspace": {"configuration": True, "workspaceFolders": True},
                    "textDocument": {"publishDiagnostics": {"versionSupport": True}},
                },
                **({"initializationOptions": self.init_options} if self.init_options else {}),
            },
        )
        while self.next_message(deadline).get("id") != init:
            pass
        self.send({"method": "initialized", "params": {}})
        self.send(
            {"method": "workspace/didChangeConfiguration", "params": {"settings": self.settings}}
        )
        uri = path.as_uri()
        self.send(
            {
                "method": "textDocument/didOpen",
                "params": {
                    "textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}
                },
            }
        )
        while True:
            message = self.next_message(deadline)
            if message.get("method") != "textDocument/publishDiagnostics":
                continue
            params = message["params"]
            if params["uri"] != uri:
                continue
            found = params["diagnostics"]
            if any(PLANTED.search(d["message"]) for d in found):
                return list(found)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()


@pytest.fixture(scope="module")
def outside_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real venv (no pip, offline) whose site-packages holds PACKAGE; the kernel lacks it."""
    prefix = tmp_path_factory.mktemp("kernelenv") / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(prefix)], check=True)
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    package = prefix / "lib" / version / "site-packages" / PACKAGE
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("def hello() -> int:\n    return 1\n")
    (package / "py.typed").write_text("")
    with pytest.raises(subprocess.CalledProcessError):
        subprocess.run([sys.executable, "-c", f"import {PACKAGE}"], check=True, capture_output=True)
    return prefix


def _command(server_id: str) -> tuple[str, ...]:
    spec = _spec(server_id)
    command = executables.resolve_command(spec, executables.data_dir())
    assert command is not None, (
        f"{server_id} is not installed: run scripts/bootstrap ({registry.install_hint(spec)})"
    )
    return command


def _run(spec: ServerSpec, command: tuple[str, ...], root: Path, home: Path) -> list[str]:
    client = PushClient(command, root, home, spec.settings, spec.initialization_options)
    try:
        found = client.diagnostics(root / "app.py", SOURCE)
    finally:
        client.close()
    return [d["message"] for d in found]


def _project(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "pyproject.toml").write_text('[project]\nname = "proj"\nversion = "0"\n')
    (root / "app.py").write_text(SOURCE)
    home = tmp_path / "home"
    home.mkdir()
    return root, home


def _unresolved(messages: list[str]) -> list[str]:
    return [m for m in messages if UNRESOLVED.search(m)]


@pytest.mark.real
@pytest.mark.parametrize("server_id", ["ty", "basedpyright", "pyrefly", "pyright"])
def test_a_package_only_in_the_kernels_venv_resolves_when_handed_over(
    server_id: str, outside_venv: Path, tmp_path: Path
) -> None:
    command = _command(server_id)
    root, home = _project(tmp_path)
    spec = _spec(server_id)
    interpreter = str(outside_venv / "bin" / "python")

    without = _run(spec, command, root, home)
    assert _unresolved(without), f"{server_id} resolved {PACKAGE} without the env: {without}"

    handed = python_env.for_server(spec, root, executable=interpreter)
    assert handed.settings != spec.settings
    with_env = _run(handed, command, root, home)
    assert not _unresolved(with_env), with_env
    assert any(PLANTED.search(m) for m in with_env)


@pytest.mark.real
@pytest.mark.parametrize("server_id", ["ty", "pyright"])
def test_a_package_only_in_the_projects_dot_venv_resolves(
    server_id: str, outside_venv: Path, tmp_path: Path
) -> None:
    command = _command(server_id)
    root, home = _project(tmp_path)
    # the project's .venv: a real venv with the package
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / ".venv")], check=True)
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    site = root / ".venv" / "lib" / version / "site-packages"
    (site / PACKAGE).mkdir(parents=True)
    (site / PACKAGE / "__init__.py").write_text("def hello() -> int:\n    return 1\n")
    env = python_env.detect(root, executable="/nonexistent/python")
    assert env is not None and env.source == "project"
    handed = python_env.apply(_spec(server_id), env, root=root)
    assert not _unresolved(_run(handed, command, root, home))
