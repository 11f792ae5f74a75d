"""One check of one file: pick servers, fan out, baseline and delta, other open files.

Runs on the service's loop. Every failure becomes an `Unknown` entry; nothing raises to the
caller except bad arguments.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import itertools
import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path

from ipylsp.analysis import delta as delta_mod
from ipylsp.analysis.model import Diagnostic, FileReport, Severity, Unknown, UnknownReason
from ipylsp.analysis.syntax import syntax_diagnostics
from ipylsp.lsp import installers, languages, locate, pyenv, registry, roots
from ipylsp.lsp.client import (
    FILE_CHANGED,
    FILE_CREATED,
    FILE_DELETED,
    ClientError,
    LanguageClient,
)
from ipylsp.lsp.documents import path_to_uri
from ipylsp.lsp.spec import ServerSpec
from ipylsp.service.baseline import KnownFile, TextTooLarge, git_head_text, read_text
from ipylsp.service.pool import ClientPool, Slot
from ipylsp.settings import Settings

log = logging.getLogger(__name__)

SYNTAX_ID = "syntax"
MAX_OTHER_FILES = 10


@dataclass
class ServerOutcome:
    spec: ServerSpec
    slot: Slot | None
    client: LanguageClient | None
    before_text: str = ""
    baseline: tuple[Diagnostic, ...] = ()
    current: tuple[Diagnostic, ...] = ()
    unknown: Unknown | None = None


@dataclass(frozen=True)
class FileWrite:
    """What every server of one check is asked about."""

    path: Path
    language_id: str
    new_text: str | None
    known: KnownFile | None
    preflight: bool
    deadline: float


class Checker:
    def __init__(self, settings: Settings, pool: ClientPool) -> None:
        self.settings = settings
        self.pool = pool
        self.known: dict[Path, KnownFile] = {}
        self._reported_unknown: set[tuple[str, Path, UnknownReason]] = set()
        self._installs: dict[str, concurrent.futures.Future[installers.InstallResult]] = {}
        self._install_pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="ipylsp-install"
        )

    # -- entry point --------------------------------------------------------------------------

    async def check(
        self,
        path: Path,
        *,
        content: str | None,
        before: str | None,
        deadline: float,
        batch: frozenset[Path] = frozenset(),
    ) -> list[FileReport]:
        """Reports for `path` (first) and for other open files the write broke.

        `batch`: the files written together with this one (see `sync_written`); they get
        their own checks, so they are not re-diagnosed here as "other files".
        """
        disk_text = read_text(path)
        new_text = content if content is not None else disk_text
        known = self.known.get(path)
        # A preflight (`content=`) proposes an edit of the file as it is on disk now.
        before_text = self._before_text(
            path, before, known, disk_text if content is not None else None
        )
        language_id = languages.language_id(path)
        display_root = _display_root(path)
        if language_id is None:
            return [self._file_report(path, display_root, (), (), (), (), ())]
        if content is None:
            await self._announce([path])
        syntax_pair = self._syntax_pair(path, before_text, new_text)
        blocked = syntax_pair is not None and _introduces_errors(
            before_text, new_text, syntax_pair
        )
        outcomes: list[ServerOutcome] = []
        if not blocked or self.settings.semantic_after_syntax_error:
            specs = registry.servers_for(path, self.settings, self.installed)
            write = FileWrite(path, language_id, new_text, known, content is not None, deadline)
            outcomes = list(
                await asyncio.gather(
                    *(
                        self._check_server(spec, write, _server_before(spec, before_text, known))
                        for spec in specs
                    )
                )
            )
        introduced: list[Diagnostic] = []
        fixed: list[Diagnostic] = []
        current: list[Diagnostic] = []
        triples = [(o.before_text, o.baseline, o.current) for o in outcomes if o.unknown is None]
        # The syntax tier speaks when the servers were not asked or could not answer; when
        # they answered, they report the same syntax errors themselves.
        if syntax_pair is not None and (len(triples) < len(outcomes) or not outcomes):
            triples.append((before_text, *syntax_pair))
        # When the text before did not parse, what was wrong with it is what the syntax tier
        # said (and showed); what the servers say about such a text is mostly the parse
        # error's cascade ("fixed 3 errors" after one was shown). Not with
        # semantic_after_syntax_error: then the servers' answer was what was shown.
        syntax_fixed = (
            not self.settings.semantic_after_syntax_error
            and syntax_pair is not None
            and any(d.severity is Severity.ERROR for d in syntax_pair[0])
        )
        for server_before, baseline, now in triples:
            result = delta_mod.compute_delta(server_before, new_text or "", baseline, now)
            introduced.extend(result.introduced)
            if not syntax_fixed:
                fixed.extend(result.fixed)
            current.extend(now)
        if syntax_pair is not None and syntax_fixed:
            fixed.extend(delta_mod.compute_delta(before_text, new_text or "", *syntax_pair).fixed)
        unknown = tuple(o.unknown for o in outcomes if o.unknown is not None)
        if content is None:
            self._roll_forward(path, new_text, outcomes, known)
        else:
            await self._restore(path, language_id, disk_text, outcomes)
        reports = [
            self._file_report(
                path,
                display_root,
                tuple(introduced),
                tuple(current),
                tuple(fixed),
                unknown,
                tuple(o.spec.id for o in outcomes),
            )
        ]
        if content is None:
            reports.extend(await self._other_files(path, outcomes, deadline, batch))
        return reports

    async def sync_written(self, paths: Iterable[Path]) -> None:
        """Files written together (one cell wrote several): every server that has one of them
        open sees its new text (or loses it, deleted) before any of them is diagnosed.
        Otherwise a changed signature and its updated caller, written together, would be
        checked one against the other's old text: a broken caller that never was."""
        paths = list(paths)
        await self._announce(paths)
        for path in paths:
            try:
                text = read_text(path)
            except TextTooLarge:
                continue
            for _, client in self.pool.clients():
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

    @staticmethod
    def _syntax_pair(
        path: Path, before_text: str, new_text: str | None
    ) -> tuple[tuple[Diagnostic, ...], tuple[Diagnostic, ...]] | None:
        if new_text is None:
            return None
        after = syntax_diagnostics(path, new_text)
        if after is None:
            return None
        before = syntax_diagnostics(path, before_text) if before_text else ()
        return before or (), after

    def _before_text(
        self, path: Path, before: str | None, known: KnownFile | None, on_disk: str | None
    ) -> str:
        if before is not None:
            return before
        if on_disk is not None:
            return on_disk
        if known is not None:
            return known.text
        head = git_head_text(path)
        return head if head is not None else ""

    def installed(self, spec: ServerSpec) -> bool:
        return locate.resolve_command(spec, locate.data_dir(self.settings)) is not None

    # -- one server ---------------------------------------------------------------------------

    async def _check_server(
        self, spec: ServerSpec, write: FileWrite, before_text: str
    ) -> ServerOutcome:
        slot = self.slot_for(spec, write.path)
        if isinstance(slot, Unknown):
            return ServerOutcome(spec, None, None, before_text, unknown=slot)
        root = slot.root
        outcome = ServerOutcome(spec, slot, None, before_text)
        for attempt in (1, 2):
            try:
                await self._ask_server(outcome, slot, write)
                self.pool.record_success(slot)
                return outcome
            except ClientError as exc:
                # A server found dead mid-check (killed since the last one) gets one restart.
                if exc.reason is UnknownReason.CRASHED and attempt == 1:
                    continue
                if exc.reason is UnknownReason.TIMED_OUT:
                    await self.pool.record_timeout(slot)
                outcome.unknown = self._unknown(spec, root, exc.reason, exc.detail)
                return outcome
        return outcome

    def slot_for(self, spec: ServerSpec, path: Path) -> Slot | Unknown:
        """The pool slot serving `path` for `spec` (Python env handed over), or why none can."""
        resolution = locate.resolve(spec, locate.data_dir(self.settings))
        gate = _display_root(path)
        if resolution.command is None:
            detail = resolution.reason or f"{spec.command[0]} not found"
            if self.settings.install_strategy == "auto" and installers.installable(spec):
                detail = self._auto_install(spec)
            return self._unknown(
                spec, gate or path.parent, UnknownReason.NOT_INSTALLED, detail,
                registry.install_hint(spec),
            )
        root = roots.find_root(path, spec.root_markers, git_worktree=gate)
        return self.pool.find(spec.id, root) or self.pool.add(
            pyenv.for_server(spec, root, ceiling=gate), root, resolution.command
        )

    def _auto_install(self, spec: ServerSpec) -> str:
        """Start installing `spec` in a worker thread (once); say where that stands."""
        future = self._installs.get(spec.id)
        if future is None:
            data = locate.data_dir(self.settings)
            future = self._install_pool.submit(installers.install, spec, data)
            future.add_done_callback(lambda _: locate.invalidate())
            self._installs[spec.id] = future
            return "installing now (install_strategy = auto); results from a later check"
        if not future.done():
            return "still installing (install_strategy = auto)"
        result = future.result()
        if result.ok:  # installed, but not found: say so rather than loop
            return f"installed, but not found: {result.message}"
        return f"automatic install failed: {result.message}"

    async def start_servers(self, path: Path, deadline: float) -> list[str]:
        """Acquire every server for `path`; a line per server saying how that went."""
        lines = []
        for spec in registry.servers_for(path, self.settings, self.installed):
            slot = self.slot_for(spec, path)
            if isinstance(slot, Unknown):
                lines.append(f"{spec.id}: {slot.reason.value}: {slot.detail} {slot.hint}".strip())
                continue
            try:
                client = await self.pool.acquire(slot, deadline)
            except ClientError as exc:
                lines.append(f"{spec.id}: {exc.reason.value}: {exc.detail}")
                continue
            lines.append(f"{spec.id}: running (pid {client.pid}) for {slot.root}")
        return lines

    async def _ask_server(self, outcome: ServerOutcome, slot: Slot, write: FileWrite) -> None:
        """Baseline (unless known) and current diagnostics from one server."""
        spec, before_text, path = outcome.spec, outcome.before_text, write.path
        client = outcome.client = await self.pool.acquire(slot, write.deadline)
        baseline = self._baseline_if_known(spec, before_text, write.known)
        if write.new_text is None:  # deleted: everything it had is fixed
            if baseline is None and before_text:  # a `before` the server has not seen
                _, baseline = await client.diagnostics(
                    path, before_text, write.language_id, deadline=write.deadline
                )
            await client.close_document(path)
            outcome.baseline = baseline or ()
            return
        if baseline is None and before_text:
            _, baseline = await client.diagnostics(
                path, before_text, write.language_id, deadline=write.deadline
            )
        outcome.baseline = baseline or ()
        _, outcome.current = await client.diagnostics(
            path, write.new_text, write.language_id, deadline=write.deadline,
            save=not write.preflight,
        )

    @staticmethod
    def _baseline_if_known(
        spec: ServerSpec, before_text: str, known: KnownFile | None
    ) -> tuple[Diagnostic, ...] | None:
        if known is not None and known.text == before_text and spec.id in known.results:
            return known.results[spec.id]
        if not before_text:
            return ()
        return None

    def _unknown(
        self, spec: ServerSpec, root: Path, reason: UnknownReason, detail: str, hint: str = ""
    ) -> Unknown:
        """Full the first time for a (server, root, reason); a short line after that."""
        key = (spec.id, root, reason)
        if key in self._reported_unknown:
            return Unknown(spec.id, reason, detail)
        self._reported_unknown.add(key)
        return Unknown(spec.id, reason, detail, hint)

    def close(self) -> None:
        """Drop queued automatic installs (one already running finishes in its thread)."""
        self._install_pool.shutdown(wait=False, cancel_futures=True)

    def forget_reported(self) -> None:
        self._reported_unknown.clear()

    # -- after the check ----------------------------------------------------------------------

    def _roll_forward(
        self,
        path: Path,
        new_text: str | None,
        outcomes: list[ServerOutcome],
        known: KnownFile | None,
    ) -> None:
        """The new text becomes the baseline; a server that did not answer keeps the text it
        last answered for (or the first one it missed), so it catches up on everything later."""
        if new_text is None:
            self.known.pop(path, None)
            return
        results = {o.spec.id: o.current for o in outcomes if o.unknown is None}
        missed = {o.spec.id: o.before_text for o in outcomes if o.unknown is not None}
        self.known.pop(path, None)  # `known` is ordered by last check: see `_other_files`
        self.known[path] = KnownFile(new_text, results, missed)

    async def _restore(
        self,
        path: Path,
        language_id: str,
        disk_text: str | None,
        outcomes: list[ServerOutcome],
    ) -> None:
        """After a preflight check, servers see the disk text again (no file: not open)."""
        for outcome in outcomes:
            if outcome.client is not None and outcome.client.alive:
                try:
                    if disk_text is None:
                        await outcome.client.close_document(path)
                    else:
                        await outcome.client.sync_document(path, disk_text, language_id)
                except ClientError:
                    continue

    async def _announce(self, paths: list[Path]) -> None:
        """Running servers whose workspace holds a written file learn that it was created,
        changed or deleted on disk, before anything is diagnosed: a deleted module breaks
        its importers, a created one fixes them."""
        events = [(path, self._file_event(path)) for path in paths]
        for _, client in self.pool.clients():
            if not client.alive:
                continue
            mine = [(p, kind) for p, kind in events if p.is_relative_to(client.root)]
            try:
                await client.files_changed(mine)
            except ClientError:
                continue

    def _file_event(self, path: Path) -> int:
        if not path.exists():
            return FILE_DELETED
        return FILE_CHANGED if path in self.known else FILE_CREATED

    async def _other_files(
        self,
        path: Path,
        outcomes: list[ServerOutcome],
        deadline: float,
        batch: frozenset[Path] = frozenset(),
    ) -> list[FileReport]:
        """Re-diagnose other open documents whose results we know; report what broke there.

        All at once: a push server rebuilds each document (twice, see `fresh`), and servers
        build documents in parallel."""
        jobs = []
        for outcome in outcomes:
            client = outcome.client
            if client is None or outcome.unknown is not None or not client.alive:
                continue
            # The files checked last, not the documents used last: re-diagnosing others
            # touches them too, and would push the file checked just before out of the cap.
            others = list(
                itertools.islice(
                    (
                        p
                        for p in reversed(self.known)
                        if p != path
                        and p not in batch
                        and client.documents.get(path_to_uri(p)) is not None
                    ),
                    MAX_OTHER_FILES,
                )
            )
            for other in others:
                known = self.known.get(other)
                if known is None or outcome.spec.id not in known.results:
                    continue
                jobs.append(self._other_file(client, outcome.spec.id, other, known, deadline))
        reports = await asyncio.gather(*jobs)
        return merge_reports([report for report in reports if report is not None])

    async def _other_file(
        self,
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
        return self._file_report(
            other, _display_root(other), result.introduced, now, result.fixed, (), (server_id,)
        )

    @staticmethod
    def _file_report(
        path: Path,
        display_root: Path | None,
        introduced: tuple[Diagnostic, ...],
        current: tuple[Diagnostic, ...],
        fixed: tuple[Diagnostic, ...],
        unknown: tuple[Unknown, ...],
        servers: tuple[str, ...],
    ) -> FileReport:
        return FileReport(
            path=path,
            display_path=display_path(path, display_root),
            diagnostics=introduced,
            current=current,
            fixed=fixed,
            unknown=unknown,
            servers=servers,
        )


def _server_before(spec: ServerSpec, before_text: str, known: KnownFile | None) -> str:
    """The text a server's delta starts from: the write's before, unless it missed writes."""
    if known is not None and spec.id in known.missed:
        return known.missed[spec.id]
    return before_text


def _introduces_errors(
    before_text: str,
    new_text: str | None,
    pair: tuple[tuple[Diagnostic, ...], tuple[Diagnostic, ...]],
) -> bool:
    result = delta_mod.compute_delta(before_text, new_text or "", pair[0], pair[1])
    return any(d.severity is Severity.ERROR for d in result.introduced)


def _display_root(path: Path) -> Path | None:
    return roots.workspace_gate(path)


def display_path(path: Path, root: Path | None) -> str:
    """Relative to the workspace root; absolute outside one."""
    if root is not None:
        try:
            return path.relative_to(root).as_posix()
        except ValueError:
            pass
    return str(path)


def merge_reports(reports: list[FileReport]) -> list[FileReport]:
    """One entry per path, in first-seen order; the parts of later entries appended."""
    merged: dict[Path, FileReport] = {}
    for report in reports:
        previous = merged.get(report.path)
        if previous is None:
            merged[report.path] = report
            continue
        merged[report.path] = replace(
            previous,
            diagnostics=previous.diagnostics + report.diagnostics,
            current=previous.current + report.current,
            fixed=previous.fixed + report.fixed,
            unknown=previous.unknown + report.unknown,
            servers=tuple(dict.fromkeys(previous.servers + report.servers)),
        )
    return list(merged.values())


def now() -> float:
    return time.monotonic()
