"""The server versions whose exact messages the tests pin, and how to check and install them.

Tests compare real servers' words (`"x" is not defined`, rule codes, ranges): a newer server may
say it differently, so `real_servers.require` fails unless the installed version is the pinned
one. `scripts/bootstrap` runs this module (`python tests/server_pins.py`) to install the pinned
versions of the servers in ipylsp's data dir that differ; ty and ruff live in the test venv and
are pinned by pyproject's `test` extra. The product's own recipes stay unpinned for users.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import json
import os
import sys
from pathlib import Path

# server id -> {package: version}, every package of its recipe (companions too).
PINS: dict[str, dict[str, str]] = {
    "ty": {"ty": "0.0.105"},
    "ruff": {"ruff": "0.17.6"},
    "basedpyright": {"basedpyright": "1.40.2"},
    "pyrefly": {"pyrefly": "1.4.1"},
    "pyright": {"pyright": "1.1.414"},
    "typescript": {"typescript": "7.0.2"},
    "typescript-language-server": {"typescript-language-server": "5.3.0", "typescript": "5.9.3"},
    "bash-language-server": {"bash-language-server": "5.8.1"},
    "yaml-language-server": {"yaml-language-server": "1.25.0"},
    "vscode-json-language-server": {"vscode-langservers-extracted": "4.10.0"},
    "dockerfile-language-server": {"dockerfile-language-server-nodejs": "0.15.0"},
}

IN_TEST_VENV = ("ty", "ruff")  # pinned in pyproject.toml's test extra, not by the bootstrap


def _pip_version(command: str, package: str) -> str | None:
    """The version of ``package`` in the environment whose ``bin/`` holds ``command``."""
    env = Path(command).parent.parent
    for site in sorted(env.glob("lib/python*/site-packages")):
        for dist in importlib.metadata.distributions(path=[str(site)]):
            if (dist.metadata["Name"] or "").lower() == package.lower():
                return dist.version
    return None


def _npm_version(command: str, package: str) -> str | None:
    """The version of ``package`` in the ``node_modules`` that holds ``command``."""
    path = Path(os.path.realpath(command))
    modules = next((p for p in path.parents if p.name == "node_modules"), None)
    if modules is None:
        return None
    try:
        version = json.loads((modules / package / "package.json").read_text())["version"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return version if isinstance(version, str) else None


def mismatches(server_id: str, kind: str, command: str) -> list[str]:
    """``package: installed X, tests need Y`` for each pinned package of ``server_id`` that differs
    from its pin (empty: no pin, or every version matches)."""
    version = _npm_version if kind == "npm" else _pip_version
    out = []
    for package, pinned in PINS.get(server_id, {}).items():
        found = version(command, package)
        if found != pinned:
            out.append(f"{package}: installed {found or 'unknown'}, tests need {pinned}")
    return out


def pinned_packages(server_id: str, kind: str) -> tuple[str, ...]:
    """The recipe's package specs with the pinned versions (`pkg==v` for pip, `pkg@v` for npm)."""
    sep = "@" if kind == "npm" else "=="
    return tuple(f"{package}{sep}{version}" for package, version in PINS[server_id].items())


def install_pinned() -> int:
    """Install the pinned version of every data-dir server that is missing or differs."""
    from ipylsp.servers import executables, installers, registry

    data = executables.data_dir()
    failed = 0
    for server_id in PINS:
        spec = registry.get(server_id)
        if server_id in IN_TEST_VENV or spec is None:
            continue
        resolution = executables.resolve(spec, data)
        command = resolution.command[0] if resolution.command else None
        if command is not None and not mismatches(server_id, spec.install.kind, command):
            continue
        packages = pinned_packages(server_id, spec.install.kind)
        recipe = dataclasses.replace(spec.install, packages=packages)
        print(f"==> {server_id}: installing {' '.join(packages)}", flush=True)
        result = installers.install(dataclasses.replace(spec, install=recipe), data)
        executables.invalidate()
        print(result.message, flush=True)
        failed += not result.ok
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(install_pinned())
