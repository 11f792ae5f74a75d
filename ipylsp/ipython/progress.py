"""Progress shown in the cell, updated in place (one line), not a flood of output lines."""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING

from ipylsp.service import InstallProgress

if TYPE_CHECKING:
    from ipylsp.model.server_spec import ServerSpec
    from ipylsp.service import InstallResult


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
        text = f"{self.title}: {plain(message)[:160]}"
        if self._handle is not None:
            self._handle.update({"text/plain": text}, raw=True)


class InstallLines(InstallProgress):
    """An install as one progress line per server: its latest output line, then done or
    FAILED."""

    def __init__(self) -> None:
        self._lines: dict[str, ProgressLine] = {}

    def started(self, spec: ServerSpec) -> None:
        self._lines[spec.id] = ProgressLine(f"installing {spec.id}")

    def output(self, server_id: str, line: str) -> None:
        if line.strip() and server_id in self._lines:
            self._lines[server_id].update(line)

    def finished(self, result: InstallResult) -> None:
        if result.server_id in self._lines:
            self._lines[result.server_id].update("done" if result.ok else "FAILED", force=True)


_CONTROL = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|[\x00-\x1f\x7f]")


def plain(line: str) -> str:
    """An installer's output line without colour codes or control characters."""
    return _CONTROL.sub("", line).strip()
