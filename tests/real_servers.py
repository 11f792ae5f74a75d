"""Helpers for the tests that drive real language servers through `Service.check`.

- `DATA_DIR` is ipylsp's data dir as it was when the tests were imported: the tests move HOME
  (servers write caches there), which would move platformdirs' answer too.
- `require` FAILS (never skips) when a server cannot run, naming the fix: CI installs every
  server the tests use (`scripts/bootstrap`, and apt for clangd/gopls/go/shellcheck in `.ci/run`),
  and when the installed version differs from the one whose messages the tests pin
  (`server_pins.PINS`).
- `workspace` makes one git worktree per test (the workspace gate) and points HOME and the XDG
  cache/config dirs into the test's tmp_path before any server starts.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any, cast

import pytest

from ipylsp.analysis.report import FormatOptions, to_json
from ipylsp.model.diagnostics import Report
from ipylsp.model.server_spec import ServerSpec
from ipylsp.servers import executables, registry
from tests.server_pins import IN_TEST_VENV, mismatches

DATA_DIR = executables.data_dir()

_APT = {
    "clangd": "apt-get install clangd",
    "gopls": "apt-get install gopls golang-go",
}


def require(server_id: str) -> ServerSpec:
    """The registry row of ``server_id``, asserting that the server (and its companions) can run."""
    spec = registry.get(server_id)
    assert spec is not None, f"{server_id} is not in the registry"
    resolution = executables.resolve(spec, DATA_DIR)
    how = _APT.get(server_id) or f"run scripts/bootstrap ({registry.install_hint(spec)})"
    assert resolution.command is not None, (
        f"{server_id} cannot run: {resolution.reason or 'not found'}; {how}. "
        "These tests need every server: run scripts/bootstrap (CI: .ci/run)."
    )
    assert not resolution.warnings, (
        f"{server_id} runs but cannot report: {'; '.join(resolution.warnings)}. "
        "run scripts/bootstrap (CI: .ci/run installs the apt packages)."
    )
    wrong = mismatches(server_id, spec.install.kind, resolution.command[0])
    how = "pip install -e '.[test]'" if server_id in IN_TEST_VENV else "run scripts/bootstrap"
    assert not wrong, (
        f"{server_id} at {resolution.command[0]} is not the version the tests pin "
        f"({'; '.join(wrong)}): {how} (tests/server_pins.py lists the pins)."
    )
    return spec


def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh git worktree under ``tmp_path``; HOME and caches moved under ``tmp_path`` too."""
    root = tmp_path / "ws"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    # gopls spawns `go`: never reach for a toolchain or a module proxy from a test.
    monkeypatch.setenv("GOTOOLCHAIN", "local")
    monkeypatch.setenv("GOPROXY", "off")
    return root


def write(root: Path, name: str, text: str) -> Path:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def json_diagnostics(report: Report, options: FormatOptions) -> list[dict[str, Any]]:
    """The shown diagnostics of every file, in schema ipylsp.diagnostics/2 (1-based)."""
    files = cast("list[dict[str, Any]]", to_json(report, options)["files"])
    return [d for f in files for d in f["diagnostics"]]
