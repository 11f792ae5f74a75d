"""ipylsp on a real JupyterHub (issue 22, measured): what the hub's proxy adds to a check, a
user's server's resident memory with ipylsp after the home-directory checks, and how long the
hub takes to stop it.

Run (as root, after ``scripts/bootstrap``; not beside tests/test_jupyterhub.py, which uses the
same users): ``.venv/bin/python benchmarks/bench_hub.py [--n 30] [--stops 3]``. Prints one JSON
object (also ``benchmarks/results/bench_hub.json``).

The hub is tests/hub.py's (its LocalProcessSpawner, configurable-http-proxy, two system users
in their emptied homes). Alice's server has ipylsp's extension; Bob's has it disabled
(``ServerApp.jpserver_extensions``): the reference.

- ``proxy``: ``POST ipylsp/api/check`` of a file in Alice's home (the home-directory check),
  through the hub's proxy and directly on her server (the target the hub gave the proxy), with
  her token, one keep-alive connection each. Each round writes the same new text (a broken and
  a fixed version in turn) to two files, one per path, and times the two checks in alternating
  order; every answer's error count is checked. ``proxy - direct`` is what the proxy adds.
- ``memory``: after the home-directory checks (Alice: the route's check, an MCP ``lsp_check``,
  a kernel started at her home that loaded ipylsp and wrote a broken file (its report checked);
  Bob: the same kernel cells without ipylsp), VmRSS of the server process alone, its language
  servers, its kernel, the kernel's language servers, and the whole tree.
- ``stop``: ``--stops`` times, each on freshly spawned servers after the same use, the hub's
  stop (``DELETE .../server``, SIGINT): DELETE sent -> the server process exited (a pidfd),
  and the hub's answer. The hub notices an exit only at its next poll, so its answer comes
  later than the exit.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import _common as c
from bench_server_ext import BROKEN, FIXED, errors_in

from ipylsp.lsp.procfs import descendants, wait_exited
from tests.hub import USERS, Hub, RemoteKernel, empty_home, home, require_hub, write_as
from tests.test_server_mcp_http import _session

ALICE, BOB = USERS
WITHOUT_IPYLSP = (
    "def _without_ipylsp(spawner):\n"
    f"    if spawner.user.name == {BOB!r}:\n"
    "        spawner.args = [*spawner.args,\n"
    "                        '--ServerApp.jpserver_extensions={\"ipylsp.server\": False}']\n"
    "c.Spawner.pre_spawn_hook = _without_ipylsp\n"
)


def connection(url: str) -> tuple[http.client.HTTPConnection, str]:
    parts = urlsplit(url)
    return http.client.HTTPConnection(parts.hostname, parts.port, timeout=60), parts.path


def check(conn: http.client.HTTPConnection, prefix: str, token: str, path: str) -> int:
    conn.request("POST", f"{prefix}ipylsp/api/check", body=json.dumps({"path": path}),
                 headers={"Authorization": f"token {token}"})
    answer = conn.getresponse()
    body = json.loads(answer.read())
    assert answer.status == 200, body
    return errors_in(body)


def rss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def name_of(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return ""
    return " ".join(Path(part.decode()).name for part in raw[:3] if part)


def memory(server: int, kernel: RemoteKernel) -> dict[str, float]:
    """VmRSS in MB: the server process, its language servers, its kernel, the kernel's."""
    kernel_pid = kernel.pid(server)
    below_kernel = set(descendants(kernel_pid))
    parts = {"server": [server], "server_language_servers": [], "kernel": [kernel_pid],
             "kernel_language_servers": []}
    for pid in descendants(server):
        if pid == kernel_pid:
            continue
        servers = "kernel_language_servers" if pid in below_kernel else "server_language_servers"
        if name_of(pid).split()[0] in ("ty", "ruff"):
            parts[servers].append(pid)
    mb = {key: round(sum(rss_kb(p) for p in pids) / 1024, 1) for key, pids in parts.items()}
    mb["tree"] = round(sum(rss_kb(p) for p in [server, *descendants(server)]) / 1024, 1)
    return mb


