"""How exact the delta is on real source trees: what ipylsp says a write introduced and fixed,
per language and server, against what the write did.

Run: ``.venv/bin/python benchmarks/bench_delta_accuracy.py [--languages python,typescript,c,go]
[--targets go/gopls-gopath,...] [--modes cold,warm]``. Prints one JSON object (also written to
``benchmarks/results/bench_delta_accuracy.json``); progress and every wrong scenario on stderr.
A missing server, tree or tool (``go``, ``node``, ``cpp``) stops it, saying what to install:
a table with a hole would read as a measurement.

Source trees, from packages only, fetched once into the git-ignored ``.cache/delta-accuracy/``:

- Python: requests 2.32.3's sdist (PyPI), checked with ty and with basedpyright;
- TypeScript: immer 10.1.1's npm tarball (its ``src/``), with TypeScript 7 (``tsc --lsp``);
  its statements are found with TypeScript 5.9.3's parser (npm tarball too);
- C: the LZ4 library in lz4 4.3.3's sdist (PyPI, ``lz4libs/``), with clangd; which lines
  the preprocessor keeps is asked of ``cpp``;
- Go: Debian's ``golang-github-spf13-cobra-dev`` in GOPATH mode (cobra imports pflag, also
  Debian's) and ``golang-github-spf13-pflag-dev`` in module mode (its go.mod requires nothing),
  with gopls; their declarations are found with ``go/parser`` (``go run``).

Scenarios: seven kinds, eight of each per language (56), drawn with a fixed seed from the
tree's files (ty and basedpyright get the same Python scenarios). A scenario is a file of the
tree, the text before the write and the text after it. The before text is the file with errors
planted that it "already had" (two, or three, at top-level places: ``var q3_old0 int = "q"``
and the like, every one with the same message); the after text is the write:

- ``shift``: comment lines inserted at two places, a blank line deleted: nothing new;
- ``plant_top``: a new error at the top level; ``plant_body``: one at the start of a function
  body (where Go, C and basedpyright may add an unused-variable error on the same line);
- ``fix``: a planted error removed (even scenarios) or corrected (odd ones): one fixed;
- ``moved``: three planted errors, one or two comment lines inserted right above each: nothing
  new (the shape of issue 32);
- ``column``: a statement inserted before each planted error on its own line: nothing new;
- ``mixed``: comment lines inserted, one of three planted errors removed, a new one in a
  function body: one introduced, one fixed.

The truth is the plant: the lines the write's new errors are on (after text) and the lines of
the errors it removed (before text). Per scenario the after text is written to disk and
``Service.check(path, before=<before text>)`` asked, as ``ipylsp check --before`` and a
cell's write do; the file's text is put back afterwards. Modes:

- ``cold``: a new `Service` per scenario (the CLI: the server opens the file for the first
  time, right after it started);
- ``warm``: one `Service` for all of a target's scenarios (a kernel that checks write after
  write).

Scored over errors only (the report's default): an introduced error is right when it is on a
line the write planted an error on, a fixed one when on a line it removed one from; precision
is right / reported; recall is the planted and removed lines reported / all of them. The same
servers' answers (the baseline and current that ipylsp's delta got, recorded as it ran) are
scored for three naive approaches: ``all_current`` (every error the server reports after the
write is new; nothing is fixed), ``no_remap`` (the baseline subtracted without remapping it
through the text's diff: the same message at the same line and column) and ``by_message``
(the baseline subtracted as a multiset of messages, places ignored: the first ones left are
new). ``server_silent`` counts planted or removed lines the server itself had no error on
(in its current or baseline answer): a line no approach could report.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import json
import os
import random
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as c

from ipylsp.analysis import delta as delta_mod
from ipylsp.model.diagnostics import Diagnostic, Severity
from ipylsp.model.settings import Settings
from ipylsp.servers import executables, registry
from ipylsp.service.service import Service

SEED = 32
"""The scenarios' seed (issue 32), fixed with the kinds and counts before any fix was tried."""
KINDS = ("shift", "plant_top", "plant_body", "fix", "moved", "column", "mixed")
PER_KIND = 8
CACHE = c.REPO / ".cache" / "delta-accuracy"
GOCODE = Path("/usr/share/gocode/src")
DEBIAN_GO = "apt-get install golang-github-spf13-cobra-dev"
WAIT_BUDGET = 120.0
"""Seconds a check may wait for its servers: a slow answer is not what is measured here."""


# -- source trees ----------------------------------------------------------------------------------


