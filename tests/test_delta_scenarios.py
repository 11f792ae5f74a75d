"""Delta scenarios end to end: real servers, real files, the exact reported set.

Every scenario writes files into a git workspace, calls `Service.check` the way the kernel does
after a cell, and compares the whole `<diagnostics>` text (or the JSON) with what the write
introduced: nothing more, nothing less. The language-independent scenarios run against real ty,
real pyright, TypeScript (`tsc --lsp`) and clangd; each server gets one `Service` and one
workspace for the module (servers start once), and every scenario its own files.
"""

from __future__ import annotations

import importlib.util
import itertools
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ipylsp.analysis.report import format_text, to_json
from ipylsp.analysis.report.lines import message_text
from ipylsp.model.diagnostics import Report, Severity, UnknownReason
from ipylsp.model.server_spec import InstallRecipe, ServerOverride, ServerSpec
from ipylsp.model.settings import Settings
from ipylsp.servers import executables, registry
from ipylsp.service.service import FileCheck, Service
from tests.conftest import fake_command

pytestmark = pytest.mark.real

# --- servers and their dialects -------------------------------------------------------------


@dataclass(frozen=True)
class Dialect:
    """How to write a small program with undefined names in one server's language, and what
    the server says about it. Body lines sit between `prologue` and `epilogue`."""

    server: str
    ext: str
    prologue: tuple[str, ...]
    epilogue: tuple[str, ...]
    indent: str
    use_fmt: str
    define_fmt: str
    prefix: str
    """A statement that can precede another on the same line."""
    undefined_fmt: str

    def then(self, line: str, statement: str) -> str:
        """`line` followed by another statement on the same line."""
        return line + ("; " if self.ext == ".py" else " ") + statement.strip()

    def use(self, name: str) -> str:
        return self.indent + self.use_fmt.format(name)

    def define(self, name: str) -> str:
        return self.indent + self.define_fmt.format(name)

    def source(self, *body: str, eol: str = "\n") -> str:
        return eol.join((*self.prologue, *body, *self.epilogue)) + eol

    def undefined(self, body: tuple[str, ...] | list[str], index: int, name: str) -> str:
        """The report line for the undefined `name` on body line `index`."""
        line = len(self.prologue) + index + 1
        column = body[index].index(name) + 1  # code points, as the contract says
        return f"ERROR [{line}:{column}] {self.undefined_fmt.format(name)}"


DIALECTS = {
    "ty": Dialect(
        "ty", ".py", (), (), "", "print({})", "{} = 1", "x0 = 0; ",
        "Name `{}` used when not defined [unresolved-reference] (ty)",
    ),
    "pyright": Dialect(
        "pyright", ".py", (), (), "", "print({})", "{} = 1", "x0 = 0; ",
        '"{}" is not defined [reportUndefinedVariable] (Pyright)',
    ),
    # `export {}` makes every file a module: script files would share one global scope.
    "typescript": Dialect(
        "typescript", ".ts", ("export {};",), (), "", "void {};", "const {} = 1;", "void 0; ",
        "Cannot find name '{}'. [2304] (ts)",
    ),
    "clangd": Dialect(
        "clangd", ".c", ("void scenario(void) {",), ("}",), "  ", "(void){};", "int {} = 1;",
        "(void)0; ", "Use of undeclared identifier '{}' [undeclared_var_use] (clang)",
    ),
}
SERVERS = list(DIALECTS)
PYTHON = ["ty", "pyright"]


def git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=root, check=True, capture_output=True,
    )


def settings_for(server: str, **changes: Any) -> Settings:
    python = (server,) if server in PYTHON else ("ty",)
    return Settings(
        language_servers={
            "python": python, "typescript": ("typescript",), "c": ("clangd",), "cpp": ("clangd",),
        },
        wait_budget=30.0,
        **changes,
    )


def require(server: str) -> None:
    """Fail loudly (never skip) when a server these scenarios need is missing."""
    spec = registry.get(server)
    assert spec is not None
    assert executables.resolve_command(spec, executables.data_dir(Settings())) is not None, (
        f"{server} is not installed: run scripts/bootstrap ({registry.install_hint(spec)})"
    )


