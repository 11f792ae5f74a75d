"""The files the service has checked (`service.check.known_files`): their error count is kept
as entries change, and always equals the count made from scratch over every known file."""

from __future__ import annotations

import os
import random
from pathlib import Path

from ipylsp.analysis.report.merge import errors
from ipylsp.model.diagnostics import Diagnostic, Position, Range, Severity
from ipylsp.service.check.known_files import KnownFiles


def problem(line: int, severity: Severity, server: str, code: str = "E") -> Diagnostic:
    return Diagnostic(Range(Position(line, 0), Position(line, 1)), severity, f"m{line}",
                      server, code, server_id=server)


def from_scratch(known: KnownFiles) -> int:
    total = 0
    for path in known:  # the files, not the in-memory documents
        entry = known.get(path)
        assert entry is not None
        total += errors(d for ds in entry.results.values() for d in ds)
    return total


def results(rng: random.Random) -> dict[str, tuple[Diagnostic, ...]]:
    return {
        server: tuple(problem(rng.randrange(4), rng.choice(list(Severity)), server)
                      for _ in range(rng.randrange(4)))
        for server in rng.sample(["ty", "ruff"], rng.randrange(3))
    }


def test_the_kept_count_is_the_count_from_scratch_after_every_change() -> None:
    rng = random.Random(7)
    known = KnownFiles(cap=5)
    paths = [Path(f"/w/f{i}.py") for i in range(8)]
    for step in range(600):
        path = rng.choice(paths)
        action = rng.randrange(4)
        if action == 0:
            known.forget(path)
        elif action == 1 or known.get(path) is None:
            found = results(rng)
            missed = {"ruff": "old"} if "ruff" not in found and rng.random() < 0.5 else {}
            known.record(path, f"text {step}", found, missed, frozenset(["ty", "ruff"]),
                         virtual=rng.random() < 0.1)
        elif action == 2:
            entry = known.get(path)
            assert entry is not None
            known.refresh(path, entry, "ty", results(rng).get("ty", ()))
        else:
            entry = known.get(path)
            assert entry is not None
            known.catch_up(path, entry.text, "ruff", results(rng).get("ruff", ()))
        assert known.errors == from_scratch(known), step


def test_two_servers_reporting_one_problem_count_once() -> None:
    known = KnownFiles()
    def undefined(server: str, code: str) -> Diagnostic:
        return Diagnostic(Range(Position(1, 0), Position(1, 4)), Severity.ERROR,
                          "Name `totl` used when not defined", server, code, server_id=server)

    same = {"ty": (undefined("ty", "unresolved-reference"),), "ruff": (undefined("ruff", "F821"),)}
    known.record(Path("/w/a.py"), "x", same, {}, frozenset(same))
    assert known.errors == 1
    known.forget(Path("/w/a.py"))
    assert known.errors == 0


def test_a_file_no_longer_read_has_changed_on_disk(tmp_path: Path) -> None:
    """A known file that grew over the limit, or was replaced by a FIFO, is not read (and never
    opened): its text is not the one last checked, so it counts as changed, without raising."""
    same, grown, fifo = tmp_path / "same.py", tmp_path / "grown.py", tmp_path / "fifo.py"
    known = KnownFiles()
    for path in (same, grown, fifo):
        path.write_text("x = 1\n")
        known.record(path, "x = 1\n", {}, {}, frozenset())
    grown.write_text("x = 1\n" * 10)
    fifo.unlink()
    os.mkfifo(fifo)
    assert known.changed_on_disk(max_bytes=20) == [grown, fifo]
    assert known.changed_on_disk([same, fifo], max_bytes=None) == [fifo]