def _run(command: Sequence[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(command), capture_output=True, text=True, check=False, **kwargs)


def _extract(archive: Path, target: Path) -> None:
    """An sdist or npm tarball's one top directory, as `target`."""
    with tempfile.TemporaryDirectory(dir=CACHE) as tmp, tarfile.open(archive) as tar:
        tar.extractall(tmp, filter="data")
        (top,) = Path(tmp).iterdir()
        shutil.rmtree(target, ignore_errors=True)
        top.rename(target)


def pypi_sdist(package: str, version: str) -> Path:
    """`package` ``version``'s sdist from PyPI, extracted (kept in the cache)."""
    target = CACHE / f"{package}-{version}"
    if not target.is_dir():
        CACHE.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
            done = _run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                         "--no-binary", package, f"{package}=={version}", "-d", tmp])
            archives = list(Path(tmp).glob("*.tar.gz"))
            if done.returncode != 0 or len(archives) != 1:
                raise RuntimeError(f"pip download {package}=={version}: {done.stderr[-500:]}")
            _extract(archives[0], target)
    return target


def npm_tarball(package: str, version: str) -> Path:
    """`package` ``version``'s npm tarball, extracted (kept in the cache)."""
    target = CACHE / f"npm-{package}-{version}"
    if not target.is_dir():
        CACHE.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
            done = _run(["npm", "pack", "-q", f"{package}@{version}", "--pack-destination", tmp],
                        cwd=tmp)
            archives = list(Path(tmp).glob("*.tgz"))
            if done.returncode != 0 or len(archives) != 1:
                raise RuntimeError(f"npm pack {package}@{version}: {done.stderr[-500:]}")
            _extract(archives[0], target)
    return target


def debian_go(import_path: str) -> Path:
    source = GOCODE / import_path
    if not source.is_dir():
        raise RuntimeError(f"{source} is missing: {DEBIAN_GO} (scripts/bootstrap does)")
    return source


def dpkg_version(package: str) -> str | None:
    done = _run(["dpkg-query", "-W", "-f=${Version}", package])
    return (done.stdout.strip() or None) if done.returncode == 0 else None


# -- where a line may go: each language's own parser ----------------------------------------------


@dataclass(frozen=True)
class Point:
    """Before line `line` (0-based; the file's line count: at its end) a line indented by
    `indent` may be inserted."""

    line: int
    indent: str = ""


@dataclass
class Source:
    """One file of a tree: its lines, where top-level lines and function-body lines may go."""

    relative: str
    lines: list[str]
    top: list[Point]
    body: list[Point]

    def blank_before_top(self) -> list[int]:
        """Blank lines right before a top-level place: deleting one changes nothing else."""
        return [p.line - 1 for p in self.top if p.line > 0 and not self.lines[p.line - 1].strip()]


def python_sources(root: Path, files: Sequence[Path]) -> list[Source]:
    out = []
    for path in files:
        text = path.read_text()
        lines = text.splitlines()
        tree = ast.parse(text)
        allowed = 0  # nothing may precede `from __future__ import`
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and node.module == "__future__":
                allowed = node.end_lineno or node.lineno

        def first_line(node: ast.stmt) -> int:
            decorators = getattr(node, "decorator_list", [])
            return min([node.lineno, *(d.lineno for d in decorators)]) - 1

        def overload(node: ast.stmt) -> bool:
            decorators = getattr(node, "decorator_list", [])
            return any((d.attr if isinstance(d, ast.Attribute) else getattr(d, "id", ""))
                       == "overload" for d in decorators)

        # never before `from __future__`, nor between an overload and its implementation
        top = [Point(first_line(n)) for k, n in enumerate(tree.body)
               if first_line(n) >= allowed and not (k and overload(tree.body[k - 1]))]
        top.append(Point(len(lines)))

        def functions(body: list[ast.stmt]) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
            for node in body:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    yield node
                elif isinstance(node, ast.ClassDef):
                    yield from functions(node.body)

        body = []
        for fn in functions(tree.body):
            statements = fn.body
            first = statements[0]
            if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str)):
                statements = statements[1:]  # the docstring stays first
            if not statements:
                continue
            line = first_line(statements[0])
            indent = lines[line][: statements[0].col_offset]
            if line > fn.lineno - 1 and not indent.strip():
                body.append(Point(line, indent))
        out.append(Source(path.relative_to(root).as_posix(), lines, top, body))
    return out


