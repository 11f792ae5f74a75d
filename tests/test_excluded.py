"""Files a server's own rules exclude (issue 28, item 5): ruff and ty answer nothing at all, and
pyrefly its unused-import hints only, for a file their file selection leaves out, even one they
are given, which read as clean. ipylsp says `UNKNOWN [server] excluded (why): ...; the fix`
instead of asking them (`servers/exclusions.py`), on every surface.

Every rule is checked against the real server: with ipylsp's exclusions switched off (`raw`),
the server answers no error for exactly the files ipylsp says it excludes, and the error for
the others; each fix a report gives is one of the scenarios (ruff's `exclude` without `dist`,
ty's `!**/dist/`, pyrefly's `disable-project-excludes-heuristics`). pyright and basedpyright
check every file they are given. A missing server fails its test.

No configuration a user (or another user) can write at a server's root stops a check: a
pattern that is no valid glob (the servers then keep their defaults, and so does ipylsp), a
FIFO in a configuration file's place (never opened: the check keeps its budget, and every other
check its own), a root another user can write to (refused before anything there is read).
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from unittest import mock

import pytest

from ipylsp.agent.toolbox import Toolbox
from ipylsp.analysis.report import format_text
from ipylsp.cli import EXIT_FAILURE, main
from ipylsp.model.diagnostics import Severity, UnknownReason
from ipylsp.model.settings import Settings
from ipylsp.servers import exclusions, registry
from ipylsp.service.service import FileCheck, Service
from tests.real_servers import DATA_DIR, require, workspace, write
from tests.test_ipython_kernel import TY_RUFF, Kernel, block, kernel_dir_for, ty_assign

pytestmark = pytest.mark.real

BUDGET = 60.0
BAD = "x: int = 'a'\nprint(undefined_name)\n"
"""An error for every Python server: ruff's F821, the type checkers' assignment."""
TY_ERRORS = (
    ty_assign(1, 'Literal["a"]'),
    "ERROR [2:7] Name `undefined_name` used when not defined [unresolved-reference] (ty)",
)

RUFF_DIST = (
    "UNKNOWN [ruff] excluded (ruff does not check files under dist/ (its default `exclude`)): "
    "results for this file are incomplete; ruff checks them once `exclude` ([tool.ruff] in "
    'pyproject.toml, or ruff.toml) lists its defaults without "dist" (`ruff check '
    "--show-settings` prints them)"
)
TY_DIST = (
    "UNKNOWN [ty] excluded (ty does not check files under dist/ (its default `src.exclude`)): "
    'results for this file are incomplete; add "!**/dist/" to `src.exclude` ([tool.ty.src] in '
    "pyproject.toml, or [src] in ty.toml) to have ty check them"
)
PYREFLY_NODE_MODULES = (
    "UNKNOWN [pyrefly] excluded (pyrefly does not type-check files under node_modules/ (its "
    "default `project-excludes`)): results for this file are incomplete; set "
    "`disable-project-excludes-heuristics = true` in pyrefly.toml (or [tool.pyrefly] in "
    "pyproject.toml) to have pyrefly check them"
)
F821_BOTH = (
    "ERROR [2:7] Name `undefined_name` used when not defined [unresolved-reference, F821] "
    "(ty, Ruff)"
)
RUFF_GEN = (
    'UNKNOWN [ruff] excluded (ruff does not check files matching "gen" (`extend-exclude` in '
    'pyproject.toml)): results for this file are incomplete; remove "gen" from it to have '
    "ruff check them"
)


def _defaults(server_id: str) -> tuple[str, ...]:
    spec = registry.get(server_id)
    assert spec is not None and spec.excludes is not None
    return tuple(f"{name}/x.py" for name in spec.excludes.dirs)


@dataclass(frozen=True)
class Scenario:
    id: str
    server: str
    checked: tuple[str, ...]
    """Files the server reports the error in."""
    excluded: tuple[str, ...]
    """Files it answers with no error: ipylsp says `excluded` and does not ask."""
    config: dict[str, str] = field(default_factory=dict)
    """Files at the workspace's root (the server's configuration)."""
    above: str = ""
    """The workspace lives below a directory of this name."""


CONTROLS = ("x.py", "src/x.py", "build/x.py", ".hidden/x.py", "a/b/x.py")

SCENARIOS = [
    Scenario(
        "ruff-defaults", "ruff", (*CONTROLS, "__pycache__/x.py", "target/x.py"),
        (*_defaults("ruff"), "a/node_modules/x.py", ".venv/lib/x.py"),
    ),
    Scenario(
        "ruff-extend-exclude", "ruff", ("other/x.py", "genx/x.py"),
        ("gen/x.py", "a/gen/x.py", "scripts/x.py", "scripts/sub/x.py", "one.py", "a/one.py",
         "lintonly/x.py", "dist/x.py"),
        {"pyproject.toml": '[tool.ruff]\nextend-exclude = ["gen", "scripts/*.py", "one.py"]\n'
                           '[tool.ruff.lint]\nexclude = ["lintonly"]\n'},
    ),
    Scenario(  # `exclude` replaces the defaults: the fix ruff's report gives
        "ruff-exclude", "ruff", ("dist/x.py", "node_modules/x.py", "x.py"),
        ("custom/x.py", "a/custom/x.py"),
        {"pyproject.toml": '[tool.ruff]\nexclude = ["custom"]\n'},
    ),
    Scenario(  # ruff.toml first; [tool.ruff] in pyproject.toml is not read then
        "ruff-toml", "ruff", ("pgen/x.py",), ("gen/x.py", "dist/x.py"),
        {"ruff.toml": 'extend-exclude = ["gen"]\n',
         "pyproject.toml": '[tool.ruff]\nextend-exclude = ["pgen"]\n'},
    ),
    Scenario("ruff-above", "ruff", ("x.py", "sub/x.py"), (), above="dist"),
    Scenario(
        "ty-defaults", "ty", (*CONTROLS, "__pycache__/x.py", "site-packages/x.py"),
        (*_defaults("ty"), "a/node_modules/x.py"),
    ),
    Scenario(
        "ty-src-exclude", "ty", ("a/gen/x.py", "scripts/sub/x.py", "other/x.py"),
        ("gen/x.py", "scripts/x.py", "deep/x.py", "a/b/deep/x.py", "dist/x.py"),
        {"pyproject.toml": '[tool.ty.src]\nexclude = ["gen/", "scripts/*.py", "**/deep"]\n'},
    ),
    Scenario(  # a negated default: the fix ty's report gives
        "ty-negated", "ty", ("dist/x.py", "a/dist/x.py"), ("node_modules/x.py",),
        {"ty.toml": '[src]\nexclude = ["!**/dist/"]\n'},
    ),
    Scenario(
        "ty-include", "ty", ("src/x.py", "src/a/x.py"), ("other/x.py", "top.py", "src/dist/x.py"),
        {"ty.toml": '[src]\ninclude = ["src"]\n'},
    ),
    Scenario("ty-above", "ty", ("x.py", "sub/x.py"), (), above="dist"),
    Scenario(
        "pyrefly-defaults", "pyrefly",
        (*CONTROLS, "dist/x.py", ".venv/x.py", "node_modules2/x.py"),
        (*_defaults("pyrefly"), "a/node_modules/x.py", "venv/sub/x.py"),
    ),
    Scenario(
        "pyrefly-project-excludes", "pyrefly", ("a/gen/x.py", "other/x.py"),
        ("gen/x.py", "s/x.py", "s/t/x.py", "node_modules/x.py"),
        {"pyrefly.toml": 'project-excludes = ["gen", "s/*.py"]\n'},
    ),
    Scenario(  # the fix pyrefly's report gives
        "pyrefly-no-heuristics", "pyrefly",
        ("node_modules/x.py", "venv/x.py", "__pycache__/x.py"), (),
        {"pyproject.toml": "[tool.pyrefly]\ndisable-project-excludes-heuristics = true\n"},
    ),
    Scenario("pyrefly-above", "pyrefly", (), ("x.py", "sub/x.py"), above="venv"),
    # A pattern that is no valid glob: the server refuses the configuration and keeps its
    # defaults, its other patterns and switches dropped too (exclusions.py's docstring).
    Scenario(
        "ruff-invalid-pattern", "ruff", ("gen/x.py", "custom/x.py", "x.py", "one.py"),
        ("dist/x.py",),
        {"pyproject.toml": '[tool.ruff]\nexclude = ["custom"]\nextend-exclude = ["a[!]b", '
                           '"gen"]\n[tool.ruff.lint]\nexclude = ["one.py"]\n'},
    ),
    Scenario(
        "ty-invalid-pattern", "ty", ("gen/x.py", "other/x.py", "src/x.py"), ("dist/x.py",),
        {"pyproject.toml": '[tool.ty.src]\ninclude = ["src"]\nexclude = ["[^]", "gen/"]\n'},
    ),
    Scenario(
        "pyrefly-invalid-pattern", "pyrefly", ("gen/x.py",), ("node_modules/x.py",),
        {"pyrefly.toml": 'project-excludes = ["[!]", "gen"]\n'
                         "disable-project-excludes-heuristics = true\n"},
    ),
    *(
        Scenario(f"{server}-everything", server,
                 ("node_modules/x.py", "__pycache__/x.py", ".venv/x.py", "dist/x.py",
                  ".hidden/x.py"), ())
        for server in ("pyright", "basedpyright")
    ),
]


@contextlib.contextmanager
def _service(*server_ids: str, raw: bool = False) -> Iterator[Service]:
    """A service checking Python with `server_ids`; `raw`: with no exclusions of ipylsp's."""
    settings = Settings(data_dir=DATA_DIR, language_servers={"python": server_ids},
                        wait_budget=BUDGET)
    with contextlib.ExitStack() as stack:
        if raw:
            stack.enter_context(mock.patch.object(exclusions, "rules", lambda spec, root: None))
        yield stack.enter_context(Service(settings))


