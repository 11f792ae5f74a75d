"""Tests of the fake language server fixture (tests/fixtures/fake_server.py).

Each test drives the server with a tiny raw framing client; every wait is on the server's output
(or its exit), bounded by a timeout that only matters when something is broken.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.real

SERVER = Path(__file__).parent / "fixtures" / "fake_server.py"
TIMEOUT = 10.0
URI = "file:///tmp/fake-workspace/a.py"

Msg = dict[str, Any]


class Peer:
    """A fake server process plus a minimal LSP client over its stdio."""

    def __init__(self, *flags: str, stderr: int = subprocess.DEVNULL) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(SERVER), *flags],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            start_new_session=True,
        )
        self.buf = bytearray()
        self.eof = False
        self.cond = threading.Condition()
        self.pos = 0  # parse position in buf
        self.inbox: list[Msg] = []  # received, not yet consumed by recv()
        self.headers: list[bytes] = []  # raw header block of every parsed frame
        self.body_sizes: list[int] = []
        self.next_id = 0
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while True:
            try:
                data = os.read(fd, 1 << 16)
            except OSError:
                data = b""
            with self.cond:
                if not data:
                    self.eof = True
                else:
                    self.buf += data
                self.cond.notify_all()
            if not data:
                return

    # -- raw bytes

    def wait_raw(self, pred: Callable[[bytes], bool], timeout: float = TIMEOUT) -> bytes:
        with self.cond:
            ok = self.cond.wait_for(lambda: pred(bytes(self.buf)) or self.eof, timeout)
            data = bytes(self.buf)
        assert ok and pred(data), f"raw output never matched; got {data[:300]!r}"
        return data

    def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def close_stdin(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()

    # -- frames

    def _parse_one(self) -> Msg | None:
        """Parse one frame at self.pos (cond held); None if incomplete."""
        end = self.buf.find(b"\r\n\r\n", self.pos)
        if end < 0:
            return None
        header = bytes(self.buf[self.pos : end])
        length = None
        for line in header.split(b"\r\n"):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        assert length is not None, f"no Content-Length in {header[:200]!r}"
        if len(self.buf) < end + 4 + length:
            return None
        body = bytes(self.buf[end + 4 : end + 4 + length])
        self.pos = end + 4 + length
        self.headers.append(header)
        self.body_sizes.append(length)
        try:
            msg: Msg = json.loads(body)
        except ValueError:
            msg = {"__invalid__": body}
        return msg

    def next_message(self, timeout: float = TIMEOUT) -> Msg:
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                msg = self._parse_one()
                if msg is not None:
                    return msg
                if self.eof:
                    raise EOFError(f"server closed stdout; exit={self.proc.poll()}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError("no message from the fake server")
                self.cond.wait(left)

    def recv(self, pred: Callable[[Msg], bool], timeout: float = TIMEOUT) -> Msg:
        """The first unconsumed message matching pred; others stay in the inbox."""
        for i, m in enumerate(self.inbox):
            if pred(m):
                return self.inbox.pop(i)
        deadline = time.monotonic() + timeout
        while True:
            m = self.next_message(max(0.0, deadline - time.monotonic()))
            if pred(m):
                return m
            self.inbox.append(m)

    def send(self, msg: Msg) -> None:
        body = json.dumps({"jsonrpc": "2.0", **msg}, ensure_ascii=False).encode()
        self.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def notify(self, method: str, params: Any = None) -> None:
        self.send(
            {"method": method, "params": params} if params is not None else {"method": method}
        )

    def request(self, method: str, params: Any = None) -> int:
        self.next_id += 1
        msg: Msg = {"id": self.next_id, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        return self.next_id

    def response(self, id_: int, timeout: float = TIMEOUT) -> Msg:
        return self.recv(lambda m: m.get("id") == id_ and "method" not in m, timeout)

    def call(self, method: str, params: Any = None) -> Msg:
        return self.response(self.request(method, params))

    def notification(self, method: str, timeout: float = TIMEOUT) -> Msg:
        return self.recv(lambda m: m.get("method") == method and "id" not in m, timeout)

    def server_request(self, method: str) -> Msg:
        return self.recv(lambda m: m.get("method") == method and "id" in m)

    # -- LSP conveniences

    def initialize(
        self, encodings: list[str] | None = None, pull: bool = True, **extra: Any
    ) -> Msg:
        caps: Msg = {
            "textDocument": {"publishDiagnostics": {"versionSupport": True}},
            "window": {"workDoneProgress": True},
        }
        if pull:
            caps["textDocument"]["diagnostic"] = {"dynamicRegistration": True}
        if encodings is not None:
            caps["general"] = {"positionEncodings": encodings}
        resp = self.call(
            "initialize", {"processId": os.getpid(), "rootUri": None, "capabilities": caps, **extra}
        )
        assert "result" in resp, resp
        self.notify("initialized", {})
        return resp["result"]

    def open(self, text: str, version: int = 1, uri: str = URI) -> None:
        self.notify(
            "textDocument/didOpen",
            {
                "textDocument": {
                    "uri": uri,
                    "languageId": "python",
                    "version": version,
                    "text": text,
                }
            },
        )

    def change(self, text: str, version: int, uri: str = URI) -> None:
        self.notify(
            "textDocument/didChange",
            {"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": text}]},
        )

    def pull(self, **extra: Any) -> Msg:
        return self.call("textDocument/diagnostic", {"textDocument": {"uri": URI}, **extra})

    def shutdown_and_exit(self) -> int:
        assert self.call("shutdown")["result"] is None
        self.notify("exit")
        return self.proc.wait(TIMEOUT)

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(TIMEOUT)
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if f is not None:
                with contextlib.suppress(OSError):
                    f.close()
        self.reader.join(TIMEOUT)


@pytest.fixture
def spawn() -> Iterator[Callable[..., Peer]]:
    peers: list[Peer] = []

    def _spawn(*flags: str, **kw: Any) -> Peer:
        peer = Peer(*flags, **kw)
        peers.append(peer)
        return peer

    try:
        yield _spawn
    finally:
        for peer in peers:
            peer.kill()


def records(path: Path) -> list[Msg]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def diag_summary(diags: list[Msg]) -> list[tuple[Any, ...]]:
    return [
        (
            d["severity"],
            d["code"],
            d["message"],
            d["range"]["start"]["line"],
            d["range"]["start"]["character"],
            d["range"]["end"]["character"],
        )
        for d in diags
    ]


def messages(diags: list[Msg]) -> list[str]:
    return [d["message"] for d in diags]


def pid_alive(pid: int) -> bool:
    """pid exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] not in "ZX"


