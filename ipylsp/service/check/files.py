"""The per-file steps of a check: its plan (texts, syntax tier, servers), the questions asked
of one server about it (baseline, current), and its end (delta, report, roll-forward).

Runs on the service's loop. Every failure becomes an `Unknown` entry; nothing raises to the
caller except bad arguments. How a batch of files is put to the servers is in `batch`; the
syntax tier's policy in `syntax_gate`, other files around the write in `elsewhere`,
automatic installs in `admin/autoinstall`, report building in `file_reports`.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path

from ipylsp.analysis import delta as delta_mod
from ipylsp.lsp.client import ClientError, LanguageClient
from ipylsp.model.diagnostics import Diagnostic, FileReport, Unknown, UnknownReason, display_path
from ipylsp.model.server_spec import InstallRecipe, ServerSpec
from ipylsp.servers import languages, registry
from ipylsp.service.answers import config_key
from ipylsp.service.check import syntax_gate
from ipylsp.service.check.before_text import git_head_text, read_text
from ipylsp.service.check.file_reports import file_report
from ipylsp.service.check.known_files import KnownFile
from ipylsp.service.runtime.pool import Slot
from ipylsp.service.state import ServiceState

__all__ = ["Checker", "FilePlan", "ServerOutcome"]

log = logging.getLogger(__name__)

@dataclass(eq=False)
class ServerOutcome:
    """One server's answer about one file (or why there is none)."""

    spec: ServerSpec
    slot: Slot | None
    client: LanguageClient | None
    before_text: str = ""
    baseline: tuple[Diagnostic, ...] = ()
    current: tuple[Diagnostic, ...] = ()
    unknown: Unknown | None = None
    asked_baseline: bool = False
    """The baseline came from the server now (so it is worth storing)."""
    cut: bool = False
    """Not answered when the check's budget ran out: said once per server for the whole
    check (`Report.unknown`), not under the file."""

    @functools.cached_property
    def config(self) -> str:
        """What the server's answers depend on besides the text (`answers.config_key`):
        computed once, for the baseline lookup and the puts alike."""
        return config_key(self.slot)


@dataclass(eq=False)
class FilePlan:
    """One file of a check: its facts, computed once per check (language, workspace, texts,
    the syntax tier's view), and the servers' outcomes. A written file is a `Write` in the
    watcher, a `FileCheck` into the service, a `FilePlan` while checked (a `ServerOutcome` per
    server) and a `KnownFile` afterwards (`known`)."""

    path: Path
    language_id: str | None
    new_text: str | None
    """None: the file does not exist (deleted, or moved away)."""
    disk_text: str | None
    before_text: str
    known: KnownFile | None
    preflight: bool
    """A text checked before it is written or run (a file's `content`, a cell's preflight):
    nothing is rolled forward or stored as the file's."""
    syntax: syntax_gate.SyntaxPair | None
    held_back: bool
    """A syntax error introduced by the write: the servers are not asked."""
    shown_root: Path | None = None
    """The workspace its path is shown relative to (`file_reports.display_root`)."""
    outcomes: list[ServerOutcome] = field(default_factory=list)
    virtual: bool = False
    """An in-memory document (`FileCheck.virtual`): its content is its text, never saved."""

    @functools.cached_property
    def display(self) -> str:
        return display_path(self.path, self.shown_root)

    @property
    def deleted(self) -> bool:
        return self.new_text is None and not self.preflight

    @property
    def asks_servers(self) -> bool:
        """Its servers are asked: a known language, not held back, not deleted."""
        return self.language_id is not None and not self.held_back and not self.deleted


