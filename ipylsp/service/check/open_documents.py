"""What a server has open, matched to the disk before it is asked anything.

A server answers from the texts it was given, not from the disk: a file another process, an
editor or `git checkout` changed since (or a preflight's proposed text, never written) would
otherwise be what the server judges the checked file against — a module that lost `f` still
has it, and "no problems" is claimed for an import that fails. Before a check or a query asks
a server, every document it has open is made the file's text on disk: a changed text is sent,
a vanished file closed and announced as deleted. A document whose file's identity (inode,
size, mtime) is unchanged since it was last found equal is not read again, so a warm check
pays one `stat` per open document. Documents that live only in memory (the cells) and the
files the caller syncs itself are left alone.

Reads files through the check's reader (`before_text.read_text`: regular files, at most
`max_file_mb`); knows nothing of batches or features.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection
from pathlib import Path

from ipylsp.lsp.client import FILE_DELETED, LanguageClient
from ipylsp.service.check.before_text import FileRefused


async def match_disk(
    client: LanguageClient,
    read: Callable[[Path], str | None],
    skip: Collection[Path],
    deadline: float,
) -> None:
    """Make the documents `client` has open, but `skip`, the text of their files on disk.
    `read`: a file's text (None: there is none; `FileRefused`: not read now, left alone)."""
    gone: list[tuple[Path, int]] = []
    for doc in list(client.documents):
        if doc.in_memory or doc.path in skip:
            continue
        try:
            info = os.stat(doc.path)
        except OSError:
            info = None
        stamp = None if info is None else (info.st_ino, info.st_size, info.st_mtime_ns)
        if stamp is not None and stamp == doc.disk:
            continue
        try:
            text = read(doc.path)
        except FileRefused:  # not read now (a directory, too large, unreadable)
            continue  # leave the server's text alone
        if text is None:
            await client.close_document(doc.path)
            gone.append((doc.path, FILE_DELETED))
            continue
        if text != doc.text:
            await client.sync_document(doc.path, text, doc.language_id, deadline=deadline)
        doc.disk = stamp
    if gone:
        await client.files_changed(gone)
