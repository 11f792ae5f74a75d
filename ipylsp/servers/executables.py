"""Finding a server's executable: ipylsp's own installs first, then the client's env, then PATH.

The client is the process the servers run for (the kernel, the CLI), given as an
`Environment` (None: this process's own): its interpreter's directory and its ``PATH`` are
searched, its ``PATH`` decides whether a script's interpreter or a companion is there, and its
``RUSTUP_HOME`` (or ``HOME``) where rustup's toolchains are.

Search order for ``command[0]`` (an absolute path is taken as is):

1. ``<data_dir>/venv/bin`` — ipylsp's own pip environment (`installers` puts pip servers there);
2. ``<data_dir>/npm/<recipe>/node_modules/.bin`` — this server's own npm prefix (one prefix per
   recipe, because recipes pin conflicting versions: typescript@7 for ``tsc --lsp`` and
   typescript@5 for typescript-language-server), then the shared
   ``<data_dir>/npm/node_modules/.bin``;
3. the directory of the client's interpreter — the kernel's venv is often not on PATH;
4. the client's ``PATH``.

A script whose interpreter is missing (``#!/usr/bin/env node`` without node on PATH) is not
usable, and neither is a server whose recipe needs node when node is missing (pyright from PyPI
fails with "nodeenv failed" then), a rustup proxy whose toolchain lacks the component, or a
``tsc`` older than TypeScript 7 (no ``--lsp``). `resolve` says why.

Answers are cached and validated by the modification times of the searched directories (an
install or uninstall changes them), so a check costs one ``stat`` per directory; answers involving a
directory changed in the last two seconds are not cached (coarse mtime clock); `invalidate` drops
the cache outright. The key holds what the answer read of the client's environment (the searched
directories, its ``PATH`` among them, and the rustup home), so clients with different
environments never share an answer.

`which` without an environment, the installers' use (npm, node), is this process's own PATH.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from ipylsp.model.environment import Environment
from ipylsp.model.server_spec import ServerSpec
from ipylsp.model.settings import Settings
from ipylsp.servers.dircache import DirCache

APP_NAME = "ipylsp"

RUNTIME_COMPANIONS: dict[str, tuple[tuple[str, str], ...]] = {
    # Executables a server needs at run time to report anything, with how to get them.
    "bash-language-server": (
        (
            "shellcheck",
            "apt-get install shellcheck (bash-language-server reports nothing without it)",
        ),
    ),
    "gopls": (("go", "apt-get install golang-go"),),
}

MIN_PACKAGE_MAJOR: dict[str, tuple[str, int, str]] = {
    # server id -> (npm package providing the executable, lowest major version that works, why)
    "typescript": ("typescript", 7, "tsc --lsp needs TypeScript >= 7"),
}

_WINDOWS = os.name == "nt"
_BIN = "Scripts" if _WINDOWS else "bin"


def data_dir(settings: Settings | None = None) -> Path:
    """Where ipylsp installs servers: ``settings.data_dir`` or the platformdirs user data dir."""
    if settings is not None and settings.data_dir is not None:
        return Path(settings.data_dir).expanduser()
    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))


def venv_dir(data: Path) -> Path:
    """ipylsp's own pip environment."""
    return Path(data) / "venv"


def venv_bin(data: Path) -> Path:
    return venv_dir(data) / _BIN


def venv_python(data: Path) -> Path:
    return venv_bin(data) / ("python.exe" if _WINDOWS else "python")


def npm_root(data: Path) -> Path:
    """The parent of every npm prefix (and itself the shared prefix)."""
    return Path(data) / "npm"


def npm_prefix_name(spec: ServerSpec) -> str:
    """Directory name of a recipe's npm prefix: its first package without version or scope."""
    packages = spec.install.packages
    if not packages:
        return spec.id
    name = packages[0]
    if name.startswith("@"):
        scope, _, rest = name[1:].partition("/")
        base = f"{scope}-{rest.split('@', 1)[0]}" if rest else scope
    else:
        base = name.split("@", 1)[0]
    safe = "".join(c if c.isalnum() or c in "-_." else "-" for c in base).strip(".")
    return safe or spec.id


def npm_prefix(spec: ServerSpec, data: Path) -> Path:
    """``<data_dir>/npm/<recipe>``: where `installers` runs ``npm install --prefix``."""
    return npm_root(data) / npm_prefix_name(spec)


