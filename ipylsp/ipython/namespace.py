"""What the kernel's namespace tells a checker: which names exist, and their types as stubs.

Names bound by `exec`, `%run`, `globals()[...]`, star imports or a cell that failed halfway
are invisible to a server reading the cells. `kernel_view` hands the session the names (never
reported undefined), the imported modules and what they hold (`holds`: never unresolved nor
missing), and a stub writer: for each name the cells read but never bind, one prelude line
giving the live object's type where that is cheap and exact —

- a module: `import numpy as np`;
- a class or function defined in an importable module: `from pkg.mod import Name as alias`;
- an instance of a builtin type: `x: int = __ipylsp_any__()`, of an importable class:
  `x: "pkg.mod.Class"` through a private module alias;
- anything else (defined in `__main__` by `exec`, generics we cannot see into): `Any`;
- but a name IPython binds and rebinds itself (`_`, `_N`, `_iN`, `In`, `Out`, ...) always
  gets the same declaration (`IPYTHON_OWN`), whatever it holds now: a stub's type never
  drifts with the last output, so an earlier cell is never re-reported for it.

Only the names the cells use are declared, so the prelude stays a few lines however big the
namespace is (benchmarks/bench_cells.py measures it).
"""

from __future__ import annotations

import builtins
import re
import sys
import types
from collections.abc import Iterable, Mapping
from typing import Any

from ipylsp.analysis.cells.attribution import Kernel
from ipylsp.cells.session import KernelView

ALWAYS_BOUND = frozenset({"display", "get_ipython", "In", "Out", "exit", "quit"})
"""Names IPython provides during a cell (some only while its builtins trap is active)."""

IPYTHON_OWN = {
    **dict.fromkeys(("_", "__", "___"), "__ipylsp_Any__"),  # the last three outputs
    **dict.fromkeys(("_i", "_ii", "_iii"), "str"),  # the last three inputs
    **dict.fromkeys(("In", "_ih"), "list[str]"),
    **dict.fromkeys(("Out", "_oh"), "dict[int, __ipylsp_Any__]"),
    "_dh": "list[__ipylsp_Any__]",
    "_exit_code": "int",
    "get_ipython": "__ipylsp_Any__",  # the shell: its class and traits vary by front end
}
"""Names IPython binds and rebinds itself, declared with a type that never follows the last
output: after a cell whose value is a string, an earlier `_ + 1` is not re-checked against
`str`. `_N` (an output) and `_iN` (an input) follow the same rule (`_NUMBERED`)."""
_NUMBERED = re.compile(r"_i?[0-9]+")

_BUILTIN_TYPES = {
    bool: "bool", int: "int", float: "float", complex: "complex", str: "str", bytes: "bytes",
    bytearray: "bytearray", type(None): "None", list: "list[__ipylsp_Any__]",
    dict: "dict[__ipylsp_Any__, __ipylsp_Any__]", set: "set[__ipylsp_Any__]",
    frozenset: "frozenset[__ipylsp_Any__]", tuple: "tuple[__ipylsp_Any__, ...]",
    range: "range", slice: "slice",
}


def kernel_view(namespace: Mapping[str, Any]) -> KernelView:
    """The view of one check, read on the kernel's thread (the namespace is not copied)."""
    names = frozenset(namespace) | frozenset(dir(builtins)) | ALWAYS_BOUND
    modules = frozenset(name for name, module in list(sys.modules.items())
                        if module is not None and not name.startswith("_"))

    def stubs(wanted: frozenset[str]) -> str:
        return stub_prelude(namespace, sorted(wanted))

    return KernelView(Kernel(names, modules, lambda dotted: holds(namespace, dotted)), stubs)


def stub_prelude(namespace: Mapping[str, Any], names: Iterable[str]) -> str:
    """Prelude lines declaring `names` (those in `namespace`) with their live types."""
    lines: list[str] = []
    aliases: dict[str, str] = {}
    for name in names:
        if name not in namespace or not name.isidentifier() or name.startswith("__ipylsp"):
            continue
        own = _ipython_own(name)
        if own is not None:
            lines.append(f"{name}: {own} = __ipylsp_any__()")
            continue
        try:
            lines.append(_stub(name, namespace[name], aliases))
        except Exception:  # a live object's own code raised (properties, __getattr__): unknown
            lines.append(f"{name}: __ipylsp_Any__ = __ipylsp_any__()")
    imports = [f"import {module} as {alias}" for module, alias in aliases.items()]
    return "".join(line + "\n" for line in (*imports, *lines))