class Workspace:
    """A git worktree served by one `Service`; `new()` hands out fresh file names."""

    def __init__(self, root: Path, service: Service, dialect: Dialect) -> None:
        self.root = root
        self.service = service
        self.d = dialect
        self._numbers = itertools.count(1)

    def new(self, stem: str, ext: str | None = None) -> Path:
        return self.root / f"{stem}_{next(self._numbers)}{ext or self.d.ext}"

    def write(self, path: Path, text: str) -> None:
        path.write_bytes(text.encode("utf-8"))

    def check(self, path: Path, **kwargs: Any) -> str:
        report = self.service.check(path, **kwargs)
        return format_text(report)

    def check_report(self, path: Path, **kwargs: Any) -> Report:
        return self.service.check(path, **kwargs)

    def rel(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()

    def block(self, path: Path, *lines: str) -> str:
        return "\n".join([f'<diagnostics file="{self.rel(path)}">', *lines, "</diagnostics>"])


@pytest.fixture(scope="module", params=SERVERS)
def ws(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[
    Workspace
]:
    server: str = request.param
    require(server)
    root = tmp_path_factory.mktemp(f"ws-{server}")
    git(root, "init", "-q")
    if server == "clangd":  # every error, not the first 20 and "too many errors emitted"
        (root / "compile_flags.txt").write_text("-ferror-limit=0\n")
    with Service(settings_for(server)) as service:
        yield Workspace(root, service, DIALECTS[server])


def fixed(n: int, path_text: str) -> str:
    noun = "error" if n == 1 else "errors"
    return f"fixed {n} {noun} in {path_text}"


# --- scenarios for every server ---------------------------------------------------------------


def test_new_file_reports_everything(ws: Workspace) -> None:
    d = ws.d
    path = ws.new("fresh")
    body = [d.use("missing_one"), d.define("fine"), d.use("missing_two")]
    ws.write(path, d.source(*body))
    assert ws.check(path) == ws.block(
        path, d.undefined(body, 0, "missing_one"), d.undefined(body, 2, "missing_two")
    )


def test_lines_inserted_and_deleted_above_existing_errors(ws: Workspace) -> None:
    d = ws.d
    path = ws.new("shift")
    body = [d.define("fine"), d.use("missing_a"), d.use("missing_b")]
    ws.write(path, d.source(*body))
    assert ws.check(path) == ws.block(
        path, d.undefined(body, 1, "missing_a"), d.undefined(body, 2, "missing_b")
    )
    # Three lines inserted above: both errors move down, nothing is new, nothing fixed.
    inserted = [d.define("fine"), d.define("more1"), d.define("more2"), d.define("more3"),
                *body[1:]]
    ws.write(path, d.source(*inserted))
    assert ws.check(path) == ""
    # Lines deleted above (and the first line too): the errors move up, still nothing.
    deleted = [d.use("missing_a"), d.use("missing_b")]
    ws.write(path, d.source(*deleted))
    assert ws.check(path) == ""
    # Lines inserted above while a new error appears below: only the new one, at its line.
    grown = ["", "", *deleted, d.define("fine2"), d.use("missing_c")]
    ws.write(path, d.source(*grown))
    assert ws.check(path) == ws.block(path, d.undefined(grown, 5, "missing_c"))


def test_same_line_edit_shifting_columns(ws: Workspace) -> None:
    d = ws.d
    path = ws.new("columns")
    body = [d.define("fine"), d.use("missing_col")]
    ws.write(path, d.source(*body))
    assert ws.check(path) == ws.block(path, d.undefined(body, 1, "missing_col"))
    # Text inserted before the error on its line: it moves right, it is not new.
    shifted = [body[0], d.indent + d.prefix + d.use("missing_col").strip()]
    ws.write(path, d.source(*shifted))
    assert ws.check(path) == ""
    # A second error after it on the same line is new, at its exact column.
    both = [body[0], d.then(shifted[1], d.use("missing_col2"))]
    ws.write(path, d.source(*both))
    assert ws.check(path) == ws.block(path, d.undefined(both, 1, "missing_col2"))


def test_rename_breaks_later_uses(ws: Workspace) -> None:
    d = ws.d
    path = ws.new("rename")
    body = [d.define("counter_value"), d.use("counter_value"), d.define("other"),
            d.use("counter_value")]
    ws.write(path, d.source(*body))
    assert ws.check(path) == ""
    renamed = [d.define("zebra_total"), *body[1:]]
    ws.write(path, d.source(*renamed))
    assert ws.check(path) == ws.block(
        path,
        d.undefined(renamed, 1, "counter_value"),
        d.undefined(renamed, 3, "counter_value"),
    )


def test_one_of_two_identical_errors_fixed_while_another_appears(ws: Workspace) -> None:
    d = ws.d
    path = ws.new("twins")
    body = [d.define("fine"), d.use("missing_twin"), d.then(d.define("other"),
                                                             d.use("missing_twin"))]
    ws.write(path, d.source(*body))
    assert ws.check(path) == ws.block(
        path, d.undefined(body, 1, "missing_twin"), d.undefined(body, 2, "missing_twin")
    )
    # The first one is fixed in place, the same error appears further down on another line:
    # exactly that one is new, and one is fixed.
    after = [d.define("fine"), d.use("fine"), body[2], d.define("fine2"),
             d.then(d.define("fine3"), d.use("missing_twin"))]
    ws.write(path, d.source(*after))
    report = ws.check_report(path)
    assert format_text(report) == "\n".join(
        [ws.block(path, d.undefined(after, 4, "missing_twin")), fixed(1, ws.rel(path))]
    )
    [entry] = to_json(report)["files"]  # type: ignore[misc]
    assert [(f["line"], f["column"]) for f in entry["fixed"]] == [
        (len(d.prologue) + 2, body[1].index("missing_twin") + 1)  # where it was, before
    ]
    assert entry["fixed_count"] == 1


def test_crlf_file(ws: Workspace) -> None:
    d = ws.d
    path = ws.new("crlf")
    body = [d.define("fine"), d.use("missing_cr")]
    ws.write(path, d.source(*body, eol="\r\n"))
    assert ws.check(path) == ws.block(path, d.undefined(body, 1, "missing_cr"))
    inserted = [d.define("fine"), d.define("more"), "", *body[1:]]
    ws.write(path, d.source(*inserted, eol="\r\n"))
    assert ws.check(path) == ""
    grown = [*inserted, d.use("missing_lf")]
    ws.write(path, d.source(*grown, eol="\r\n"))
    assert ws.check(path) == ws.block(path, d.undefined(grown, 4, "missing_lf"))
    # Converting the whole file to LF changes no diagnostic.
    ws.write(path, d.source(*grown, eol="\n"))
    assert ws.check(path) == ""


def test_emoji_and_cjk_before_the_error_column(ws: Workspace) -> None:
    d = ws.d
    path = ws.new("unicode")
    literal = {
        "ty": 's = "😀漢字"; ', "pyright": 's = "😀漢字"; ',
        "typescript": 'const s = "😀漢字"; ', "clangd": 'const char *s = "😀漢字"; ',
    }[d.server]
    body = [d.use("missing_u")]
    ws.write(path, d.source(*body))
    assert ws.check(path) == ws.block(path, d.undefined(body, 0, "missing_u"))
    # Astral and CJK characters inserted before the error: it moved, it is not new.
    moved = [d.indent + literal + d.use("missing_u").strip()]
    ws.write(path, d.source(*moved))
    assert ws.check(path) == ""
    # A new error after them is reported at its column in code points.
    second = {"ty": "t = '🎉中文'", "pyright": "t = '🎉中文'", "typescript": "const t = '🎉中文';",
              "clangd": 'const char *t = "🎉中文";'}[d.server]
    both = [d.then(d.then(moved[0], second), d.use("missing_v"))]
    ws.write(path, d.source(*both))
    assert ws.check(path) == ws.block(path, d.undefined(both, 0, "missing_v"))


def test_deleted_file_is_removed_not_fixed(ws: Workspace) -> None:
    """A delete fixes nothing (issue 9): the report says the file was removed."""
    d = ws.d
    path = ws.new("doomed")
    body = [d.use("missing_d1"), d.use("missing_d2")]
    ws.write(path, d.source(*body))
    assert ws.check(path) == ws.block(
        path, d.undefined(body, 0, "missing_d1"), d.undefined(body, 1, "missing_d2")
    )
    path.unlink()
    report = ws.check_report(path)
    assert format_text(report) == (
        f"{ws.rel(path)} was removed (2 known problems not counted as fixed)"
    )
    assert not report.has_problems and not report.has_unknown
    assert [d for f in report.files for d in f.fixed] == []
    # Checking the missing file again: nothing left to say.
    assert ws.check(path) == ""


def test_deleted_file_never_checked_with_explicit_before(ws: Workspace) -> None:
    """Nothing known about it: a delete says nothing (and never "fixed")."""
    d = ws.d
    path = ws.new("gone")
    body = [d.use("missing_e1"), d.define("fine"), d.use("missing_e2")]
    assert not path.exists()
    assert ws.check(path, before=d.source(*body)) == ""


def test_preflight_content_leaves_disk_and_server_untouched(ws: Workspace) -> None:
    d = ws.d
    path = ws.new("preflight")
    body = [d.define("fine"), d.use("missing_p1")]
    ws.write(path, d.source(*body))
    assert ws.check(path) == ws.block(path, d.undefined(body, 1, "missing_p1"))
    disk = path.read_bytes()
    stat = path.stat()
    proposed = [*body, d.use("missing_p2")]
    assert ws.check(path, content=d.source(*proposed)) == ws.block(
        path, d.undefined(proposed, 2, "missing_p2")
    )
    assert path.read_bytes() == disk
    assert path.stat().st_mtime_ns == stat.st_mtime_ns
    # The service's view is still the disk text: checking it again says nothing new ...
    assert ws.check(path) == ""
    # ... and a real write is compared with the disk text, not with the proposal.
    written = [*body, d.use("missing_p3")]
    ws.write(path, d.source(*written))
    report = ws.check_report(path)
    assert format_text(report) == ws.block(path, d.undefined(written, 2, "missing_p3"))
    current = sorted(
        (x for x in report.files[0].current if x.severity is Severity.ERROR),
        key=lambda x: x.range.start,
    )
    assert [(x.range.start.line, "missing_p1" in x.message, "missing_p3" in x.message)
            for x in current] == [(len(d.prologue) + 1, True, False),
                                  (len(d.prologue) + 2, False, True)]


def test_preflight_of_an_unseen_file_is_relative_to_the_disk(ws: Workspace) -> None:
    d = ws.d
    path = ws.new("preflight_unseen")
    body = [d.use("missing_q1")]
    ws.write(path, d.source(*body))
    proposed = [*body, d.use("missing_q2")]
    assert ws.check(path, content=d.source(*proposed)) == ws.block(
        path, d.undefined(proposed, 1, "missing_q2")
    )


IMPORTER = {
    "ty": ("importer.py", "from proposed_mod import thing\n\nprint(thing)\n", "proposed_mod.py",
           "thing = 1\n"),
    "pyright": ("importer.py", "from proposed_mod import thing\n\nprint(thing)\n",
                "proposed_mod.py", "thing = 1\n"),
    "typescript": ("importer.ts", 'import { thing } from "./proposed_mod";\n\nvoid thing;\n',
                   "proposed_mod.ts", "export const thing = 1;\n"),
    "clangd": ("importer.c", '#include "proposed_mod.h"\n\nint use(void) { return thing; }\n',
               "proposed_mod.h", "extern int thing;\n"),
}


def test_preflight_of_a_new_file_leaves_no_trace(ws: Workspace) -> None:
    """A proposed new module resolves the importer's error only during the preflight: after
    it, the servers see no such file again."""
    importer_name, importer_text, module_name, module_text = IMPORTER[ws.d.server]
    sub = ws.root / f"proposal_{ws.d.server}"
    sub.mkdir()
    importer, module = sub / importer_name, sub / module_name
    ws.write(importer, importer_text)
    assert ws.check(importer) != ""  # the module does not exist
    assert ws.check(module, content=module_text) == ""
    assert not module.exists()
    assert ws.check(importer) == ""  # not "fixed": the module still does not exist
    # Written for real, it fixes the importer (reported under the importer, as fixed).
    ws.write(module, module_text)
    report = ws.check_report(module)
    assert [f.display_path for f in report.files if f.fixed] == [ws.rel(importer)]
    assert not report.has_problems


def test_deleting_a_module_breaks_its_importer_and_creating_it_fixes_it(ws: Workspace) -> None:
    importer_name, importer_text, module_name, module_text = IMPORTER[ws.d.server]
    sub = ws.root / f"deletion_{ws.d.server}"
    sub.mkdir()
    importer, module = sub / importer_name, sub / module_name
    ws.write(importer, importer_text)
    ws.write(module, module_text)
    assert ws.check(importer) == ""
    assert ws.check(module) == ""
    module.unlink()
    report = ws.check_report(module)
    [broken] = [f for f in report.files if f.diagnostics or f.fixed]
    assert broken.display_path == ws.rel(importer) and not broken.fixed
    # The import fails (clangd goes on, and finds `thing` undeclared too).
    lines = [0, 2] if ws.d.server == "clangd" else [0]
    assert sorted((x.range.start.line, x.severity) for x in broken.diagnostics) == [
        (line, Severity.ERROR) for line in lines
    ]
    ws.write(module, module_text)
    report = ws.check_report(module)
    assert format_text(report) == fixed(len(lines), ws.rel(importer))


def test_module_and_importer_created_by_one_write(ws: Workspace) -> None:
    importer_name, importer_text, module_name, module_text = IMPORTER[ws.d.server]
    sub = ws.root / f"creation_{ws.d.server}"
    sub.mkdir()
    other = sub / f"other{ws.d.ext}"
    ws.write(other, ws.d.source(ws.d.define("fine")))
    assert ws.check(other) == ""  # the server is running, with a document open
    importer, module = sub / importer_name, sub / module_name
    ws.write(importer, importer_text)
    ws.write(module, module_text)
    report = ws.service.check_files([FileCheck(importer), FileCheck(module)])
    assert format_text(report) == ""


def test_baseline_rolls_forward_after_every_check(ws: Workspace) -> None:
    d = ws.d
    path = ws.new("roll")
    one = [d.use("missing_r1")]
    ws.write(path, d.source(*one))
    assert ws.check(path) == ws.block(path, d.undefined(one, 0, "missing_r1"))
    two = [*one, d.use("missing_r2")]
    ws.write(path, d.source(*two))
    assert ws.check(path) == ws.block(path, d.undefined(two, 1, "missing_r2"))
    # The same text again: the baseline is the last check, so nothing is new.
    ws.write(path, d.source(*two))
    assert ws.check(path) == ""
    # Clean: both fixed.
    clean = [d.define("fine")]
    ws.write(path, d.source(*clean))
    assert ws.check(path) == fixed(2, ws.rel(path))
    # The baseline rolled forward to the clean text: the old error, back, is new again.
    again = [d.define("fine"), d.use("missing_r1")]
    ws.write(path, d.source(*again))
    assert ws.check(path) == ws.block(path, d.undefined(again, 1, "missing_r1"))


def test_explicit_before(ws: Workspace) -> None:
    d = ws.d
    path = ws.new("before")
    old = [d.use("missing_b1")]
    new = [d.define("fine"), d.use("missing_b1"), d.use("missing_b2")]
    ws.write(path, d.source(*new))
    assert ws.check(path, before=d.source(*old)) == ws.block(
        path, d.undefined(new, 2, "missing_b2")
    )
    # `before` wins over what the service knows (it now knows `new`).
    assert ws.check(path, before=d.source(d.define("fine"))) == ws.block(
        path, d.undefined(new, 1, "missing_b1"), d.undefined(new, 2, "missing_b2")
    )
    # An explicit empty `before`: everything is new.
    assert ws.check(path, before="") == ws.block(
        path, d.undefined(new, 1, "missing_b1"), d.undefined(new, 2, "missing_b2")
    )


def test_git_head_is_the_baseline_of_an_unseen_tracked_file(ws: Workspace) -> None:
    d = ws.d
    path = ws.new("tracked")
    old = [d.use("missing_g1")]
    ws.write(path, d.source(*old))
    git(ws.root, "add", ws.rel(path))
    git(ws.root, "commit", "-q", "-m", f"add {ws.rel(path)}")
    new = ["", d.use("missing_g1"), d.use("missing_g2")]
    ws.write(path, d.source(*new))
    assert ws.check(path) == ws.block(path, d.undefined(new, 2, "missing_g2"))


# --- another open file ------------------------------------------------------------------------

CROSS_FILE = {
    # server: (lib name, lib before, lib after, caller name, caller text, expected caller line)
    "ty": (
        "lib_sig.py", "def api(a):\n    return a\n", "def api(a, b):\n    return a\n",
        "caller.py", "from lib_sig import api\n\napi(1)\n",
        "ERROR [3:1] No argument provided for required parameter `b` of function `api` "
        "[missing-argument] (ty)",
    ),
    "pyright": (
        "lib_sig.py", "def api(a):\n    return a\n", "def api(a, b):\n    return a\n",
        "caller.py", "from lib_sig import api\n\napi(1)\n",
        'ERROR [3:1] Argument missing for parameter "b" [reportCallIssue] (Pyright)',
    ),
    "typescript": (
        "lib_sig.ts",
        "export function api(a: number): number {\n  return a;\n}\n",
        "export function api(a: number, b: number): number {\n  return a + b;\n}\n",
        "caller.ts", 'import { api } from "./lib_sig";\n\napi(1);\n',
        "ERROR [3:1] Expected 2 arguments, but got 1. [2554] (ts)",
    ),
    "clangd": (
        "lib_sig.h", "int api(int a);\n", "int api(int a, int b);\n",
        "caller.c", '#include "lib_sig.h"\n\nint use(void) { return api(1); }\n',
        "ERROR [3:29] {too_few} [typecheck_call_too_few_args] (clang)",
    ),
}


def too_few(lib: Path) -> str:
    """clangd's message for a call one argument short, as a report shows it. clangd folds the
    note into the message when the client takes no related information, and the note holds
    the header's absolute path: whether it fits the report's first 200 characters (else
    "; …") depends on where the test runs (a fresh clone's HOME is longer), so the expectation
    takes the report's own rule (`message_text`) rather than one machine's outcome."""
    return message_text(f"Too few arguments to function call, expected 2, have 1\n\n"
                        f"{lib}:1:5:\nnote: 'api' declared here")


CALLER_UPDATED = {
    "ty": "from lib_sig import api\n\napi(1, 2)\n",
    "pyright": "from lib_sig import api\n\napi(1, 2)\n",
    "typescript": 'import { api } from "./lib_sig";\n\napi(1, 2);\n',
    "clangd": '#include "lib_sig.h"\n\nint use(void) { return api(1, 2); }\n',
}


@pytest.mark.parametrize("lib_first", [True, False], ids=["lib-first", "caller-first"])
def test_signature_and_caller_changed_by_one_write(ws: Workspace, lib_first: bool) -> None:
    """A cell changes a signature and updates its caller: nothing is broken, whichever of the
    two files is checked first."""
    lib_name, lib_before, lib_after, caller_name, caller_text, _ = CROSS_FILE[ws.d.server]
    sub = ws.root / f"together_{ws.d.server}_{lib_first}"
    sub.mkdir()
    lib, caller = sub / lib_name, sub / caller_name
    ws.write(lib, lib_before)
    ws.write(caller, caller_text)
    assert ws.check(caller) == ""
    assert ws.check(lib) == ""
    ws.write(lib, lib_after)
    ws.write(caller, CALLER_UPDATED[ws.d.server])
    order = [lib, caller] if lib_first else [caller, lib]
    report = ws.service.check_files([FileCheck(p) for p in order])
    assert format_text(report) == ""
    # And back, in the other order.
    ws.write(lib, lib_before)
    ws.write(caller, caller_text)
    report = ws.service.check_files([FileCheck(p) for p in reversed(order)])
    assert format_text(report) == ""


def test_signature_change_breaks_a_caller_in_another_open_file(ws: Workspace) -> None:
    lib_name, lib_before, lib_after, caller_name, caller_text, expected = CROSS_FILE[ws.d.server]
    sub = ws.root / f"cross_{ws.d.server}"
    sub.mkdir()
    lib, caller = sub / lib_name, sub / caller_name
    ws.write(lib, lib_before)
    ws.write(caller, caller_text)
    assert ws.check(caller) == ""  # the caller is open now
    assert ws.check(lib) == ""
    # A preflight of the breaking change: the disk and the server's view stay as they are.
    ws.check(lib, content=lib_after)
    assert ws.check(caller) == ""
    # The real write breaks the caller: reported under the caller's own path.
    ws.write(lib, lib_after)
    report = ws.check_report(lib)
    assert format_text(report) == ws.block(caller, expected.format(too_few=too_few(lib)))
    assert [f.display_path for f in report.files] == [ws.rel(lib), ws.rel(caller)]
    # Fixing the library again: the caller's error is reported fixed, under the caller.
    ws.write(lib, lib_before)
    assert ws.check(lib) == fixed(1, ws.rel(caller))


CLANGD_BINARIES = ["clangd", "clangd-19"]
"""The distribution's clangd (14 on Debian 12) and clangd 19, which publishes a version from a
stale preamble first (scripts/bootstrap installs both)."""


@pytest.mark.parametrize("binary", CLANGD_BINARIES)
def test_a_header_write_under_a_slow_preamble(tmp_path: Path, binary: str) -> None:
    """A header changes on disk; its includer's preamble (a big header in it) takes a while to
    rebuild. clangd 19 run as clangd 14 is (without `--sync`) publishes the includer's next
    version twice: at once from the stale preamble, the header's old text, then from the
    rebuilt one. Taking the first, ipylsp reported the broken caller clean, missed its fix and
    took the caller updated together with the header for broken: every time with this big
    header, 1 run in 100 under load in the cross-file scenario above (its header is tiny; it
    runs on the default clangd, 14 here, which publishes only after the preamble). The
    catalogue runs clangd with `--sync`: each version is published once, fresh."""
    found = shutil.which(binary)
    assert found is not None, (
        f"{binary} is not installed: run scripts/bootstrap (apt-get install {binary})"
    )
    spec = registry.get("clangd")
    assert spec is not None
    command = (found, *spec.command[1:])  # the catalogue's flags, with this binary
    root = tmp_path / "ws"
    root.mkdir()
    git(root, "init", "-q")
    (root / "compile_flags.txt").write_text("-ferror-limit=0\n")
    # ~0.3-1 s of preamble to rebuild, against milliseconds for an AST on a built one.
    (root / "big.h").write_text("".join(f"int big_{i}(int);\n" for i in range(30_000)))
    lib, caller = root / "lib.h", root / "caller.c"
    before, after = "int api(int a);\n", "int api(int a, int b);\n"
    calls = '#include "big.h"\n#include "lib.h"\n\nint use(void) {{ return {}; }}\n'
    lib.write_text(before)
    caller.write_text(calls.format("api(1)"))
    settings = settings_for("clangd", servers={"clangd": ServerOverride(command=command)})
    with Service(settings) as service:
        assert format_text(service.check(caller)) == ""
        assert format_text(service.check(lib)) == ""
        lib.write_text(after)
        assert format_text(service.check(lib)) == "\n".join([
            '<diagnostics file="caller.c">',
            f"ERROR [4:29] {too_few(lib)} [typecheck_call_too_few_args] (clang)",
            "</diagnostics>",
        ])
        lib.write_text(before)
        assert format_text(service.check(lib)) == fixed(1, "caller.c")
        lib.write_text(after)
        caller.write_text(calls.format("api(1, 2)"))
        assert format_text(service.check_files([FileCheck(caller), FileCheck(lib)])) == ""


# --- gopls: the answer for the text it was sent, not the disk's ------------------------------

GO_SOURCE = (
    "package args\n\nimport (\n\t\"net/http\"\n\t\"strings\"\n)\n\n"
    "// Shout is upper case.\nfunc Shout(s string) string {\n\treturn strings.ToUpper(s)\n}\n\n"
    "// Get asks.\nfunc Get(url string) (*http.Response, error) {\n\treturn http.Get(url)\n}\n"
)
GO_OLD = '\nvar oldA int = "old"\n\nvar oldB int = "old"\n'
INCOMPATIBLE = (
    'cannot use "{}" (untyped string constant) as int value in variable declaration '
    "[IncompatibleAssign] (compiler)"
)


def go_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, layout: str) -> Path:
    """A Go package of one file in a git worktree: a module (go.mod, no requirements) or a
    GOPATH directory (GO111MODULE=off); nothing is fetched either way."""
    monkeypatch.setenv("GOPROXY", "off")
    monkeypatch.setenv("GOTOOLCHAIN", "local")
    monkeypatch.setenv("GOFLAGS", "")
    if layout == "module":
        root = tmp_path / "args"
        root.mkdir()
        (root / "go.mod").write_text("module example.com/args\n\ngo 1.19\n")
        monkeypatch.setenv("GO111MODULE", "on")
    else:
        root = tmp_path / "gopath" / "src" / "example.com" / "args"
        root.mkdir(parents=True)
        monkeypatch.setenv("GOPATH", str(tmp_path / "gopath"))
        monkeypatch.setenv("GO111MODULE", "off")
    git(root, "init", "-q")
    # Some bulk: the package's type-check then takes long enough for gopls to publish the
    # disk's answer well before the sent text's (with the one file alone, often within 0.2 s).
    (root / "bulk.go").write_text("package args\n" + "".join(
        f"\n// F{i} adds.\nfunc F{i}(a, b int) int {{\n\tif a > b {{\n\t\treturn a - b\n"
        f"\t}}\n\treturn a + b + {i}\n}}\n" for i in range(2000)
    ))
    return root / "args.go"


@pytest.mark.parametrize("layout", ["module", "gopath"])
def test_go_errors_the_file_had_moved_by_a_comment_are_neither_new_nor_fixed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, layout: str
) -> None:
    """Issue 32, as `ipylsp check --before` does it: a fresh service per check, the file on
    disk already the after text. gopls's first diagnosis of its workspace reads the disk and
    is published without a version, before the answer for the before text it was sent; taken
    as the before text's answer, its positions (the after text's) were converted on the before
    text's lines: ranges at column 1 on the wrong lines, and every error the file had came back
    as new and "fixed". gopls names the version in its pushes (`ServerSpec.versioned_push`):
    only the push for the version sent answers."""
    require("gopls")
    path = go_package(tmp_path, monkeypatch, layout)
    settings = Settings(language_servers={"go": ("gopls",)}, wait_budget=60.0, store=False)
    before = GO_SOURCE + GO_OLD
    moved = GO_SOURCE + '\n// a comment\nvar oldA int = "old"\n\nvar oldB int = "old"\n'
    path.write_text(moved)
    with Service(settings) as service:
        assert format_text(service.check(path, before=before)) == ""
    # The column shifts: the same two errors, one line down and 19 columns right.
    shifted = moved.replace('var oldB int = "old"', 'var oldBPad = 0; var oldB int = "old"')
    path.write_text(shifted)
    with Service(settings) as service:
        assert format_text(service.check(path, before=moved)) == ""
    # One planted in a function body, one fixed: exactly those.
    body = shifted.replace("\treturn strings", '\tvar fresh int = "new"\n\treturn strings')
    changed = body.replace('var oldA int = "old"', "var oldA int = 0")
    path.write_text(changed)
    with Service(settings) as service:
        assert format_text(service.check(path, before=shifted)) == "\n".join([
            '<diagnostics file="args.go">',
            "ERROR [10:6] fresh declared but not used [UnusedVar] (compiler)",
            f"ERROR [10:18] {INCOMPATIBLE.format('new')}",
            "</diagnostics>",
            fixed(1, "args.go"),
        ])