def search_dirs(
    spec: ServerSpec, data: Path, environment: Environment | None = None
) -> tuple[str, ...]:
    """Directories searched for ``spec.command[0]``, in order (deduplicated); `environment`:
    the client's (None: this process's)."""
    executable = sys.executable if environment is None else environment.executable
    dirs: list[str] = [str(venv_bin(data))]
    if spec.install.kind == "npm":
        dirs.append(str(npm_prefix(spec, data) / "node_modules" / ".bin"))
    dirs.append(str(npm_root(data) / "node_modules" / ".bin"))
    dirs.append(os.path.dirname(executable) if executable else "")
    dirs.extend(_path_dirs(environment))
    return tuple(d for d in dict.fromkeys(os.path.abspath(d) for d in dirs if d))


@dataclass(frozen=True, slots=True)
class Resolution:
    """Where a server's executable is and whether it can run."""

    command: tuple[str, ...] | None
    """The command with an absolute ``command[0]``, or None when the server cannot run."""
    found: str | None = None
    """The executable found, even when unusable (a node script without node)."""
    reason: str = ""
    """Why ``command`` is None; empty when it is not."""
    warnings: tuple[str, ...] = ()
    """Runnable, but missing a companion (shellcheck for bash-language-server, ...)."""


_EXTS: tuple[str, ...] = (
    tuple(e.lower() for e in os.environ.get("PATHEXT", ".EXE;.CMD;.BAT").split(";"))
    if _WINDOWS
    else ("",)
)


def _executable(path: str) -> bool:
    try:
        return os.path.isfile(path) and os.access(path, os.X_OK)
    except (OSError, ValueError):
        return False


def _which_in(name: str, dirs: tuple[str, ...]) -> str | None:
    for directory in dirs:
        for ext in _EXTS:
            candidate = os.path.join(directory, name + ext)
            if _executable(candidate):
                return candidate
    return None


def _path_dirs(environment: Environment | None = None) -> tuple[str, ...]:
    """The client's PATH (None: this process's)."""
    if environment is not None:
        return environment.path()
    return tuple(d for d in os.environ.get("PATH", "").split(os.pathsep) if d)


def which(name: str, environment: Environment | None = None) -> str | None:
    """``shutil.which`` over the client's PATH (None: this process's), without caching."""
    return _which_in(name, _path_dirs(environment))


def _interpreter(script: str) -> list[str] | None:
    """The ``#!`` line of a script, split; None for binaries and unreadable files."""
    try:
        with open(script, "rb") as handle:
            head = handle.read(256)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    line = head[2:].split(b"\n", 1)[0].decode("utf-8", "replace").strip()
    return line.split() or None


def _missing_interpreter(script: str, path: tuple[str, ...]) -> str | None:
    """The name of a script's interpreter when it cannot be found (on `path`, for
    ``#!/usr/bin/env``), else None."""
    parts = _interpreter(script)
    if not parts:
        return None
    program = parts[0]
    if os.path.basename(program) == "env":
        args = [a for a in parts[1:] if not a.startswith("-") and "=" not in a]
        if not args:
            return None
        name = args[0]
        return None if _which_in(name, path) else name
    return None if _executable(program) else program


def _rustup_home(environment: Environment | None = None) -> Path:
    """Where the client's rustup keeps its toolchains (None: this process's)."""
    if environment is None:
        home = os.environ.get("RUSTUP_HOME")
        return Path(home) if home else Path.home() / ".rustup"
    rustup = environment.get("RUSTUP_HOME")
    if rustup:
        return Path(rustup)
    user = environment.get("HOME")
    return (Path(user) if user else Path.home()) / ".rustup"


def _rustup_proxy_dirs(found: str, rustup_home: Path) -> tuple[str, ...] | None:
    """For a rustup proxy (``~/.cargo/bin/rust-analyzer -> rustup``): the toolchain ``bin``
    directories it could dispatch to; None when ``found`` is not a proxy."""
    try:
        real = os.path.basename(os.path.realpath(found))
    except (OSError, ValueError):
        return None
    if real not in ("rustup", "rustup-init", "rustup.exe", "rustup-init.exe"):
        return None
    try:
        toolchains = rustup_home / "toolchains"
        return tuple(sorted(str(t / "bin") for t in toolchains.iterdir()))
    except (OSError, RuntimeError):
        return ()


def _package_version(script: str, package: str) -> str | None:
    """The version in the ``package.json`` of npm package ``package`` that holds ``script``."""
    try:
        directory = os.path.dirname(os.path.realpath(script))
    except (OSError, ValueError):
        return None
    for _ in range(6):
        try:
            with open(os.path.join(directory, "package.json"), encoding="utf-8") as handle:
                data = json.load(handle)
        except (OSError, ValueError):
            data = None
        if isinstance(data, dict) and data.get("name") == package:
            version = data.get("version")
            return version if isinstance(version, str) else None
        parent = os.path.dirname(directory)
        if parent == directory:
            break
        directory = parent
    return None


