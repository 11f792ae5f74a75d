"""A real JupyterHub where admins run one, for tests/test_jupyterhub.py and benchmarks/bench_hub.py.

The hub (the latest JupyterHub from PyPI) runs as root, its proxy is configurable-http-proxy
from npm, its spawner the LocalProcessSpawner: each user's single-user server runs as that
system user, in their home directory, from the users' environment. A hub service holds an
admin token for the hub's REST API (spawn, stop, issue a user's token, a server's pid); users
reach their servers through the proxy with their own API tokens, as an admin would set it up.

What it needs, made by `scripts/bootstrap` (`require_hub` fails naming it, never skips):

- root (the spawner becomes each user; CI runs as root);
- the system users `USERS` (`useradd`), whose homes the tests empty before each run;
- `HUB_VENV`, the users' environment, outside the checkout (which they may not reach: a clone
  below a 0700 directory): ipylsp's dependencies (`requirements`), jupyter_server and
  jupyterhub, from an interpreter they can run (the repo's `.venv` may not be: pyenv's
  interpreters live below root's 0700 home); `require_hub` copies this checkout's ipylsp into
  it (`sync_source`), so the users' servers run the code under test;
- configurable-http-proxy in `.cache/configurable-http-proxy` (npm, Debian's node).

`RemoteKernel` runs cells on a kernel of a user's server through the proxy, with Jupyter's REST
API and kernel websocket, and gives them back as `Cell`s (what nbclient gives the other tests).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import pwd
import shutil
import socket
import subprocess
import time
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ipylsp.lsp.procfs import descendants

if TYPE_CHECKING:
    from tests.test_ipython_kernel import Cell

REPO = Path(__file__).resolve().parent.parent
HUB_VENV = Path("/opt/ipylsp-test-hub/venv")
PROXY = REPO / ".cache" / "configurable-http-proxy" / "node_modules" / ".bin" / \
    "configurable-http-proxy"
USERS = ("ipylsp-hub-a", "ipylsp-hub-b")
"""The two system users `scripts/bootstrap` makes."""

BOOTSTRAP = "run scripts/bootstrap (as root: it makes them)"


def _fail(message: str) -> None:
    raise AssertionError(f"{message}: {BOOTSTRAP}")


def require_hub() -> None:
    """Everything `Hub` needs is there, and each user can run their environment; fails loudly
    with the fix otherwise."""
    if os.geteuid() != 0:
        raise AssertionError("a JupyterHub with system users needs root (CI runs as root)")
    for tool in ("jupyterhub", "jupyterhub-singleuser"):
        if not (HUB_VENV / "bin" / tool).exists():
            _fail(f"no {tool} in {HUB_VENV}, the hub users' environment")
    if not PROXY.exists():
        _fail(f"configurable-http-proxy is not installed at {PROXY}")
    sync_source()
    for name in USERS:
        try:
            pwd.getpwnam(name)
        except KeyError:
            _fail(f"the system user {name} does not exist")
        ran = as_user(name, "import ipylsp, jupyter_server, jupyterhub.singleuser, mcp, ty, ruff")
        if ran.returncode != 0:
            raise AssertionError(
                f"{name} cannot run {HUB_VENV}/bin/python with ipylsp: {ran.stderr[-600:]}; "
                f"{HUB_VENV} and every directory above it must be readable and searchable by "
                "other users (chmod -R a+rX), then run scripts/bootstrap"
            )


def requirements() -> list[str]:
    """What the users' environment installs: ipylsp's dependencies with its python, ipython
    and mcp extras (from pyproject.toml), jupyter_server and jupyterhub."""
    try:
        import tomllib
    except ImportError:  # Python 3.10: pytest's
        import tomli as tomllib
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    wanted = [*project["dependencies"], *extras["python"], *extras["ipython"], *extras["mcp"]]
    return [*(r for r in wanted if not r.startswith("ipylsp")), "jupyter_server", "jupyterhub"]


def sync_source() -> None:
    """This checkout's ipylsp copied into the users' environment (they may not reach the
    checkout), with the configuration file that enables its server extension, compiled there
    (they cannot write it) and readable by all."""
    (site,) = HUB_VENV.glob("lib/python3*/site-packages")
    target = site / "ipylsp"
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(REPO / "ipylsp", target, copy_function=shutil.copyfile,
                    ignore=shutil.ignore_patterns("__pycache__", "labextension"))
    enabled = HUB_VENV / "etc" / "jupyter" / "jupyter_server_config.d"
    enabled.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(REPO / "jupyter-config" / "jupyter_server_config.d" / "ipylsp.json",
                    enabled / "ipylsp.json")
    subprocess.run([str(HUB_VENV / "bin" / "python"), "-m", "compileall", "-q", str(target)],
                   check=True, capture_output=True)
    for top in (target, enabled):
        for directory, _, files in os.walk(top):
            os.chmod(directory, 0o755)
            for name in files:
                os.chmod(os.path.join(directory, name), 0o644)


def as_user(name: str, code: str) -> subprocess.CompletedProcess[str]:
    """Python `code` run by the hub users' interpreter as the system user `name`."""
    entry = pwd.getpwnam(name)
    return subprocess.run(
        [str(HUB_VENV / "bin" / "python"), "-c", code], user=entry.pw_uid, group=entry.pw_gid,
        extra_groups=[], env={"PATH": "/usr/bin:/bin", "HOME": entry.pw_dir}, cwd="/",
        capture_output=True, text=True, check=False,
    )


