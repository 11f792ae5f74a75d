"""The client against the scriptable fake server: every fault case ends in a ClientError or a
correct answer, never a hang past the deadline, and never a process left behind."""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

import pytest

from ipylsp.lsp.client import ClientError, LanguageClient
from ipylsp.lsp.process import descendants, running
from ipylsp.model.diagnostics import Diagnostic, UnknownReason
from ipylsp.model.server_spec import InstallRecipe, ServerSpec
from ipylsp.model.status import ServerState
from tests.conftest import fake_command

T = TypeVar("T")


def spec(settings: dict[str, Any] | None = None) -> ServerSpec:
    return ServerSpec(
        id="fake",
        name="Fake",
        languages=("python",),
        command=("fake",),
        install=InstallRecipe("path"),
        settings=settings or {},
    )


def run(body: Callable[[], Awaitable[T]]) -> T:
    return asyncio.run(body())


def summary(diags: tuple[Diagnostic, ...]) -> list[tuple[int, int, int, int, str, str | None]]:
    return [
        (d.range.start.line, d.range.start.column, d.range.end.line, d.range.end.column,
         d.message, d.code)
        for d in diags
    ]


async def started(tmp_path: Path, *flags: str, **kwargs: Any) -> LanguageClient:
    client = LanguageClient(spec(kwargs.pop("settings", None)), tmp_path, fake_command(*flags),
                            **kwargs)
    await client.start(10)
    return client


def deadline(seconds: float = 10) -> float:
    return time.monotonic() + seconds


@pytest.mark.real
@pytest.mark.parametrize("mode", ["push", "pull", "both", "dynamic-pull"])
def test_diagnostics_per_version_in_every_mode(tmp_path: Path, mode: str) -> None:
    async def body() -> None:
        client = await started(tmp_path, "--diagnostics", mode)
        try:
            path = tmp_path / "a.py"
            v1, d1 = await client.diagnostics(path, "x = 1\nERROR:bad one\n", "python",
                                              deadline=deadline())
            v2, d2 = await client.diagnostics(path, "y\n\nz ERROR:moved\n", "python",
                                              deadline=deadline())
            v3, d3 = await client.diagnostics(path, "clean\n", "python", deadline=deadline())
            assert (v1, v2, v3) == (1, 2, 3)
            assert summary(d1) == [(1, 0, 1, 13, "bad one", "E1")]
            assert summary(d2) == [(2, 2, 2, 13, "moved", "E1")]
            assert d3 == ()
        finally:
            await client.stop()

    run(body)


@pytest.mark.real
@pytest.mark.parametrize("encoding", ["utf-16", "utf-8", "utf-32"])
def test_columns_are_code_points_whatever_the_encoding(tmp_path: Path, encoding: str) -> None:
    async def body() -> None:
        client = await started(tmp_path, "--encoding", encoding)
        try:
            assert client.encoding == encoding
            _, diags = await client.diagnostics(
                tmp_path / "u.py", "é😀漢 ERROR:x\n", "python", deadline=deadline()
            )
            assert summary(diags) == [(0, 4, 0, 11, "x", "E1")]
        finally:
            await client.stop()

    run(body)


@pytest.mark.real
def test_stale_push_for_an_older_version_is_never_returned(tmp_path: Path) -> None:
    async def body() -> None:
        client = await started(tmp_path, "--stale-push", "--push-delay-ms", "30")
        try:
            path = tmp_path / "s.py"
            await client.diagnostics(path, "ERROR:old\n", "python", deadline=deadline())
            _, diags = await client.diagnostics(path, "ok\nERROR:new\n", "python",
                                                deadline=deadline())
            assert summary(diags) == [(1, 0, 1, 9, "new", "E1")]
        finally:
            await client.stop()

    run(body)


@pytest.mark.real
def test_versionless_push_counts_only_after_the_change(tmp_path: Path) -> None:
    async def body() -> None:
        client = await started(tmp_path, "--versionless-push")
        try:
            path = tmp_path / "v.py"
            await client.diagnostics(path, "ERROR:old\n", "python", deadline=deadline())
            _, diags = await client.diagnostics(path, "fine\n", "python", deadline=deadline())
            assert diags == ()
        finally:
            await client.stop()

    run(body)


