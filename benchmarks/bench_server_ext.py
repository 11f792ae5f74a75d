"""What a route of the Jupyter server extension adds to a check (issue 12).

Run: ``.venv/bin/python benchmarks/bench_server_ext.py [--n 30]``. Prints one JSON object (also
``benchmarks/results/bench_server_ext.json``).

A real ``jupyter server`` (subprocess, token auth, ipylsp's extension enabled, warm ty + ruff)
on one workspace, and in this process a ``Service`` with the same settings on a copy of it.
Each round writes the same new text (alternating a broken and a fixed version) to both files,
then times, interleaved in rotating order:

- ``route``: ``POST {base}/ipylsp/api/check`` over one keep-alive HTTP connection, answer read
  and parsed (what the browser or an HTTP agent pays);
- ``toolbox``: ``Toolbox.call("lsp_check")`` in process (the route's own work without HTTP);
- ``service``: ``Service.check`` in process (the check alone), on a third file.

Every answer is checked against the expected error count, so a fast wrong answer shows. The
overheads are the medians' differences: route - toolbox (HTTP, auth, the worker thread) and
route - service (everything the route adds).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as c

from ipylsp.agent import Toolbox
from ipylsp.model.settings import Settings
from ipylsp.service.check.file_reports import error_count

BROKEN = "def total(xs: list[int]) -> int:\n    return sum(xs)\n\nprint(totl)\n"
FIXED = "def total(xs: list[int]) -> int:\n    return sum(xs)\n\nprint(total([1]))\n"
TOKEN = "ipylsp-bench-token"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(root: Path, data_dir: Path, port: int, base: Path) -> subprocess.Popen[bytes]:
    config = base / "jupyter_server_config.py"
    config.write_text(
        "c.IPyLSP.language_servers = {'python': ['ty', 'ruff']}\n"
        f"c.IPyLSP.data_dir = {str(data_dir)!r}\n"
    )
    command = [
        str(Path(sys.executable).parent / "jupyter-server"), "--no-browser",
        f"--config={config}", f"--ServerApp.port={port}", "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.root_dir={root}", f"--IdentityProvider.token={TOKEN}",
        "--ServerApp.allow_root=True", "--ServerApp.port_retries=0",
    ]
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(base / "jupyter-config")}
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)


def request(conn: http.client.HTTPConnection, method: str, url: str, body: object = None
            ) -> tuple[int, Any]:
    payload = None if body is None else json.dumps(body)
    conn.request(method, url, body=payload, headers={"Authorization": f"token {TOKEN}"})
    response = conn.getresponse()
    return response.status, json.loads(response.read() or b"null")


def wait_ready(port: int, server: subprocess.Popen[bytes], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"jupyter server exited: {server.stderr.read().decode()[-2000:]}"
                             if server.stderr else "jupyter server exited")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            if request(conn, "GET", "/ipylsp/api/status")[0] == 200:
                conn.close()
                return
        except OSError:
            pass
        time.sleep(0.1)  # polling a starting process: there is nothing to wait on
    raise SystemExit("jupyter server did not answer within 60 s")


def errors_in(data: Any) -> int:
    """Errors, one per problem (a diagnostic that repeats another has `same_as`)."""
    return sum(1 for f in data["files"] for d in f["diagnostics"]
               if d["severity"] == "error" and "same_as" not in d)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=30)
    args = parser.parse_args()
    result: dict[str, Any] = {"machine": c.machine(), "n": args.n}
    with c.Isolation() as iso:
        served = iso.workspace({"app.py": FIXED}, "served")
        local = iso.workspace({"tool.py": FIXED, "plain.py": FIXED}, "local")
        port = free_port()
        server = start_server(served, iso.data_dir, port, iso.base)
        settings = Settings(language_servers={"python": ("ty", "ruff")}, data_dir=iso.data_dir)
        try:
            wait_ready(port, server)
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            with c.closing_service(settings) as service:
                box = Toolbox(service, local)
                times: dict[str, list[float]] = {"route": [], "toolbox": [], "service": []}

                def route() -> int:
                    code, body = request(conn, "POST", "/ipylsp/api/check", {"path": "app.py"})
                    assert code == 200, body
                    return errors_in(body)

                def toolbox() -> int:
                    answer = box.call("lsp_check", {"path": "tool.py"})
                    assert answer.ok, answer.text
                    return errors_in(answer.data)

                def in_service() -> int:
                    return error_count(service.check(local / "plain.py"))

                cases = {"route": route, "toolbox": toolbox, "service": in_service}
                for warm in range(4):  # servers started, baselines known, lsprotocol loaded
                    text = BROKEN if warm % 2 == 0 else FIXED
                    for path in (served / "app.py", local / "tool.py", local / "plain.py"):
                        path.write_text(text)
                    route(), toolbox(), in_service()
                for i in range(args.n):
                    text = BROKEN if i % 2 == 0 else FIXED
                    expected = 1 if text is BROKEN else 0
                    order = list(cases)[i % 3:] + list(cases)[: i % 3]
                    for path in (served / "app.py", local / "tool.py", local / "plain.py"):
                        path.write_text(text)
                    for name in order:
                        start = time.perf_counter()
                        found = cases[name]()
                        times[name].append(time.perf_counter() - start)
                        assert found == expected, (name, found, expected)
                conn.close()
        finally:
            server.terminate()
            try:
                server.wait(15)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
        medians = {name: c.median([c.ms(t) for t in values]) for name, values in times.items()}
        result["median_ms"] = medians
        result["route_overhead_ms"] = {
            "vs_toolbox": round(medians["route"] - medians["toolbox"], 2),  # type: ignore[operator]
            "vs_service": round(medians["route"] - medians["service"], 2),  # type: ignore[operator]
        }
        result["ratio_route_to_service"] = c.ratio(medians["route"], medians["service"])
        result["leftover_processes"] = iso.leftovers()
    c.emit("bench_server_ext", result)
    return 1 if result["leftover_processes"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
