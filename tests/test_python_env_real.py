"""The project's virtual environment, handed to real Python servers through `Service.check`.

A package installed only in the project's venv (a real ``python -m venv --without-pip``, offline,
with the package dropped into its site-packages) must import cleanly. The test proves the server
*resolved* it, not just stayed quiet: the package's function returns ``int`` and the code assigns
it to a ``str``, an error only a server that read the package can report. Without the venv the
same file gets the unresolved-import error instead, so each test can fail.

The kernel here runs in a venv of its own (``VIRTUAL_ENV`` set, as when a kernel is started from
an activated venv) that lacks the package: the project's venv must win over it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ipylsp.analysis.report import FormatOptions, format_text
from ipylsp.model.settings import Settings
from ipylsp.service.service import Service
from tests.real_servers import DATA_DIR, json_diagnostics, require, workspace, write

pytestmark = pytest.mark.real

PACKAGE = "ipylsp_venv_only_pkg"
SOURCE = f"from {PACKAGE} import answer\n\nlabel: str = answer()\n"
FIXED = f"from {PACKAGE} import answer\n\nlabel: str = str(answer())\n"

# With the project's venv: the planted type error, which needs the resolved package
RESOLVED = {
    "ty": (
        "ERROR [3:14] Object of type `int` is not assignable to `str` [invalid-assignment] (ty)"
    ),
    "pyright": (
        'ERROR [3:14] Type "int" is not assignable to declared type "str"; '
        '"int" is not assignable to "str" [reportAssignmentType] (Pyright)'
    ),
    "basedpyright": (
        'ERROR [3:14] Type "int" is not assignable to declared type "str"; '
        '"int" is not assignable to "str" [reportAssignmentType] (basedpyright)'
    ),
    "pyrefly": "ERROR [3:14] `int` is not assignable to `str` [bad-assignment] (Pyrefly)",
}
# (line, column, first line of the message, code): the messages go on with search paths
UNRESOLVED = {
    "ty": (1, 6, f"Cannot resolve imported module `{PACKAGE}`", "import-not-found"),
    "pyright": (1, 6, f'Import "{PACKAGE}" could not be resolved', "reportMissingImports"),
    "basedpyright": (1, 6, f'Import "{PACKAGE}" could not be resolved', "reportMissingImports"),
    "pyrefly": (1, 1, f"Cannot find module `{PACKAGE}`", "missing-import"),
}


def _make_venv(prefix: Path) -> None:
    """A real venv holding PACKAGE (typed), made offline in a fraction of a second."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(prefix)], check=True)
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    package = prefix / "lib" / version / "site-packages" / PACKAGE
    assert package.parent.is_dir(), package.parent
    package.mkdir()
    (package / "__init__.py").write_text("def answer() -> int:\n    return 42\n")
    (package / "py.typed").write_text("")


def _kernel_without_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    result = subprocess.run([sys.executable, "-c", f"import {PACKAGE}"], capture_output=True)
    assert result.returncode != 0, f"the kernel's own environment has {PACKAGE}"
    if sys.prefix != sys.base_prefix:
        monkeypatch.setenv("VIRTUAL_ENV", sys.prefix)


def _check(server: str, path: Path) -> tuple[str, list[dict[str, Any]], str]:
    """The first check's text block and JSON diagnostics, and the text after writing FIXED."""
    settings = Settings(data_dir=DATA_DIR, language_servers={"python": (server,)}, wait_budget=60.0)
    with Service(settings) as service:
        first = service.check(path)
        assert [f.unknown for f in first.files] == [()], first
        assert first.files[0].servers == (server,)
        text = format_text(first, FormatOptions(severity="all"))
        diagnostics = json_diagnostics(first, FormatOptions(severity="all"))
        path.write_text(FIXED, encoding="utf-8")
        second = format_text(service.check(path))
    return text, diagnostics, second


@pytest.mark.parametrize(
    ("server", "venv_name"),
    [
        ("ty", ".venv"),
        ("ty", "venv"),
        ("pyright", ".venv"),
        ("pyright", "venv"),
        ("basedpyright", ".venv"),
        ("pyrefly", ".venv"),
    ],
)
def test_a_package_only_in_the_projects_venv_imports_cleanly(
    server: str, venv_name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require(server)
    root = workspace(tmp_path, monkeypatch)
    _kernel_without_the_package(monkeypatch)
    write(root, "pyproject.toml", '[project]\nname = "proj"\nversion = "0"\n')
    _make_venv(root / venv_name)
    path = write(root, "src/app.py", SOURCE)

    text, diagnostics, after_fix = _check(server, path)

    assert not [d for d in diagnostics if PACKAGE in d["message"]], (
        f"{server} did not resolve {PACKAGE}: {text}"
    )
    assert text == f'<diagnostics file="src/app.py">\n{RESOLVED[server]}\n</diagnostics>'
    assert after_fix == "fixed 1 error in src/app.py"


@pytest.mark.parametrize("server", ["ty", "pyright", "basedpyright", "pyrefly"])
def test_without_the_venv_the_same_import_is_unresolved(
    server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The control: no project venv (the kernel's own lacks the package) -> unresolved."""
    require(server)
    root = workspace(tmp_path, monkeypatch)
    _kernel_without_the_package(monkeypatch)
    write(root, "pyproject.toml", '[project]\nname = "proj"\nversion = "0"\n')
    _make_venv(tmp_path / "elsewhere" / ".venv")  # a venv with the package, outside the project
    path = write(root, "src/app.py", SOURCE)

    text, diagnostics, _ = _check(server, path)

    assert [
        (d["line"], d["column"], d["message"].splitlines()[0], d["code"], d["severity"])
        for d in diagnostics
        if d["severity"] == "error"
    ] == [(*UNRESOLVED[server], "error")], text