@pytest.mark.real
@pytest.mark.parametrize(
    ("versioned", "disk", "expected"),
    [
        # its own answer comes 0.5 s after the disk's, or on the text sent again at once
        (True, "ERROR:on disk\n", [(1, 0, 1, 10, "sent", "E1")]),
        # the same diagnostics as the disk's: it publishes nothing for the version opened,
        # only for the text sent again
        (True, "disk\nERROR:sent\n", [(1, 0, 1, 10, "sent", "E1")]),
        # a server that never names versions: its latest push once quiet, the disk's, its
        # range read on the sent text's line (clamped to "sent"): issue 32's column-1 ranges
        (False, "ERROR:on disk\n", [(0, 0, 0, 4, "on disk", "E1")]),
    ],
    ids=["versioned-push", "versioned-push-same-as-disk", "versionless"],
)
def test_a_push_without_a_version_is_the_disk_s_for_a_server_that_versions_them(
    tmp_path: Path, versioned: bool, disk: str, expected: list[tuple[Any, ...]]
) -> None:
    """gopls diagnoses its workspace from the disk when it starts and publishes that without
    a version for a document just opened with another text (issue 32); gopls 0.5 then
    publishes the opened text's answer only when it differs. For a server that names versions
    (`ServerSpec.versioned_push`), a push without one is not the text's answer: the text is
    sent again as a new version, which it answers."""

    async def body() -> None:
        client = LanguageClient(replace(spec(), versioned_push=versioned), tmp_path,
                                fake_command("--disk-push-first-ms", "500"))
        await client.start(10)
        try:
            path = tmp_path / "d.py"
            path.write_text(disk)
            _, diags = await client.diagnostics(path, "sent\nERROR:sent\n", "python",
                                                deadline=deadline())
            assert summary(diags) == expected
        finally:
            await client.stop()

    run(body)


@pytest.mark.real
@pytest.mark.parametrize("flag", ["--content-modified", "--server-cancelled"])
def test_refused_pulls_are_retried(tmp_path: Path, flag: str) -> None:
    async def body() -> None:
        client = await started(tmp_path, "--diagnostics", "pull", flag, "3")
        try:
            path = tmp_path / "r.py"
            await client.diagnostics(path, "a\n", "python", deadline=deadline())
            _, diags = await client.diagnostics(path, "ERROR:after retries\n", "python",
                                                deadline=deadline())
            assert [d.message for d in diags] == ["after retries"]
        finally:
            await client.stop()

    run(body)


@pytest.mark.real
def test_concurrent_checks_of_one_document_each_get_their_own_version(tmp_path: Path) -> None:
    """A pull is credited to the version it was sent for, even when checks race."""

    async def body() -> None:
        client = await started(tmp_path, "--diagnostics", "pull", "--stale-pull", "0")
        try:
            path = tmp_path / "c.py"
            texts = [f"line\nERROR:v{i}\n" for i in range(8)]
            results = await asyncio.gather(
                *(client.diagnostics(path, t, "python", deadline=deadline()) for t in texts)
            )
            for text, (version, diags) in zip(texts, results, strict=False):
                assert [d.message for d in diags] == [text.split("ERROR:")[1].strip()]
                assert version >= 1
        finally:
            await client.stop()

    run(body)


@pytest.mark.real
def test_hang_on_initialize_times_out_and_leaves_no_process(tmp_path: Path) -> None:
    async def body() -> None:
        client = LanguageClient(spec(), tmp_path, fake_command("--hang-initialize"))
        t0 = time.monotonic()
        with pytest.raises(ClientError) as caught:
            await client.start(0.5)
        assert time.monotonic() - t0 < 5
        assert caught.value.reason is UnknownReason.TIMED_OUT
        assert client.state is ServerState.BROKEN
        assert client.pid is not None and not running(client.pid)

    run(body)


@pytest.mark.real
def test_hang_on_a_request_times_out_with_cancel(tmp_path: Path) -> None:
    record = tmp_path / "rec.jsonl"
    async def body() -> None:
        client = await started(
            tmp_path, "--diagnostics", "pull", "--hang-on", "textDocument/diagnostic",
            "--record", str(record),
        )
        try:
            t0 = time.monotonic()
            with pytest.raises(ClientError) as caught:
                await client.diagnostics(tmp_path / "h.py", "x\n", "python",
                                         deadline=time.monotonic() + 0.5)
            assert time.monotonic() - t0 < 3
            assert caught.value.reason is UnknownReason.TIMED_OUT
        finally:
            await client.stop()

    run(body)
    methods = [json.loads(line).get("method") for line in record.read_text().splitlines()]
    assert "$/cancelRequest" in methods