class Checker:
    """The steps of checking one file, over the service's shared state (which it does not
    own: the facade does)."""

    def __init__(self, state: ServiceState) -> None:
        self.state = state

    # -- the steps of a check ------------------------------------------------------------------

    async def plan(
        self,
        path: Path,
        *,
        content: str | None,
        before: str | None,
        deadline: float,
        shown_root: Path | None = None,
        virtual: bool = False,
        preflight: bool = False,
    ) -> FilePlan:
        """Texts and the syntax tier's verdict for one file; no server is asked yet.
        `shown_root`: its `display_root`, when the caller knows it already. `FileRefused`
        when the file is not read (`before_text.read_text`)."""
        disk_text = content if virtual else read_text(path, self.state.settings.max_file_bytes)
        new_text = content if content is not None else disk_text
        known = self.state.known.get(path)
        # A preflight (`content=`) proposes an edit of the file as it is on disk now.
        before_text = await self._before_text(
            path, before, known, disk_text if content is not None and not virtual else None,
            deadline,
        )
        language_id = languages.language_id(path)
        syntax = syntax_gate.syntax_pair(path, before_text, new_text) if language_id else None
        held_back = language_id is None or syntax_gate.holds_back_servers(
            before_text,
            new_text,
            syntax,
            semantic_after_syntax_error=self.state.settings.semantic_after_syntax_error,
        )
        return FilePlan(
            path, language_id, new_text, disk_text, before_text, known,
            (content is not None and not virtual) or preflight, syntax, held_back,
            shown_root if shown_root is not None else self.state.resolver.shown_root(path),
            virtual=virtual,
        )

    def outcome(
        self, spec: ServerSpec, plan: FilePlan, slot: Slot | Unknown | None = None
    ) -> ServerOutcome:
        """A fresh outcome for (server, file): the slot (`Resolver.slot`, unless given), or why
        there is none."""
        before_text = _server_before(spec, plan.before_text, plan.known)
        if slot is None:
            slot = self.state.resolver.slot(spec, plan.path)
        if isinstance(slot, Unknown):
            return ServerOutcome(spec, None, None, before_text, unknown=slot)
        return ServerOutcome(spec, slot, None, before_text)

    def needs_baseline(self, outcome: ServerOutcome, plan: FilePlan) -> bool:
        """The server must diagnose the before text first (not known from an earlier check)."""
        known = self._baseline_if_known(outcome.spec, outcome.before_text, plan.known)
        if known is None and not plan.virtual:  # after a restart
            known = self.state.answers.baseline(
                plan.path, outcome.before_text, outcome.spec.id, outcome.config
            )
        if known is not None:
            outcome.baseline = known
            return False
        return True

    async def ask_baseline(
        self, client: LanguageClient, outcome: ServerOutcome, plan: FilePlan, deadline: float
    ) -> None:
        assert plan.language_id is not None
        _, outcome.baseline = await client.diagnostics(
            plan.path, outcome.before_text, plan.language_id, deadline=deadline,
            in_memory=plan.virtual,
        )
        outcome.asked_baseline = True

    async def ask_current(
        self,
        client: LanguageClient,
        outcome: ServerOutcome,
        plan: FilePlan,
        deadline: float,
        *,
        save: bool,
    ) -> None:
        """The new text's diagnostics (a preflight puts the disk text back afterwards)."""
        assert plan.language_id is not None and plan.new_text is not None
        try:
            _, outcome.current = await client.diagnostics(
                plan.path, plan.new_text, plan.language_id, deadline=deadline,
                save=save and not (plan.preflight or plan.virtual), in_memory=plan.virtual,
            )
        finally:
            if plan.preflight and not plan.virtual:  # a file's text on disk, back in place
                await self._restore(client, plan, deadline)

    def finish(self, plan: FilePlan, lifted: frozenset[str] = frozenset()) -> FileReport:
        """Delta, report and roll-forward of one file once its servers are done.

        `lifted`: servers whose unknown is said once for the whole check instead."""
        shown_root = plan.shown_root
        if plan.language_id is None:
            return file_report(plan.path, shown_root, (), (), (), (), ())
        if plan.deleted:  # a move or a delete fixes nothing (see `batch.moves`)
            self.state.known.forget(plan.path)
            serving = self.state.resolver.servers(plan.path)
            return file_report(
                plan.path, shown_root, (), (), (), (), tuple(s.id for s in serving)
            )
        outcomes = plan.outcomes
        introduced, current, fixed = syntax_gate.combine(
            plan.before_text,
            plan.new_text,
            plan.syntax,
            [(o.before_text, o.baseline, o.current) for o in outcomes if o.unknown is None],
            asked=len(outcomes),
            semantic_after_syntax_error=self.state.settings.semantic_after_syntax_error,
        )
        if plan.virtual:  # a virtual document's unknowns are its own, never lifted
            lifted = frozenset()
        said = [o for o in outcomes if not (o.cut or o.spec.id in lifted)]
        where = shown_root or plan.path.parent
        notices = self.state.notices
        unknown = tuple(notices.once(o.unknown, where) for o in said if o.unknown is not None)
        if not plan.preflight:
            self._roll_forward(plan.path, plan.new_text, outcomes, plan.known, plan.virtual)
        if not plan.virtual:
            introduced += self._stored(plan, outcomes, keep=not plan.preflight)
        return file_report(
            plan.path, shown_root, introduced, current, fixed, unknown,
            tuple(o.spec.id for o in said),
        )

    def _stored(
        self, plan: FilePlan, outcomes: list[ServerOutcome], *, keep: bool
    ) -> tuple[Diagnostic, ...]:
        """Live answers go into the store (`keep`: not a preflight's); for each server that
        did not answer, its stored answer comes back, marked cached."""
        answers = self.state.answers
        cached: tuple[Diagnostic, ...] = ()
        for o in outcomes:
            if o.unknown is None:
                if o.asked_baseline:  # first: the current text's answer is the latest
                    answers.put(plan.path, o.before_text, o.spec.id, o.baseline, o.config)
                if keep and plan.new_text is not None:
                    answers.put(plan.path, plan.new_text, o.spec.id, o.current, o.config)
            else:
                cached += answers.cached(plan.path, o.spec.id, plan.new_text, o.before_text)
        return cached

    def late_report(self, plan: FilePlan, outcome: ServerOutcome) -> FileReport | None:
        """A server's answer that came after its check returned: its delta, and the file's
        known results brought up to date; None when a newer check has moved on."""
        known = self.state.known.catch_up(
            plan.path, plan.new_text, outcome.spec.id, outcome.current
        )
        if known is None:  # a newer text was checked since: its answer is the one to keep
            return None
        if not (plan.virtual or plan.preflight) and plan.new_text:
            self.state.answers.put(
                plan.path, plan.new_text, outcome.spec.id, outcome.current, outcome.config
            )
        result = delta_mod.compute_delta(
            outcome.before_text, plan.new_text or "", outcome.baseline, outcome.current
        )
        current = tuple(d for ds in known.results.values() for d in ds)
        return file_report(
            plan.path, plan.shown_root, result.introduced, current, result.fixed, (),
            tuple(known.results),
        )

    async def _before_text(
        self,
        path: Path,
        before: str | None,
        known: KnownFile | None,
        on_disk: str | None,
        deadline: float,
    ) -> str:
        if before is not None:
            return before
        if on_disk is not None:
            return on_disk
        if known is not None:
            return known.text
        # git runs in a worker thread: the loop keeps serving other checks meanwhile; a git
        # slower than the budget counts as "no HEAD version" (everything is new)
        lookup = asyncio.get_running_loop().run_in_executor(None, git_head_text, path)
        try:
            head = await asyncio.wait_for(lookup, max(deadline - time.monotonic(), 0.0))
        except asyncio.TimeoutError:
            return ""
        return head if head is not None else ""

    def misconfigured(self, plan: FilePlan) -> list[ServerOutcome]:
        """An UNKNOWN for each configured role that names no server (never a silent clean)."""
        outcomes: list[ServerOutcome] = []
        language_id = plan.language_id
        if language_id is None:
            return outcomes
        for role in registry.unknown_roles(language_id, self.state.settings):
            spec = ServerSpec(id=role, name=role, languages=(language_id,), command=(role,),
                              install=InstallRecipe("path"))
            unknown = self.state.resolver.unknown(
                spec, plan.shown_root or plan.path.parent, UnknownReason.FAILED,
                f"no server named {role!r} (IPyLSP.language_servers; see `ipylsp list`)",
            )
            outcomes.append(ServerOutcome(spec, None, None, plan.before_text, unknown=unknown))
        return outcomes

    # -- servers ------------------------------------------------------------------------------

    @staticmethod
    def _baseline_if_known(
        spec: ServerSpec, before_text: str, known: KnownFile | None
    ) -> tuple[Diagnostic, ...] | None:
        if known is not None and known.text == before_text and spec.id in known.results:
            return known.results[spec.id]
        if not before_text:
            return ()
        return None

    # -- after the check ----------------------------------------------------------------------

    def _roll_forward(
        self,
        path: Path,
        new_text: str | None,
        outcomes: list[ServerOutcome],
        known: KnownFile | None,
        virtual: bool = False,
    ) -> None:
        """The new text becomes the baseline; a server that did not answer keeps the text it
        last answered for (or the first one it missed), so it catches up on everything later."""
        if new_text is None:
            self.state.known.forget(path)
            return
        self.state.known.record(
            path,
            new_text,
            {o.spec.id: o.current for o in outcomes if o.unknown is None},
            {o.spec.id: o.before_text for o in outcomes if o.unknown is not None},
            frozenset(o.spec.id for o in outcomes),
            virtual=virtual,
        )

    async def _restore(self, client: LanguageClient, plan: FilePlan, deadline: float) -> None:
        """After a preflight, the server sees the disk text again (no file: not open)."""
        if not client.alive or plan.language_id is None:
            return
        try:
            if plan.disk_text is None:
                await client.close_document(plan.path)
            else:
                await client.sync_document(
                    plan.path, plan.disk_text, plan.language_id, deadline=deadline
                )
        except ClientError:
            return


def _server_before(spec: ServerSpec, before_text: str, known: KnownFile | None) -> str:
    """The text a server's delta starts from: the write's before, unless it missed writes."""
    if known is not None and spec.id in known.missed:
        return known.missed[spec.id]
    return before_text