def home(name: str) -> Path:
    return Path(pwd.getpwnam(name).pw_dir)


def empty_home(name: str) -> Path:
    """The user's home, emptied (a test user's: what an earlier run left is gone)."""
    entry = pwd.getpwnam(name)
    directory = Path(entry.pw_dir)
    assert directory.is_dir() and directory.stat().st_uid == entry.pw_uid, (
        f"{name}'s home {directory} is missing or not theirs: {BOOTSTRAP}")
    for child in directory.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()
    return directory


def write_as(name: str, path: Path, text: str) -> Path:
    """`text` written to `path` (in `name`'s home), owned by `name`."""
    entry = pwd.getpwnam(name)
    path.write_text(text)
    os.chown(path, entry.pw_uid, entry.pw_gid)
    return path


def processes_of(name: str) -> list[int]:
    """Live processes running as the system user `name`."""
    uid = pwd.getpwnam(name).pw_uid
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                if os.stat(f"/proc/{entry}").st_uid == uid:
                    found.append(int(entry))
    return found


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def call(url: str, method: str = "GET", token: str | None = None, body: object = None,
         headers: Mapping[str, str] | None = None, timeout: float = 60) -> tuple[int, Any]:
    """One HTTP request: (status, the JSON answer or the text)."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)
    sent = dict(headers or {})
    if token is not None:
        sent["Authorization"] = f"token {token}"
    try:
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        conn.request(method, path, body=None if body is None else json.dumps(body), headers=sent)
        answer = conn.getresponse()
        raw = answer.read()
        try:
            return answer.status, json.loads(raw) if raw else None
        except ValueError:
            return answer.status, raw.decode(errors="replace")
    finally:
        conn.close()


def wait_answering(process: subprocess.Popen[bytes], probe: Callable[[], bool], what: str,
                   timeout: float = 60) -> None:
    """Until `probe()` is true of a starting `process` (connection errors count as not yet);
    fails saying `what` when the process exits or the time is up."""
    deadline = time.monotonic() + timeout
    while True:
        assert process.poll() is None, f"{what} exited with {process.returncode}"
        with contextlib.suppress(OSError):
            if probe():
                return
        if time.monotonic() > deadline:
            process.kill()
            raise AssertionError(f"{what} did not answer in {timeout} s")
        time.sleep(0.1)  # polling a starting process: nothing to wait on instead


class Hub:
    """A running JupyterHub (a context manager); its files and log in `base` (root's)."""

    def __init__(self, base: Path, environment: Mapping[str, str],
                 interrupt_timeout: int = 60, extra_config: str = "") -> None:
        """`environment`: every server's (and so its kernels'); `extra_config`: Python
        appended to the hub's configuration file."""
        self.base = base
        self.port, self.hub_port, self.proxy_api_port = free_port(), free_port(), free_port()
        self.service_token = uuid.uuid4().hex
        self.proxy_token = uuid.uuid4().hex
        self.log_path = base / "hub.log"
        config = {
            "JupyterHub.ip": "127.0.0.1", "JupyterHub.port": self.port,
            "JupyterHub.hub_ip": "127.0.0.1", "JupyterHub.hub_port": self.hub_port,
            "JupyterHub.db_url": f"sqlite:///{base / 'jupyterhub.sqlite'}",
            "JupyterHub.cookie_secret_file": str(base / "cookie_secret"),
            "JupyterHub.pid_file": str(base / "jupyterhub.pid"),
            "JupyterHub.authenticator_class": "dummy",
            "JupyterHub.spawner_class": "localprocess",
            "JupyterHub.slow_spawn_timeout": 0,  # a spawn answers 202 at once: spawn in parallel
            "JupyterHub.services": [{"name": "ipylsp-test", "api_token": self.service_token}],
            "JupyterHub.load_roles": [{
                "name": "ipylsp-test", "services": ["ipylsp-test"],
                "scopes": ["admin:users", "admin:servers", "admin:server_state", "tokens"],
            }],
            "Authenticator.allowed_users": set(USERS),
            "ConfigurableHTTPProxy.command": [str(PROXY)],
            "ConfigurableHTTPProxy.api_url": f"http://127.0.0.1:{self.proxy_api_port}",
            "ConfigurableHTTPProxy.auth_token": self.proxy_token,
            "Spawner.cmd": [str(HUB_VENV / "bin" / "jupyterhub-singleuser")],
            # kernels on IPC sockets in the user's runtime directory, not on TCP ports of
            # 127.0.0.1: a ZMQ client another test left reconnecting to a port it once used
            # (a heartbeat's raw `ping`) reached a new kernel there ("DELIM not in msg_list")
            "Spawner.args": ["--KernelManager.transport=ipc"],
            "Spawner.environment": dict(environment),
            "Spawner.start_timeout": 120,
            "Spawner.http_timeout": 120,
            # SIGINT is how the hub stops a server; it waits this long before SIGTERM, longer
            # than any test waits, so a server that stopped in a test stopped on SIGINT
            "LocalProcessSpawner.interrupt_timeout": interrupt_timeout,
        }
        lines = []
        for key, value in config.items():
            section, name = key.split(".")
            lines.append(f"c.{section}.{name} = {value!r}")
        (base / "jupyterhub_config.py").write_text("\n".join(lines) + "\n" + extra_config)
        self.process: subprocess.Popen[bytes] | None = None

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def log(self, tail: int = 4000) -> str:
        return self.log_path.read_text(errors="replace")[-tail:]

    def __enter__(self) -> Hub:
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                [str(HUB_VENV / "bin" / "jupyterhub"), "-f",
                 str(self.base / "jupyterhub_config.py")],
                cwd=self.base, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            )
        try:
            wait_answering(self.process, lambda: call(self.url("/hub/api"), timeout=5)[0] == 200,
                           "the hub")
        except AssertionError as failed:
            raise AssertionError(f"{failed}:\n{self.log()}") from None
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process is None:
            return
        self.process.terminate()  # the hub stops every server and its proxy
        try:
            self.process.wait(60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def api(self, method: str, path: str, body: object = None) -> tuple[int, Any]:
        """The hub's REST API as the admin service."""
        return call(self.url(f"/hub/api{path}"), method, self.service_token, body)

    def spawn(self, *names: str) -> None:
        """Start the users' servers (in parallel) and wait until each is ready."""
        for name in names:
            status, answer = self.api("POST", f"/users/{name}/server")
            assert status in (201, 202), (status, answer, self.log())
        for name in names:
            self._wait_ready(name)

    def _wait_ready(self, name: str) -> None:
        """Read the spawn's progress events until it is ready (the hub says when)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=150)
        try:
            conn.request("GET", f"/hub/api/users/{name}/server/progress",
                         headers={"Authorization": f"token {self.service_token}"})
            answer = conn.getresponse()
            assert answer.status == 200, (answer.status, answer.read(), self.log())
            for raw in answer:
                line = raw.decode().strip()
                if not line.startswith("data:"):
                    continue
                event = json.loads(line[len("data:"):])
                assert not event.get("failed"), f"{name}'s server failed: {event}\n{self.log()}"
                if event.get("ready"):
                    return
            raise AssertionError(f"{name}'s progress ended before ready:\n{self.log()}")
        finally:
            conn.close()

    def token(self, name: str) -> str:
        """A new API token of `name` (an admin issues it, as for a user's agent)."""
        status, answer = self.api("POST", f"/users/{name}/tokens", {"note": "ipylsp tests"})
        assert status == 201, (status, answer)
        token = answer["token"]
        assert isinstance(token, str)
        return token

    def server_pid(self, name: str) -> int:
        status, answer = self.api("GET", f"/users/{name}")
        assert status == 200, (status, answer)
        pid = answer["servers"][""]["state"]["pid"]
        assert isinstance(pid, int) and pid > 0, answer
        return pid

    def server_url(self, name: str) -> str:
        """The user's server through the proxy (ends with `/`)."""
        return self.url(f"/user/{name}/")

    def direct_url(self, name: str) -> str:
        """The user's server itself, past the proxy: the target the hub gave the proxy."""
        status, routes = call(f"http://127.0.0.1:{self.proxy_api_port}/api/routes",
                              token=self.proxy_token)
        assert status == 200, (status, routes)
        target = routes[f"/user/{name}"]["target"]
        assert isinstance(target, str)
        return f"{target.rstrip('/')}/user/{name}/"

    def stop_server(self, name: str) -> int:
        """Ask the hub to stop the user's server (it sends SIGINT): the API's status, 204 when
        the stop ended within the hub's slow-stop timeout, 202 when it goes on."""
        status, answer = self.api("DELETE", f"/users/{name}/server")
        assert status in (202, 204), (status, answer)
        return status


class RemoteKernel:
    """A kernel of a user's server, driven through Jupyter's REST API and the kernel websocket
    (through the hub's proxy with the user's token); cells run one at a time."""

    def __init__(self, server_url: str, token: str, path: str = "",
                 timeout: float = 120) -> None:
        import websocket

        self.server_url = server_url
        self.token = token
        self.timeout = timeout
        status, model = call(f"{server_url}api/kernels", "POST", token,
                             {"name": "python3", "path": path})
        assert status == 201, (status, model)
        self.id = model["id"]
        self.session = uuid.uuid4().hex
        ws_url = server_url.replace("http://", "ws://", 1)
        self.ws = websocket.create_connection(
            f"{ws_url}api/kernels/{self.id}/channels?session_id={self.session}",
            header=[f"Authorization: token {token}"], timeout=timeout,
        )

    def pid(self, server_pid: int) -> int:
        """The kernel's process, below the user's server."""
        for pid in descendants(server_pid):
            with contextlib.suppress(OSError):
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
                if f"kernel-{self.id}.json".encode() in cmdline:
                    return pid
        raise AssertionError(f"kernel {self.id} is not below the server {server_pid}")

    def run(self, code: str) -> Cell:
        """Run one cell; its outputs as nbformat would hold them (displays updated in place)."""
        from tests.test_ipython_kernel import Cell  # not at import: scripts/bootstrap imports this
        msg_id = uuid.uuid4().hex
        self.ws.send(json.dumps({
            "header": {"msg_id": msg_id, "msg_type": "execute_request", "username": "test",
                       "session": self.session, "version": "5.3",
                       "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())},
            "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
            "content": {"code": code, "silent": False, "store_history": True,
                        "user_expressions": {}, "allow_stdin": False, "stop_on_error": True},
        }))
        outputs: list[dict[str, Any]] = []
        messages: list[dict[str, Any]] = []
        count: int | None = None
        idle = replied = False
        while not (idle and replied):
            msg = json.loads(self.ws.recv())
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind, content = msg["msg_type"], msg["content"]
            if msg["channel"] == "shell" and kind == "execute_reply":
                replied, count = True, content.get("execution_count")
            elif kind == "status":
                idle = content["execution_state"] == "idle"
            elif kind != "execute_input":
                messages.append(msg)
                _apply(outputs, kind, content)
        return Cell(code, outputs, messages, count)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.ws.close()
        call(f"{self.server_url}api/kernels/{self.id}", "DELETE", self.token)

    def __enter__(self) -> RemoteKernel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _apply(outputs: list[dict[str, Any]], kind: str, content: dict[str, Any]) -> None:
    """One iopub message applied to a cell's outputs, as nbclient applies it."""
    display_id = content.get("transient", {}).get("display_id")
    if kind in ("display_data", "execute_result"):
        output = {"output_type": kind, "data": content["data"],
                  "metadata": content.get("metadata", {})}
        if display_id:
            output["display_id"] = display_id
        outputs.append(output)
    elif kind == "update_display_data":
        for output in outputs:
            if display_id and output.get("display_id") == display_id:
                output["data"], output["metadata"] = content["data"], content.get("metadata", {})
    elif kind == "stream":
        if outputs and outputs[-1]["output_type"] == "stream" \
                and outputs[-1]["name"] == content["name"]:
            outputs[-1]["text"] += content["text"]
        else:
            outputs.append({"output_type": "stream", "name": content["name"],
                            "text": content["text"]})
    elif kind == "error":
        outputs.append({"output_type": "error", "ename": content["ename"],
                        "evalue": content["evalue"], "traceback": content["traceback"]})
    elif kind == "clear_output":
        outputs.clear()
