"""Where a process without an IPython profile (the CLI, the broker's clients) finds the IPyLSP
settings files: `ipylsp_config.py`/`.json` in Jupyter's config dirs. Apart from `config.py`,
which reads them with traitlets, so that a CLI call with no such file imports no traitlets."""

from __future__ import annotations

from pathlib import Path

CONFIG_NAME = "ipylsp_config"


def config_files() -> list[Path]:
    """`ipylsp_config.py`/`.json` in Jupyter's config dirs, lowest precedence first."""
    try:
        from jupyter_core.paths import jupyter_config_path

        dirs = [Path(d) for d in jupyter_config_path()]
    except ImportError:
        dirs = [Path.home() / ".jupyter"]
    found = []
    for directory in reversed(dirs):  # jupyter_config_path lists the most specific first
        for suffix in (".json", ".py"):
            candidate = directory / f"{CONFIG_NAME}{suffix}"
            if candidate.is_file():
                found.append(candidate)
    return found
