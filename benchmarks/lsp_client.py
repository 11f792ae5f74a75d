"""A raw LSP client: the benchmarks' reference. Standard library only (asyncio), no ipylsp.

It does what any client must and nothing more, so that what ipylsp adds on top can be measured
against it in the same run:

- spawns the server over stdio in a session of its own, frames messages with Content-Length;
- ``initialize`` / ``initialized`` (and ``workspace/didChangeConfiguration`` with the settings);
- answers every server->client request so no server stalls: ``workspace/configuration`` (by
  section, from the settings), ``client/registerCapability`` (a dynamically registered pull is
  used), ``workspace/workspaceFolders``, ``workspace/diagnostic/refresh`` (re-pull at once), and
  ``null`` for the rest (``window/workDoneProgress/create``, ...);
- ``didOpen`` / ``didChange`` (full text) / ``didSave`` / ``didClose``;
- diagnostics by pull (``textDocument/diagnostic``, retried on ContentModified -32801 and
  ServerCancelled -32802) where the server offers it, and by push (``publishDiagnostics`` for
  the version sent, or versionless after it was sent); `RawClient.wait` returns the first answer
  an ``accept`` predicate takes (a refused pull is sent again after 0.1 s, or at once on a push,
  a late registration or a refresh);
- ``shutdown`` / ``exit``, then the process group killed;
- the summed RSS of a process tree from /proc; times from `time.perf_counter` (sub-ms).

`measure` is one session (spawn -> first diagnostics holding an error -> the fix clears it);
`LoopThread` lets a benchmark drive a client from another thread, step by step. From a shell::

    python benchmarks/lsp_client.py --root DIR --file REL --expect REGEX [--fixed FILE] -- ty server
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import contextlib
import json
import os
import re
import signal
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import unquote, urlparse

CONTENT_MODIFIED = -32801
SERVER_CANCELLED = -32802
REPULL_AFTER = 0.1
"""Seconds before a pull whose answer was refused is sent again (news sends it at once)."""
WAKING = frozenset(
    {"textDocument/publishDiagnostics", "client/registerCapability", "workspace/diagnostic/refresh"}
)
"""What wakes `RawClient.wait`: a push, a pull registered late, a refresh."""

Diagnostics = list[dict[str, Any]]
Accept = Callable[[Diagnostics], bool]
T = TypeVar("T")

CAPABILITIES: dict[str, Any] = {
    "workspace": {
        "configuration": True,
        "workspaceFolders": True,
        "didChangeConfiguration": {"dynamicRegistration": True},
        "didChangeWatchedFiles": {"dynamicRegistration": True},
        "diagnostics": {"refreshSupport": True},
    },
    "textDocument": {
        "synchronization": {"dynamicRegistration": True, "didSave": True},
        "publishDiagnostics": {
            "relatedInformation": True,
            "versionSupport": True,
            "codeDescriptionSupport": True,
            "dataSupport": True,
        },
        "diagnostic": {"dynamicRegistration": True, "relatedDocumentSupport": True},
    },
    "window": {"workDoneProgress": True},
    "general": {"positionEncodings": ["utf-16"]},
}


class ResponseError(Exception):
    """The server answered a request with an error."""

    def __init__(self, method: str, error: Mapping[str, Any]) -> None:
        self.code = error.get("code")
        super().__init__(f"{method}: {error.get('code')} {error.get('message', '')}")


def uri_path(uri: str) -> str:
    """The file a ``file:`` URI names, however the server spelled it (escapes, links)."""
    return os.path.realpath(unquote(urlparse(uri).path)) if uri.startswith("file:") else uri


def matcher(pattern: str, present: bool = True) -> Accept:
    """An ``accept`` for `RawClient.wait`: some diagnostic's message (or its JSON) matches
    `pattern`, case-insensitively; with ``present=False``, none does."""
    regex = re.compile(pattern, re.I | re.S)

    def accept(diagnostics: Diagnostics) -> bool:
        found = any(
            regex.search(d.get("message", "")) or regex.search(json.dumps(d)) for d in diagnostics
        )
        return found is present

    return accept


class RawClient:
    """One language server process and the minimum a client owes it."""

    def __init__(
        self,
        command: Sequence[str],
        root: Path,
        *,
        settings: Mapping[str, Any] | None = None,
        init_options: Mapping[str, Any] | None = None,
    ) -> None:
        self.command = list(command)
        self.root = Path(root).resolve()
        self.settings = settings
        self.init_options = init_options
        self.process: asyncio.subprocess.Process | None = None
        self.capabilities: dict[str, Any] = {}
        self.server_info: dict[str, Any] = {}
        self.pull_identifier: str | None = None
        self.pull = False
        self.counts: dict[str, int] = {"pulls": 0, "pushes": 0, "retried_pulls": 0, "refreshes": 0}
        self._next_id = 0
        self._waiting: dict[int, tuple[str, asyncio.Future[Any] | None]] = {}
        self._seq = 0  # messages read so far: a push counts only if it came after the change
        self._versions: dict[str, tuple[int, int]] = {}  # uri -> (version, seq when sent)
        # uri -> (version, seq when read, diagnostics) of the latest push
        self._pushes: dict[str, tuple[int | None, int, Diagnostics]] = {}
        self._news: asyncio.Event | None = None  # set by what a waiter looks at (see WAKING)
        self._reader: asyncio.Task[None] | None = None

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    # -- the wire ----------------------------------------------------------------------------------

    async def _write(self, message: dict[str, Any]) -> None:
        assert self.process is not None and self.process.stdin is not None
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        await self.process.stdin.drain()

    async def request(self, method: str, params: Any = None) -> Any:
        """The result of `method`; a `ResponseError` when the server answers with an error."""
        self._next_id += 1
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[self._next_id] = (method, future)
        message: dict[str, Any] = {"id": self._next_id, "method": method}
        if params is not None:  # some servers refuse "params": null
            message["params"] = params
        await self._write(message)
        return await future

    async def notify(self, method: str, params: Any = None) -> None:
        message: dict[str, Any] = {"method": method}
        if params is not None:
            message["params"] = params
        await self._write(message)

    async def _read(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        stream = self.process.stdout
        try:
            while True:
                length = None
                while line := (await stream.readline()).strip():
                    name, _, value = line.decode("ascii", "replace").partition(":")
                    if name.strip().lower() == "content-length":
                        length = int(value)
                if length is None:  # the end of the stream (or a frame without a length)
                    break
                self._seq += 1
                await self._dispatch(json.loads(await stream.readexactly(length)))
        finally:
            for method, future in self._waiting.values():
                if future is not None and not future.done():
                    future.set_exception(ConnectionError(f"{method}: the server closed stdout"))
            self._waiting.clear()

    async def _dispatch(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        if method is None:  # a response
            method, future = self._waiting.pop(message.get("id", -1), ("", None))
            if future is not None and not future.done():
                if "error" in message:
                    future.set_exception(ResponseError(method, message["error"]))
                else:
                    future.set_result(message.get("result"))
            return
        params = message.get("params") or {}
        if "id" in message:  # a request of the server's: always answered
            await self._write({"id": message["id"], "result": self._answer(method, params)})
        elif method == "textDocument/publishDiagnostics":
            self.counts["pushes"] += 1
            self._pushes[self._known_uri(params.get("uri", ""))] = (
                params.get("version"), self._seq, params.get("diagnostics") or []
            )
        if method in WAKING and self._news is not None:
            self._news.set()

    def _known_uri(self, uri: str) -> str:
        """`uri` as this client sent it, when the server spelled an open document another way."""
        if uri in self._versions:
            return uri
        path = uri_path(uri)
        return next((known for known in self._versions if uri_path(known) == path), uri)

    def _answer(self, method: str, params: dict[str, Any]) -> Any:
        if method == "workspace/configuration":
            return [self._section(item.get("section")) for item in params.get("items", [])]
        if method == "client/registerCapability":
            for registration in params.get("registrations", []):
                if registration.get("method") == "textDocument/diagnostic":
                    self.pull = True
                    options = registration.get("registerOptions") or {}
                    self.pull_identifier = options.get("identifier", self.pull_identifier)
        elif method == "workspace/workspaceFolders":
            return [{"uri": self.root.as_uri(), "name": self.root.name}]
        elif method == "workspace/diagnostic/refresh":
            self.counts["refreshes"] += 1
        return None

    def _section(self, section: str | None) -> Any:
        value: Any = self.settings
        for part in section.split(".") if section else ():
            value = value.get(part) if isinstance(value, dict) else None
        return value

    # -- life ------------------------------------------------------------------------------------

    async def start(self, timeout: float = 60.0) -> float:
        """Spawn and initialize; the seconds from spawn to the ``initialize`` answer."""
        self._news = asyncio.Event()
        command = list(self.command)
        if "/" in command[0]:
            command[0] = os.path.abspath(command[0])
        began = time.perf_counter()
        self.process = await asyncio.create_subprocess_exec(
            *command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            cwd=str(self.root),
            start_new_session=True,
            limit=64 * 1024 * 1024,
        )
        self._reader = asyncio.ensure_future(self._read())
        folder = {"uri": self.root.as_uri(), "name": self.root.name}
        params: dict[str, Any] = {
            "processId": os.getpid(),
            "clientInfo": {"name": "ipylsp-benchmarks-raw-client", "version": "1"},
            "rootUri": folder["uri"],
            "rootPath": str(self.root),
            "workspaceFolders": [folder],
            "capabilities": CAPABILITIES,
        }
        if self.init_options is not None:
            params["initializationOptions"] = self.init_options
        result = await asyncio.wait_for(self.request("initialize", params), timeout)
        elapsed = time.perf_counter() - began
        self.capabilities = result.get("capabilities") or {}
        self.server_info = result.get("serverInfo") or {}
        provider = self.capabilities.get("diagnosticProvider")
        if provider:
            self.pull = True
            if isinstance(provider, dict):
                self.pull_identifier = provider.get("identifier")
        await self.notify("initialized", {})
        if self.settings is not None:
            await self.notify("workspace/didChangeConfiguration", {"settings": self.settings})
        return elapsed

    async def stop(self, timeout: float = 5.0) -> int | None:
        """``shutdown`` + ``exit``, the process reaped, then its whole group killed; exit code."""
        process = self.process
        if process is None:
            return None
        try:
            if process.returncode is None:
                await asyncio.wait_for(self.request("shutdown"), timeout)
                await self.notify("exit")
                await asyncio.wait_for(process.wait(), timeout)
        except (asyncio.TimeoutError, ConnectionError, ResponseError, OSError):
            pass
        finally:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            await process.wait()
            if self._reader is not None:
                await asyncio.gather(self._reader, return_exceptions=True)
        return process.returncode

    # -- documents -------------------------------------------------------------------------------

    async def open(self, path: Path, text: str, language_id: str = "python") -> None:
        uri = Path(path).as_uri()
        self._versions[uri] = (1, self._seq)
        await self.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": language_id, "version": 1, "text": text}})

    async def change(self, path: Path, text: str) -> None:
        uri = Path(path).as_uri()
        version = self._versions[uri][0] + 1
        self._versions[uri] = (version, self._seq)
        await self.notify("textDocument/didChange", {
            "textDocument": {"uri": uri, "version": version},
            "contentChanges": [{"text": text}],
        })

    async def save(self, path: Path) -> None:
        await self.notify("textDocument/didSave", {"textDocument": {"uri": Path(path).as_uri()}})

    async def close(self, path: Path) -> None:
        uri = Path(path).as_uri()
        self._versions.pop(uri, None)
        self._pushes.pop(uri, None)
        await self.notify("textDocument/didClose", {"textDocument": {"uri": uri}})

    # -- diagnostics -----------------------------------------------------------------------------

    async def pull_diagnostics(self, path: Path) -> Diagnostics:
        """A ``textDocument/diagnostic`` answer (re-asked on ContentModified, ServerCancelled)."""
        params: dict[str, Any] = {"textDocument": {"uri": Path(path).as_uri()}}
        if self.pull_identifier:
            params["identifier"] = self.pull_identifier
        while True:
            self.counts["pulls"] += 1
            try:
                result = await self.request("textDocument/diagnostic", params)
            except ResponseError as error:
                if error.code not in (CONTENT_MODIFIED, SERVER_CANCELLED):
                    raise
                self.counts["retried_pulls"] += 1
                continue
            return list((result or {}).get("items") or [])

    def _fresh_push(self, uri: str) -> Diagnostics | None:
        """The push for the document's current version (versionless: read after it was sent)."""
        push = self._pushes.get(uri)
        version, sent = self._versions.get(uri, (None, 0))
        if push is None or push[1] <= sent or push[0] not in (None, version):
            return None
        return push[2]

    async def wait(self, path: Path, accept: Accept, deadline: float) -> tuple[str, Diagnostics]:
        """The first diagnostics for the document's current text that `accept` takes, by push or
        pull, as ``(channel, diagnostics)``; `TimeoutError` at `deadline` (perf_counter)."""
        assert self._news is not None, "start() first"
        uri = Path(path).as_uri()
        while True:
            self._news.clear()
            pushed = self._fresh_push(uri)
            if pushed is not None and accept(pushed):
                return "push", pushed
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                raise TimeoutError(f"no accepted diagnostics for {path}")
            if self.pull:
                try:
                    pulled = await asyncio.wait_for(self.pull_diagnostics(path), remaining)
                except asyncio.TimeoutError:
                    raise TimeoutError(f"no diagnostics pulled for {path}") from None
                if accept(pulled):
                    return "pull", pulled
                remaining = min(remaining, REPULL_AFTER)  # then pull again, or at news
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._news.wait(), remaining)

    async def edit(
        self, path: Path, text: str, accept: Accept, timeout: float, language_id: str = "python"
    ) -> tuple[float, str, Diagnostics]:
        """Send `text` (didOpen the first time, else didChange) and wait for diagnostics that
        `accept` takes: (seconds from just before the notification to the answer, channel,
        diagnostics)."""
        began = time.perf_counter()
        if Path(path).as_uri() in self._versions:
            await self.change(path, text)
        else:
            await self.open(path, text, language_id)
        channel, diagnostics = await self.wait(path, accept, began + timeout)
        return time.perf_counter() - began, channel, diagnostics