GO_POINTS = r"""
package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
)

// For each file: "T line" where a top-level declaration starts (its doc comment first),
// "B line" for a function body's opening brace (1-based), "X" when it does not parse.
func main() {
	fset := token.NewFileSet()
	for _, path := range os.Args[1:] {
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			fmt.Println("X", path)
			continue
		}
		for _, decl := range f.Decls {
			start := decl.Pos()
			switch d := decl.(type) {
			case *ast.GenDecl:
				if d.Tok == token.IMPORT {
					continue
				}
				if d.Doc != nil {
					start = d.Doc.Pos()
				}
			case *ast.FuncDecl:
				if d.Doc != nil {
					start = d.Doc.Pos()
				}
				if d.Body != nil && len(d.Body.List) > 0 {
					fmt.Println("B", path, fset.Position(d.Body.Lbrace).Line)
				}
			}
			fmt.Println("T", path, fset.Position(start).Line)
		}
	}
}
"""


def go_sources(root: Path, files: Sequence[Path]) -> list[Source]:
    with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
        helper = Path(tmp) / "points.go"
        helper.write_text(GO_POINTS)
        env = {**os.environ, "GO111MODULE": "off", "GOFLAGS": "", "GOPROXY": "off"}
        built = _run(["go", "build", "-o", str(helper.with_suffix("")), str(helper)], env=env)
        if built.returncode != 0:
            raise RuntimeError(f"go build points.go: {built.stderr[-500:]}")
        done = _run([str(helper.with_suffix("")), *map(str, files)])
    if done.returncode != 0:
        raise RuntimeError(f"points {files[0].parent}: {done.stderr[-500:]}")
    found: dict[str, tuple[list[int], list[int]]] = {str(p): ([], []) for p in files}
    for row in done.stdout.splitlines():
        kind, path, *rest = row.split()
        if kind == "X":
            found.pop(path, None)
        elif path in found:
            found[path][0 if kind == "T" else 1].append(int(rest[0]))
    out = []
    for path in files:
        if str(path) not in found:
            continue
        lines = path.read_text().splitlines()
        tops, braces = found[str(path)]
        top = [Point(t - 1) for t in tops] + [Point(len(lines))]
        body = [Point(b, _indent_of(lines[b]) or "\t") for b in braces
                if lines[b - 1].rstrip().endswith("{") and lines[b].strip()]
        out.append(Source(path.relative_to(root).as_posix(), lines, sorted(top, key=_at),
                          body))
    return out


TS_POINTS = r"""
const ts = require(process.argv[2]);
const fs = require("fs");
for (const path of process.argv.slice(3)) {
  const text = fs.readFileSync(path, "utf8");
  const sf = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  if (sf.parseDiagnostics.length) { console.log(JSON.stringify({path, broken: true})); continue; }
  const line = (pos) => sf.getLineAndCharacterOfPosition(pos).line;
  // never between an overload's signatures and its implementation
  const top = sf.statements.filter((s, i) => i === 0 || !(
    ts.isFunctionDeclaration(sf.statements[i - 1]) && !sf.statements[i - 1].body
  )).map((s) => line(s.getStart(sf, true)));
  const body = [];
  const visit = (node) => {
    const fn = ts.isFunctionDeclaration(node) || ts.isMethodDeclaration(node)
      || ts.isFunctionExpression(node) || ts.isArrowFunction(node)
      || ts.isGetAccessorDeclaration(node) || ts.isSetAccessorDeclaration(node);
    if (fn && node.body && ts.isBlock(node.body) && node.body.statements.length) {
      const first = node.body.statements[0];
      body.push([line(node.body.getStart(sf)), line(first.getStart(sf, true))]);
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  console.log(JSON.stringify({path, top, body}));
}
"""


def typescript_sources(root: Path, files: Sequence[Path]) -> list[Source]:
    parser = npm_tarball("typescript", "5.9.3") / "lib" / "typescript.js"
    with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
        helper = Path(tmp) / "points.js"
        helper.write_text(TS_POINTS)
        done = _run(["node", str(helper), str(parser), *map(str, files)])
    if done.returncode != 0:
        raise RuntimeError(f"node points.js: {done.stderr[-500:]}")
    out = []
    for row in done.stdout.splitlines():
        found = json.loads(row)
        if found.get("broken"):
            continue
        path = Path(found["path"])
        lines = path.read_text().splitlines()
        top = [Point(t) for t in found["top"]] + [Point(len(lines))]
        body = []
        for brace, first in found["body"]:
            indent = _indent_of(lines[first])
            if first > brace and lines[first][len(indent):].strip():
                body.append(Point(first, indent))
        out.append(Source(path.relative_to(root).as_posix(), lines, top,
                          sorted(set(body), key=_at)))
    return sorted(out, key=lambda s: s.relative)


