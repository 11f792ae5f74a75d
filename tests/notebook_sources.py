"""Real notebooks nobody here wrote, from named PyPI sdists, for the cells sweep
(`tests/test_cells_sweep.py`), and what they need to run.

Each `Source` is one sdist at a pinned version: the directory of it the sweep copies beside a
notebook (its data files and local modules) and the notebooks in it. `scripts/bootstrap` runs
this file: each missing sdist is downloaded with pip (`--no-binary` that package only: its
build requirements may be wheels), the directory extracted into the git-ignored
`.cache/notebooks/<package>-<version>/`, and `REQUIREMENTS` (what the notebooks import, at
the versions they were tried with) installed into this interpreter's environment, `.venv`.
Running it again costs a few stats and one pip check.

    .venv/bin/python tests/notebook_sources.py
"""

from __future__ import annotations

import importlib.metadata
import shutil
import subprocess
import sys
import tarfile
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CACHE = REPO / ".cache" / "notebooks"
FETCH = "scripts/bootstrap --no-run (or: .venv/bin/python tests/notebook_sources.py)"


@dataclass(frozen=True)
class Source:
    """`directory` of `package`'s sdist at `version`: every notebook in it (not below it) is
    run, with a copy of the whole directory as its working directory."""

    package: str
    version: str
    directory: str

    @property
    def name(self) -> str:
        return f"{self.package}-{self.version}"

    @property
    def root(self) -> Path:
        """Where the directory is kept."""
        return CACHE / self.name / self.directory

    def notebooks(self) -> list[Path]:
        return sorted(self.root.glob("*.ipynb"))


SOURCES = (
    # nbclient's own test notebooks, for the installed version (its wheel has none)
    Source("nbclient", importlib.metadata.version("nbclient"), "tests/files"),
    # IPython's example notebooks: 8.39 is the last release whose sdist ships them
    Source("ipython", "8.39.0", "examples/IPython Kernel"),
    Source("statsmodels", "0.14.6", "examples/notebooks"),
    Source("control", "0.10.2", "examples"),
)

REQUIREMENTS = (
    "numpy==2.4.6", "scipy==1.17.1", "pandas==3.1.1", "matplotlib==3.11.2", "patsy==1.0.3",
    "statsmodels==0.14.6", "control==0.10.2", "sympy==1.14.0",
    "seaborn==0.13.2",  # statsmodels' copula and lowess notebooks (a fresh clone lacked it)
)
"""What the notebooks import (beyond ipylsp's test extras: IPython, ipywidgets), at the
versions the sweep was measured with."""


def missing() -> list[Source]:
    return [s for s in SOURCES if not s.notebooks()]


def fetch(source: Source) -> str:
    """Download `source`'s sdist and keep its directory; a line saying what happened."""
    with tempfile.TemporaryDirectory() as tmp:
        download = [sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                    "--no-binary", source.package, f"{source.package}=={source.version}",
                    "-d", tmp]
        done = subprocess.run(download, capture_output=True, text=True)
        archives = list(Path(tmp).glob("*.tar.gz"))
        if done.returncode != 0 or len(archives) != 1:
            return f"{source.name}: pip download failed: {done.stderr.strip()[-500:]}"
        prefix = f"{archives[0].name.removesuffix('.tar.gz')}/{source.directory}/"
        target = CACHE / source.name
        with tarfile.open(archives[0]) as tar:
            members = [m for m in tar.getmembers() if m.name.startswith(prefix)
                       and (m.isfile() or m.isdir())]
            for member in members:
                member.name = source.directory + "/" + member.name[len(prefix):]
            shutil.rmtree(target, ignore_errors=True)
            tar.extractall(target, members=members, filter="data")
    found = len(source.notebooks())
    return f"{source.name}: {found} notebooks in {source.root.relative_to(REPO)}"


def main() -> int:
    todo = missing()
    if todo:
        with ThreadPoolExecutor(len(todo)) as pool:  # statsmodels' metadata build takes ~2 min
            for line in pool.map(fetch, todo):
                print(f"notebook_sources: {line}")
    install = [sys.executable, "-m", "pip", "install", "-q", *REQUIREMENTS]
    if subprocess.run(install).returncode != 0:
        print("notebook_sources: the notebooks' requirements did not install (above)",
              file=sys.stderr)
        return 1
    left = missing()
    for source in left:
        print(f"notebook_sources: {source.name} has no notebooks in {source.root}",
              file=sys.stderr)
    return 1 if left else 0


if __name__ == "__main__":
    sys.exit(main())