# --- caps -------------------------------------------------------------------------------------


def test_caps_per_file_and_per_report(ws: Workspace) -> None:
    d = ws.d
    many = ws.new("many")
    body = [d.use(f"missing_{i:02d}") for i in range(25)]
    ws.write(many, d.source(*body))
    assert ws.check(many) == ws.block(
        many, *(d.undefined(body, i, f"missing_{i:02d}") for i in range(20)), "... and 5 more"
    )
    # One write, four files of 20 errors: 50 shown, the cut announced in the third file's
    # block and, for the fourth (nothing of it shown), after the blocks.
    paths = [ws.new("cap") for _ in range(4)]
    for path in paths:
        ws.write(path, d.source(*body[:20]))
    report = ws.service.check_files([FileCheck(p) for p in paths])
    lines = [d.undefined(body, i, f"missing_{i:02d}") for i in range(20)]
    assert format_text(report) == "\n".join(
        [ws.block(paths[0], *lines), ws.block(paths[1], *lines),
         ws.block(paths[2], *lines[:10], "... and 10 more"),
         f"... and 20 more problems in 1 other file ({ws.rel(paths[3])}): %lsp pending"]
    )
    summary = to_json(report)["summary"]
    assert summary == {"errors": 80, "warnings": 0, "fixed": 0, "unknown": 0, "shown": 50,
                       "omitted": 30}