def pid_gone(pid: int, timeout: float = TIMEOUT) -> bool:
    """True once pid is gone or a zombie (we are not its parent, so we can only poll)."""
    deadline = time.monotonic() + timeout
    while pid_alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


# ---------------------------------------------------------------- lifecycle


def test_initialize_capabilities_and_clean_exit(spawn: Callable[..., Peer]) -> None:
    p = spawn()
    result = p.initialize()
    caps = result["capabilities"]
    assert caps["textDocumentSync"] == {
        "openClose": True,
        "change": 1,
        "save": {"includeText": False},
    }
    assert caps["positionEncoding"] == "utf-16"
    assert "diagnosticProvider" not in caps
    assert result["serverInfo"]["name"] == "fake-server"
    assert p.shutdown_and_exit() == 0


def test_exit_without_shutdown_is_code_1(spawn: Callable[..., Peer]) -> None:
    p = spawn()
    p.initialize()
    p.notify("exit")
    assert p.proc.wait(TIMEOUT) == 1


def test_eof_exits_cleanly(spawn: Callable[..., Peer]) -> None:
    p = spawn()
    p.initialize()
    p.close_stdin()
    assert p.proc.wait(TIMEOUT) == 0


def test_requests_before_initialize_and_after_shutdown(spawn: Callable[..., Peer]) -> None:
    p = spawn("--diagnostics", "pull")
    assert p.pull()["error"]["code"] == -32002
    p.initialize()
    assert p.call("workspace/symbol", {"query": ""})["error"]["code"] == -32601
    assert p.call("shutdown")["result"] is None
    assert p.pull()["error"]["code"] == -32600