def _too_old(spec: ServerSpec, found: str) -> str | None:
    """Why the package behind ``found`` is too old for ``spec``, or None."""
    check = MIN_PACKAGE_MAJOR.get(spec.id)
    if check is None:
        return None
    package, minimum, why = check
    version = _package_version(found, package)
    if version is None:
        return None
    major = version.split(".", 1)[0]
    if major.isdigit() and int(major) < minimum:
        return (
            f"{found} is {package} {version}; {why}: ipylsp install {spec.id} "
            "(installs into ipylsp's data dir, which is searched first)"
        )
    return None


def _node_hint() -> str:
    return "install Node.js >= 18 (apt-get install nodejs)"


def _resolve_uncached(
    spec: ServerSpec, dirs: tuple[str, ...], path: tuple[str, ...], rustup_home: Path
) -> tuple[Resolution, tuple[str, ...]]:
    """The resolution and any further directories whose changes would change it (`path`: the
    client's PATH, `rustup_home`: its rustup's)."""
    if not spec.command:
        return Resolution(None, reason=f"{spec.id}: no command configured"), ()
    resolution = _resolve_program(spec, dirs, path)
    if resolution.found is None or resolution.command is None:
        return resolution, ()
    toolchain_bins = _rustup_proxy_dirs(resolution.found, rustup_home)
    if toolchain_bins is None:
        return resolution, ()
    name = os.path.basename(resolution.found)
    if any(_executable(os.path.join(d, name)) for d in toolchain_bins):
        return resolution, toolchain_bins
    return Resolution(
        None,
        resolution.found,
        f"{resolution.found} is a rustup proxy, but no installed toolchain has {name}: "
        f"rustup component add {name}",
    ), (str(rustup_home / "toolchains"), *toolchain_bins)


def _resolve_program(
    spec: ServerSpec, dirs: tuple[str, ...], path: tuple[str, ...]
) -> Resolution:
    program, args = spec.command[0], spec.command[1:]
    if os.path.isabs(program):
        found = program if _executable(program) else None
        if found is None:
            return Resolution(None, reason=f"{program} does not exist or is not executable")
    elif os.sep in program or (os.altsep and os.altsep in program):
        return Resolution(None, reason=f"{program!r}: give an absolute path or a bare name")
    else:
        found = _which_in(program, dirs)
        if found is None:
            return Resolution(
                None,
                reason=f"{program} not found (searched ipylsp's data dir, "
                "the kernel's environment and PATH)",
            )
    missing = _missing_interpreter(found, path)
    if missing is not None:
        hint = (
            _node_hint()
            if os.path.basename(missing) in ("node", "nodejs")
            else (f"install {missing}")
        )
        return Resolution(None, found, f"{found} needs {missing}, which is not on PATH: {hint}")
    if "node" in spec.install.needs and _which_in("node", path) is None:
        return Resolution(
            None, found, f"{spec.name} needs node, which is not on PATH: {_node_hint()}"
        )
    too_old = _too_old(spec, found)
    if too_old is not None:
        return Resolution(None, found, too_old)
    warnings = tuple(
        f"{exe} not found on PATH: {hint}"
        for exe, hint in RUNTIME_COMPANIONS.get(spec.id, ())
        if _which_in(exe, path) is None
    )
    return Resolution((found, *args), found, "", warnings)


_cache: DirCache[tuple[Resolution, tuple[str, ...]]] = DirCache(limit=1024)


def invalidate() -> None:
    """Drop every cached resolution (installers call this after an install)."""
    _cache.clear()


def resolve(
    spec: ServerSpec, data: Path, environment: Environment | None = None
) -> Resolution:
    """Find ``spec.command[0]`` and tell whether the server can run for the client of
    `environment` (None: this process; see the module doc)."""
    dirs = search_dirs(spec, data, environment)
    path = _path_dirs(environment)
    rustup_home = _rustup_home(environment)
    key: tuple[object, ...] = (
        spec.id, spec.command, spec.install.needs, dirs, path, str(rustup_home)
    )
    watched = dirs
    if spec.command and os.path.isabs(spec.command[0]):
        watched = (*dirs, os.path.dirname(spec.command[0]))
    hit, entry = _cache.get(key)
    if hit and entry is not None:
        return entry[0]
    result, extra = _resolve_uncached(spec, dirs, path, rustup_home)
    _cache.put(key, (result, extra), (*watched, *extra))
    return result


def resolve_command(
    spec: ServerSpec, data: Path, environment: Environment | None = None
) -> tuple[str, ...] | None:
    """``spec.command`` with ``command[0]`` made absolute, or None when the server cannot run."""
    return resolve(spec, data, environment).command


def is_installed(spec: ServerSpec, data: Path, environment: Environment | None = None) -> bool:
    return resolve(spec, data, environment).command is not None