# -- measurements ----------------------------------------------------------------------------------


def process_tree(pid: int) -> list[int]:
    """`pid` and its live descendants (by parent pid, from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
            parent = int(stat[stat.rindex(b")") + 2 :].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(parent, []).append(int(entry))
    found, stack = [], [pid]
    while stack:
        member = stack.pop()
        found.append(member)
        stack.extend(children.get(member, ()))
    return found


def tree_rss_kb(pid: int) -> int:
    """Summed VmRSS of `pid` and its descendants, in KiB."""
    total = 0
    for member in process_tree(pid):
        try:
            with open(f"/proc/{member}/status") as handle:
                total += next((int(line.split()[1]) for line in handle
                               if line.startswith("VmRSS:")), 0)
        except (OSError, ValueError):
            continue
    return total


class RssSampler:
    """Peak summed VmRSS of a process tree: sampled every `period` seconds on a thread, and on
    each `sample()` call (a server that lives less than a period would be missed)."""

    def __init__(self, period: float = 0.05) -> None:
        self.period = period
        self.pid: int | None = None
        self.peak_kb = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="rss-sampler")
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.period)

    def sample(self) -> None:
        pid = self.pid
        if pid is not None:
            self.peak_kb = max(self.peak_kb, tree_rss_kb(pid))

    def stop(self) -> float:
        """Stop sampling; the peak in MiB."""
        self._stop.set()
        self._thread.join(2)
        return round(self.peak_kb / 1024, 1)


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


async def measure(
    client: RawClient,
    path: Path,
    broken: str,
    expect: str,
    *,
    fixed: str | None = None,
    language_id: str = "python",
    timeout: float = 60.0,
    sampler: RssSampler | None = None,
) -> dict[str, Any]:
    """One session on a fresh server: ``init_ms`` (spawn -> initialize answered), ``diag_ms``
    (didOpen of `broken` -> diagnostics matching `expect`), ``clear_ms`` (didChange to `fixed`
    -> diagnostics without a match), their channels, and ``rss_mb`` when given a `sampler`. A
    phase that fails leaves its key None and says why in ``error``; the server always stops."""
    out: dict[str, Any] = {"init_ms": None, "diag_ms": None, "clear_ms": None, "error": None}

    async def phase(name: str, step: Awaitable[tuple[float, str, Diagnostics]]) -> None:
        seconds, out[f"{name}_channel"], diagnostics = await step
        out[f"{name}_ms"] = _ms(seconds)
        out[f"{name}_messages"] = [d.get("message", "")[:120] for d in diagnostics][:4]
        if sampler is not None:
            sampler.sample()

    try:
        starting = asyncio.ensure_future(client.start(timeout))
        while client.pid is None and not starting.done():
            await asyncio.sleep(0.001)
        if sampler is not None:
            sampler.pid = client.pid
        out["init_ms"] = _ms(await starting)
        out["server_info"] = client.server_info
        if sampler is not None:
            sampler.sample()
        await phase("diag", client.edit(path, broken, matcher(expect), timeout, language_id))
        if fixed is not None:
            clean = matcher(expect, present=False)
            await phase("clear", client.edit(path, fixed, clean, timeout, language_id))
    except (TimeoutError, asyncio.TimeoutError, ConnectionError, ResponseError, OSError) as exc:
        out["error"] = f"{type(exc).__name__}: {exc}"
    finally:
        out["exit_code"] = await client.stop()
        if sampler is not None:
            out["rss_mb"] = sampler.stop()
    out["counts"] = dict(client.counts)
    return out


class LoopThread:
    """An event loop on a daemon thread: `run` a client's coroutines on it from another thread
    (one step at a time, so a benchmark can alternate the reference with ipylsp)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True, name="raw-lsp")
        self._thread.start()

    def run(self, coroutine: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        future: concurrent.futures.Future[T]
        future = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        return future.result(timeout)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)
        if not self._thread.is_alive():
            self.loop.close()

    def __enter__(self) -> LoopThread:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--root", required=True, type=Path)
    parser.add_argument("--file", required=True, help="relative to the root; holds the error")
    parser.add_argument("--expect", required=True, help="regex over a diagnostic (or its JSON)")
    parser.add_argument("--fixed", type=Path, help="a file whose text removes the error")
    parser.add_argument("--lang", default="python", help="the LSP language id")
    parser.add_argument("--settings", type=json.loads, help="JSON: workspace/configuration")
    parser.add_argument("--init-options", type=json.loads)
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per phase")
    parser.add_argument("command", nargs="+", help="the server's command (after --)")
    args = parser.parse_args()
    client = RawClient(args.command, args.root, settings=args.settings,
                       init_options=args.init_options)
    path = client.root / args.file
    fixed = args.fixed.read_text() if args.fixed else None
    result = asyncio.run(measure(
        client, path, path.read_text(), args.expect, fixed=fixed,
        language_id=args.lang, timeout=args.timeout, sampler=RssSampler(),
    ))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