@pytest.mark.real
def test_crash_mid_request_is_reported_with_stderr(tmp_path: Path) -> None:
    async def body() -> None:
        client = await started(tmp_path, "--diagnostics", "pull", "--crash-on",
                               "textDocument/diagnostic")
        with pytest.raises(ClientError) as caught:
            await client.diagnostics(tmp_path / "k.py", "x\n", "python", deadline=deadline())
        assert caught.value.reason is UnknownReason.CRASHED
        assert not client.alive
        await client.stop()

    run(body)


@pytest.mark.real
@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (("--garbage-on-start",), "header block without Content-Length"),
        (("--oversized-on", "initialize"), "exceeds the limit"),
        (("--garbage-on", "initialize"), "bad Content-Length"),
        (("--header-flood",), "header block larger than 8192 bytes"),
    ],
)
def test_protocol_garbage_breaks_the_connection_cleanly(
    tmp_path: Path, flags: tuple[str, ...], expected: str
) -> None:
    async def body() -> None:
        client = LanguageClient(spec(), tmp_path, fake_command(*flags))
        with pytest.raises(ClientError) as caught:
            await client.start(5)
        assert caught.value.reason in (UnknownReason.CRASHED, UnknownReason.TIMED_OUT)
        assert client._endpoint is not None
        assert expected in (client._endpoint.close_reason or "")
        assert client.pid is not None and not running(client.pid)

    run(body)


@pytest.mark.real
def test_invalid_json_frame_is_skipped_and_the_request_times_out(tmp_path: Path) -> None:
    async def body() -> None:
        client = await started(tmp_path, "--diagnostics", "pull", "--invalid-json-on",
                               "textDocument/diagnostic")
        try:
            with pytest.raises(ClientError) as caught:
                await client.diagnostics(tmp_path / "j.py", "x\n", "python",
                                         deadline=time.monotonic() + 0.5)
            assert caught.value.reason is UnknownReason.TIMED_OUT
            assert client._endpoint is not None and client._endpoint.bad_messages == 1
            assert client.alive
        finally:
            await client.stop()

    run(body)


@pytest.mark.real
def test_huge_messages_within_the_cap_are_read(tmp_path: Path) -> None:
    async def body() -> None:
        client = await started(tmp_path, "--big-diagnostics", "2000",
                               "--huge-message-bytes", str(8 * 1024 * 1024))
        try:
            _, diags = await client.diagnostics(tmp_path / "b.py", "ERROR:x\n", "python",
                                                deadline=deadline(30))
            assert len(diags) == 2001
        finally:
            await client.stop()

    run(body)


@pytest.mark.real
def test_message_over_the_cap_breaks_the_connection(tmp_path: Path) -> None:
    async def body() -> None:
        client = await started(tmp_path, "--huge-message-bytes", str(2 * 1024 * 1024),
                               max_message_bytes=1024 * 1024)
        try:
            with pytest.raises(ClientError) as caught:
                await client.diagnostics(tmp_path / "b.py", "ERROR:x\n", "python",
                                         deadline=deadline())
            assert caught.value.reason is UnknownReason.CRASHED
            assert "exceeds the limit of 1048576 bytes" in caught.value.detail
            assert client.pid is not None and not running(client.pid)
        finally:
            await client.stop()

    run(body)


@pytest.mark.real
def test_server_requests_are_answered(tmp_path: Path) -> None:
    record = tmp_path / "rec.jsonl"
    settings = {"fake": {"level": 3}, "css": {"validate": True}}

    async def body() -> None:
        client = await started(
            tmp_path, "--server-requests", "--config-sections", "fake,css.validate,missing",
            "--record", str(record), settings=settings,
        )
        try:
            await client.diagnostics(tmp_path / "q.py", "x\n", "python", deadline=deadline())
        finally:
            await client.stop()

    run(body)
    events = [json.loads(line) for line in record.read_text().splitlines()]
    responses = {e["method"]: e for e in events if e.get("event") == "response"}
    assert responses["workspace/configuration"]["result"] == [{"level": 3}, True, None]
    assert "result" in responses["window/workDoneProgress/create"]
    assert responses["window/showMessageRequest"]["result"] is None
    assert "error" not in responses["client/registerCapability"]


@pytest.mark.real
def test_stop_kills_a_server_that_ignores_exit_and_sigterm_with_its_children(
    tmp_path: Path,
) -> None:
    async def body() -> None:
        client = await started(tmp_path, "--ignore-exit", "--ignore-sigterm", "--spawn-child",
                               "--leave-child", shutdown_grace=0.3)
        pid = client.pid
        assert pid is not None
        children = descendants(pid)
        assert children, "the fake server should have spawned a child"
        await client.stop()
        assert client.state is ServerState.STOPPED
        assert not running(pid)
        assert not any(running(child) for child in children)

    run(body)


