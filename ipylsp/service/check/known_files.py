"""What the service knows of the files it checked: the last text per path, what each server said
about exactly that text, and the text a server that missed writes catches up from.

One owner for the baselines that roll forward: the checker records a check's end, the
other-files pass refreshes a server's results, a late answer catches up; the facade reads.
The current errors of the files (not the in-memory documents) are counted as entries change,
so the status count costs nothing per check.
Ordered by last check (the newest last) and capped: the least recently checked are forgotten
and fall back to git HEAD (`before_text.git_head_text`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ipylsp.analysis.report.merge import errors
from ipylsp.model.diagnostics import Diagnostic
from ipylsp.service.check.before_text import MAX_FILE_BYTES, FileRefused, read_text

MAX_KNOWN_FILES = 2000
"""Files whose last text and results are kept as baselines; older ones fall back to git HEAD."""


@dataclass
class KnownFile:
    """The last text checked for a path and what each server said about exactly that text."""

    text: str
    results: dict[str, tuple[Diagnostic, ...]] = field(default_factory=dict)
    missed: dict[str, str] = field(default_factory=dict)
    """Servers that did not answer for `text`: the text their next delta starts from."""


class KnownFiles:
    """The known files, least recently checked first; only this class changes them."""

    def __init__(self, cap: int = MAX_KNOWN_FILES) -> None:
        self._cap = cap
        self._files: dict[Path, KnownFile] = {}
        self._virtual: set[Path] = set()
        """In-memory documents (the notebook's cells): kept, but never listed as files."""
        self._errors: dict[Path, int] = {}
        self._total = 0

    @property
    def errors(self) -> int:
        """Current errors of the known files (one per problem however many servers report
        it), kept up to date as entries change."""
        return self._total

    def _count(self, path: Path) -> None:
        entry = self._files.get(path)
        now = 0 if entry is None or path in self._virtual else errors(
            d for ds in entry.results.values() for d in ds
        )
        self._total += now - self._errors.pop(path, 0)
        if now:
            self._errors[path] = now

    def get(self, path: Path) -> KnownFile | None:
        return self._files.get(path)

    def __contains__(self, path: object) -> bool:
        return path in self._files

    def __iter__(self) -> Iterator[Path]:
        return (p for p in self._files if p not in self._virtual)

    def __len__(self) -> int:
        return len(self._files)

    def recent(self) -> Iterator[Path]:
        """The files checked last first (not the documents used last: re-diagnosing other
        files touches those too)."""
        return (p for p in reversed(self._files) if p not in self._virtual)

    def changed_on_disk(
        self, paths: Iterable[Path] | None = None, max_bytes: int | None = MAX_FILE_BYTES
    ) -> list[Path]:
        """Known files (all, or those of `paths`) whose disk text is not the last checked (or
        is no longer read: grown over `max_bytes`, made unreadable)."""
        candidates = (list(self) if paths is None
                      else [p for p in paths if p in self and p not in self._virtual])
        return [p for p in candidates if self._disk_text(p, max_bytes) != self._files[p].text]

    @staticmethod
    def _disk_text(path: Path, max_bytes: int | None) -> str | FileRefused | None:
        try:
            return read_text(path, max_bytes)
        except FileRefused as refused:
            return refused

    def forget(self, path: Path) -> None:
        self._files.pop(path, None)
        self._virtual.discard(path)
        self._count(path)

    def record(
        self,
        path: Path,
        text: str,
        results: Mapping[str, tuple[Diagnostic, ...]],
        missed: Mapping[str, str],
        asked: frozenset[str],
        *,
        virtual: bool = False,
    ) -> None:
        """A check's end: `text` becomes the baseline. A server that did not answer
        (`missed`: the text its delta starts from) or was not `asked` this time (held back
        by a syntax error) keeps the text it last answered for, or the first one it missed,
        so it catches up on everything later."""
        missed = dict(missed)
        previous = self._files.pop(path, None)  # re-inserted: ordered by last check
        if previous is not None:
            for server_id in {*previous.results, *previous.missed} - asked:
                missed[server_id] = previous.missed.get(server_id, previous.text)
        self._files[path] = KnownFile(text, dict(results), missed)
        if virtual:
            self._virtual.add(path)
        self._count(path)
        while len(self._files) > self._cap:  # forget the least recently checked texts
            self.forget(next(iter(self._files)))

    def refresh(
        self, path: Path, known: KnownFile, server_id: str, results: tuple[Diagnostic, ...]
    ) -> None:
        """A server's new results for the same text (the file was re-diagnosed elsewhere);
        `known` is the entry the text was taken from (a newer check replaces it)."""
        known.results[server_id] = results
        if self._files.get(path) is known:
            self._count(path)

    def catch_up(
        self, path: Path, text: str | None, server_id: str, results: tuple[Diagnostic, ...]
    ) -> KnownFile | None:
        """A late answer for `text` from a server that missed it: its results become known;
        None (nothing changed) when a newer check has moved on."""
        known = self._files.get(path)
        if known is None or known.text != text or server_id not in known.missed:
            return None
        del known.missed[server_id]
        known.results[server_id] = results
        self._count(path)
        return known
