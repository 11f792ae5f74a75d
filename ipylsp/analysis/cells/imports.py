"""The kernel's modules against the cells' import diagnostics: which reports the kernel proves
wrong, and which imports a cell guards itself.

A report that a module cannot be resolved, or that a module has no such member, is wrong when
the kernel holds that module or member, however it got there (a `sys.meta_path` finder that
imports notebooks, a module made in code and put in `sys.modules`, a member a module's
`__getattr__` makes on first use), or when the import bound its name in the kernel: servers
read files, the kernel ran the import. (ruff resolves no imports: it has no such code.) An import
inside a `try` whose handler catches its `ImportError` (or `ModuleNotFoundError`,
`Exception`, `BaseException`, a bare `except:`), or under `contextlib.suppress` of one, is
the cell's own business: its fallback is the cell's choice, right or wrong.

What the report is about is read from the code, not the message, where the code says it: the
import statement at the diagnostic's place (`import a.b` -> module `a.b`; `from m import x`
-> module `m`, or member `x` of `m` when the place is on `x`). A module's attribute read
outside an import (`pygments.lexers.PythonLexer`, `matplotlib.pyplot`) is named by the
message, in each server's words (`MODULE_MEMBER_MESSAGES`), or by the expression itself.

Pure: the kernel answers through `Holds` (`ipython/namespace.py` reads `sys.modules` and the
namespace, never running a module's code); this module may not import the adapters or the
service.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol

from ipylsp.model.diagnostics import Diagnostic

IMPORT_CODES = frozenset({
    "import-not-found", "unresolved-import", "missing-module-member",  # ty (unresolved-import:
    "possibly-missing-import",  # ty before 0.0.97)
    "reportMissingImports", "reportMissingModuleSource",  # pyright, basedpyright
    "reportAttributeAccessIssue",  # pyright: `"x" is unknown import symbol`
    "missing-import", "missing-module-attribute",  # pyrefly
})
"""Codes that, on an import statement, say its module or one of its names is not there."""

MODULE_MEMBER_CODES = frozenset({
    "missing-attribute", "unresolved-attribute", "possibly-missing-attribute",  # ty
    "possibly-missing-submodule",  # ty: `Submodule `x` might not have been imported`
    "reportAttributeAccessIssue",  # pyright, basedpyright
    "implicit-import",  # pyrefly
})
"""Codes that, outside an import, may say a module has no such member."""

MODULE_MEMBER_MESSAGES = (
    re.compile(r"^Module `(?P<module>[\w.]+)` has no member `(?P<member>\w+)`"),  # ty
    re.compile(r'^"(?P<member>\w+)" is not a known attribute of module "(?P<module>[\w.]+)"'),
    re.compile(r"^No attribute `(?P<member>\w+)` in module `(?P<module>[\w.]+)`"),  # pyrefly
    re.compile(r"^Module `(?P<module>[\w.]+)\.(?P<member>\w+)` exists, but was not imported"),
)
"""A module's missing member, as each server says it (ty; pyright and basedpyright; pyrefly's
`missing-attribute` and `implicit-import`)."""
_SUBMODULE = re.compile(r"^Submodule `(?P<member>\w+)` might not have been imported")
"""ty's `possibly-missing-submodule`: the module is the expression the diagnostic points at."""
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\s*\.\s*[A-Za-z_]\w*)*")

GUARDS = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})
"""Handlers that take an import's failure (a bare `except:` too)."""

Holds = Callable[[str], bool]
"""The kernel's answer for a dotted name (`pkg.mod`, `pkg.mod.Member`, `alias.sub`): True when
it names a module in `sys.modules` or a member the kernel's module holds."""


def holds_nothing(_dotted: str) -> bool:
    return False


@dataclass(frozen=True, slots=True)
class ImportAt:
    """The import statement at a place: its module (`import a.b`: `a.b`; `from m import x`:
    `m`; None for a relative import), the name the place is on (`from m import x as y`: `x`)
    and the name that binds (`y`)."""

    module: str | None
    member: str | None
    guarded: bool
    bound: str | None = None


class Kernel(Protocol):
    """What the judgement asks of the kernel (`attribution.Kernel`)."""

    @property
    def names(self) -> frozenset[str]: ...

    def has(self, dotted: str) -> bool:
        """A module imported, or a module's member the kernel holds (`Holds`)."""
        ...