def _ipython_own(name: str) -> str | None:
    """The fixed declared type of a name IPython binds itself, or None."""
    if name in IPYTHON_OWN:
        return IPYTHON_OWN[name]
    if _NUMBERED.fullmatch(name):
        return "str" if name.startswith("_i") else "__ipylsp_Any__"
    return None


def _stub(name: str, value: Any, aliases: dict[str, str]) -> str:
    if isinstance(value, types.ModuleType):
        module = _own(value).get("__name__")  # not `value.__name__`: a lazy module would load
        if not isinstance(module, str):
            return f"{name}: __ipylsp_Any__ = __ipylsp_any__()"
        if _importable(module) and sys.modules.get(module) is value:
            return f"import {module} as {name}" if module != name else f"import {module}"
    elif isinstance(value, (type, types.FunctionType, types.BuiltinFunctionType)):
        where = _home(value)
        if where is not None:
            module, qualname = where
            return f"from {module} import {qualname} as {name}"
    else:
        kind = type(value)
        annotation = _BUILTIN_TYPES.get(kind)
        if annotation is None:
            where = _home(kind)
            if where is not None:
                module, qualname = where
                alias = aliases.setdefault(module, f"__ipylsp_m{len(aliases)}__")
                annotation = f"{alias}.{qualname}"
        if annotation is not None:
            return f"{name}: {annotation} = __ipylsp_any__()"
    return f"{name}: __ipylsp_Any__ = __ipylsp_any__()"


def _home(value: Any) -> tuple[str, str] | None:
    """(module, name) that imports exactly `value`, or None (`__main__`, nested, private).

    Defined in a private module (`pathlib._local` on Python 3.13+), it is looked up in that
    module's public parents, nearest first: the first that holds the very same object under
    its name is its home (`pathlib`)."""
    module = getattr(value, "__module__", None)
    qualname = getattr(value, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(qualname, str):
        return None
    if not qualname.isidentifier():
        return None
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if not _importable(candidate):
            continue
        owner = sys.modules.get(candidate)
        if owner is not None and _own(owner).get(qualname) is value:  # no `__getattr__` runs
            return candidate, qualname
        if end == len(parts):
            return None  # public and defining it, yet without it: not importable from here
    return None


def _own(module: Any) -> dict[str, Any]:
    """A module's namespace, read without running its code (lazy modules, PEP 562)."""
    namespace = object.__getattribute__(module, "__dict__")
    return namespace if isinstance(namespace, dict) else {}


def _importable(module: str) -> bool:
    return module not in ("__main__", "builtins") and all(
        part.isidentifier() and not part.startswith("_") for part in module.split(".")
    )


def holds(namespace: Mapping[str, Any], dotted: str) -> bool:
    """Whether `dotted` names a module of `sys.modules` or a member one holds, read without
    running a module's code: its longest prefix in `sys.modules` (else its first part in the
    namespace: `np.random`), then each further part a submodule in `sys.modules`, a name in
    the module's own namespace, or, last, a name a lazy module (PEP 562 `__getattr__`, or a
    module class's) lists in `__all__` or `dir()` but has not made yet."""
    parts = dotted.split(".")
    value: Any = None
    rest: list[str] = []
    for end in range(len(parts), 0, -1):
        module = sys.modules.get(".".join(parts[:end]))
        if module is not None:
            value, rest = module, parts[end:]
            break
    else:
        if parts[0] not in namespace:
            return False
        value, rest = namespace[parts[0]], parts[1:]
    for index, part in enumerate(rest):
        if not isinstance(value, types.ModuleType):
            return False
        own = _own(value)
        name = own.get("__name__")
        submodule = sys.modules.get(f"{name}.{part}") if isinstance(name, str) else None
        if submodule is not None:
            value = submodule
        elif part in own:
            value = own[part]
        else:
            return index == len(rest) - 1 and _lazy_member(value, own, part)
    return True


def _lazy_member(module: types.ModuleType, own: dict[str, Any], name: str) -> bool:
    if "__getattr__" not in own and getattr(type(module), "__getattr__", None) is None:
        return False  # no way to make it: `from module import name` fails
    listed = own.get("__all__")
    if isinstance(listed, (list, tuple)) and name in listed:
        return True
    try:
        return name in dir(module)  # a module's `__dir__` is its own code: it may raise
    except Exception:
        return False
