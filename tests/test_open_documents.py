"""`service/check/open_documents.py` with a real ty: what a server has open is the disk's text
before it is asked about another file, so no import is judged against a stale or proposed
module (a broker's servers keep documents open across every client's checks)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from ipylsp.model.checks import FileCheck
from ipylsp.model.settings import Settings
from ipylsp.service import Service

pytestmark = pytest.mark.real

DEFINES_F = "def f() -> int:\n    return 1\n"
DEFINES_G = "def g() -> int:\n    return 1\n"
USES_F = "from b import f\n\nf()\n"


@pytest.fixture
def service() -> Iterator[Service]:
    made = Service(Settings(language_servers={"python": ("ty",)}, wait_budget=20.0))
    yield made
    made.close()


def _problems(service: Service, path: Path) -> list[str]:
    report = service.check_files([FileCheck(path, before="")])
    assert not report.has_unknown, report
    return [d.message for f in report.files for d in f.diagnostics]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "b.py").write_text(DEFINES_F)
    (tmp_path / "a.py").write_text(USES_F)
    return tmp_path


def test_a_module_changed_on_disk_since_its_check_is_judged_as_on_disk(
    service: Service, project: Path,
) -> None:
    assert _problems(service, project / "b.py") == []  # b is open in ty, defining f
    assert _problems(service, project / "a.py") == []
    (project / "b.py").write_text(DEFINES_G)  # another process; b is not checked again
    [message] = _problems(service, project / "a.py")
    assert "`f`" in message and "b" in message


def test_a_preflights_proposed_text_is_not_what_others_are_judged_by(
    service: Service, project: Path,
) -> None:
    proposed = service.check(project / "b.py", content=DEFINES_G)  # never written
    assert [f.path for f in proposed.files] == [project / "b.py"]
    assert _problems(service, project / "a.py") == []  # b on disk still defines f