# --- the public function ----------------------------------------------------------------------


def test_ipylsp_check_is_the_same_delta(tmp_path: Path) -> None:
    """`ipylsp.check(path, content=, before=)` on the process-wide service (clangd: the only
    server for C whatever else is installed)."""
    require("clangd")
    import ipylsp

    git(tmp_path, "init", "-q")
    path = tmp_path / "api.c"
    d = DIALECTS["clangd"]
    old = [d.use("missing_x")]
    new = ["", d.use("missing_x"), d.use("missing_y")]
    path.write_text(d.source(*new))
    try:
        report = ipylsp.check(str(path), before=d.source(*old))
        expected = "\n".join(['<diagnostics file="api.c">', d.undefined(new, 2, "missing_y"),
                              "</diagnostics>"])
        assert ipylsp.format_report(report) == expected
        proposed = [*new, d.use("missing_z")]
        preflight = ipylsp.check(path, content=d.source(*proposed))
        assert ipylsp.format_report(preflight) == "\n".join(
            ['<diagnostics file="api.c">', d.undefined(proposed, 3, "missing_z"),
             "</diagnostics>"]
        )
        assert path.read_text() == d.source(*new)
        assert ipylsp.format_report(ipylsp.check(path)) == ""
    finally:
        ipylsp._reset_service()