def _c_scan(lines: Sequence[str]) -> tuple[list[Point], list[Point]]:
    """Candidate places in C by a small lexer (comments, strings, characters and directives
    skipped, braces counted): top-level lines after a blank line at depth 0, and the line after
    a function body's opening brace (a ``{`` at depth 0 after a ``)``, last on its line)."""
    top: list[Point] = []
    body: list[Point] = []
    depth, in_comment, continued = 0, False, False
    last = ""  # the last significant character outside comments and directives
    blank_before = True
    for i, line in enumerate(lines):
        stripped = line.strip()
        directive = continued or (not in_comment and stripped.startswith("#"))
        if directive:
            continued = line.rstrip().endswith("\\")
            blank_before = False
            continue
        if (depth == 0 and not in_comment and blank_before and stripped
                and not line[0].isspace() and stripped[0] not in "}#"):
            top.append(Point(i))
        blank_before = not stripped and not in_comment
        j, n = 0, len(line)
        while j < n:
            ch = line[j]
            if in_comment:
                end = line.find("*/", j)
                if end < 0:
                    j = n
                    continue
                in_comment, j = False, end + 2
                continue
            if line.startswith("//", j):
                break
            if line.startswith("/*", j):
                in_comment, j = True, j + 2
                continue
            if ch in "\"'":
                j += 1
                while j < n and line[j] != ch:
                    j += 2 if line[j] == "\\" else 1
                j += 1
                last = ch
                continue
            if ch == "{":
                if depth == 0 and last == ")":
                    rest = line[j + 1 :].strip()
                    if not rest and i + 1 < len(lines):
                        body.append(Point(i + 1, "    "))
                depth += 1
            elif ch == "}":
                depth = max(depth - 1, 0)
            if not ch.isspace():
                last = ch
            j += 1
    top.append(Point(len(lines)))
    return top, body


def c_sources(root: Path, files: Sequence[Path], flags: Sequence[str]) -> list[Source]:
    """`_c_scan`'s places that the preprocessor keeps: a probe line before each, run through
    ``cpp`` with the tree's flags; a place whose probe is gone is in an inactive branch."""
    out = []
    for path in files:
        lines = path.read_text().splitlines()
        top, body = _c_scan(lines)
        probes: dict[int, list[str]] = {}
        for k, point in enumerate([*top, *body]):
            probes.setdefault(point.line, []).append(f"ipylsp_probe_{k};")
        marked = [probe for i in range(len(lines) + 1)
                  for probe in [*probes.get(i, []), *([lines[i]] if i < len(lines) else [])]]
        done = _run(["cpp", "-P", "-w", *flags, "-"], input="\n".join(marked) + "\n",
                    cwd=path.parent)
        if done.returncode != 0:
            raise RuntimeError(f"cpp {path}: {done.stderr[-500:]}")
        kept = set(done.stdout.split())
        active = [f"ipylsp_probe_{k};" in kept for k in range(len(top) + len(body))]
        out.append(Source(
            path.relative_to(root).as_posix(), lines,
            [p for k, p in enumerate(top) if active[k]],
            [p for k, p in enumerate(body) if active[len(top) + k]],
        ))
    return out


