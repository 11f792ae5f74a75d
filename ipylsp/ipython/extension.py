"""The cell hooks: check what each cell wrote and show what it broke (`CellChecks`).

Owned by the `%lsp` magics object (`magics.LspMagics`), which `loading` registers with the
shell; the service's loop thread starts on first use and servers when a file needs one.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ipylsp.config import IPyLSP
from ipylsp.ipython.cells import CellHook, RanCell, ran_cell
from ipylsp.ipython.display import CellReport
from ipylsp.ipython.monitor import CellMonitor
from ipylsp.ipython.watch import Write, WriteWatcher
from ipylsp.model.diagnostics import Report
from ipylsp.service import data_dir, languages, workspace_gate

if TYPE_CHECKING:
    from collections.abc import Callable

    from ipylsp.cells.session import CellSession
    from ipylsp.model.settings import Settings
    from ipylsp.service import Service

log = logging.getLogger(__name__)

ATTR = "_ipylsp_extension"
"""The shell attribute holding the loaded extension's `CellChecks`."""


class CellChecks:
    """Per shell: the watcher between pre_run_cell and post_run_cell, and the reporting."""

    def __init__(self, shell: Any) -> None:
        self.shell = shell
        self.config = IPyLSP(parent=shell)
        self.settings = self.config.to_settings()
        """What `config` says, made again as it changes: what the hooks and magics read."""
        self._service: Service | None = None
        self.in_process: str | None = None
        """Why the service is this process's own, when the broker could not be had."""
        self.watcher = WriteWatcher(
            roots_filter=self._in_workspace,
            roots=self._roots,
            child_mode="auto" if self.settings.check_shell_writes else "off",
            max_text_bytes=self.settings.max_file_bytes,
        )
        self.config.observe(self._on_config_change)
        self.last_writes: list[Write] = []
        self._outside: set[Path] = set()
        """Source files the running cell wrote outside every workspace (not checked)."""
        self._languages = frozenset(self.settings.language_servers)
        """Languages whose files the user has servers for (a note for those only)."""
        self._data_dir = _real_data_dir(self.settings)
        """ipylsp's own files (status files, the cells' directories, the store): never checked,
        though a notebook's directory (a home) may hold them."""
        self._told: set[Path] = set()
        """Directories whose unchecked files were noted (once each)."""
        self._told_skipped: set[Path] = set()
        """Skipped directories whose files were noted (once each)."""
        self._depth = 0
        """Cells running now: 2 while a cell runs another one (`%%capture`, `run_cell`)."""
        self.cells = CellHook(shell, lambda: self.service)
        self.monitor = CellMonitor(shell)

    @property
    def service(self) -> Service:
        """The kernel's service, made on first use (`%load_ext` imports none of the service's
        machinery: a notebook that writes nothing pays nothing for it): the user's broker's
        (`broker.relay`: the servers every kernel, the server extension and the CLI share),
        else the process-wide one, in-process, and why (`in_process`, which `%lsp status`
        says)."""
        if self._service is None:
            from ipylsp.broker.relay import RelayedService, attach

            settings = _in_cwd(self.settings)
            relayed = attach(settings, budget=settings.wait_budget)  # a cell's, at most
            if not isinstance(relayed, RelayedService):  # off, or why none can be had
                from ipylsp.service import get_service

                self.in_process = relayed
                service = get_service(self.settings)
                service.configure(settings)
                self._service = service
            else:
                self._service = relayed
        return self._service

    @property
    def in_process_reason(self) -> str | None:
        """Why this kernel's servers run in it and not in the user's broker (None: they run
        in the broker, or no service was needed yet)."""
        from ipylsp.broker.relay import RelayedService

        if isinstance(self._service, RelayedService):
            return self._service.fallback
        return self.in_process

    # -- configuration ------------------------------------------------------------------------

    def _on_config_change(self, change: Any) -> None:
        name = change["name"]
        self.settings = self.config.to_settings()
        if name == "language_servers":
            self._languages = frozenset(self.settings.language_servers)
        if name == "data_dir":
            self._data_dir = _real_data_dir(self.settings)
        if name == "check_shell_writes":
            self.watcher.child_mode = "auto" if self.settings.check_shell_writes else "off"
        if name == "max_file_mb":  # the check's limit is the watcher's
            self.watcher.max_text_bytes = self.settings.max_file_bytes
        session = self.cells.started
        if name == "cell_history" and session is not None:
            session.cap = self.settings.cell_history
        if self._service is not None:
            self._service.configure(_in_cwd(self.settings))

    def _in_workspace(self, path: Path) -> bool:
        """The one rule (`roots.workspace_gate`), with the notebook's directory as the user's:
        a file in no project below it is checked. A source file outside is noted once."""
        if path.is_relative_to(self._data_dir):
            return False  # ipylsp's own file, written by its service during the cell
        markers = self.settings.workspace_markers
        if workspace_gate(path, markers, directory=os.getcwd()) is not None:
            return True
        if languages.language_id_for_name(path.name) in self._languages:
            self._outside.add(path)  # a language the user has servers for
        return False

    def _roots(self) -> list[str]:
        cwd = os.getcwd()
        gate = workspace_gate(cwd, self.settings.workspace_markers, directory=cwd)
        return [str(gate)] if gate is not None else [cwd]

    def _not_checked(self) -> tuple[str, ...]:
        """A note, once per directory, for the source files the cell wrote outside every
        workspace (they are not checked), with the fix."""
        outside, self._outside = self._outside, set()
        fresh = sorted({p.parent for p in outside} - self._told)
        self._told.update(fresh)
        notes = []
        for directory in fresh:
            shown = sorted(p.name for p in outside if p.parent == directory)
            names = ", ".join(shown[:3]) + (f" and {len(shown) - 3} more" if len(shown) > 3 else "")
            notes.append(
                f"not checked: {names} in {directory}, which is in no project and not below "
                f"the notebook's directory {os.getcwd()} (or another user can write there); "
                "`%cd` there, or make it a project (`git init`, a pyproject.toml)"
            )
        return tuple(notes)

    def _skipped(self) -> tuple[str, ...]:
        """A note, once per directory, for the source files the cell wrote below a directory
        the write watcher skips (build output, dependencies, caches, environments: `SKIP_DIRS`):
        not checked, and how to check one."""
        skipped = [Path(p) for p in self.watcher.skipped
                   if languages.language_id_for_name(Path(p).name) in self._languages]
        fresh = sorted({p.parent for p in skipped} - self._told_skipped)
        self._told_skipped.update(fresh)
        cwd = Path(os.getcwd())
        notes = []
        for directory in fresh:
            files = sorted(p for p in skipped if p.parent == directory)
            shown = [str(p.relative_to(cwd)) if p.is_relative_to(cwd) else str(p) for p in files]
            names = ", ".join(shown[:3]) + (f" and {len(shown) - 3} more" if len(shown) > 3 else "")
            notes.append(
                f"not checked: {names}, below a directory ipylsp does not watch (build output, "
                f"dependencies, caches, environments); `%lsp check {shown[0]}` checks it"
            )
        return tuple(notes)

    # -- events -------------------------------------------------------------------------------

    def pre_run_cell(self, info: Any = None) -> None:
        self._depth += 1
        if self._depth > 1:  # `run_cell` inside a cell (`%%capture`, an agent loop): the
            return  # outer cell's watching and check cover it
        if not self.settings.enabled:
            return
        try:
            if self._service is not None:  # the loop thread's own writes are not the cell's
                ident = self._service.thread_ident
                if ident is not None:
                    self.watcher.ignored_threads.add(ident)
            self.watcher.begin_cell()
            if self.settings.check_cells:
                self.monitor.begin()
        except Exception:  # never break the user's cell
            log.exception("ipylsp: could not start watching the cell")

    def post_run_cell(self, result: Any = None) -> None:
        self._depth = max(self._depth - 1, 0)
        if self._depth == 0:
            self.cells.ran = self.monitor.end(result)
        if self._depth > 0 or not self.watcher.watching:
            return
        try:
            writes = self.watcher.end_cell()
            self.last_writes = writes
            cell = ran_cell(result) if self.settings.check_cells else None
            notes = self.watcher.notes + self._not_checked() + self._skipped()
            if (writes or cell is not None or notes) and self.settings.enabled:
                self.report(writes, notes, cell)
        except Exception:
            log.exception("ipylsp: could not check the cell's writes")

    def report(
        self, writes: list[Write], notes: tuple[str, ...] = (), cell: RanCell | None = None
    ) -> None:
        """One display for the cell: what its code introduced (cells first), then what its
        writes introduced in files."""
        from ipylsp.model.checks import FileCheck

        output = CellReport()
        if writes or cell is not None:
            directory = Path(os.getcwd())
            if self.service.settings.directory != directory:  # `%cd` since the last check
                self.service.configure(_in_cwd(self.settings))
        by_path = {w.path: w for w in writes}
        checks = [FileCheck(w.path, before=_before(w, by_path)) for w in writes]
        report = None
        if cell is not None:
            try:
                report = self.cells.check(cell, output.waiting, checks)
            except Exception:  # the writes' report is shown all the same
                log.exception("ipylsp: could not check the cell's code")
        if report is None:
            report = self.service.check_files(checks, progress=output.waiting) if checks else (
                Report()
            )
        output.show(report, self.settings, notes)

    def close(self) -> None:
        self.config.unobserve(self._on_config_change)
        self.watcher.close()
        self.monitor.close()
        self.cells.close()
        from ipylsp.broker.relay import RelayedService

        if isinstance(self._service, RelayedService):  # its session in the broker ends
            self._service.close()
        self._service = None