# --- syntax tier ------------------------------------------------------------------------------


def test_python_syntax_error_reported_at_once_without_servers(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    path = tmp_path / "broken.py"
    path.write_text("def ok():\n    return 1\n\nvalue = (1,\n         2\nprint(value)\n")
    with Service(settings_for("ty")) as service:
        started = time.monotonic()
        report = service.check(path)
        elapsed = time.monotonic() - started
        assert format_text(report) == "\n".join([
            '<diagnostics file="broken.py">',
            "ERROR [4:9] '(' was never closed [SyntaxError] (ipylsp-syntax)",
            "</diagnostics>",
        ])
        assert service.server_pids() == []  # no server was even started
        assert elapsed < 2.0
        # Fixed: the syntax error is fixed; the server is asked now.
        path.write_text("def ok():\n    return 1\n\nvalue = (1,\n         2)\nprint(value)\n")
        assert format_text(service.check(path)) == "fixed 1 error in broken.py"


def test_syntax_error_between_two_good_texts(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    path = tmp_path / "flow.py"
    good = "def f():\n    return missing_name\n\nprint(f())\n"
    path.write_text(good)
    with Service(settings_for("ty")) as service:
        assert format_text(service.check(path)) == "\n".join([
            '<diagnostics file="flow.py">',
            "ERROR [2:12] Name `missing_name` used when not defined [unresolved-reference] (ty)",
            "</diagnostics>",
        ])
        path.write_text(good.replace("print(f())", "print(f()"))
        assert format_text(service.check(path)) == "\n".join([
            '<diagnostics file="flow.py">',
            "ERROR [4:6] '(' was never closed [SyntaxError] (ipylsp-syntax)",
            "</diagnostics>",
        ])
        # Parsing again: the syntax error is fixed, the old error is not news.
        path.write_text(good + "x = 1\n")
        assert format_text(service.check(path)) == "fixed 1 error in flow.py"


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("bad.json", '{\n  "a": 1,\n  "b": [1, 2,, 3]\n}\n',
         "ERROR [3:14] Expecting value (ipylsp-syntax)"),
        ("bad.toml", 'title = "x"\n[owner]\nname = "a\n',
         "ERROR [3:10] Illegal character '\\n' (ipylsp-syntax)"),
        pytest.param(
            "bad.yaml", "a: 1\nb: [1, 2\nc: 3\n",
            "ERROR [3:2] expected ',' or ']', but got ':' (while parsing a flow sequence) "
            "(ipylsp-syntax)",
            marks=pytest.mark.skipif(
                importlib.util.find_spec("yaml") is None, reason="PyYAML is not installed"
            ),
        ),
    ],
)
def test_data_file_syntax_errors_without_a_server(
    tmp_path: Path, name: str, text: str, expected: str
) -> None:
    git(tmp_path, "init", "-q")
    path = tmp_path / name
    path.write_text(text)
    settings = Settings(language_servers={"json": (), "toml": (), "yaml": ()})
    with Service(settings) as service:
        assert format_text(service.check(path)) == "\n".join(
            [f'<diagnostics file="{name}">', expected, "</diagnostics>"]
        )


