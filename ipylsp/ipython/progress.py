"""Progress shown in the cell, updated in place (one line), not a flood of output lines."""

from __future__ import annotations

import re
import time
from collections.abc import Callable

from IPython.core.error import UsageError

from ipylsp.ipython.display import TextView
from ipylsp.settings import Settings


class ProgressLine:
    """One display in the cell whose text is replaced as work goes on (rate-limited)."""

    def __init__(self, title: str, min_interval: float = 0.1) -> None:
        from IPython.display import display

        self.title = title
        self.min_interval = min_interval
        self._last = 0.0
        self._handle = display(  # type: ignore[no-untyped-call]
            {"text/plain": f"{title} ..."}, raw=True, display_id=True
        )

    def update(self, message: str, *, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last < self.min_interval:
            return
        self._last = now
        text = f"{self.title}: {_plain(message)[:160]}"
        if self._handle is not None:
            self._handle.update({"text/plain": text}, raw=True)

    def callback(self) -> Callable[[str], None]:
        return lambda line: self.update(line) if line.strip() else None


_FAILURE_TAIL = 10
_CONTROL = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|[\x00-\x1f\x7f]")


def _plain(line: str) -> str:
    """An installer's output line without colour codes or control characters."""
    return _CONTROL.sub("", line).strip()


def run_installs(settings: Settings, ids: list[str], *, install_all: bool) -> TextView:
    """Install servers with a progress line per server; the summary is the returned value."""
    from ipylsp.lsp import installers, locate, registry

    if install_all:
        specs = [s for s in registry.all_specs() if installers.installable(s)]
    else:
        if not ids:
            raise UsageError("%lsp install: name servers (see %lsp list), or --all")
        unknown = [i for i in ids if registry.get(i) is None]
        if unknown:
            raise UsageError(f"%lsp install: unknown server(s): {', '.join(unknown)}")
        specs = [s for i in ids if (s := registry.get(i)) is not None]
    data = locate.data_dir(settings)
    lines: list[str] = []
    for spec in specs:
        progress = ProgressLine(f"installing {spec.id}")
        result = installers.install(spec, data, progress=progress.callback())
        progress.update("done" if result.ok else "FAILED", force=True)
        if not result.ok:  # the message points at the installer's output: show its tail
            lines.extend(f"  {_plain(line)}" for line in result.output[-_FAILURE_TAIL:])
        lines.append(result.message)  # names the server already
    locate.invalidate()
    return TextView("\n".join(lines))