def _before(write: Write, writes: dict[Path, Write]) -> str | None:
    """The baseline text: known before text, "" for a new file, None for "ask the service".

    A file renamed into place (`os.rename`, `shutil.move`) holds the content of its origin:
    its baseline is the origin's text before the cell, so moving a file is not reported as
    introducing every problem it already had.
    """
    origin = writes.get(write.destination_of) if write.destination_of is not None else None
    if origin is not None:
        write = origin
    if not write.before_known:
        return None
    return write.before if write.before is not None else ""


def _in_cwd(settings: Settings) -> Settings:
    """The settings, with the directory the user works in: the notebook's (`%cd` moves it)."""
    return dataclasses.replace(settings, directory=Path(os.getcwd()))


def current(shell: Any) -> CellChecks | None:
    return getattr(shell, ATTR, None)


def current_session(own: Callable[[], CellSession]) -> CellSession:
    """The cell session of the running IPython shell (its hook's, when `%load_ext ipylsp`
    loaded; else the caller's `own()`, reading the shell's namespace), or the caller's own
    (read with IPython's transforms when IPython is installed)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return own()
    from ipylsp.ipython.reading import kernel_reader, static_reader

    shell = get_ipython()
    if shell is None:  # IPython's transforms without a kernel: an agent's preflight
        session = own()
        session.attach(static_reader())
        return session
    checks = current(shell)
    if checks is not None:
        return checks.cells.session
    from ipylsp.ipython.namespace import kernel_view

    session = own()
    session.attach(kernel_reader(shell), lambda: kernel_view(shell.user_ns))
    return session


def _real_data_dir(settings: Settings) -> Path:
    """ipylsp's data dir, symlinks resolved (the watcher's paths are)."""
    return Path(os.path.realpath(data_dir(settings)))
