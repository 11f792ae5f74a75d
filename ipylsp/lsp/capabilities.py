"""What ipylsp tells servers it can do, and how it reads what they can do.

Negotiated in one place so the client's behaviour and its claims cannot drift apart.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ipylsp._version import __version__

# Preference order: code points first (no conversion), then UTF-8, then the mandatory UTF-16.
POSITION_ENCODINGS = ("utf-32", "utf-8", "utf-16")


CODE_ACTION: dict[str, Any] = {
    # Literals (not bare commands), the edit resolved later (`codeAction/resolve`, which
    # `lsp/code_actions.py` sends; ruff defers only its source actions, basedpyright and ty
    # always send edits), and `data` kept for that resolve.
    "codeActionLiteralSupport": {
        "codeActionKind": {"valueSet": ["", "quickfix", "refactor", "source"]}
    },
    "resolveSupport": {"properties": ["edit"]},
    "dataSupport": True,
    "isPreferredSupport": True,
}


def client_capabilities() -> dict[str, Any]:
    return {
        "general": {"positionEncodings": list(POSITION_ENCODINGS)},
        "workspace": {
            "configuration": True,
            "workspaceFolders": True,
            "didChangeConfiguration": {"dynamicRegistration": True},
            "diagnostics": {"refreshSupport": True},
        },
        "textDocument": {
            "synchronization": {"dynamicRegistration": True, "didSave": True},
            "publishDiagnostics": {
                "relatedInformation": False,
                "versionSupport": True,
                "codeDescriptionSupport": True,
                "dataSupport": True,  # a push server's fix data, sent back with code actions
            },
            "diagnostic": {"dynamicRegistration": True, "relatedDocumentSupport": False},
            "hover": {"contentFormat": ["plaintext", "markdown"]},
            "definition": {"linkSupport": False},
            "references": {},
            "completion": {"completionItem": {"snippetSupport": False}},
            "documentSymbol": {"hierarchicalDocumentSymbolSupport": True},
            "codeAction": CODE_ACTION,
        },
        "window": {"workDoneProgress": True, "showMessage": {}},
    }


def initialize_params(
    root: Path, initialization_options: Mapping[str, Any] | None
) -> dict[str, Any]:
    params: dict[str, Any] = {
        "processId": os.getpid(),
        "clientInfo": {"name": "ipylsp", "version": __version__},
        "rootUri": root.as_uri(),
        "rootPath": str(root),
        "workspaceFolders": [{"uri": root.as_uri(), "name": root.name or str(root)}],
        "capabilities": client_capabilities(),
    }
    if initialization_options is not None:
        params["initializationOptions"] = dict(initialization_options)
    return params


def sync_kind(server_capabilities: Mapping[str, Any]) -> int:
    """TextDocumentSyncKind the server wants: 0 none, 1 full, 2 incremental (we send full)."""
    sync = server_capabilities.get("textDocumentSync")
    if isinstance(sync, int):
        return sync
    if isinstance(sync, Mapping):
        change = sync.get("change")
        return change if isinstance(change, int) else 0
    return 0


def wants_save(server_capabilities: Mapping[str, Any]) -> tuple[bool, bool]:
    """(send didSave, include the text) per the server's textDocumentSync.save."""
    sync = server_capabilities.get("textDocumentSync")
    if not isinstance(sync, Mapping):
        return False, False
    save = sync.get("save")
    if isinstance(save, Mapping):
        return True, bool(save.get("includeText"))
    return bool(save), False


def static_pull(server_capabilities: Mapping[str, Any]) -> tuple[bool, str | None]:
    """(declares pull diagnostics, the pull identifier if any)."""
    provider = server_capabilities.get("diagnosticProvider")
    if not provider:
        return False, None
    if isinstance(provider, Mapping):
        identifier = provider.get("identifier")
        return True, identifier if isinstance(identifier, str) else None
    return True, None


def lookup_section(settings: Mapping[str, Any], section: str | None) -> Any:
    """Answer one `workspace/configuration` item from a nested settings mapping."""
    if not section:
        return dict(settings)
    value: Any = settings
    for part in section.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value
