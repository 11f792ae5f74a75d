"""One check of one file: pick servers, fan out, baseline and delta, roll forward.

Runs on the service's loop. Every failure becomes an `Unknown` entry; nothing raises to the
caller except bad arguments. The syntax tier's policy is in `tiers`, other files around the
write in `others`, automatic installs in `autoinstall`, report building in `reports`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ipylsp.analysis.model import Diagnostic, FileReport, Unknown, UnknownReason
from ipylsp.lsp import installers, languages, locate, pyenv, registry, roots
from ipylsp.lsp.client import ClientError, LanguageClient
from ipylsp.lsp.spec import InstallRecipe, ServerSpec
from ipylsp.service import others, tiers
from ipylsp.service.autoinstall import AutoInstaller
from ipylsp.service.baseline import KnownFile, git_head_text, read_text
from ipylsp.service.pool import ClientPool, Slot
from ipylsp.service.reports import display_path, display_root, file_report, merge_reports
from ipylsp.settings import Settings

__all__ = ["Checker", "FileWrite", "ServerOutcome", "display_path", "merge_reports"]

log = logging.getLogger(__name__)

MAX_KNOWN_FILES = 2000
"""Files whose last text and results are kept as baselines; older ones fall back to git HEAD."""


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
        self._auto = AutoInstaller()

    @property
    def _installs(self) -> dict[str, concurrent.futures.Future[installers.InstallResult]]:
        """Automatic installs by server id (see `autoinstall`)."""
        return self._auto.installs

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
        before_text = await self._before_text(
            path, before, known, disk_text if content is not None else None
        )
        language_id = languages.language_id(path)
        shown_root = display_root(path)
        if language_id is None:
            return [file_report(path, shown_root, (), (), (), (), ())]
        if content is None:
            await others.announce(self.pool, self.known, [path])
        syntax_pair = tiers.syntax_pair(path, before_text, new_text)
        outcomes: list[ServerOutcome] = []
        if not tiers.holds_back_servers(
            before_text,
            new_text,
            syntax_pair,
            semantic_after_syntax_error=self.settings.semantic_after_syntax_error,
        ):
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
            outcomes.extend(self._misconfigured(language_id, path, before_text))
        introduced, current, fixed = tiers.combine(
            before_text,
            new_text,
            syntax_pair,
            [(o.before_text, o.baseline, o.current) for o in outcomes if o.unknown is None],
            asked=len(outcomes),
            semantic_after_syntax_error=self.settings.semantic_after_syntax_error,
        )
        unknown = tuple(o.unknown for o in outcomes if o.unknown is not None)
        if content is None:
            self._roll_forward(path, new_text, outcomes, known)
        else:
            await self._restore(path, language_id, disk_text, outcomes)
        reports = [
            file_report(
                path,
                shown_root,
                introduced,
                current,
                fixed,
                unknown,
                tuple(o.spec.id for o in outcomes),
            )
        ]
        if content is None:
            answered = [
                (o.spec.id, o.client)
                for o in outcomes
                if o.client is not None and o.unknown is None
            ]
            reports.extend(await others.rediagnose(self.known, path, answered, deadline, batch))
        return reports

    async def sync_written(self, paths: Iterable[Path]) -> None:
        """Files written together: all synced before any is diagnosed (see `others`)."""
        await others.sync_written(self.pool, self.known, paths)

    async def _before_text(
        self, path: Path, before: str | None, known: KnownFile | None, on_disk: str | None
    ) -> str:
        if before is not None:
            return before
        if on_disk is not None:
            return on_disk
        if known is not None:
            return known.text
        # git runs in a worker thread: the loop keeps serving other checks meanwhile
        head = await asyncio.get_running_loop().run_in_executor(None, git_head_text, path)
        return head if head is not None else ""

    def _misconfigured(
        self, language_id: str, path: Path, before_text: str
    ) -> list[ServerOutcome]:
        """An UNKNOWN for each configured role that names no server (never a silent clean)."""
        outcomes = []
        for role in registry.unknown_roles(language_id, self.settings):
            spec = ServerSpec(id=role, name=role, languages=(language_id,), command=(role,),
                              install=InstallRecipe("path"))
            unknown = self._unknown(
                spec, display_root(path) or path.parent, UnknownReason.FAILED,
                f"no server named {role!r} (IPyLSP.language_servers; see `ipylsp list`)",
            )
            outcomes.append(ServerOutcome(spec, None, None, before_text, unknown=unknown))
        return outcomes

    def installed(self, spec: ServerSpec) -> bool:
        return locate.is_installed(spec, locate.data_dir(self.settings))

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
        data = locate.data_dir(self.settings)
        resolution = locate.resolve(spec, data)
        gate = display_root(path)
        if resolution.command is None:
            detail = resolution.reason or f"{spec.command[0]} not found"
            if self.settings.install_strategy == "auto" and installers.installable(spec):
                detail = self._auto.status(spec, data)
            return self._unknown(
                spec, gate or path.parent, UnknownReason.NOT_INSTALLED, detail,
                registry.install_hint(spec),
            )
        root = roots.find_root(path, spec.root_markers, git_worktree=gate)
        return self.pool.find(spec.id, root) or self.pool.add(
            pyenv.for_server(spec, root, ceiling=gate), root, resolution.command
        )

    async def start_servers(self, path: Path, deadline: float) -> list[str]:
        """Acquire every server for `path`; a line per server saying how that went."""
        lines = []
        for spec in registry.servers_for(path, self.settings, self.installed):
            slot = self.slot_for(spec, path)
            if isinstance(slot, Unknown):
                lines.append(f"{spec.id}: {slot.reason.value}: {slot.detail} {slot.hint}".strip())
                continue
            try:
                client = await self.pool.acquire(slot, deadline, patient=True)
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
        self._auto.close()

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
        if known is not None:  # servers not asked this time (held back by a syntax error)
            asked = {o.spec.id for o in outcomes}
            for server_id in {*known.results, *known.missed} - asked:
                missed[server_id] = known.missed.get(server_id, known.text)
        self.known.pop(path, None)  # `known` is ordered by last check: see `others.rediagnose`
        self.known[path] = KnownFile(new_text, results, missed)
        while len(self.known) > MAX_KNOWN_FILES:  # forget the least recently checked texts
            del self.known[next(iter(self.known))]

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


def _server_before(spec: ServerSpec, before_text: str, known: KnownFile | None) -> str:
    """The text a server's delta starts from: the write's before, unless it missed writes."""
    if known is not None and spec.id in known.missed:
        return known.missed[spec.id]
    return before_text