# --- a server that does not answer ------------------------------------------------------------


def fake_settings(*flags: str, **changes: Any) -> Settings:
    spec = ServerSpec(
        id="fake", name="Fake", languages=("python",), command=fake_command(*flags),
        install=InstallRecipe("path"),
    )
    return Settings(extra_specs=(spec,), language_servers={"python": ("fake",)}, **changes)


def test_timed_out_server_reports_unknown_not_clean(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    path = tmp_path / "slow.py"
    path.write_text("x = 1\n")
    settings = fake_settings(
        "--diagnostics", "pull", "--hang-on", "textDocument/diagnostic", wait_budget=1.0
    )
    timed_out = "\n".join([
        '<diagnostics file="slow.py">',
        "UNKNOWN [fake] timed out waiting for diagnostics: results for this file are incomplete",
        "</diagnostics>",
    ])
    with Service(settings) as service:
        started = time.monotonic()
        report = service.check(path)
        assert time.monotonic() - started < 1.0 + 2.0  # the write waits no longer than that
        assert report.has_unknown and not report.has_problems
        [unknown] = report.files[0].unknown
        assert (unknown.server_id, unknown.reason) == ("fake", UnknownReason.TIMED_OUT)
        assert format_text(report) == timed_out
        data = to_json(report)
        assert data["summary"]["unknown"] == 1  # type: ignore[index]
        assert data["files"][0]["unknown"] == [  # type: ignore[index]
            {"server": "fake", "reason": "timed out", "detail": "waiting for diagnostics",
             "hint": ""}
        ]
        # Still unknown the next time, never clean.
        path.write_text("x = 2\n")
        assert format_text(service.check(path)) == timed_out
        # Two timeouts in a row: broken, and later writes pay nothing for it.
        path.write_text("x = 3\n")
        started = time.monotonic()
        assert format_text(service.check(path)) == "\n".join([
            '<diagnostics file="slow.py">',
            "UNKNOWN [fake] broken after 2 checks without an answer: results for this file "
            "are incomplete; `%lsp restart fake` starts it again",
            "</diagnostics>",
        ])
        assert time.monotonic() - started < 0.5


def test_timed_out_server_beside_one_that_answers(tmp_path: Path) -> None:
    """ty answers, the other server hangs: ty's errors are reported, with the unknown line."""
    git(tmp_path, "init", "-q")
    path = tmp_path / "half.py"
    path.write_text("print(missing_half)\n")
    spec = ServerSpec(
        id="fake", name="Fake", languages=("python",),
        command=fake_command("--diagnostics", "pull", "--hang-on", "textDocument/diagnostic"),
        install=InstallRecipe("path"),
    )
    settings = Settings(
        extra_specs=(spec,), language_servers={"python": ("ty", "fake")}, wait_budget=2.0
    )
    with Service(settings) as service:
        report = service.check(path)
        assert format_text(report) == "\n".join([
            '<diagnostics file="half.py">',
            "ERROR [1:7] Name `missing_half` used when not defined [unresolved-reference] (ty)",
            "UNKNOWN [fake] timed out waiting for diagnostics: results for this file are "
            "incomplete",
            "</diagnostics>",
        ])
        assert report.files[0].servers == ("ty", "fake")