def test_help_lists_every_flag() -> None:
    out = subprocess.run(
        [sys.executable, str(SERVER), "--help"],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=True,
    ).stdout
    doc = SERVER.read_text()
    for flag in (
        "--encoding",
        "--diagnostics",
        "--versionless-push",
        "--push-delay-ms",
        "--stale-push",
        "--disk-push-first-ms",
        "--stale-pull",
        "--content-modified",
        "--server-cancelled",
        "--hang-initialize",
        "--hang-on",
        "--ignore-exit",
        "--ignore-sigterm",
        "--crash-on",
        "--crash-after-n-messages",
        "--garbage-on-start",
        "--garbage-on",
        "--oversized-on",
        "--invalid-json-on",
        "--header-flood",
        "--server-requests",
        "--refresh-after-change",
        "--record",
        "--spawn-child",
        "--slow-initialize-ms",
        "--log-stderr",
        "--big-diagnostics",
        "--huge-message-bytes",
    ):
        assert flag in out
        assert f"  {flag}" in doc  # documented in the module docstring too


# ---------------------------------------------------------------- push diagnostics


def test_push_with_version_after_open_change_save_close(spawn: Callable[..., Peer]) -> None:
    p = spawn()
    p.initialize()
    p.open("x = 1\ny = 2  # ERROR:bad thing\n  WARN:careful\n")
    push = p.notification("textDocument/publishDiagnostics")["params"]
    assert push["uri"] == URI
    assert push["version"] == 1
    assert diag_summary(push["diagnostics"]) == [
        (1, "E1", "bad thing", 1, 9, 24),
        (2, "W1", "careful", 2, 2, 14),
    ]
    assert {d["source"] for d in push["diagnostics"]} == {"fake"}
    p.change("clean\nERROR:next\n", 2)
    push = p.notification("textDocument/publishDiagnostics")["params"]
    assert push["version"] == 2
    assert diag_summary(push["diagnostics"]) == [(1, "E1", "next", 1, 0, 10)]
    p.notify("textDocument/didSave", {"textDocument": {"uri": URI}})
    push = p.notification("textDocument/publishDiagnostics")["params"]
    assert push["version"] == 2 and messages(push["diagnostics"]) == ["next"]
    p.notify("textDocument/didClose", {"textDocument": {"uri": URI}})
    push = p.notification("textDocument/publishDiagnostics")["params"]
    assert push["diagnostics"] == [] and "version" not in push
    assert p.shutdown_and_exit() == 0


def test_marker_rules(spawn: Callable[..., Peer]) -> None:
    p = spawn()
    p.initialize()
    # CRLF line ends; "ERROR: x" (space after the colon) is not a marker
    p.open("a\r\nb ERROR:z  \r\nERROR: nope\rWARN:w")
    diags = p.notification("textDocument/publishDiagnostics")["params"]["diagnostics"]
    assert diag_summary(diags) == [(1, "E1", "z  ", 1, 2, 11), (2, "W1", "w", 3, 0, 6)]


def test_versionless_push(spawn: Callable[..., Peer]) -> None:
    p = spawn("--versionless-push")
    p.initialize()
    p.open("ERROR:a")
    push = p.notification("textDocument/publishDiagnostics")["params"]
    assert "version" not in push and messages(push["diagnostics"]) == ["a"]


def test_stale_push_sends_old_version_first(spawn: Callable[..., Peer]) -> None:
    p = spawn("--stale-push")
    p.initialize()
    p.open("ERROR:old")
    assert p.notification("textDocument/publishDiagnostics")["params"]["version"] == 1
    p.change("ERROR:new", 2)
    first = p.notification("textDocument/publishDiagnostics")["params"]
    second = p.notification("textDocument/publishDiagnostics")["params"]
    assert (first["version"], messages(first["diagnostics"])) == (1, ["old"])
    assert (second["version"], messages(second["diagnostics"])) == (2, ["new"])


def test_push_delay_lets_a_later_response_overtake(spawn: Callable[..., Peer]) -> None:
    p = spawn("--push-delay-ms", "300")
    p.initialize()
    p.open("ERROR:late")
    hover_id = p.request(
        "textDocument/hover",
        {"textDocument": {"uri": URI}, "position": {"line": 0, "character": 0}},
    )
    assert p.next_message().get("id") == hover_id  # the push comes after the later answer
    push = p.next_message()
    assert push["method"] == "textDocument/publishDiagnostics"
    assert push["params"]["version"] == 1


def test_push_fallback_when_client_has_no_pull(spawn: Callable[..., Peer]) -> None:
    p = spawn("--diagnostics", "dynamic-pull", "--push-fallback")
    caps = p.initialize(pull=False)["capabilities"]
    assert "diagnosticProvider" not in caps
    p.open("ERROR:pushed")
    # no registration was sent before the push (on_initialized runs before didOpen)
    first = p.next_message()
    assert first["method"] == "textDocument/publishDiagnostics"
    assert p.pull()["error"]["code"] == -32601


