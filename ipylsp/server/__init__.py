"""ipylsp's Jupyter server extension: reports, status and the agent tools over authenticated
HTTP under `{base_url}/ipylsp/` (see ARCHITECTURE.md). Imported by jupyter_server only."""

from __future__ import annotations

from typing import Any


def _jupyter_server_extension_points() -> list[dict[str, Any]]:
    from ipylsp.server.app import extension_points

    return extension_points()
