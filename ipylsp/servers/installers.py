"""Installing servers into ipylsp's data dir, and nowhere else.

- ``pip`` recipes go into ``<data_dir>/venv``, created with ``<kernel python> -m venv`` when
  missing, with ``<venv>/bin/python -m pip install <packages>``;
- ``npm`` recipes go into ``<data_dir>/npm/<recipe>`` with
  ``npm install --prefix <that dir> --no-audit --no-fund <packages>``;
- ``apt`` and ``path`` recipes are never run: the result carries the hint.

Children run with list arguments (no shell), in their own session, with stdin closed; each output
line goes to ``progress`` as it arrives. Installs are serialized with a lock file in the data dir,
so two kernels installing at once do not corrupt the venv or an npm prefix. A failure says what
went wrong and how to fix it.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from ipylsp.model.server_spec import ServerSpec
from ipylsp.servers import executables

__all__ = [
    "DEFAULT_TIMEOUT",
    "InstallResult",
    "install",
    "install_many",
    "installable",
]

Progress = Callable[[str], None]

DEFAULT_TIMEOUT = 900.0
"""Seconds one installer child may run."""

MIN_NODE = 18
OUTPUT_TAIL = 40

# Variables that would send a pip install somewhere other than ipylsp's venv.
_PIP_REDIRECTS = ("PYTHONHOME", "PYTHONPATH", "PIP_USER", "PIP_TARGET", "PIP_PREFIX", "PIP_ROOT")


@dataclass(frozen=True, slots=True)
class InstallResult:
    """What an install did."""

    server_id: str
    ok: bool
    message: str
    """One line: what was installed, or why it failed and how to fix it."""
    command: tuple[str, ...] | None = None
    """The server's resolved command after a successful install."""
    output: tuple[str, ...] = ()
    """The last lines the installer printed (for a failure report)."""


def installable(spec: ServerSpec) -> bool:
    """Whether ipylsp can install ``spec`` itself (pip and npm recipes)."""
    return spec.install.kind in ("pip", "npm") and bool(spec.install.packages)


class _Reporter:
    def __init__(self, progress: Progress | None) -> None:
        self._progress = progress
        self.tail: deque[str] = deque(maxlen=OUTPUT_TAIL)

    def __call__(self, line: str) -> None:
        self.tail.append(line)
        if self._progress is not None:
            with contextlib.suppress(Exception):  # a broken display must not break the install
                self._progress(line)


@dataclass(frozen=True, slots=True)
class _Run:
    returncode: int | None  # None: could not start
    timed_out: bool = False
    error: str = ""


def _child_env(drop: Sequence[str] = ()) -> dict[str, str]:
    env = dict(os.environ)
    for name in drop:
        env.pop(name, None)
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def _kill_group(proc: subprocess.Popen[str]) -> None:
    with contextlib.suppress(OSError):
        if hasattr(os, "killpg"):
            os.killpg(proc.pid, signal.SIGKILL)
        else:  # pragma: no cover - Windows
            proc.kill()


def _run(
    args: Sequence[str],
    report: _Reporter,
    *,
    cwd: Path,
    env: dict[str, str],
    timeout: float | None,
) -> _Run:
    """Run ``args``, streaming merged stdout/stderr lines to ``report``."""
    report("$ " + " ".join(args))
    try:
        proc = subprocess.Popen(
            list(args),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            env=env,
            text=True,
            encoding="utf-8",
            errors="replace",
            bufsize=1,
            start_new_session=True,
        )
    except OSError as exc:
        return _Run(None, error=f"{args[0]}: {exc.strerror or exc}")
    fired = threading.Event()

    def expire() -> None:
        fired.set()
        _kill_group(proc)

    timer = threading.Timer(timeout, expire) if timeout is not None else None
    if timer is not None:
        timer.daemon = True
        timer.start()
    try:
        assert proc.stdout is not None
        for raw in proc.stdout:
            line = raw.rstrip("\r\n")
            if line:
                report(line)
        proc.wait()
    except BaseException:
        _kill_group(proc)
        proc.wait()
        raise
    finally:
        if timer is not None:
            timer.cancel()
        if proc.stdout is not None:
            proc.stdout.close()
    return _Run(proc.returncode, timed_out=fired.is_set())


