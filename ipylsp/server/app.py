"""`IPyLSPServer`: the Jupyter server extension app. Enabled on install by
`jupyter-config/jupyter_server_config.d/ipylsp.json`; its settings come from the same
`IPyLSP` configurable as the kernel's (`c.IPyLSP.*` in jupyter_server_config.py).

Also owns how a Jupyter server without a terminal stops on SIGINT (`stop_on_sigint`)."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

from jupyter_server.extension.application import ExtensionApp

from ipylsp.server import state
from ipylsp.server.handlers import routes
from ipylsp.server.mcp_http import McpBridge, McpHandler

ROOT_OPTION = "ipylspRoot"
"""The page config option holding the server's root directory, absolute."""


class IPyLSPServer(ExtensionApp):
    name = "ipylsp"
    load_other_extensions = True
    _mcp: McpBridge

    def initialize_settings(self) -> None:
        from ipylsp.config import IPyLSP

        server = self.serverapp
        assert server is not None  # jupyter_server sets it before initializing settings
        settings = IPyLSP(config=server.config).to_settings()
        root = Path(server.root_dir).expanduser().resolve()
        # JupyterLab's page config writes the root with the home directory as "~" (so does
        # a JupyterHub user's root, their home): the lab extension resolves the reports'
        # absolute paths against this absolute one instead.
        server.web_app.settings.setdefault("page_config_data", {})[ROOT_OPTION] = str(root)
        stop_on_sigint(server)
        current = state.start(root, settings, server.log)
        self.settings["ipylsp_state"] = current
        self.settings["ipylsp_mcp"] = self._mcp = McpBridge(current.toolbox)

    def initialize_handlers(self) -> None:
        self.handlers.extend(routes())
        self.handlers.append((r"/ipylsp/mcp", McpHandler))

    async def stop_extension(self) -> None:
        await self._mcp.close()
        state.stop()


def stop_on_sigint(server: Any) -> None:
    """SIGINT stops the server as SIGTERM does (its shutdown: kernels, extensions), when it
    has no terminal. Jupyter server installs its SIGINT handler (a confirmation prompt) only
    on a terminal; without one, as under JupyterHub, which stops a user's server with SIGINT,
    Python's KeyboardInterrupt ends the event loop and the process skips the shutdown: its
    kernels are left to kill themselves with `os._exit` when they see it gone, so their
    servers' last answers and status files are never handed over or removed."""
    try:
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, server._signal_stop)
    except (ValueError, AttributeError):  # not the main thread; a server without the method
        pass


def extension_points() -> list[dict[str, Any]]:
    return [{"module": "ipylsp.server", "app": IPyLSPServer}]
