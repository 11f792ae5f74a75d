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
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from pathlib import Path

from ipylsp.analysis import delta as delta_mod
from ipylsp.lsp.client import (
    FILE_CHANGED,
    FILE_CREATED,
    FILE_DELETED,
    ClientError,
    LanguageClient,
)
from ipylsp.lsp.documents import path_to_uri
from ipylsp.model.diagnostics import Diagnostic, FileReport, Severity
from ipylsp.servers import languages
from ipylsp.service.check.file_reports import file_report, merge_reports
from ipylsp.service.check.known_files import KnownFile, KnownFiles
from ipylsp.service.runtime.pool import ClientPool

MAX_OTHER_FILES = 10


async def announce(
    pool: ClientPool,
    events: list[tuple[Path, int]],
    wants: Callable[[str, LanguageClient], bool] = lambda server_id, client: True,
) -> None:
    """Running servers whose workspace holds a written file learn that it was created,
    changed or deleted on disk: a deleted module breaks its importers, a created one fixes
    them. `wants(server id, client)`: whether that server is told at all (see `batch`)."""
    if not events:
        return
    for slot, client in pool.clients():
        if not client.alive or not wants(slot.spec.id, client):
            continue
        mine = [(p, kind) for p, kind in events if p.is_relative_to(client.root)]
        try:
            await client.files_changed(mine)
        except ClientError:
            continue


def file_event(path: Path, known: KnownFiles, before: str = "") -> int:
    """The event for a written file: deleted, changed (known, or it had a text before),
    else created."""
    if not path.exists():
        return FILE_DELETED
    return FILE_CHANGED if path in known or before else FILE_CREATED


async def sync_written(pool: ClientPool, texts: Mapping[Path, str | None]) -> None:
    """Files written together (one cell wrote several; `texts`: their new texts, None when
    gone): every server that has one of them open sees its new text (or loses it, deleted)
    before any of them is diagnosed. Otherwise a changed signature and its updated caller,
    written together, would be checked one against the other's old text: a broken caller
    that never was."""
    clients = [client for _, client in pool.clients() if client.alive]
    for path, text in texts.items():
        uri = path_to_uri(path)
        for client in clients:
            doc = client.documents.get(uri)
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
    known: KnownFiles,
    batch: frozenset[Path],
    answered: Iterable[tuple[str, LanguageClient]],
    deadline: float,
    *,
    shown_root: Callable[[Path], Path | None],
    only_imports: bool = False,
) -> list[FileReport]:
    """Re-diagnose other open documents whose results we know; report what broke there.

    Once per batch: `batch` holds the files the check wrote (each had its own diagnostics),
    `answered` the (server id, client) of each server that answered for them; `shown_root`
    gives a file's workspace (`Checker.shown_root`). `known` is
    ordered by last check. All at once: a push server rebuilds each document (twice, see
    `fresh`), and servers build documents in parallel. `only_imports`: the batch only
    created files, which can fix another file's unresolved imports but not break it: files
    without an error about an import or a module are left alone (a created module that
    shadows another is not followed). That spares waiting for pyright's re-analysis after a
    creation in the common case."""
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
                    for p in known.recent()
                    if p not in batch and client.documents.get(path_to_uri(p)) is not None
                ),
                MAX_OTHER_FILES,
            )
        )
        for other in others:
            other_known = known.get(other)
            if other_known is None or server_id not in other_known.results:
                continue
            if only_imports and not any(
                about_imports(d) for d in other_known.results[server_id]
            ):
                continue
            jobs.append(
                _other_file(
                    known, other_known, client, server_id, other, shown_root(other), deadline
                )
            )
    reports = await asyncio.gather(*jobs)
    return merge_reports([report for report in reports if report is not None])


def has_import_errors(
    known: KnownFiles, server_id: str, client: LanguageClient, skip: frozenset[Path]
) -> bool:
    """Whether a document the server has open (not in `skip`) had an error a new file could
    fix: only then does a creation need announcing (a file the batch opens needs no event)."""
    for doc in client.documents:
        entry = known.get(doc.path)
        if doc.path in skip or entry is None:
            continue
        if any(about_imports(d) for d in entry.results.get(server_id, ())):
            return True
    return False


_IMPORTS = re.compile(r"import|module|resolv|cannot find|not found|no such file", re.I)


def about_imports(diagnostic: Diagnostic) -> bool:
    """An error a newly created file could fix (pyright's reportMissingImports, ty's
    unresolved-import, tsc's 2307, clangd's file not found, gopls' could not import...)."""
    if diagnostic.severity is not Severity.ERROR:
        return False
    return bool(_IMPORTS.search(f"{diagnostic.code or ''} {diagnostic.message}"))


async def _other_file(
    store: KnownFiles,
    known: KnownFile,
    client: LanguageClient,
    server_id: str,
    other: Path,
    root: Path | None,
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
    store.refresh(other, known, server_id, now)
    if not (result.introduced or result.fixed):
        return None
    report = file_report(
        other, root, result.introduced, now, result.fixed, (), (server_id,)
    )
    return replace(report, elsewhere=True)
