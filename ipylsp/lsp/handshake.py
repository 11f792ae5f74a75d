"""The `initialize` exchange: what a freshly spawned server says it can do.

Apart from the client, which keeps the process and the state machine and turns what this
raises into a `ClientError` with the right reason."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ipylsp.lsp import capabilities as caps
from ipylsp.lsp.jsonrpc import Endpoint, ResponseError
from ipylsp.model.positions import Encoding, choose_encoding
from ipylsp.model.server_spec import ServerSpec


@dataclass(frozen=True)
class ServerHello:
    """The server's answer to `initialize`, read."""

    capabilities: dict[str, Any]
    info: dict[str, Any]
    encoding: Encoding
    declares_pull: bool
    pull_identifier: str | None


async def initialize(
    endpoint: Endpoint, spec: ServerSpec, root: Path, timeout: float
) -> ServerHello:
    """`initialize`, then `initialized` and the spec's settings. Raises what the endpoint
    raises (`RequestTimeout`, `ConnectionLost`, `ResponseError`), and `ResponseError`,
    `TypeError` or `ValueError` for an answer that is not an initialize result."""
    result = await endpoint.request(
        "initialize", caps.initialize_params(root, spec.initialization_options), timeout=timeout
    )
    if not isinstance(result, dict):
        raise ResponseError(-32603, "initialize returned no result object")
    capabilities = dict(result.get("capabilities") or {})
    declares_pull, identifier = caps.static_pull(capabilities)
    hello = ServerHello(
        capabilities=capabilities,
        info=dict(result.get("serverInfo") or {}),
        encoding=choose_encoding(capabilities.get("positionEncoding")),
        declares_pull=declares_pull,
        pull_identifier=identifier,
    )
    await endpoint.notify("initialized", {})
    if spec.settings:
        await endpoint.notify("workspace/didChangeConfiguration", {"settings": dict(spec.settings)})
    return hello
