"""`%load_ext ipylsp` and `%unload_ext ipylsp`.

Loading is cheap: the `%lsp` magics (which own the cell hooks, `CellChecks`), two event
callbacks and the `IPyLSP` configurable; the service's loop thread starts on first use and
servers when a file needs one. Unloading removes every hook and stops the servers. Loading
twice is harmless.
"""

from __future__ import annotations

from typing import Any

from ipylsp.ipython.extension import ATTR, CellChecks
from ipylsp.ipython.magics import LspMagics


def load_ipython_extension(shell: Any) -> None:
    if getattr(shell, ATTR, None) is not None:
        return
    magics = LspMagics(shell)  # Magics.__init__ adds it to shell.configurables
    checks = magics.checks
    setattr(shell, ATTR, checks)
    shell.events.register("pre_run_cell", checks.pre_run_cell)
    shell.events.register("post_run_cell", checks.post_run_cell)
    shell.register_magics(magics)
    if checks.config not in shell.configurables:
        shell.configurables.append(checks.config)


def unload_ipython_extension(shell: Any) -> None:
    found: CellChecks | None = getattr(shell, ATTR, None)
    if found is None:
        return
    checks = found
    from ipylsp.service import reset_service

    for event, callback in (
        ("pre_run_cell", checks.pre_run_cell),
        ("post_run_cell", checks.post_run_cell),
    ):
        if callback in shell.events.callbacks[event]:
            shell.events.unregister(event, callback)
    manager = shell.magics_manager
    for kind in ("line", "cell"):
        manager.magics[kind].pop("lsp", None)
    # The magics object too (it owns `checks`): the registry and the configurables keep it.
    magics = manager.registry.get(LspMagics.__name__)
    if magics is not None and getattr(magics, "checks", None) is checks:
        del manager.registry[LspMagics.__name__]
    for configurable in (checks.config, magics):
        if configurable is not None and configurable in shell.configurables:
            shell.configurables.remove(configurable)
    checks.close()
    setattr(shell, ATTR, None)
    reset_service()
