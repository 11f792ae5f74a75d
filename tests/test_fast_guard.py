"""The fast run's guard (tests/conftest.py, IPYLSP_TESTS_FAST=1): a test not marked `real` that
starts a process fails, with the fix in the message, however it started it and whether or not
the code under test caught the error; a test marked `real`, or one starting nothing, passes.

Judged on tests/fixtures/fast_guard_probe.py, run by a pytest of its own in fast mode.
"""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.conftest import FAST_VAR

pytestmark = pytest.mark.real

REPO = Path(__file__).resolve().parent.parent
PROBE = REPO / "tests" / "fixtures" / "fast_guard_probe.py"
FIX = "mark the test `@pytest.mark.real` (or its module: `pytestmark = pytest.mark.real`)"


def _outcomes(tmp_path: Path) -> dict[str, tuple[str, str]]:
    """Each probe test's outcome ("passed", "failure" or "error") and its report text."""
    junit = tmp_path / "junit.xml"
    run = subprocess.run(
        [sys.executable, "-m", "pytest", str(PROBE), "-p", "no:cacheprovider", "-q",
         f"--junitxml={junit}"],
        cwd=REPO, env={**os.environ, FAST_VAR: "1"}, capture_output=True, text=True,
        timeout=120,
    )
    assert run.returncode == 1, run.stdout + run.stderr  # 1: some tests failed
    outcomes = {}
    for case in ET.parse(junit).iter("testcase"):
        bad = [child for child in case if child.tag in ("failure", "error")]
        outcomes[case.get("name", "")] = (
            (bad[0].tag, bad[0].text or "") if bad else ("passed", "")
        )
    return outcomes


def test_a_test_not_marked_real_that_starts_a_process_fails(tmp_path: Path) -> None:
    outcomes = _outcomes(tmp_path)
    assert {name: outcome for name, (outcome, _) in outcomes.items()} == {
        "test_spawns[subprocess.run]": "failure",
        "test_spawns[os.system]": "failure",
        "test_spawns[os.posix_spawn]": "failure",
        "test_spawns[asyncio]": "failure",
        "test_spawns_and_catches_the_error": "failure",
        "test_spawns_in_a_thread": "failure",
        "test_through_a_module_fixture": "error",  # in its setup
        "test_marked_real_may_spawn": "passed",
        "test_starts_nothing": "passed",
    }
    for name, (outcome, text) in outcomes.items():
        if outcome != "passed":
            nodeid = f"tests/fixtures/fast_guard_probe.py::{name}"
            assert f"{nodeid} started a process (" in text, (name, text)
            assert f"in the fast run ({FAST_VAR}=1)" in text and FIX in text, (name, text)
