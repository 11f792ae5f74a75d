"""What a write does to the files around it: file events, files written together, and other
open documents re-diagnosed.

Apart from the checker because it is a pass of its own with its own rules: servers hear of
created, changed and deleted files before anything is diagnosed; files written together are
all synced first; afterwards the files checked last are re-diagnosed (a push server rebuilt)
and compared with their last known results.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

from ipylsp.analysis import delta as delta_mod
from ipylsp.analysis.model import FileReport
from ipylsp.lsp import languages
from ipylsp.lsp.client import (
    FILE_CHANGED,
    FILE_CREATED,
    FILE_DELETED,
    ClientError,
    LanguageClient,
)
from ipylsp.lsp.documents import path_to_uri
from ipylsp.service.baseline import KnownFile, TextTooLarge, read_text
from ipylsp.service.pool import ClientPool
from ipylsp.service.reports import display_root, file_report, merge_reports

MAX_OTHER_FILES = 10


async def announce(pool: ClientPool, known: dict[Path, KnownFile], paths: list[Path]) -> None:
    """Running servers whose workspace holds a written file learn that it was created,
    changed or deleted on disk, before anything is diagnosed: a deleted module breaks
    its importers, a created one fixes them."""
    events = [(path, file_event(path, known)) for path in paths]
    for _, client in pool.clients():
        if not client.alive:
            continue
        mine = [(p, kind) for p, kind in events if p.is_relative_to(client.root)]
        try:
            await client.files_changed(mine)
        except ClientError:
            continue


def file_event(path: Path, known: dict[Path, KnownFile]) -> int:
    if not path.exists():
        return FILE_DELETED
    return FILE_CHANGED if path in known else FILE_CREATED


async def sync_written(
    pool: ClientPool, known: dict[Path, KnownFile], paths: Iterable[Path]
) -> None:
    """Files written together (one cell wrote several): every server that has one of them
    open sees its new text (or loses it, deleted) before any of them is diagnosed.
    Otherwise a changed signature and its updated caller, written together, would be
    checked one against the other's old text: a broken caller that never was."""
    paths = list(paths)
    await announce(pool, known, paths)
    for path in paths:
        try:
            text = read_text(path)
        except TextTooLarge:
            continue
        for _, client in pool.clients():
            doc = client.documents.get(path_to_uri(path))
            if doc is None or not client.alive:
                continue
            try:
                if text is None:
                    await client.close_document(path)
                else:
                    await client.sync_document(path, text, doc.language_id)
            except ClientError:
                continue


async def rediagnose(
    known: dict[Path, KnownFile],
    batch: frozenset[Path],
    answered: Iterable[tuple[str, LanguageClient]],
    deadline: float,
) -> list[FileReport]:
    """Re-diagnose other open documents whose results we know; report what broke there.

    Once per batch: `batch` holds the files the check wrote (each had its own diagnostics),
    `answered` the (server id, client) of each server that answered for them. `known` is
    ordered by last check. All at once: a push server rebuilds each document (twice, see
    `fresh`), and servers build documents in parallel."""
    jobs = []
    for server_id, client in answered:
        if not client.alive:
            continue
        # The files checked last, not the documents used last: re-diagnosing others
        # touches them too, and would push the file checked just before out of the cap.
        others = list(
            itertools.islice(
                (
                    p
                    for p in reversed(known)
                    if p not in batch and client.documents.get(path_to_uri(p)) is not None
                ),
                MAX_OTHER_FILES,
            )
        )
        for other in others:
            other_known = known.get(other)
            if other_known is None or server_id not in other_known.results:
                continue
            jobs.append(_other_file(client, server_id, other, other_known, deadline))
    reports = await asyncio.gather(*jobs)
    return merge_reports([report for report in reports if report is not None])


async def _other_file(
    client: LanguageClient,
    server_id: str,
    other: Path,
    known: KnownFile,
    deadline: float,
) -> FileReport | None:
    language_id = languages.language_id(other) or "plaintext"
    try:
        _, now = await client.diagnostics(
            other, known.text, language_id, deadline=deadline, fresh=True
        )
    except ClientError:
        return None
    result = delta_mod.compute_delta(known.text, known.text, known.results[server_id], now)
    known.results[server_id] = now
    if not (result.introduced or result.fixed):
        return None
    report = file_report(
        other, display_root(other), result.introduced, now, result.fixed, (), (server_id,)
    )
    return replace(report, elsewhere=True)
