"""`broker/quick.py`: which command lines the thin path takes (the rest go to the full
parser), and the values it shares with `cli.py`."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from ipylsp import cli
from ipylsp.broker import quick


def test_it_shares_the_full_paths_defaults() -> None:
    check = cli._parser(["check"]).parse_args(["check", "x.py"])
    assert check.timeout == quick.DEFAULT_TIMEOUT
    assert quick.MORE_HINT == cli.CLI_MORE_HINT
    [severity] = [a for a in cli._parser(["check"])._subparsers._group_actions[0]
                  .choices["check"]._actions if a.dest == "severity"]
    assert tuple(severity.choices) == quick.SEVERITIES


@pytest.mark.parametrize(("argv", "expected"), [
    (["check", "a.py"], {"paths": ["a.py"], "json": False, "severity": None,
                         "timeout": 30.0, "before": None}),
    (["check", "--json", "a.py", "b.py", "--severity", "all", "--timeout", "5",
      "--before", "old.py"],
     {"paths": ["a.py", "b.py"], "json": True, "severity": "all", "timeout": 5.0,
      "before": "old.py"}),
])
def test_plain_command_lines_are_read_as_the_parser_reads_them(
        argv: list[str], expected: dict[str, object]) -> None:
    assert quick._plain(argv) == expected
    parsed = cli._parser(argv).parse_args(argv)
    assert [str(p) for p in parsed.paths] == expected["paths"]
    assert (parsed.json, parsed.severity, parsed.timeout) == (
        expected["json"], expected["severity"], expected["timeout"])
    assert (None if parsed.before is None else str(parsed.before)) == expected["before"]


@pytest.mark.parametrize("argv", [
    [], ["status"], ["check"], ["check", "-h"], ["check", "--help"],
    ["check", "--server", "ruff", "a.py"], ["check", "--severity", "fatal", "a.py"],
    ["check", "--timeout", "soon", "a.py"], ["check", "--json=1", "a.py"],
    ["check", "--", "a.py"], ["check", "--before"], ["check", ""],
    ["--config", "c.py", "check", "a.py"],
])
def test_anything_else_goes_to_the_full_parser(argv: list[str]) -> None:
    assert quick._plain(argv) is None


def test_it_answers_nothing_without_a_broker_of_this_build(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No runtime place (nothing made, nothing started): the full path answers."""
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))  # no ipylsp/ in it
    monkeypatch.delenv("IPYLSP_BROKER", raising=False)
    assert quick.check(["check", __file__], io.StringIO()) is None
    assert not (tmp_path / "ipylsp").exists()


def test_the_broker_switch_turns_it_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """Off, it looks for no broker at all (a place that would answer is never asked)."""
    asked: list[object] = []
    monkeypatch.setattr(quick.place, "existing", lambda *a, **k: asked.append(a))
    monkeypatch.setenv("IPYLSP_BROKER", "0")
    assert quick.check(["check", sys.argv[0]], io.StringIO()) is None
    assert asked == []
    monkeypatch.setenv("IPYLSP_BROKER", "1")
    assert quick.check(["check", sys.argv[0]], io.StringIO()) is None
    assert asked == [(quick.place.default_data,)]


@pytest.mark.parametrize("xdg", [None, "", "  ", "/somewhere/data"])
def test_its_data_directory_is_the_default_settings_one(
        xdg: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    from ipylsp.broker.place import default_data
    from ipylsp.service import data_dir

    if xdg is None:
        monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    else:
        monkeypatch.setenv("XDG_DATA_HOME", xdg)
    assert default_data() == str(data_dir(None))