@contextlib.contextmanager
def _install_lock(data: Path) -> Iterator[None]:
    """Serialize installs across threads and processes sharing ``data``."""
    data.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    with open(data / ".install.lock", "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _failure(spec: ServerSpec, message: str, report: _Reporter | None = None) -> InstallResult:
    return InstallResult(spec.id, False, message, None, tuple(report.tail) if report else ())


def _run_failure(spec: ServerSpec, what: str, run: _Run, timeout: float | None) -> str:
    if run.returncode is None:
        return f"{spec.id}: could not run {what}: {run.error}"
    if run.timed_out:
        return (
            f"{spec.id}: {what} did not finish within {timeout:g} s and was stopped; check the "
            "network (is the package registry reachable?) and retry"
        )
    return f"{spec.id}: {what} failed (exit status {run.returncode}); see its output above"


def _pip_install(
    spec: ServerSpec, data: Path, report: _Reporter, timeout: float | None
) -> InstallResult | None:
    python = executables.venv_python(data)
    venv = executables.venv_dir(data)
    env = _child_env(drop=(*_PIP_REDIRECTS, "VIRTUAL_ENV"))
    if not python.exists():
        base = sys.executable
        if not base:
            return _failure(spec, f"{spec.id}: no Python interpreter to create {venv} with")
        report(f"creating ipylsp's Python environment in {venv}")
        run = _run([base, "-m", "venv", str(venv)], report, cwd=data, env=env, timeout=timeout)
        if run.returncode != 0 or not python.exists():
            reason = _run_failure(spec, "python -m venv", run, timeout)
            return _failure(
                spec,
                f"{reason}. On Debian/Ubuntu install the venv module (apt-get install "
                "python3-venv), or install the server into the kernel's environment "
                f"(pip install {' '.join(spec.install.packages)})",
                report,
            )
    args = [
        str(python),
        "-m",
        "pip",
        "install",
        "--disable-pip-version-check",
        "--no-input",
        "--progress-bar",
        "off",
        *spec.install.packages,
    ]
    run = _run(args, report, cwd=data, env=env, timeout=timeout)
    if run.returncode != 0:
        return _failure(spec, _run_failure(spec, "pip install", run, timeout), report)
    return None


_NODE_VERSION = re.compile(r"v?(\d+)\.")


def _node_major(node: str) -> int | None:
    try:
        out = subprocess.run(
            [node, "--version"], capture_output=True, text=True, timeout=30, check=False
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    match = _NODE_VERSION.match(out.strip())
    return int(match.group(1)) if match else None


def _npm_install(
    spec: ServerSpec, data: Path, report: _Reporter, timeout: float | None
) -> InstallResult | None:
    npm = executables.which("npm")
    if npm is None:
        return _failure(
            spec,
            f"{spec.id}: npm not found on PATH: install Node.js >= {MIN_NODE} "
            "(apt-get install nodejs npm) or use a pip server",
        )
    node = executables.which("node")
    if node is None:
        return _failure(
            spec,
            f"{spec.id}: node not found on PATH (npm is there): install Node.js >= {MIN_NODE} "
            "(apt-get install nodejs) or use a pip server",
        )
    major = _node_major(node)
    if major is not None and major < MIN_NODE:
        return _failure(
            spec,
            f"{spec.id}: node {major} at {node} is too old: install Node.js >= {MIN_NODE} "
            "or use a pip server",
        )
    prefix = executables.npm_prefix(spec, data)
    prefix.mkdir(parents=True, exist_ok=True)
    args = [
        npm,
        "install",
        "--prefix",
        str(prefix),
        "--no-audit",
        "--no-fund",
        "--no-update-notifier",
        *spec.install.packages,
    ]
    run = _run(args, report, cwd=prefix, env=_child_env(), timeout=timeout)
    if run.returncode != 0:
        return _failure(spec, _run_failure(spec, "npm install", run, timeout), report)
    return None


def install(
    spec: ServerSpec,
    data_dir: Path,
    *,
    progress: Progress | None = None,
    timeout: float | None = DEFAULT_TIMEOUT,
) -> InstallResult:
    """Install ``spec`` into ``data_dir`` (see the module doc). Never raises for a failed install.

    Blocking: run it off the event loop. ``progress`` gets each line of the installer's output.
    """
    data = Path(data_dir)
    recipe = spec.install
    if recipe.kind in ("apt", "path"):
        how = recipe.hint or f"put {spec.command[0]} on PATH"
        what = "system packages" if recipe.kind == "apt" else "this server"
        return _failure(spec, f"{spec.id}: ipylsp does not install {what}; to get it: {how}")
    if not recipe.packages:
        return _failure(spec, f"{spec.id}: the {recipe.kind} recipe names no packages")
    report = _Reporter(progress)
    with _install_lock(data):
        try:
            if recipe.kind == "pip":
                failed = _pip_install(spec, data, report, timeout)
            else:
                failed = _npm_install(spec, data, report, timeout)
        finally:
            executables.invalidate()
    if failed is not None:
        return failed
    resolution = executables.resolve(spec, data)
    if resolution.command is None:
        return _failure(
            spec,
            f"{spec.id}: installed {' '.join(recipe.packages)}, but the server cannot run: "
            f"{resolution.reason}",
            report,
        )
    note = f" ({'; '.join(resolution.warnings)})" if resolution.warnings else ""
    return InstallResult(
        spec.id,
        True,
        f"{spec.id}: installed {' '.join(recipe.packages)} -> {resolution.command[0]}{note}",
        resolution.command,
        tuple(report.tail),
    )


def install_many(
    specs: Iterable[ServerSpec],
    data_dir: Path,
    *,
    progress: Progress | None = None,
    timeout: float | None = DEFAULT_TIMEOUT,
) -> list[InstallResult]:
    """Install several servers in order; a recipe shared by several (vscode-langservers-extracted
    serves json, css and html) runs once."""
    results: list[InstallResult] = []
    done: dict[tuple[object, ...], bool] = {}
    for spec in specs:
        recipe_key: tuple[object, ...] = (
            spec.install.kind,
            spec.install.packages,
            executables.npm_prefix_name(spec),
        )
        if installable(spec) and done.get(recipe_key):
            resolution = executables.resolve(spec, Path(data_dir))
            if resolution.command is not None:
                results.append(
                    InstallResult(
                        spec.id,
                        True,
                        f"{spec.id}: installed with {' '.join(spec.install.packages)}"
                        f" -> {resolution.command[0]}",
                        resolution.command,
                    )
                )
                continue
        result = install(spec, data_dir, progress=progress, timeout=timeout)
        done[recipe_key] = result.ok
        results.append(result)
    return results