# ---------------------------------------------------------------- pull diagnostics


def test_static_pull(spawn: Callable[..., Peer]) -> None:
    p = spawn("--diagnostics", "pull", "--pull-unchanged")
    caps = p.initialize()["capabilities"]
    assert caps["diagnosticProvider"]["identifier"] == "fake"
    p.open("ok\nERROR:pulled\n", version=7)
    result = p.pull()["result"]
    assert result["kind"] == "full" and result["resultId"] == "v7"
    assert diag_summary(result["items"]) == [(1, "E1", "pulled", 1, 0, 12)]
    assert p.pull(previousResultId="v7")["result"] == {"kind": "unchanged", "resultId": "v7"}
    hover_id = p.request(
        "textDocument/hover",
        {"textDocument": {"uri": URI}, "position": {"line": 0, "character": 0}},
    )
    p.response(hover_id)
    assert not any(m.get("method") == "textDocument/publishDiagnostics" for m in p.inbox)


def test_both_pushes_and_pulls(spawn: Callable[..., Peer]) -> None:
    p = spawn("--diagnostics", "both")
    assert "diagnosticProvider" in p.initialize()["capabilities"]
    p.open("ERROR:x")
    assert p.notification("textDocument/publishDiagnostics")["params"]["version"] == 1
    assert messages(p.pull()["result"]["items"]) == ["x"]


def test_dynamic_pull_registration(spawn: Callable[..., Peer]) -> None:
    p = spawn("--diagnostics", "dynamic-pull")
    assert "diagnosticProvider" not in p.initialize()["capabilities"]
    reg = p.server_request("client/registerCapability")
    (registration,) = reg["params"]["registrations"]
    assert registration["method"] == "textDocument/diagnostic"
    assert registration["id"]
    assert registration["registerOptions"]["identifier"] == "fake"
    p.send({"id": reg["id"], "result": None})
    p.open("ERROR:dyn")
    assert messages(p.pull(identifier="fake")["result"]["items"]) == ["dyn"]


def test_stale_pull_then_fresh(spawn: Callable[..., Peer]) -> None:
    p = spawn("--diagnostics", "pull", "--stale-pull", "1")
    p.initialize()
    p.open("ERROR:v1")
    assert messages(p.pull()["result"]["items"]) == ["v1"]  # no change yet: nothing stale
    p.change("ERROR:v2", 2)
    stale = p.pull()["result"]
    assert (stale["resultId"], messages(stale["items"])) == ("v1", ["v1"])
    fresh = p.pull()["result"]
    assert (fresh["resultId"], messages(fresh["items"])) == ("v2", ["v2"])
    p.change("ERROR:v3", 3)  # the count restarts with every change
    assert messages(p.pull()["result"]["items"]) == ["v2"]
    assert messages(p.pull()["result"]["items"]) == ["v3"]


def test_pull_errors_in_sequence(spawn: Callable[..., Peer]) -> None:
    p = spawn(
        "--diagnostics",
        "pull",
        "--content-modified",
        "1",
        "--server-cancelled",
        "2",
        "--stale-pull",
        "1",
    )
    p.initialize()
    p.open("ERROR:a")
    p.change("ERROR:b", 2)
    assert p.pull()["error"]["code"] == -32801
    assert p.pull()["error"]["code"] == -32802
    err = p.pull()["error"]
    assert err["code"] == -32802 and err["data"] == {"retriggerRequest": True}
    assert messages(p.pull()["result"]["items"]) == ["a"]
    assert messages(p.pull()["result"]["items"]) == ["b"]


def test_refresh_after_change_is_recorded(spawn: Callable[..., Peer], tmp_path: Path) -> None:
    log = tmp_path / "record.jsonl"
    p = spawn("--diagnostics", "pull", "--refresh-after-change", "--record", str(log))
    p.initialize()
    p.open("x")
    p.change("ERROR:y", 2)
    refresh = p.server_request("workspace/diagnostic/refresh")
    p.send({"id": refresh["id"], "result": None})
    assert p.shutdown_and_exit() == 0
    (resp,) = [r for r in records(log) if r["event"] == "response"]
    assert resp["method"] == "workspace/diagnostic/refresh" and resp["result"] is None


# ---------------------------------------------------------------- encodings

