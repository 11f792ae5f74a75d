"""`%load_ext ipylsp`: cell hooks that check what each cell wrote and show what it broke.

Loading is cheap: it installs two event callbacks, the `%lsp` magics and the `IPyLSP`
configurable; the service's loop thread starts on first use and servers when a file needs one.
`%unload_ext ipylsp` removes every hook and stops the servers. Loading twice is harmless.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from ipylsp.config import IPyLSP
from ipylsp.ipython.display import CellReport
from ipylsp.ipython.watch import Write, WriteWatcher
from ipylsp.lsp import roots

log = logging.getLogger(__name__)

_ATTR = "_ipylsp_extension"


class CellChecks:
    """Per shell: the watcher between pre_run_cell and post_run_cell, and the reporting."""

    def __init__(self, shell: Any) -> None:
        import ipylsp

        self.shell = shell
        self.config = IPyLSP(parent=shell)
        self.service = ipylsp.get_service(self.config.to_settings())
        self.service.configure(**_settings_changes(self.config))
        self.watcher = WriteWatcher(
            roots_filter=self._in_workspace,
            roots=self._roots,
            child_mode="auto" if self.config.check_shell_writes else "off",
        )
        self.config.observe(self._on_config_change)
        self.last_writes: list[Write] = []
        self.magics: Any = None  # the `LspMagics` registered with the shell

    # -- configuration ------------------------------------------------------------------------

    def _on_config_change(self, change: Any) -> None:
        name = change["name"]
        if name == "check_shell_writes":
            self.watcher.child_mode = "auto" if change["new"] else "off"
        self.service.configure(**_settings_changes(self.config))

    def _in_workspace(self, path: Path) -> bool:
        return roots.workspace_gate(path, tuple(self.config.workspace_markers)) is not None

    def _roots(self) -> list[str]:
        cwd = os.getcwd()
        gate = roots.workspace_gate(cwd, tuple(self.config.workspace_markers))
        return [str(gate)] if gate is not None else [cwd]

    # -- events -------------------------------------------------------------------------------

    def pre_run_cell(self, info: Any = None) -> None:
        if not self.config.enabled:
            return
        try:
            ident = self.service.thread_ident
            if ident is not None:
                self.watcher.ignored_threads.add(ident)
            self.watcher.begin_cell()
        except Exception:  # never break the user's cell
            log.exception("ipylsp: could not start watching the cell")

    def post_run_cell(self, result: Any = None) -> None:
        if not self.watcher.watching:
            return
        try:
            writes = self.watcher.end_cell()
            self.last_writes = writes
            if writes and self.config.enabled:
                self.report(writes, self.watcher.notes)
        except Exception:
            log.exception("ipylsp: could not check the cell's writes")

    def report(self, writes: list[Write], notes: tuple[str, ...] = ()) -> None:
        from ipylsp.service.service import FileCheck

        by_path = {w.path: w for w in writes}
        checks = [FileCheck(w.path, before=_before(w, by_path)) for w in writes]
        output = CellReport()
        report = self.service.check_files(checks, progress=output.waiting)
        output.show(report, self.config, notes)

    def close(self) -> None:
        self.config.unobserve(self._on_config_change)
        self.watcher.close()


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


def _settings_changes(config: IPyLSP) -> dict[str, Any]:
    settings = config.to_settings()
    return {name: getattr(settings, name) for name in settings.__dataclass_fields__}


def load_ipython_extension(shell: Any) -> None:
    if getattr(shell, _ATTR, None) is not None:
        return
    from ipylsp.ipython.magics import LspMagics

    checks = CellChecks(shell)
    setattr(shell, _ATTR, checks)
    shell.events.register("pre_run_cell", checks.pre_run_cell)
    shell.events.register("post_run_cell", checks.post_run_cell)
    checks.magics = LspMagics(shell, checks)  # Magics.__init__ adds it to shell.configurables
    shell.register_magics(checks.magics)
    if checks.config not in shell.configurables:
        shell.configurables.append(checks.config)


def unload_ipython_extension(shell: Any) -> None:
    checks: CellChecks | None = getattr(shell, _ATTR, None)
    if checks is None:
        return
    import ipylsp

    for event, callback in (
        ("pre_run_cell", checks.pre_run_cell),
        ("post_run_cell", checks.post_run_cell),
    ):
        if callback in shell.events.callbacks[event]:
            shell.events.unregister(event, callback)
    manager = shell.magics_manager
    for kind in ("line", "cell"):
        manager.magics[kind].pop("lsp", None)
    # The magics object too (it holds `checks`): the registry and the configurables keep it.
    name = type(checks.magics).__name__
    if checks.magics is not None and manager.registry.get(name) is checks.magics:
        del manager.registry[name]
    for configurable in (checks.config, checks.magics):
        if configurable is not None and configurable in shell.configurables:
            shell.configurables.remove(configurable)
    checks.close()
    setattr(shell, _ATTR, None)
    ipylsp._reset_service()


def current(shell: Any) -> CellChecks | None:
    return getattr(shell, _ATTR, None)
