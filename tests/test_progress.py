"""Progress text is a status, not a log: the latest message per token, bounded, never appended.

Unit cases on `Progress`, then real basedpyright: a created file and a pull with other files
open make it report "N files to analyze", then "1 file to analyze", on one token (the sequence
that used to grow into "working 49 files to analyze 49 files to analyze ...").
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from ipylsp.lsp import server_requests
from ipylsp.lsp.client import FILE_CREATED, LanguageClient
from ipylsp.lsp.server_requests import MAX_PROGRESS_CHARS, Progress
from ipylsp.servers import executables
from tests.real_servers import DATA_DIR, require, workspace


def feed(progress: Progress, token: str | int, **value: Any) -> str:
    progress.update({"token": token, "value": value})
    return progress.describe()


def test_a_report_replaces_the_message_of_its_token() -> None:
    progress = Progress()
    seen = [
        feed(progress, "t", kind="begin", title=""),
        feed(progress, "t", kind="report", message="49 files to analyze"),
        feed(progress, "t", kind="report", message="48 files to analyze"),
        feed(progress, "t", kind="report", message="1 file to analyze"),
    ]
    assert seen == ["working", "49 files to analyze", "48 files to analyze",
                    "1 file to analyze"]
    assert progress.busy
    assert feed(progress, "t", kind="end") == ""
    assert not progress.busy


def test_the_title_stays_and_the_percentage_is_the_latest() -> None:
    progress = Progress()
    assert feed(progress, 7, kind="begin", title="Indexing", message="crates", percentage=0) \
        == "Indexing crates 0%"
    assert feed(progress, 7, kind="report", percentage=40) == "Indexing crates 40%"
    assert feed(progress, 7, kind="report", message="std", percentage=95.6) == "Indexing std 96%"
    assert feed(progress, 7, kind="report", message="") == "Indexing 96%"


def test_the_most_recent_work_is_shown_and_the_others_counted() -> None:
    progress = Progress()
    feed(progress, "a", kind="begin", title="Loading", message="workspace")
    assert feed(progress, "b", kind="begin", title="Checking") == "Checking (+1 more)"
    assert feed(progress, "a", kind="report", message="3/9") == "Loading 3/9 (+1 more)"
    assert feed(progress, "a", kind="end") == "Checking"


def test_a_report_without_begin_or_after_end_does_not_make_the_server_busy() -> None:
    progress = Progress()
    assert feed(progress, "late", kind="report", message="1 file to analyze") == ""
    feed(progress, "t", kind="begin", title="x")
    feed(progress, "t", kind="end")
    assert feed(progress, "t", kind="report", message="stray") == ""
    assert not progress.busy
    progress.update(None)
    progress.update({"token": "t", "value": "not an object"})
    assert not progress.busy


def test_long_or_multiline_text_is_one_bounded_line() -> None:
    progress = Progress()
    feed(progress, "t", kind="begin", title="Analyzing\nthe   workspace")
    assert progress.describe() == "Analyzing the workspace"
    text = feed(progress, "t", kind="report", message="module_" * 40)
    assert len(text) == MAX_PROGRESS_CHARS
    assert text == ("Analyzing the workspace " + "module_" * 40)[: MAX_PROGRESS_CHARS - 1] + "…"
    feed(progress, "u", kind="begin", title="x" * 200)
    both = progress.describe()
    assert len(both) == MAX_PROGRESS_CHARS
    assert both.endswith("… (+1 more)")


def test_tokens_that_never_end_are_bounded() -> None:
    progress = Progress()
    for n in range(server_requests.MAX_PROGRESS_TOKENS + 50):
        feed(progress, n, kind="begin", title=f"job {n}")
    last = server_requests.MAX_PROGRESS_TOKENS + 49
    more = server_requests.MAX_PROGRESS_TOKENS - 1
    assert progress.describe() == f"job {last} (+{more} more)"


@pytest.mark.real
def test_basedpyright_progress_stays_one_short_status(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = require("basedpyright")
    root = workspace(tmp_path, monkeypatch)
    paths = [root / f"gen_{n}.py" for n in range(12)]
    for path in paths:
        path.write_text('x: int = "s"\n')
    seen: list[tuple[Any, str]] = []
    original = Progress.update

    def recording(self: Progress, params: Any) -> None:
        original(self, params)
        seen.append((params, self.describe()))

    monkeypatch.setattr(Progress, "update", recording)
    command = executables.resolve(spec, DATA_DIR).command
    assert command is not None

    async def body() -> None:
        client = LanguageClient(spec, root, command, max_open_documents=5)
        await client.start(60)
        try:
            deadline = time.monotonic() + 60
            for path in paths:  # as a check does: the file is announced, then diagnosed
                await client.files_changed([(path, FILE_CREATED)])
                _, diagnostics = await client.diagnostics(
                    path, path.read_text(), "python", deadline=deadline)
                assert [d.code for d in diagnostics] == ["reportAssignmentType"]
        finally:
            await client.stop()

    asyncio.run(body())
    reports: dict[str, list[str]] = {}
    for params, _ in seen:
        if params["value"].get("kind") == "report":
            reports.setdefault(params["token"], []).append(params["value"]["message"])
    # The case that used to grow: several reports on one token.
    assert any(len(messages) > 1 for messages in reports.values()), reports
    for params, described in seen:
        value = params["value"]
        if value.get("kind") == "report":
            assert described.split(" (+")[0] == value["message"], (params, described)
        assert len(described) <= MAX_PROGRESS_CHARS