def _verdicts(root: Path, server_id: str, names: tuple[str, ...], *, raw: bool) -> dict[str, str]:
    """Each file's verdict: "error" (the server reported an error), "excluded" (ipylsp says
    so), "nothing" (the server answered, with no error)."""
    verdicts = {}
    with _service(server_id, raw=raw) as service:
        for name in names:
            [file] = service.check(root / name, before="").files
            reasons = [u.reason for u in file.unknown]
            if reasons == [UnknownReason.EXCLUDED]:
                verdicts[name] = "excluded"
                assert file.servers == (server_id,) and not file.current
                continue
            assert reasons == [], file.unknown
            errors = [d for d in file.current if d.severity is Severity.ERROR]
            verdicts[name] = "error" if errors else "nothing"
    return verdicts


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.id)
def test_excluded_exactly_where_the_server_answers_nothing(
    scenario: Scenario, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require(scenario.server)
    below = tmp_path / scenario.above if scenario.above else tmp_path
    below.mkdir(exist_ok=True)
    root = workspace(below, monkeypatch)
    for name, text in scenario.config.items():
        write(root, name, text)
    names = (*scenario.checked, *scenario.excluded)
    for name in names:
        write(root, name, BAD)
    expected = {n: "error" for n in scenario.checked}
    said = _verdicts(root, scenario.server, names, raw=False)
    assert said == {**expected, **{n: "excluded" for n in scenario.excluded}}
    if scenario.excluded:  # the server itself, asked about every file
        answered = _verdicts(root, scenario.server, names, raw=True)
        assert answered == {**expected, **{n: "nothing" for n in scenario.excluded}}


def test_ty_and_ruff_say_why_and_the_fix_under_dist(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The exact lines, for a git workspace's `dist/x.py`; `x.py` beside it gets the errors."""
    require("ty")
    require("ruff")
    root = workspace(tmp_path, monkeypatch)
    with _service("ty", "ruff") as service:
        assert format_text(service.check(write(root, "dist/x.py", BAD), before="")) == block(
            "dist/x.py", TY_DIST, RUFF_DIST
        )
        assert format_text(service.check(write(root, "x.py", BAD), before="")) == block(
            "x.py", TY_ERRORS[0],
            "ERROR [2:7] Name `undefined_name` used when not defined [unresolved-reference, "
            "F821] (ty, Ruff)",
        )


def test_pyrefly_says_why_and_the_fix_under_node_modules(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require("pyrefly")
    root = workspace(tmp_path, monkeypatch)
    with _service("pyrefly") as service:
        path = write(root, "node_modules/x.py", BAD)
        assert format_text(service.check(path, before="")) == block(
            "node_modules/x.py", PYREFLY_NODE_MODULES
        )


def test_a_users_ruff_exclude_on_every_surface(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`extend-exclude = ["gen"]` in pyproject.toml: ruff's UNKNOWN, with ty's errors, from a
    cell's write and `%lsp check`, the CLI and `lsp_check`; and a cell writing two files where
    both servers skip them (`_build/`, which the cell's watcher does not skip) says so once for
    the two."""
    require("ty")
    require("ruff")
    root = workspace(tmp_path, monkeypatch)
    write(root, "pyproject.toml", '[tool.ruff]\nextend-exclude = ["gen"]\n')
    (root / "gen").mkdir()
    (root / "_build").mkdir()
    brief = RUFF_GEN.split("; ")[0]
    with Kernel(kernel_dir_for(tmp_path), root) as k:
        assert k.run("%load_ext ipylsp").outputs == []
        assert k.run(TY_RUFF).outputs == []
        wrote = k.run(f"%%writefile gen/x.py\n{BAD}")
        assert wrote.displays[-1] == block("gen/x.py", *TY_ERRORS, RUFF_GEN)
        assert k.run("%lsp check gen/x.py --all").result == block("gen/x.py", *TY_ERRORS, brief)
        two = k.run(f"for n in ('a', 'b'):\n    open(f'_build/{{n}}.py', 'w').write({BAD!r})")
        assert two.displays[-1] == "\n".join([
            'UNKNOWN [ty] excluded (ty does not check files under _build/ (its default '
            '`src.exclude`)): 2 files not checked; add "!**/_build/" to `src.exclude` '
            "([tool.ty.src] in pyproject.toml, or [src] in ty.toml) to have ty check them",
            "UNKNOWN [ruff] excluded (ruff does not check files under _build/ (its default "
            "`exclude`)): 2 files not checked; ruff checks them once `exclude` ([tool.ruff] in "
            'pyproject.toml, or ruff.toml) lists its defaults without "_build" (`ruff check '
            "--show-settings` prints them)",
        ])
    monkeypatch.chdir(root)
    out = io.StringIO()
    code = main(["--data-dir", str(DATA_DIR), "check", "--server", "ruff", "gen/x.py"], out=out)
    assert (code, out.getvalue()) == (EXIT_FAILURE, block("gen/x.py", RUFF_GEN) + "\n")
    with _service("ruff") as service:
        result = Toolbox(service, root).call("lsp_check", {"path": "gen/x.py"})
    assert (result.ok, result.text) == (True, block("gen/x.py", RUFF_GEN))


def test_the_rules_are_read_again_when_the_configuration_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pattern added to pyproject.toml between two checks: the second check says
    `excluded` (the configuration is read again when its file changed)."""
    require("ruff")
    root = workspace(tmp_path, monkeypatch)
    path = write(root, "gen/x.py", BAD)
    with _service("ruff") as service:
        [file] = service.check(path, before="").files
        assert [d.code for d in file.current] == ["F821"]
        write(root, "pyproject.toml", '[tool.ruff]\nextend-exclude = ["gen"]\n')
        [file] = service.check(path, before="").files
        assert [(u.server_id, u.reason) for u in file.unknown] == [
            ("ruff", UnknownReason.EXCLUDED)
        ]


def test_a_pattern_that_is_no_glob_stops_no_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """`extend-exclude = ["[!]", "gen"]`: ruff refuses the configuration and checks `gen/` (its
    default `exclude` still holds), and so says ipylsp: every file is checked, none FAILED,
    nothing logged."""
    require("ty")
    require("ruff")
    root = workspace(tmp_path, monkeypatch)
    write(root, "pyproject.toml", '[tool.ruff]\nextend-exclude = ["[!]", "gen"]\n')
    with caplog.at_level(logging.WARNING, logger="ipylsp"), _service("ty", "ruff") as service:
        report = service.check_files([
            FileCheck(write(root, name, BAD), before="") for name in ("gen/x.py", "dist/x.py")
        ])
    assert format_text(report) == "\n".join([
        block("dist/x.py", TY_DIST, RUFF_DIST),
        block("gen/x.py", TY_ERRORS[0], F821_BOTH),
    ])
    # ipylsp's own records: a kernel client an earlier test left to the collector may log here
    assert [r.getMessage() for r in caplog.records if r.name.startswith("ipylsp")] == []


def test_a_fifo_config_file_keeps_the_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A FIFO named pyproject.toml at a workspace's root: ipylsp opens nothing of it (reading
    its exclusions, its digest, ty's environment), so the check returns within its budget with
    the file's syntax error; ty and ruff themselves wait at it and time out. A file of another
    workspace is checked next, in the same session, as ever."""
    require("ty")
    require("ruff")
    root = workspace(tmp_path, monkeypatch)
    os.mkfifo(root / "pyproject.toml")
    other = tmp_path / "other"
    subprocess.run(["git", "init", "-q", str(other)], check=True)
    budget = 3.0
    settings = Settings(data_dir=DATA_DIR, language_servers={"python": ("ty", "ruff")},
                        wait_budget=budget, semantic_after_syntax_error=True)
    with Service(settings) as service:
        started = time.monotonic()
        report = service.check(write(root, "x.py", "def f(:\n    pass\n"), before="")
        took = time.monotonic() - started
        assert took <= budget + 0.25
        [file] = report.files
        assert format_text(report).splitlines()[1:2] == [
            "ERROR [1:7] invalid syntax [SyntaxError] (ipylsp-syntax)"
        ]
        assert [(u.server_id, u.reason) for u in file.unknown] == [
            ("ty", UnknownReason.TIMED_OUT), ("ruff", UnknownReason.TIMED_OUT)
        ]
        assert format_text(service.check(write(other, "x.py", BAD), before="")) == block(
            "x.py", TY_ERRORS[0], F821_BOTH
        )


def test_a_root_another_user_can_write_to_is_refused_before_its_configuration_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its `extend-exclude = ["gen"]` is not read (it could be a FIFO, or say anything): ruff
    is refused there, not `excluded`."""
    require("ruff")
    root = workspace(tmp_path, monkeypatch)
    write(root, "pyproject.toml", '[tool.ruff]\nextend-exclude = ["gen"]\n')
    path = write(root, "gen/x.py", BAD)
    root.chmod(0o777)
    with _service("ruff") as service:
        [file] = service.check(path, before="").files
    assert [(u.server_id, u.reason, u.detail) for u in file.unknown] == [(
        "ruff", UnknownReason.REFUSED,
        f"another user can write to {root}, where ruff would read configuration they put there",
    )]