def _indent_of(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _at(point: Point) -> int:
    return point.line


# -- languages -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Language:
    """How errors are planted in a language: `plant` (an error every server reports on its
    line, the same message every time), `fixed` (the same line corrected), `pad` (a clean
    statement that may precede another on its line), `comment`."""

    name: str
    plant: str
    fixed: str
    pad: str
    comment: str


PYTHON = Language("python", '{name}: int = "q"', "{name}: int = 0", "{name}_pad = 0; ", "#")
GO = Language("go", 'var {name} int = "q"', "var {name} int = 0", "var {name}_pad = 0; ", "//")
C = Language("c", "int {name} = q_undeclared;", "int {name} = 0;", "int {name}_pad = 0; ", "//")
TYPESCRIPT = Language(
    "typescript", 'const {name}: number = "q";', "const {name}: number = 0;",
    "const {name}_pad = 0; ", "//",
)


@dataclass(frozen=True)
class Target:
    """One server on one tree: where it is laid out, with what environment."""

    key: str
    language: Language
    server: str
    tree: str
    sources: Callable[[Path], list[Source]]
    """The files and places of the laid-out tree (its root)."""
    lay_out: Callable[[Path], Path]
    """Copies the tree below a directory; returns the workspace root."""
    env: Callable[[Path], dict[str, str]] = field(default=lambda _root: {})


def _copy(source: Path, target: Path, keep: Callable[[Path], bool] = lambda _p: True) -> Path:
    shutil.copytree(source, target, ignore=lambda d, names: [
        n for n in names if (Path(d) / n).is_file() and not keep(Path(d) / n)
    ])
    subprocess.run(["git", "init", "-q", str(target)], check=True, capture_output=True)
    return target


def _files(root: Path, pattern: str, keep: Callable[[Path], bool] = lambda _p: True) -> list[Path]:
    return sorted(p for p in root.glob(pattern) if p.is_file() and keep(p))


def _plain_go(path: Path) -> bool:
    """Not a test, no build constraint: a file of the package on this machine."""
    if path.name.endswith("_test.go"):
        return False
    head = path.read_text().split("\npackage ", 1)[0]
    return "//go:build" not in head and "// +build" not in head


def _requests(base: Path) -> Path:
    return _copy(pypi_sdist("requests", "2.32.3"), base / "requests")


def _immer(base: Path) -> Path:
    return _copy(npm_tarball("immer", "10.1.1"), base / "immer")


C_FLAGS = ("-xc", "-std=gnu11", "-Ilz4libs")


def _lz4(base: Path) -> Path:
    root = _copy(pypi_sdist("lz4", "4.3.3"), base / "lz4")
    # every error, not the first 20 and "too many errors emitted"
    (root / "compile_flags.txt").write_text("\n".join([*C_FLAGS, "-ferror-limit=0"]) + "\n")
    return root


def _cobra(base: Path) -> Path:
    gopath = base / "gopath"
    return _copy(debian_go("github.com/spf13/cobra"), gopath / "src/github.com/spf13/cobra",
                 lambda p: p.suffix != ".md")


def _cobra_env(root: Path) -> dict[str, str]:
    gopath = root.parents[3]
    return {"GOPATH": f"{gopath}:{GOCODE.parent}", "GO111MODULE": "off", "GOFLAGS": "",
            "GOPROXY": "off"}


def _pflag(base: Path) -> Path:
    return _copy(debian_go("github.com/spf13/pflag"), base / "pflag")


def _pflag_env(_root: Path) -> dict[str, str]:
    return {"GO111MODULE": "on", "GOFLAGS": "-mod=mod", "GOPROXY": "off"}


def _python_files(root: Path) -> list[Source]:
    return python_sources(root, _files(root, "src/requests/*.py"))


TARGETS = (
    Target("python/ty", PYTHON, "ty", "requests 2.32.3 (PyPI sdist)", _python_files, _requests),
    Target("python/basedpyright", PYTHON, "basedpyright", "requests 2.32.3 (PyPI sdist)",
           _python_files, _requests),
    Target("typescript/typescript", TYPESCRIPT, "typescript", "immer 10.1.1 (npm tarball)",
           lambda root: typescript_sources(
               root, _files(root, "src/**/*.ts", lambda p: not p.name.endswith(".d.ts"))),
           _immer),
    Target("c/clangd", C, "clangd", "lz4 4.3.3's lz4libs (PyPI sdist)",
           lambda root: c_sources(root, _files(root, "lz4libs/*.c"), C_FLAGS), _lz4),
    Target("go/gopls-gopath", GO, "gopls",
           "cobra (Debian golang-github-spf13-cobra-dev), GOPATH mode",
           lambda root: go_sources(root, _files(root, "*.go", _plain_go)), _cobra, _cobra_env),
    Target("go/gopls-module", GO, "gopls",
           "pflag (Debian golang-github-spf13-pflag-dev), module mode",
           lambda root: go_sources(root, _files(root, "*.go", _plain_go)), _pflag, _pflag_env),
)


# -- scenarios -------------------------------------------------------------------------------------


@dataclass(eq=False)
class Line:
    """A line of a scenario's text; `tag`: "old" (an error the file had), "doomed" (one the
    write removes), "new" (one the write plants), "" (the file's own line, a comment)."""

    text: str
    tag: str = ""


@dataclass
class Scenario:
    id: str
    kind: str
    relative: str
    before: list[Line]
    after: list[Line]

    @staticmethod
    def text(lines: Sequence[Line]) -> str:
        return "".join(line.text + "\n" for line in lines)

    def introduced_lines(self) -> set[int]:
        """1-based lines of the after text holding an error the write planted."""
        return {i + 1 for i, line in enumerate(self.after) if line.tag == "new"}

    def fixed_lines(self) -> set[int]:
        """1-based lines of the before text holding an error the write removed."""
        kept = {id(line) for line in self.after}
        return {i + 1 for i, line in enumerate(self.before)
                if line.tag == "doomed" and id(line) not in kept}


def scenarios(language: Language, sources: Sequence[Source], per_kind: int) -> list[Scenario]:
    """The scenarios of a language, drawn from `sources` with the fixed seed."""
    rng = random.Random(f"bench_delta_accuracy:{language.name}:{SEED}")
    eligible = [s for s in sources if len(s.top) >= 5 and s.body]
    out = []
    for kind in KINDS:
        for k in range(per_kind):
            sid = f"q{len(out)}"
            out.append(_scenario(language, rng.choice(eligible), kind, k, sid, rng))
    return out


def _scenario(lang: Language, src: Source, kind: str, k: int, sid: str,
              rng: random.Random) -> Scenario:
    def plant(name: str, indent: str, tag: str) -> Line:
        return Line(indent + lang.plant.format(name=name), tag)

    def comments(indent: str, n: int) -> list[Line]:
        return [Line(f"{indent}{lang.comment} a comment the write added") for _ in range(n)]

    olds = 3 if kind in ("moved", "mixed") else 2
    places = sorted(rng.sample(src.top, olds), key=_at)
    inserts: dict[int, list[Line]] = {}
    planted = []
    for j, point in enumerate(places):
        doomed = kind == "mixed" and j == olds - 1
        line = plant(f"{sid}_old{j}", "", "doomed" if doomed else "old")
        inserts.setdefault(point.line, []).append(line)
        planted.append(line)
    if kind == "fix":
        point = rng.choice(src.top)
        line = plant(f"{sid}_doomed", "", "doomed")
        inserts.setdefault(point.line, []).append(line)
        planted.append(line)
    source_lines = [Line(text) for text in src.lines]
    before = [new for i in range(len(source_lines) + 1)
              for new in [*inserts.get(i, []), *source_lines[i : i + 1]]]
    after = list(before)

    def insert_at(point: Point, lines: list[Line]) -> None:
        """Before the file's own line at `point` (after what was planted there)."""
        anchor = source_lines[point.line] if point.line < len(source_lines) else None
        at = len(after) if anchor is None else after.index(anchor)
        after[at:at] = lines

    if kind == "shift":
        for point in rng.sample([*src.top, *src.body], 2):
            insert_at(point, comments(point.indent, rng.randint(1, 3)))
        blanks = src.blank_before_top()
        if blanks:
            after.remove(source_lines[rng.choice(blanks)])
    elif kind == "plant_top":
        insert_at(rng.choice(src.top), [plant(f"{sid}_new", "", "new")])
    elif kind == "plant_body":
        point = rng.choice(src.body)
        insert_at(point, [plant(f"{sid}_new", point.indent, "new")])
    elif kind == "fix":
        doomed = planted[-1]
        if k % 2 == 0:
            after.remove(doomed)
        else:
            after[after.index(doomed)] = Line(lang.fixed.format(name=f"{sid}_doomed"))
    elif kind == "moved":
        for line in planted:
            at = after.index(line)
            after[at:at] = comments("", rng.randint(1, 2))
    elif kind == "column":
        for j, line in enumerate(planted):
            after[after.index(line)] = Line(lang.pad.format(name=f"{sid}_old{j}") + line.text,
                                            "old")
    elif kind == "mixed":
        point = rng.choice([*src.top, *src.body])
        insert_at(point, comments(point.indent, rng.randint(1, 3)))
        after.remove(planted[-1])
        point = rng.choice(src.body)
        insert_at(point, [plant(f"{sid}_new", point.indent, "new")])
    return Scenario(sid, kind, src.relative, before, after)


# -- what ipylsp's delta was given ----------------------------------------------------------------


class DeltaInputs:
    """Records every `compute_delta` call of the service (the service calls it through the
    module), so that the naive approaches are scored on exactly the answers ipylsp had."""

    def __init__(self) -> None:
        self.calls: list[tuple[str | None, Sequence[Diagnostic], Sequence[Diagnostic]]] = []
        self._original = delta_mod.compute_delta

        def spy(before: str | None, after: str | None, baseline: Sequence[Diagnostic],
                current: Sequence[Diagnostic]) -> delta_mod.Delta:
            self.calls.append((after, tuple(baseline), tuple(current)))
            return self._original(before, after, baseline, current)

        delta_mod.compute_delta = spy

    def close(self) -> None:
        delta_mod.compute_delta = self._original

    def of(self, after: str, server: str) -> tuple[list[Diagnostic], list[Diagnostic]] | None:
        """The last (baseline, current) the service compared for `after` and `server`."""
        for text, baseline, current in reversed(self.calls):
            ours = all(d.server_id == server for d in (*baseline, *current))
            if text == after and ours and (baseline or current):
                return list(baseline), list(current)
        return None


# -- scoring ---------------------------------------------------------------------------------------


def _errors(diagnostics: Sequence[Diagnostic]) -> list[Diagnostic]:
    return [d for d in diagnostics if d.severity is Severity.ERROR]


def _line(d: Diagnostic) -> int:
    return d.range.start.line + 1


def all_current(baseline: list[Diagnostic], current: list[Diagnostic]) -> tuple[
    list[Diagnostic], list[Diagnostic]
]:
    return current, []


def _subtract(a: list[Diagnostic], b: list[Diagnostic],
              key: Callable[[Diagnostic], tuple[Any, ...]]) -> list[Diagnostic]:
    left = Counter(key(d) for d in b)
    out = []
    for d in a:
        if left[key(d)]:
            left[key(d)] -= 1
        else:
            out.append(d)
    return out


def _message(d: Diagnostic) -> tuple[Any, ...]:
    return (d.code, d.message)


def _placed(d: Diagnostic) -> tuple[Any, ...]:
    return (d.code, d.message, d.range.start.line, d.range.start.column)


def no_remap(baseline: list[Diagnostic], current: list[Diagnostic]) -> tuple[
    list[Diagnostic], list[Diagnostic]
]:
    return _subtract(current, baseline, _placed), _subtract(baseline, current, _placed)


def by_message(baseline: list[Diagnostic], current: list[Diagnostic]) -> tuple[
    list[Diagnostic], list[Diagnostic]
]:
    return _subtract(current, baseline, _message), _subtract(baseline, current, _message)


NAIVE = {"all_current": all_current, "no_remap": no_remap, "by_message": by_message}


@dataclass
class Score:
    """One approach's reported items (right or wrong) and the truth's lines (found or missed)
    over a target's scenarios in one mode."""

    right: int = 0
    wrong: int = 0
    found: int = 0
    missed: int = 0
    wrong_scenarios: Counter[str] = field(default_factory=Counter)

    def add(self, kind: str, introduced: Sequence[Diagnostic], fixed: Sequence[Diagnostic],
            scenario: Scenario) -> list[str]:
        """Scores one scenario; what was wrong, as lines for people."""
        want_in, want_fixed = scenario.introduced_lines(), scenario.fixed_lines()
        notes = []
        for label, got, want in (("introduced", introduced, want_in),
                                 ("fixed", fixed, want_fixed)):
            for d in got:
                if _line(d) in want:
                    self.right += 1
                else:
                    self.wrong += 1
                    notes.append(f"{label} {_line(d)}:{d.range.start.column + 1} "
                                 f"{d.message[:70]!r}")
            lines = {_line(d) for d in got}
            for line in sorted(want):
                if line in lines:
                    self.found += 1
                else:
                    self.missed += 1
                    notes.append(f"not {label}: line {line}")
        if notes:
            self.wrong_scenarios[kind] += 1
        return notes

    def summary(self) -> dict[str, Any]:
        reported = self.right + self.wrong
        truth = self.found + self.missed
        return {
            "precision": round(self.right / reported, 3) if reported else None,
            "recall": round(self.found / truth, 3) if truth else None,
            "right": self.right, "wrong": self.wrong, "found": self.found,
            "missed": self.missed, "wrong_by_kind": dict(self.wrong_scenarios),
        }


# -- running ---------------------------------------------------------------------------------------


@contextlib.contextmanager
def environment(values: dict[str, str]) -> Iterator[None]:
    saved = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def server_version(server: str, data: Path) -> str | None:
    spec = registry.get(server)
    command = executables.resolve_command(spec, data) if spec is not None else None
    if command is None:
        return None
    program = Path(command[0])
    asks = {
        "ty": [str(program), "--version"],
        "basedpyright": [str(program.with_name("basedpyright")), "--version"],
        "typescript": [str(program), "--version"],
        "clangd": [str(program), "--version"],
        "gopls": [str(program), "version"],
    }
    done = _run(asks[server])
    said = " ".join((done.stdout or done.stderr).split())[:160]
    if server == "gopls":
        said += f" (Debian gopls {dpkg_version('gopls')})"
    return said


def settings_for(target: Target, data: Path) -> Settings:
    return Settings(
        language_servers={target.language.name: (target.server,)},
        wait_budget=WAIT_BUDGET, data_dir=data, store=False,
    )


def run_target(iso: c.Isolation, target: Target, modes: Sequence[str],
               per_kind: int) -> dict[str, Any]:
    spec = registry.get(target.server)
    assert spec is not None
    if executables.resolve_command(spec, iso.data_dir) is None:
        raise RuntimeError(f"{target.server} is not installed: {registry.install_hint(spec)}")
    base = Path(tempfile.mkdtemp(prefix=target.key.replace("/", "-") + "-", dir=iso.base))
    root = target.lay_out(base)
    sources = target.sources(root)
    plan = scenarios(target.language, sources, per_kind)
    out: dict[str, Any] = {
        "tree": target.tree,
        "server": target.server,
        "server_version": server_version(target.server, iso.data_dir),
        "files": len(sources),
        "scenarios": len(plan),
        "per_kind": per_kind,
        "seed": SEED,
        "modes": {},
    }
    with environment(target.env(root)):
        for mode in modes:
            out["modes"][mode] = run_mode(iso, target, root, plan, mode)
    shutil.rmtree(base, ignore_errors=True)
    return out


def run_mode(iso: c.Isolation, target: Target, root: Path, plan: Sequence[Scenario],
             mode: str) -> dict[str, Any]:
    scores = {"ipylsp": Score(), **{name: Score() for name in NAIVE}}
    silent = unknown = 0
    wrong: list[dict[str, Any]] = []
    inputs = DeltaInputs()
    started = time.monotonic()
    shared = Service(settings_for(target, iso.data_dir)) if mode == "warm" else None
    try:
        for n, scenario in enumerate(plan):
            path = root / scenario.relative
            original = path.read_bytes()
            before, after = Scenario.text(scenario.before), Scenario.text(scenario.after)
            path.write_text(after)
            try:
                if shared is not None:
                    report = shared.check(path, before=before)
                else:
                    with Service(settings_for(target, iso.data_dir)) as service:
                        report = service.check(path, before=before)
            finally:
                path.write_bytes(original)
            mine = [f for f in report.files if f.path == path and not f.elsewhere]
            if report.has_unknown or len(mine) != 1:
                unknown += 1
            introduced = _errors(mine[0].diagnostics) if mine else []
            fixed = _errors(mine[0].fixed) if mine else []
            notes = scores["ipylsp"].add(scenario.kind, introduced, fixed, scenario)
            answers = inputs.of(after, target.server)
            baseline, current = (_errors(answers[0]), _errors(answers[1])) if answers else ([],
                                                                                              [])
            for name, approach in NAIVE.items():
                scores[name].add(scenario.kind, *approach(baseline, current), scenario)
            silent += len({*scenario.introduced_lines()} - {_line(d) for d in current})
            silent += len({*scenario.fixed_lines()} - {_line(d) for d in baseline})
            if notes or report.has_unknown:
                unknowns = [u.reason.value for f in mine for u in f.unknown]
                c.log(f"{target.key} {mode} {scenario.id} {scenario.kind} {scenario.relative}: "
                      + "; ".join(notes + unknowns))
                wrong.append({"scenario": scenario.id, "kind": scenario.kind,
                              "file": scenario.relative, "wrong": notes, "unknown": unknowns})
            if (n + 1) % 14 == 0:
                c.log(f"{target.key} {mode}: {n + 1}/{len(plan)}")
    finally:
        inputs.close()
        if shared is not None:
            shared.close()
    return {
        **{name: score.summary() for name, score in scores.items()},
        "server_silent": silent,
        "unknown": unknown,
        "wrong_scenarios": wrong,
        "elapsed_s": round(time.monotonic() - started, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--languages", default="python,typescript,c,go")
    parser.add_argument("--targets", default="", help="target keys (python/ty, ...): only these")
    parser.add_argument("--modes", default="cold,warm")
    parser.add_argument("--per-kind", type=int, default=PER_KIND,
                        help=f"scenarios per kind ({PER_KIND}: the measured count)")
    args = parser.parse_args()
    languages = set(args.languages.split(","))
    only = set(filter(None, args.targets.split(",")))
    modes = [m for m in args.modes.split(",") if m]
    assert set(modes) <= {"cold", "warm"}, modes
    result: dict[str, Any] = {"benchmark": "bench_delta_accuracy", "machine": c.machine(),
                              "kinds": list(KINDS), "targets": {}}
    with c.isolated_run("bench_delta_accuracy", result) as iso:
        for target in TARGETS:
            if target.language.name in languages and (not only or target.key in only):
                c.log(f"{target.key}: {target.tree}")
                result["targets"][target.key] = run_target(iso, target, modes, args.per_kind)
    return c.exit_status(result)


if __name__ == "__main__":
    sys.exit(main())