def use(hub: Hub, name: str, token: str, round_: int) -> RemoteKernel:
    """The home-directory checks (Alice's with ipylsp); the kernel left running. A new file
    each round: the store remembers the last round's text, which would introduce nothing."""
    url = hub.server_url(name)
    if name == ALICE:
        write_as(name, home(name) / "app.py", BROKEN)
        conn, prefix = connection(url)
        assert check(conn, prefix, token, "app.py") == 1
        conn.close()
        names, checked, _ = asyncio.run(
            _session(f"{url}ipylsp/mcp", {"Authorization": f"token {token}"})
        )
        assert "lsp_check" in names and not checked[0], checked
    kernel = RemoteKernel(url, token)
    if name == ALICE:
        assert kernel.run("%load_ext ipylsp").outputs == []
    cell = kernel.run(f"%%writefile bad{round_}.py\n" + BROKEN)
    shown = [o["data"].get("text/plain", "") for o in cell.outputs if "data" in o]
    assert (name == ALICE) == any("totl" in text for text in shown), cell.outputs
    kernel.run("total = sum([1, 2])")
    kernel.ws.close()
    return kernel


def timed_stop(hub: Hub, name: str) -> dict[str, float]:
    pid = hub.server_pid(name)
    exited: list[float] = []

    def wait() -> None:
        if not wait_exited([pid], 120):
            exited.append(time.perf_counter())

    began = time.perf_counter()
    watcher = threading.Thread(target=wait)
    watcher.start()
    hub.stop_server(name)
    answered = time.perf_counter()
    watcher.join()
    assert exited, f"{name}'s server did not exit"
    return {"exit_ms": c.ms(exited[0] - began), "api_ms": c.ms(answered - began)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=30)
    parser.add_argument("--stops", type=int, default=3)
    args = parser.parse_args()
    require_hub()
    result: dict[str, Any] = {"machine": c.machine(), "n": args.n, "stops": args.stops}
    stops: dict[str, list[dict[str, float]]] = {ALICE: [], BOB: []}
    with c.Isolation() as iso:
        for name in USERS:
            empty_home(name)
        (iso.base / "hub").mkdir()
        environment = {c.MARKER_VAR: iso.marker}
        with Hub(iso.base / "hub", environment, extra_config=WITHOUT_IPYLSP) as hub:
            tokens = {name: hub.token(name) for name in USERS}
            for round_ in range(args.stops):
                hub.spawn(*USERS)
                kernels = {name: use(hub, name, tokens[name], round_) for name in USERS}
                if round_ == 0:
                    result["memory_mb"] = {
                        name: memory(hub.server_pid(name), kernels[name]) for name in USERS
                    }
                    result["proxy"] = proxy(hub, tokens[ALICE], args.n)
                for name in USERS:
                    stops[name].append(timed_stop(hub, name))
                    c.log(f"stop {name}: {stops[name][-1]}")
        result["hub_log_tail"] = hub.log(1500).splitlines()[-8:]
        result["leftover_processes"] = iso.leftovers()
    result["hub_stop_ms"] = {
        name: {key: c.median([s[key] for s in values]) for key in ("exit_ms", "api_ms")}
        for name, values in stops.items()
    }
    result["memory_mb"]["with_minus_without"] = {
        key: round(result["memory_mb"][ALICE][key] - result["memory_mb"][BOB][key], 1)
        for key in result["memory_mb"][ALICE]
    }
    c.emit("bench_hub", result)
    return 1 if result["leftover_processes"] else 0


def proxy(hub: Hub, token: str, n: int) -> dict[str, Any]:
    """Alternating checks through the proxy and directly, on two files with the same text."""
    paths = {"proxy": hub.server_url(ALICE), "direct": hub.direct_url(ALICE)}
    files = {"proxy": "through_proxy.py", "direct": "direct.py"}
    conns = {side: connection(url) for side, url in paths.items()}
    times: dict[str, list[float]] = {side: [] for side in paths}
    for i in range(-4, n):  # four rounds of warm-up: servers, baselines, the hub's token cache
        text = BROKEN if i % 2 == 0 else FIXED
        for file in files.values():
            write_as(ALICE, home(ALICE) / file, text)
        order = list(paths) if i % 2 == 0 else list(paths)[::-1]
        for side in order:
            conn, prefix = conns[side]
            began = time.perf_counter()
            found = check(conn, prefix, token, files[side])
            took = time.perf_counter() - began
            assert found == (1 if text is BROKEN else 0), (side, found)
            if i >= 0:
                times[side].append(took)
    for conn, _ in conns.values():
        conn.close()
    medians = {side: c.median([c.ms(t) for t in values]) for side, values in times.items()}
    return {"median_ms": medians,
            "proxy_adds_ms": c.difference(medians["proxy"], medians["direct"]),
            "ratio": c.ratio(medians["proxy"], medians["direct"])}


if __name__ == "__main__":
    raise SystemExit(main())