LINE = "\u00e9\U0001f600 ERROR:bad"  # é (1 code point) + 😀 (astral) + space, then the marker


@pytest.mark.parametrize(
    ("flag", "offered", "chosen", "start"),
    [
        ("utf-16", ["utf-8", "utf-32", "utf-16"], "utf-16", 4),  # 1 + 2 + 1 code units
        ("utf-8", ["utf-8", "utf-32", "utf-16"], "utf-8", 7),  # 2 + 4 + 1 bytes
        ("utf-32", ["utf-8", "utf-32", "utf-16"], "utf-32", 3),  # 3 code points
        ("client-first", ["utf-32", "utf-8", "utf-16"], "utf-32", 3),
        ("client-first", ["utf-8", "utf-16"], "utf-8", 7),
        ("utf-8", ["utf-16"], "utf-16", 4),  # not offered: fall back to the mandatory utf-16
        ("utf-32", None, "utf-16", 4),  # client offers nothing
    ],
)
def test_encodings(
    spawn: Callable[..., Peer], flag: str, offered: list[str] | None, chosen: str, start: int
) -> None:
    p = spawn("--encoding", flag, "--diagnostics", "both")
    assert p.initialize(encodings=offered)["capabilities"]["positionEncoding"] == chosen
    p.open(f"first line\n{LINE}\n")
    push = p.notification("textDocument/publishDiagnostics")["params"]["diagnostics"]
    pull = p.pull()["result"]["items"]
    for diags in (push, pull):
        assert diag_summary(diags) == [(1, "E1", "bad", 1, start, start + len("ERROR:bad"))]


def test_incremental_change_uses_negotiated_units(spawn: Callable[..., Peer]) -> None:
    p = spawn("--sync", "incremental", "--encoding", "utf-16")
    assert p.initialize(encodings=["utf-16"])["capabilities"]["textDocumentSync"]["change"] == 2
    p.open("\U0001f600 x\nkeep\n")
    p.notification("textDocument/publishDiagnostics")
    # "x" is at code point 2, UTF-16 unit 3
    p.notify(
        "textDocument/didChange",
        {
            "textDocument": {"uri": URI, "version": 2},
            "contentChanges": [
                {
                    "range": {
                        "start": {"line": 0, "character": 3},
                        "end": {"line": 0, "character": 4},
                    },
                    "text": "ERROR:boom",
                }
            ],
        },
    )
    push = p.notification("textDocument/publishDiagnostics")["params"]
    assert push["version"] == 2
    assert diag_summary(push["diagnostics"]) == [(1, "E1", "boom", 0, 3, 13)]


# ---------------------------------------------------------------- server requests


def test_server_requests_and_record(spawn: Callable[..., Peer], tmp_path: Path) -> None:
    log = tmp_path / "record.jsonl"
    p = spawn(
        "--server-requests", "--config-sections", "fake,python.analysis", "--record", str(log)
    )
    p.initialize()
    conf = p.server_request("workspace/configuration")
    assert [i["section"] for i in conf["params"]["items"]] == ["fake", "python.analysis"]
    create = p.server_request("window/workDoneProgress/create")
    ask = p.server_request("window/showMessageRequest")
    reg = p.server_request("client/registerCapability")
    assert reg["params"]["registrations"][0]["method"] == "workspace/didChangeWatchedFiles"
    p.send({"id": conf["id"], "result": [{"answer": 42}, {"typeCheckingMode": "strict"}]})
    p.send({"id": create["id"], "result": None})
    kinds = [p.notification("$/progress")["params"]["value"]["kind"] for _ in range(3)]
    assert kinds == ["begin", "report", "end"]
    p.send({"id": ask["id"], "result": {"title": "Yes"}})
    p.send({"id": reg["id"], "error": {"code": -32601, "message": "no"}})
    assert p.shutdown_and_exit() == 0

    events = records(log)
    assert events[0]["event"] == "start" and events[0]["pid"] == p.proc.pid
    answers = {r["method"]: r for r in events if r["event"] == "response"}
    assert answers["workspace/configuration"]["result"] == [
        {"answer": 42},
        {"typeCheckingMode": "strict"},
    ]
    assert answers["window/workDoneProgress/create"]["result"] is None
    assert answers["window/showMessageRequest"]["result"] == {"title": "Yes"}
    assert answers["client/registerCapability"]["error"]["code"] == -32601
    received = [r["method"] for r in events if r["event"] == "recv"]
    assert received == ["initialize", "initialized", "shutdown", "exit"]
    assert events[-1] == {**events[-1], "event": "exit", "code": 0}