def disproved(d: Diagnostic, text: str, cell_text: str, line: int, kernel: Kernel) -> bool:
    """True when the kernel proves `d` (in a cell whose text is `cell_text`, at its `line`)
    wrong about a module or a module's member, or the cell guards the import it is about.
    `text`: the document text `d` points at."""
    code = d.code or ""
    if code in IMPORT_CODES:
        at = import_at(cell_text, line, d.range.start.column)
        if at is not None:
            return at.guarded or _held(at, kernel)
    if code in MODULE_MEMBER_CODES:
        return _member_held(d.message, text, kernel.has)
    return False


def _held(at: ImportAt, kernel: Kernel) -> bool:
    """The module is the kernel's, and the member too: its module holds it, or the import
    bound its name in the kernel (it ran: a lazy module's member made and not kept)."""
    if at.module is None:
        return False
    if at.member is None:
        return kernel.has(at.module)
    return kernel.has(f"{at.module}.{at.member}") or (
        at.bound in kernel.names and kernel.has(at.module))


def _member_held(message: str, text: str, holds: Holds) -> bool:
    for pattern in MODULE_MEMBER_MESSAGES:
        said = pattern.match(message)
        if said is not None:
            return holds(f"{said['module']}.{said['member']}")
    said = _SUBMODULE.match(message)
    expression = _DOTTED.match(text)
    if said is None or expression is None:
        return False
    dotted = re.sub(r"\s+", "", expression.group(0))
    return dotted.rpartition(".")[2] == said["member"] and holds(dotted)


def import_at(cell_text: str, line: int, column: int) -> ImportAt | None:
    """The import statement of the cell's text at (`line`, `column`: 0-based, code points),
    or None when there is none there (or the text does not parse)."""
    lines = cell_text.split("\n")
    if not 0 <= line < len(lines):
        return None
    offset = len(lines[line][:column].encode("utf-8"))  # ast's columns are UTF-8 bytes
    for node, guarded in _imports(cell_text):
        if not _within(node, line, offset):
            continue
        name = next((a for a in node.names if _within(a, line, offset)), None)
        if isinstance(node, ast.Import):
            alias = name if name is not None else node.names[0]
            return ImportAt(alias.name, None, guarded, alias.asname or alias.name.split(".")[0])
        module = node.module if node.level == 0 else None
        if name is None or name.name == "*":
            return ImportAt(module, None, guarded)
        return ImportAt(module, name.name, guarded, name.asname or name.name)
    return None


def _within(node: ast.stmt | ast.alias, line: int, offset: int) -> bool:
    first, last = node.lineno - 1, (node.end_lineno or node.lineno) - 1
    if not first <= line <= last:
        return False
    if line == first and offset < node.col_offset:
        return False
    end = node.end_col_offset
    return not (line == last and end is not None and offset >= end)


@lru_cache(maxsize=256)
def _imports(cell_text: str) -> tuple[tuple[ast.Import | ast.ImportFrom, bool], ...]:
    """Every import statement of the text, and whether a handler of the cell takes its
    failure. Parsed once per text: only diagnostics on imports ask."""
    try:
        tree = ast.parse(cell_text)
    except (SyntaxError, ValueError):
        return ()
    return tuple(_walk(tree, guarded=False))


def _walk(node: ast.AST, *, guarded: bool) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        yield node, guarded
        return
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        guarded = False  # its body runs when called, outside the handler around the def
    if isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
        takes = guarded or any(_takes(h.type) for h in getattr(node, "handlers", ()))
        for child in getattr(node, "body", ()):
            yield from _walk(child, guarded=takes)
        for part in ("handlers", "orelse", "finalbody"):
            for child in getattr(node, part, ()):
                yield from _walk(child, guarded=guarded)
        return
    if isinstance(node, (ast.With, ast.AsyncWith)) and any(
        _suppresses(item.context_expr) for item in node.items
    ):
        guarded = True
    for child in ast.iter_child_nodes(node):
        yield from _walk(child, guarded=guarded)


def _takes(kind: ast.expr | None) -> bool:
    """Whether a handler of this type catches an ImportError (a bare `except:` does)."""
    if kind is None:
        return True
    kinds = kind.elts if isinstance(kind, ast.Tuple) else [kind]
    return any(_name(k) in GUARDS for k in kinds)


def _suppresses(expression: ast.expr) -> bool:
    """`suppress(ImportError)` or `contextlib.suppress(...)` of a guard."""
    return (isinstance(expression, ast.Call) and _name(expression.func) == "suppress"
            and any(_name(a) in GUARDS for a in expression.args))


def _name(expression: ast.expr) -> str | None:
    if isinstance(expression, ast.Name):
        return expression.id
    if isinstance(expression, ast.Attribute):
        return expression.attr
    return None
