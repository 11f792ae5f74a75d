"""The Python environment a Python server should resolve imports in, handed over its own way.

Detection (`detect`): the project's ``.venv`` or ``venv`` at the workspace root (or a parent up to
a ceiling such as the git worktree top), else the client's interpreter (the kernel's: its
`Environment`'s ``executable`` and ``prefix``; this process's ``sys.executable`` and
``sys.prefix`` when none is given) when it runs in a venv or conda env. Nothing is executed: a
venv is recognised by ``pyvenv.cfg`` (or ``conda-meta``) and an existing interpreter.

Hand-over (`env_config` / `apply`), verified with the real servers and a package installed only in
a venv outside the project (``benchmarks/lsp_client.py``):

- pyright, basedpyright: ``workspace/configuration`` section ``python`` =
  ``{"pythonPath": <interpreter>, "venvPath": <parent>, "venv": <name>}``. ``pythonPath`` is what
  makes them resolve; ``venvPath``/``venv`` alone do not (they are config-file keys), but are
  harmless. basedpyright finds a root ``.venv`` by itself, pyright does not.
- ty: section ``ty`` = ``{"configuration": {"environment": {"python": <env dir>}}}`` (inline ty.toml
  options; the interpreter path works too). ty finds a root ``.venv`` by itself. Inline options win
  over ty.toml, so nothing is handed over when the project's ty.toml / pyproject.toml sets
  ``environment.python`` itself. Rooted below the plain directory the user works in, its
  first-party imports are resolved from that directory (`first_party_root`).
- pyrefly: section ``python`` = ``{"pythonPath": <interpreter>}``; finds a root ``.venv`` itself.
- pylsp: ``pylsp.plugins.jedi.environment`` and pylsp-mypy's ``--python-executable`` (documented
  options of those projects; not measured here).
- jedi-language-server: initialization option ``workspace.environmentPath`` (documented, not
  measured here).

User settings win: the detected values are the base that ``spec.settings`` (with the user's
overrides already applied) is deep-merged over.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from ipylsp.model.server_spec import ServerSpec
from ipylsp.servers import regular_file

PROJECT_VENV_NAMES: tuple[str, ...] = (".venv", "venv")

_WINDOWS = os.name == "nt"


@dataclass(frozen=True, slots=True)
class PythonEnv:
    """A Python environment: its directory (``sys.prefix``) and interpreter."""

    prefix: Path
    interpreter: Path
    source: Literal["project", "kernel"]


def _interpreter_in(prefix: Path) -> Path | None:
    names = ("Scripts/python.exe",) if _WINDOWS else ("bin/python", "bin/python3")
    for name in names:
        candidate = prefix / name
        if os.path.exists(candidate):  # follows the symlink: a dangling one does not count
            return candidate
    return None


def _is_env_dir(prefix: Path) -> bool:
    try:
        return (prefix / "pyvenv.cfg").is_file() or (prefix / "conda-meta").is_dir()
    except OSError:
        return False


def project_env(root: Path, *, ceiling: Path | None = None) -> PythonEnv | None:
    """``.venv``/``venv`` at ``root``, or at a parent up to ``ceiling`` (inclusive) when given."""
    current = Path(os.path.abspath(root))
    top = Path(os.path.abspath(ceiling)) if ceiling is not None else current
    if current != top and top not in current.parents:
        top = current
    while True:
        for name in PROJECT_VENV_NAMES:
            prefix = current / name
            if _is_env_dir(prefix):
                interpreter = _interpreter_in(prefix)
                if interpreter is not None:
                    return PythonEnv(prefix, interpreter, "project")
        if current == top or current.parent == current:
            return None
        current = current.parent


def kernel_env(executable: str | None = None, prefix: str | None = None) -> PythonEnv | None:
    """The environment of ``executable`` (default: this process's ``sys.executable``, with
    ``sys.prefix``) when it is a venv or conda env; ``prefix``: its directory (default: the
    interpreter's grandparent). An empty ``executable`` is no interpreter: None.

    The interpreter path is kept as given: resolving a venv's ``python`` symlink would name the
    base interpreter and lose the venv.
    """
    if executable is None:
        executable, prefix = sys.executable, sys.prefix
    if not executable:
        return None
    interpreter = Path(executable)
    directory = Path(prefix) if prefix else interpreter.parent.parent
    if not _is_env_dir(directory) or not os.path.exists(interpreter):
        return None
    return PythonEnv(directory, interpreter, "kernel")


def detect(
    root: Path,
    *,
    ceiling: Path | None = None,
    executable: str | None = None,
    prefix: str | None = None,
) -> PythonEnv | None:
    """The project's venv (see `project_env`), else the kernel's venv (see `kernel_env`)."""
    return project_env(root, ceiling=ceiling) or kernel_env(executable, prefix)


_TY_ENV_TABLE = {"ty.toml": "environment", "pyproject.toml": "tool.ty.environment"}
_TABLE = re.compile(r"^\s*\[\s*([^\]]+?)\s*\]\s*(?:#.*)?$")
_PYTHON_KEY = re.compile(r"^\s*python\s*=")


def _ty_sets_python(root: Path) -> bool:
    """Whether ty's own config at ``root`` sets ``environment.python`` (a cheap line scan). A
    file that is not a regular file (a FIFO) is never opened: it sets nothing."""
    for filename, table in _TY_ENV_TABLE.items():
        try:
            text = regular_file.read(root / filename).decode("utf-8", "replace")
        except (OSError, regular_file.NotRegular):
            continue
        current = ""
        for line in text.splitlines():
            header = _TABLE.match(line)
            if header:
                current = header.group(1).replace('"', "").replace(" ", "")
            elif current == table and _PYTHON_KEY.match(line):
                return True
    return False


def env_config(
    server_id: str, env: PythonEnv, *, root: Path | None = None
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """(settings, initialization options) that hand ``env`` to server ``server_id``.

    Empty settings and None when the server takes no environment (ruff, non-Python servers), or
    when the project configures it itself (ty with ``environment.python`` in its config).
    """
    interpreter = str(env.interpreter)
    if server_id in ("pyright", "basedpyright"):
        return {
            "python": {
                "pythonPath": interpreter,
                "venvPath": str(env.prefix.parent),
                "venv": env.prefix.name,
            }
        }, None
    if server_id == "ty":
        if root is not None and _ty_sets_python(root):
            return {}, None
        return {"ty": {"configuration": {"environment": {"python": str(env.prefix)}}}}, None
    if server_id == "pyrefly":
        return {"python": {"pythonPath": interpreter}}, None
    if server_id == "pylsp":
        return {
            "pylsp": {
                "plugins": {
                    "jedi": {"environment": interpreter},
                    "pylsp_mypy": {"overrides": ["--python-executable", interpreter, True]},
                }
            }
        }, None
    if server_id == "jedi-language-server":
        return {}, {"workspace": {"environmentPath": interpreter}}
    return {}, None


def deep_merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` updated with ``over``, recursively for nested mappings; ``over`` wins."""
    merged: dict[str, Any] = dict(base)
    for key, value in over.items():
        below = merged.get(key)
        if isinstance(below, Mapping) and isinstance(value, Mapping):
            merged[key] = deep_merge(below, value)
        else:
            merged[key] = value
    return merged


def apply(spec: ServerSpec, env: PythonEnv | None, *, root: Path | None = None) -> ServerSpec:
    """``spec`` with ``env`` handed over; the spec's own settings win over detected values."""
    if env is None:
        return spec
    settings, init = env_config(spec.id, env, root=root)
    if not settings and init is None:
        return spec
    new_init = spec.initialization_options
    if init is not None:
        new_init = deep_merge(init, spec.initialization_options or {})
    return replace(
        spec, settings=deep_merge(settings, spec.settings), initialization_options=new_init
    )


def for_server(
    spec: ServerSpec,
    root: Path,
    *,
    ceiling: Path | None = None,
    executable: str | None = None,
    prefix: str | None = None,
) -> ServerSpec:
    """`detect` the environment for ``root`` and `apply` it to ``spec`` (Python servers only).
    ``executable``, ``prefix``: the client's interpreter (None: this process's)."""
    if "python" not in spec.languages:
        return spec
    found = detect(root, ceiling=ceiling, executable=executable, prefix=prefix)
    return apply(spec, found, root=root)


def first_party_root(spec: ServerSpec, directory: Path) -> ServerSpec:
    """``spec`` resolving the user's own modules from ``directory`` rather than from its root:
    for ty rooted at a file's directory below the plain directory the user works in
    (`ServerSpec.plain` ``"root"``), so that ``import helper`` in ``sub/mod.py`` finds the
    ``helper.py`` beside the notebook, as ty rooted at that directory does (and the kernel,
    whose working directory it is). ty: ``environment.root`` in section ``ty``; the spec's own
    settings win. No other server is rooted that way: they are returned unchanged."""
    if spec.id != "ty":
        return spec
    detected = {"ty": {"configuration": {"environment": {"root": [str(directory)]}}}}
    return replace(spec, settings=deep_merge(detected, spec.settings))
