"""The top-level Python API on the process-wide service, with real ty and ruff."""

from __future__ import annotations

import dataclasses
import inspect
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import ipylsp
from ipylsp.lsp.requests.completion import COMPLETIONS
from ipylsp.lsp.requests.document_highlight import DOCUMENT_HIGHLIGHT
from ipylsp.lsp.requests.hover import HOVER
from ipylsp.lsp.requests.locations import DEFINITION, REFERENCES
from ipylsp.lsp.requests.signature_help import SIGNATURE_HELP
from ipylsp.lsp.requests.symbols import SYMBOLS
from ipylsp.model.diagnostics import Report
from ipylsp.model.settings import Settings

pytestmark = pytest.mark.real

LIB = "def area(width: int, height: int) -> int:\n    return width * height\n"
MAIN = "from lib import area\n\ntotal = area(2, 3)\nprint(total)\n"


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[Path]:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "lib.py").write_text(LIB)
    (tmp_path / "main.py").write_text(MAIN)
    ipylsp._reset_service()
    ipylsp.get_service(Settings(language_servers={"python": ("ty", "ruff")}))
    yield tmp_path
    ipylsp._reset_service()


def test_check_then_pending_hands_over_once(workspace: Path) -> None:
    main = workspace / "main.py"
    assert ipylsp.check(main).files[0].diagnostics == ()
    main.write_text(MAIN + "count: int = 'x'\nprint(missing)\n")
    text = ipylsp.format_report(ipylsp.check(main))
    assert text.splitlines() == [
        '<diagnostics file="main.py">',
        "ERROR [5:14] Object of type `Literal[\"x\"]` is not assignable to `int` "
        "[invalid-assignment] (ty)",
        "ERROR [6:7] Name `missing` used when not defined [unresolved-reference, F821] "
        "(ty, Ruff)",
        "</diagnostics>",
    ]
    pending = ipylsp.format_report(ipylsp.pending())
    assert pending == text
    assert ipylsp.pending().files == ()


def test_pending_drops_what_a_later_write_fixed(workspace: Path) -> None:
    main = workspace / "main.py"
    ipylsp.check(main)
    main.write_text(MAIN + "print(missing)\n")
    ipylsp.check(main)
    main.write_text(MAIN)
    fixed = ipylsp.check(main)
    assert ipylsp.format_report(fixed) == "fixed 1 error in main.py"  # ty and ruff: one problem
    assert ipylsp.pending().files == ()


def test_language_features_take_and_give_one_based_positions(workspace: Path) -> None:
    main = workspace / "main.py"
    ipylsp.check(main)
    hover = ipylsp.hover(main, 3, 9)
    assert hover.error == ""
    assert hover.answer == "def area(\n    width: int,\n    height: int\n) -> int"
    assert ipylsp.definition(main, 3, 9).format(workspace) == "lib.py:1:5"
    assert sorted(ipylsp.references(workspace / "lib.py", 1, 5).format(workspace).split()) == [
        "lib.py:1:5", "main.py:1:17", "main.py:3:9",
    ]
    assert "area" in ipylsp.completions(main, 3, 9).format(workspace).splitlines()
    assert ipylsp.symbols(main).format(workspace).splitlines() == ["variable total [3:1]"]


FEATURE_FUNCTIONS = ("hover", "definition", "references", "completions", "symbols",
                     "signature_help", "document_highlight")


def test_every_feature_function_is_real_typed_and_listed() -> None:
    """Issue 29, item 2: each is a function of the module (IDEs and mypy read its signature,
    not a module `__getattr__`), in `__all__` and `dir()`, named after its feature, its
    docstring its feature's `about` (written out, so that importing ipylsp imports no
    feature)."""
    features = {f.kind: f for f in (HOVER, DEFINITION, REFERENCES, COMPLETIONS, SYMBOLS,
                                    SIGNATURE_HELP, DOCUMENT_HIGHLIGHT)}
    assert sorted(features) == sorted(FEATURE_FUNCTIONS)
    for name in FEATURE_FUNCTIONS:
        function = getattr(ipylsp, name)
        assert inspect.isfunction(function) and function.__name__ == name
        assert name in ipylsp.__all__ and name in dir(ipylsp)
        takes = ["path"] if name == "symbols" else ["path", "line", "column"]
        assert list(inspect.signature(function).parameters) == takes
        doc = " ".join((function.__doc__ or "").split())
        places = "" if name == "symbols" else " Positions are 1-based (characters)."
        assert doc == features[name].about + places


def test_bad_positions_are_rejected(workspace: Path) -> None:
    with pytest.raises(ValueError, match="1-based"):
        ipylsp.hover(workspace / "main.py", 0, 1)