@pytest.mark.real
def test_stderr_flood_does_not_wedge_the_server(tmp_path: Path) -> None:
    async def body() -> None:
        client = await started(tmp_path, "--log-stderr", str(4 * 1024 * 1024))
        try:
            _, diags = await client.diagnostics(tmp_path / "e.py", "ERROR:x\n", "python",
                                                deadline=deadline())
            assert [d.message for d in diags] == ["x"]
        finally:
            await client.stop()

    run(body)


@pytest.mark.real
def test_missing_binary_is_not_installed(tmp_path: Path) -> None:
    async def body() -> None:
        client = LanguageClient(spec(), tmp_path, ("/nonexistent/server-binary",))
        with pytest.raises(ClientError) as caught:
            await client.start(5)
        assert caught.value.reason is UnknownReason.NOT_INSTALLED

    run(body)


def test_alive_helper_sees_this_process() -> None:
    assert running(os.getpid())


@pytest.mark.real
def test_versionless_rounds_settle_on_the_last_push(tmp_path: Path) -> None:
    """An empty push followed by the real one (typescript-language-server) is not 'clean'."""

    async def body() -> None:
        client = await started(tmp_path, "--versionless-push", "--empty-push-first-ms", "60")
        try:
            path = tmp_path / "ts.py"
            _, first = await client.diagnostics(path, "ERROR:real\n", "python",
                                                deadline=deadline())
            assert [d.message for d in first] == ["real"]
            _, fixed = await client.diagnostics(path, "fine\n", "python", deadline=deadline())
            assert fixed == ()
            _, again = await client.diagnostics(path, "x\nERROR:again\n", "python",
                                                deadline=deadline())
            assert [(d.range.start.line, d.message) for d in again] == [(1, "again")]
        finally:
            await client.stop()

    run(body)


@pytest.mark.real
def test_malformed_initialize_answer_fails_and_leaves_no_process(tmp_path: Path) -> None:
    async def body() -> None:
        client = LanguageClient(spec(), tmp_path, fake_command("--bad-initialize-result"))
        with pytest.raises(ClientError) as caught:
            await client.start(5)
        assert caught.value.reason is UnknownReason.FAILED
        assert caught.value.detail.startswith("initialize answer unusable:")
        assert client.pid is not None and not running(client.pid)

    run(body)


@pytest.mark.real
def test_server_that_stops_reading_ends_the_connection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A wedged server whose input pipe is full costs the write timeout, not every budget."""
    from ipylsp.lsp import jsonrpc

    monkeypatch.setattr(jsonrpc, "WRITE_TIMEOUT", 0.3)

    async def body() -> None:
        client = await started(tmp_path, "--stop-reading")
        try:
            big = "x = 1\n" * 200_000  # 1.2 MB: more than a pipe holds
            with pytest.raises(ClientError) as caught:
                await client.diagnostics(tmp_path / "big.py", big, "python",
                                         deadline=deadline(30))
            assert caught.value.reason is UnknownReason.CRASHED
            assert "stopped reading its input" in caught.value.detail
            assert not client.alive
        finally:
            await client.stop()
        assert client.pid is not None and not running(client.pid)

    run(body)


def test_absurdly_nested_json_is_a_bad_message_not_a_dead_connection() -> None:
    from typing import cast

    from ipylsp.lsp.framing import encode_message
    from ipylsp.lsp.jsonrpc import Endpoint

    async def body() -> None:
        reader = asyncio.StreamReader()
        nested = b"[" * 200_000 + b"]" * 200_000
        reader.feed_data(b"Content-Length: %d\r\n\r\n" % len(nested) + nested)
        after = encode_message({"jsonrpc": "2.0", "method": "window/logMessage",
                                "params": {"type": 4, "message": "still here"}})
        reader.feed_data(after)
        reader.feed_eof()
        seen: list[str] = []
        endpoint = Endpoint(reader, cast(asyncio.StreamWriter, None), name="nested")
        endpoint.on_notification("window/logMessage", lambda p: seen.append(p["message"]))
        endpoint.start()
        await endpoint.closed.wait()
        assert endpoint.bad_messages == 1
        assert seen == ["still here"]
        assert endpoint.close_reason == "server closed its output"

    run(body)
