"""Where a process without an IPython profile (the CLI, the broker's clients) finds the IPyLSP
settings files: `ipylsp_config.py`/`.json` in Jupyter's config dirs. Apart from `config.py`,
which reads them with traitlets, so that a CLI call with no such file imports no traitlets.

Jupyter's config dirs come from `jupyter_core.paths` (its import costs a thin CLI call about
15 ms); given a private directory, they are kept there in a small file per set of inputs they
depend on (the interpreter, the environment's `JUPYTER_*`, `HOME`, `XDG_*`, `CONDA_*`,
`VIRTUAL_ENV`, `PYTHON*` variables), so a later call only stats the candidates. Reads and
writes only that file and the candidates.
"""

from __future__ import annotations

import os
import sys
import zlib

from ipylsp import json_text

TYPE_CHECKING = False  # `typing.TYPE_CHECKING`, without importing typing (see ipylsp/__init__)
if TYPE_CHECKING:
    from pathlib import Path

CONFIG_NAME = "ipylsp_config"
_INPUTS = ("JUPYTER_", "HOME", "XDG_", "CONDA_", "VIRTUAL_ENV", "PYTHON", "APPDATA",
           "PROGRAMDATA")


def known_none(cache: str) -> bool:
    """Whether there is surely no settings file: Jupyter's config dirs are kept in `cache` for
    this environment and none holds one (False also when they are not kept yet). Without
    `pathlib`, for the thin path."""
    dirs = _kept(os.path.join(cache, f"config-dirs-{_key()}.json"))
    return dirs is not None and not any(
        os.path.isfile(os.path.join(d, f"{CONFIG_NAME}{suffix}"))
        for d in dirs for suffix in (".json", ".py"))


def config_files(cache: Path | None = None) -> list[Path]:
    """`ipylsp_config.py`/`.json` in Jupyter's config dirs, lowest precedence first; `cache`:
    a private directory to keep the dirs in (see the module doc)."""
    dirs = _cached(cache) if cache is not None else None
    if dirs is None:
        dirs = _config_dirs()
        if cache is not None:
            _keep(cache, dirs)
    found = []
    for directory in dirs:
        for suffix in (".json", ".py"):
            candidate = directory / f"{CONFIG_NAME}{suffix}"
            if candidate.is_file():
                found.append(candidate)
    return found


def _config_dirs() -> list[Path]:
    """Jupyter's config dirs, lowest precedence first."""
    from pathlib import Path

    try:
        from jupyter_core.paths import jupyter_config_path

        dirs = [Path(d) for d in jupyter_config_path()]
    except ImportError:
        dirs = [Path.home() / ".jupyter"]
    return list(reversed(dirs))  # jupyter_config_path lists the most specific first


def _key() -> str:
    inputs = [sys.executable, sys.prefix, sys.base_prefix, sys.flags.no_user_site,
              sorted((k, v) for k, v in os.environ.items() if k.startswith(_INPUTS))]
    text = json_text.dumps(inputs).encode("utf-8", "surrogateescape")
    return f"{zlib.crc32(text):08x}{zlib.adler32(text):08x}"


def _kept(file: str) -> list[str] | None:
    try:
        with open(file, encoding="utf-8") as kept:
            dirs = json_text.loads(kept.read())
    except (OSError, ValueError):
        return None
    if not isinstance(dirs, list) or not all(isinstance(d, str) for d in dirs):
        return None
    return dirs


def _cached(cache: Path) -> list[Path] | None:
    from pathlib import Path

    dirs = _kept(os.fspath(cache / f"config-dirs-{_key()}.json"))
    return None if dirs is None else [Path(d) for d in dirs]


def _keep(cache: Path, dirs: list[Path]) -> None:
    target = cache / f"config-dirs-{_key()}.json"
    temporary = target.with_name(f".{target.name}.{os.getpid()}")
    try:
        with open(temporary, "x", encoding="utf-8") as out:
            out.write(json_text.dumps([str(d) for d in dirs]))
        os.replace(temporary, target)
    except OSError:
        temporary.unlink(missing_ok=True)