def test_import_is_cheap_and_starts_nothing() -> None:
    """`import ipylsp` (what `%load_ext ipylsp` pays) imports none of ipylsp's layers: the
    feature functions import their feature when called (45 more modules, 18 of them ipylsp's,
    when they were built at import)."""
    code = (
        "import sys, threading, ipylsp; "
        "heavy = [m for m in ('asyncio', 'IPython', 'traitlets') if m in sys.modules]; "
        "ours = sorted(m for m in sys.modules if m.startswith('ipylsp')); "
        "print(heavy, threading.active_count(), ours)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[] 1 ['ipylsp', 'ipylsp._version']"


def test_errors_written_with_a_syntax_error_are_reported_once_it_is_fixed(
    workspace: Path,
) -> None:
    """A write with a syntax error holds the servers back; the type error written in the same
    write must still be reported when the syntax error is fixed (the servers catch up)."""
    main = workspace / "main.py"
    ipylsp.check(main)
    main.write_text(MAIN + "count: int = 'x'\nprint(\n")
    assert ipylsp.format_report(ipylsp.check(main)).splitlines() == [
        '<diagnostics file="main.py">',
        "ERROR [6:6] '(' was never closed [SyntaxError] (ipylsp-syntax)",
        "</diagnostics>",
    ]
    main.write_text(MAIN + "count: int = 'x'\n")
    assert ipylsp.format_report(ipylsp.check(main)).splitlines() == [
        '<diagnostics file="main.py">',
        "ERROR [5:14] Object of type `Literal[\"x\"]` is not assignable to `int` "
        "[invalid-assignment] (ty)",
        "</diagnostics>",
        "fixed 1 error in main.py",
    ]


def test_what_the_api_returns_prints_as_the_answer(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At a prompt, a report reads as `%lsp`'s answer (not a dataclass dump), in the words of
    the request; it is still a `Report` with every field."""
    monkeypatch.chdir(workspace)
    main = workspace / "main.py"
    clean = ipylsp.check(main)
    assert repr(clean) == str(clean) == f"{main}: no new problems"
    assert repr(ipylsp.check(main, before="")) == f"{main}: no problems"
    main.write_text(MAIN + "count: int = 'x'\n")
    report = ipylsp.check(main)
    assert isinstance(report, Report) and report.files[0].display_path == "main.py"
    block = "\n".join([
        '<diagnostics file="main.py">',
        "ERROR [5:14] Object of type `Literal[\"x\"]` is not assignable to `int` "
        "[invalid-assignment] (ty)",
        "</diagnostics>",
    ])
    assert repr(report) == ipylsp.format_report(report) == block
    assert report == Report(report.files, report.root, report.notes, report.unknown)
    assert dataclasses.replace(report, notes=("n",)).notes == ("n",)
    bundle = report._repr_mimebundle_()  # type: ignore[attr-defined]
    assert sorted(bundle) == sorted(["text/plain", "text/html",
                                     "application/vnd.ipylsp.diagnostics+json"])
    assert bundle["text/plain"] == block
    assert repr(ipylsp.diagnostics(main)) == block
    assert repr(ipylsp.diagnostics(workspace / "gone.py")) == "nothing checked yet"
    assert repr(ipylsp.pending()) == block
    assert repr(ipylsp.pending()) == "nothing pending"
    # the same refresh rule as lsp_diagnostics: a file never checked, or changed on disk
    # since its check, is checked first
    assert repr(ipylsp.diagnostics(workspace / "lib.py")) == "no known problems"
    main.write_text(MAIN)
    assert repr(ipylsp.diagnostics(main)) == "no known problems"
    hover = ipylsp.hover(main, 3, 9)
    assert repr(hover) == str(hover) == "def area(\n    width: int,\n    height: int\n) -> int"
    assert repr(ipylsp.definition(main, 3, 9)) == "lib.py:1:5"  # relative to the cwd
    assert repr(ipylsp.definition(main, 2, 1)) == "(no definition found)"


def test_a_cut_pending_hand_over_says_so_and_keeps_the_rest(workspace: Path) -> None:
    main = workspace / "main.py"
    ipylsp.check(main)
    main.write_text(MAIN + "".join(f"v{n}: int = 's{n}'\n" for n in range(12)))
    ipylsp.check(main)
    first = ipylsp.pending()
    assert first.notes == ("... and 2 more pending: ipylsp.pending()",)
    assert repr(first).endswith("\n... and 2 more pending: ipylsp.pending()")
    second = ipylsp.pending()
    assert second.notes == ()
    handed = [d.range.start.line for r in (first, second) for f in r.files for d in f.diagnostics]
    assert sorted(handed) == list(range(4, 16))  # every problem once
    assert ipylsp.pending().files == ()


@pytest.mark.real
def test_a_known_file_grown_over_the_limit_is_said_once_then_forgotten(
    workspace: Path,
) -> None:
    """A checked file that grew past `max_file_mb` is checked again by `diagnostics` (it
    changed on disk): the check says it is not read, and forgets it, so the next call for all
    files does not say it again (each call did, and showed its old problems as current); asked
    for by name, it is said each time: that is the answer."""
    main = workspace / "main.py"
    service = ipylsp.get_service()
    service.configure(dataclasses.replace(service.settings, max_file_mb=0.001))
    assert repr(ipylsp.check(main)) == f"{main}: no new problems"
    main.write_text(MAIN + "#" * 2000 + "\n")
    size = main.stat().st_size
    first = ipylsp.diagnostics(main)
    assert first.notes == (
        f"not checked: main.py is {size:,} bytes, over the 1,048-byte limit "
        "(IPyLSP.max_file_mb)",
    )
    assert ipylsp.diagnostics().notes == ()
    assert ipylsp.diagnostics(main).notes == first.notes