# ---------------------------------------------------------------- hangs, exits, signals


def test_hang_initialize_then_eof(spawn: Callable[..., Peer]) -> None:
    p = spawn("--hang-initialize")
    p.request("initialize", {"processId": None, "rootUri": None, "capabilities": {}})
    p.close_stdin()
    assert p.proc.wait(TIMEOUT) == 0
    p.reader.join(TIMEOUT)
    assert p.buf == b""  # initialize was read and never answered


def test_hang_on_method(spawn: Callable[..., Peer]) -> None:
    p = spawn("--diagnostics", "pull", "--hang-on", "textDocument/diagnostic")
    p.initialize()
    p.open("ERROR:x")
    pull_id = p.request("textDocument/diagnostic", {"textDocument": {"uri": URI}})
    hover = p.call(
        "textDocument/hover",
        {"textDocument": {"uri": URI}, "position": {"line": 0, "character": 0}},
    )
    assert "fake hover" in hover["result"]["contents"]["value"]
    assert p.shutdown_and_exit() == 0
    p.reader.join(TIMEOUT)
    with pytest.raises(EOFError):
        p.response(pull_id)


def test_hang_on_shutdown(spawn: Callable[..., Peer]) -> None:
    p = spawn("--hang-on", "shutdown")
    p.initialize()
    shutdown_id = p.request("shutdown")
    p.notify("exit")
    assert p.proc.wait(TIMEOUT) == 1  # shutdown never completed
    with pytest.raises(EOFError):
        p.response(shutdown_id)


def test_slow_initialize_reports_progress(spawn: Callable[..., Peer]) -> None:
    p = spawn("--slow-initialize-ms", "300")
    t0 = time.monotonic()
    init_id = p.request(
        "initialize",
        {"processId": None, "rootUri": None, "capabilities": {}, "workDoneToken": "init-token"},
    )
    begin = p.next_message()
    end = p.next_message()
    resp = p.next_message()
    assert time.monotonic() - t0 >= 0.3
    assert begin["params"] == {
        "token": "init-token",
        "value": {"kind": "begin", "title": "Fake server starting"},
    }
    assert end["params"]["value"]["kind"] == "end"
    assert resp["id"] == init_id and "capabilities" in resp["result"]


def test_ignore_exit_keeps_running(spawn: Callable[..., Peer], tmp_path: Path) -> None:
    log = tmp_path / "record.jsonl"
    p = spawn("--ignore-exit", "--record", str(log))
    p.initialize()
    assert p.call("shutdown")["result"] is None
    p.notify("exit")
    # still alive and answering (requests after shutdown are invalid, but answered)
    assert p.call("textDocument/hover")["error"]["code"] == -32600
    p.close_stdin()
    with pytest.raises(subprocess.TimeoutExpired):
        p.proc.wait(0.3)  # it does not exit on EOF either: the client must kill it
    events = [r["event"] for r in records(log)]
    assert "exit-ignored" in events and events[-1] == "eof"


def test_ignore_sigterm(spawn: Callable[..., Peer]) -> None:
    p = spawn("--ignore-sigterm")
    p.initialize()  # the handler is installed before stdin is read
    os.kill(p.proc.pid, signal.SIGTERM)
    hover = p.call(
        "textDocument/hover",
        {"textDocument": {"uri": URI}, "position": {"line": 0, "character": 0}},
    )
    assert hover["result"] is None  # alive after SIGTERM
    assert p.proc.poll() is None


def test_lifetime_safety_net(spawn: Callable[..., Peer]) -> None:
    p = spawn("--ignore-exit", "--ignore-sigterm", "--lifetime-s", "0.2")
    assert p.proc.wait(TIMEOUT) == 4


def test_crash_on_method(spawn: Callable[..., Peer]) -> None:
    p = spawn("--crash-on", "textDocument/didOpen")
    p.initialize()
    p.open("ERROR:x")
    assert p.proc.wait(TIMEOUT) == 3
    p.reader.join(TIMEOUT)
    assert not any(m.get("method") == "textDocument/publishDiagnostics" for m in p.inbox)


def test_crash_after_n_messages(spawn: Callable[..., Peer]) -> None:
    p = spawn("--crash-after-n-messages", "2")
    p.initialize()  # initialize (1) is answered, initialized (2) is the last
    assert p.proc.wait(TIMEOUT) == 3


