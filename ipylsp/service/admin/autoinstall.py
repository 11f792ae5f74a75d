"""install_strategy = "auto": a missing server is installed in a worker thread, once.

Apart from the checker because installing is slow, blocking and stateful (one future per
server, kept for later checks), while a check must answer within its budget: the check only
asks where an install stands.
"""

from __future__ import annotations

import concurrent.futures
from pathlib import Path

from ipylsp.model.server_spec import ServerSpec
from ipylsp.servers import installers


class AutoInstaller:
    """Installs on one worker thread, each server at most once per session."""

    def __init__(self) -> None:
        self.installs: dict[str, concurrent.futures.Future[installers.InstallResult]] = {}
        self._pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="ipylsp-install"
        )

    def status(self, spec: ServerSpec, data_dir: Path) -> str:
        """Start installing `spec` in the worker thread (once); say where that stands."""
        future = self.installs.get(spec.id)
        if future is None:
            from ipylsp.service.admin.server_table import (
                install_one,  # what every install goes through
            )

            future = self._pool.submit(install_one, spec, data_dir)
            self.installs[spec.id] = future
            return "installing now (install_strategy = auto); results from a later check"
        if not future.done():
            return "still installing (install_strategy = auto)"
        result = future.result()
        if result.ok:  # installed, but not found: say so rather than loop
            return f"installed, but not found: {result.message}"
        return f"automatic install failed: {result.message}"

    def close(self) -> None:
        """Drop queued installs (one already running finishes in its thread)."""
        self._pool.shutdown(wait=False, cancel_futures=True)
