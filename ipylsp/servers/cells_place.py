"""Where the cells' document says it lives, so that the right servers check it: the path it
names decides their root, their configuration and the project's imports. Nothing is ever
written at that path (the servers read the document from memory); outside a workspace, a
directory of its own is made for it, private and sealed.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterable
from pathlib import Path

from ipylsp.lsp.procfs import HOST, running
from ipylsp.model.settings import WORKSPACE_MARKERS
from ipylsp.private import fresh_dir, owned_dir, seal
from ipylsp.servers import roots


def document_in(directory: Path) -> Path:
    """The path the virtual document says it has in `directory`: it is checked by the servers
    that serve a file there (their root, their configuration, the project's imports). Nothing
    is written there: the servers read the document from memory."""
    return directory / f".ipylsp-cells-{os.getpid()}.py"


def default_path(
    markers: Iterable[str] = WORKSPACE_MARKERS, private_parent: Path | None = None
) -> tuple[Path, Path | None]:
    """Where the virtual document says it lives, and the directory made for it (None when
    none was). In a workspace, the kernel's working directory, so the project's imports
    resolve the way the kernel's do (nothing is ever written there). Elsewhere (a notebook in
    the home directory), a fresh directory of its own in `<private_parent>/cells` (0700, an
    unpredictable name), sealed so that servers rooted there read no configuration from its
    parents: rooted at `~` they would index it all, and a shared temp dir would let another
    user plant their configuration. Raises `OSError` (`NotPrivate` when `cells` is not ours)
    when that directory cannot be made."""
    cwd = Path(os.getcwd())
    if roots.workspace_gate(cwd, markers, directory=cwd) is not None:
        return document_in(cwd), None
    parent = owned_dir(_cells_parent(private_parent))
    _sweep(parent)
    own = fresh_dir(parent, prefix=f"{HOST}-{os.getpid()}-")
    try:
        seal(own)
    except OSError:
        shutil.rmtree(own, ignore_errors=True)
        raise
    return own / "cells.py", own


def _cells_parent(private_parent: Path | None) -> Path:
    if private_parent is None:
        from ipylsp.servers.executables import data_dir

        private_parent = data_dir()
    return private_parent / "cells"


def _sweep(parent: Path) -> None:
    """This host's directories whose kernel is gone (a SIGKILL leaves them) are removed:
    named `<host>-<pid>-...`, another host's live sessions are left alone."""
    with contextlib.suppress(OSError):
        for entry in parent.iterdir():
            host, _, rest = entry.name.partition("-")
            pid = rest.partition("-")[0]
            if host == HOST and pid.isdigit() and not running(int(pid)):
                shutil.rmtree(entry, ignore_errors=True)