def test_spawn_child_same_group_and_reaped(spawn: Callable[..., Peer], tmp_path: Path) -> None:
    log = tmp_path / "record.jsonl"
    p = spawn("--spawn-child", "--record", str(log))
    p.initialize()  # the child is recorded before stdin is read
    (child,) = [r["pid"] for r in records(log) if r["event"] == "child"]
    assert os.getpgid(child) == os.getpgid(p.proc.pid) == p.proc.pid
    assert p.shutdown_and_exit() == 0
    assert not pid_alive(child)  # killed and reaped before the server exited


def test_leave_child_is_killed_with_the_group(spawn: Callable[..., Peer], tmp_path: Path) -> None:
    log = tmp_path / "record.jsonl"
    p = spawn("--spawn-child", "--leave-child", "--record", str(log))
    p.initialize()
    (child,) = [r["pid"] for r in records(log) if r["event"] == "child"]
    assert p.shutdown_and_exit() == 0
    assert pid_alive(child)  # leaked on purpose
    p.kill()  # what a client must do: kill the process group
    assert pid_gone(child)


def test_log_stderr_needs_draining(spawn: Callable[..., Peer]) -> None:
    p = spawn("--log-stderr", stderr=subprocess.PIPE)
    drained = bytearray()

    def drain() -> None:
        assert p.proc.stderr is not None
        while chunk := p.proc.stderr.read1(1 << 16):
            drained.extend(chunk)

    t = threading.Thread(target=drain, daemon=True)
    t.start()
    p.initialize()
    assert p.shutdown_and_exit() == 0
    t.join(TIMEOUT)
    assert len(drained) >= 1 << 20
    assert b"fake-server: recv shutdown" in drained


# ---------------------------------------------------------------- malformed output


def test_garbage_on_start(spawn: Callable[..., Peer]) -> None:
    p = spawn("--garbage-on-start")
    p.request("initialize", {"processId": None, "rootUri": None, "capabilities": {}})
    data = p.wait_raw(lambda b: b"serverInfo" in b)
    assert data.startswith(b"\x00\xffnot a header")
    garbage_end = data.index(b"\r\n\r\n") + 4
    assert b"content-length" not in data[:garbage_end].lower()


def test_garbage_on_method(spawn: Callable[..., Peer]) -> None:
    p = spawn("--garbage-on", "textDocument/hover")
    p.initialize()
    p.request("textDocument/hover")
    p.wait_raw(lambda b: b"Content-Length: abc\r\n\r\n" in b[p.pos :])


def test_oversized_on_method(spawn: Callable[..., Peer]) -> None:
    p = spawn("--oversized-on", "shutdown")
    p.initialize()
    p.request("shutdown")
    data = p.wait_raw(lambda b: b"Content-Length: 2147483648\r\n\r\n{" in b[p.pos :])
    assert len(data) - p.pos < 1000


def test_invalid_json_keeps_framing(spawn: Callable[..., Peer]) -> None:
    p = spawn("--invalid-json-on", "textDocument/hover")
    p.initialize()
    p.request(
        "textDocument/hover",
        {"textDocument": {"uri": URI}, "position": {"line": 0, "character": 0}},
    )
    bad = p.recv(lambda m: "__invalid__" in m)
    assert b"not json" in bad["__invalid__"]
    assert p.shutdown_and_exit() == 0  # the stream is still in sync


def test_header_flood(spawn: Callable[..., Peer]) -> None:
    p = spawn("--header-flood")
    p.initialize()
    assert len(p.headers[0]) > 8192
    assert p.headers[0].endswith(b"Content-Length: %d" % p.body_sizes[0])
    assert p.shutdown_and_exit() == 0
    assert all(len(h) < 100 for h in p.headers[1:])


def test_big_diagnostics_and_huge_messages(spawn: Callable[..., Peer]) -> None:
    size = 3_000_000
    p = spawn(
        "--diagnostics", "both", "--big-diagnostics", "500", "--huge-message-bytes", str(size)
    )
    p.initialize()
    p.open("ERROR:real")
    push = p.notification("textDocument/publishDiagnostics")
    assert len(push["params"]["diagnostics"]) == 501
    assert p.body_sizes[-1] == size
    pull = p.pull()
    assert len(pull["result"]["items"]) == 501
    assert p.body_sizes[-1] == size
