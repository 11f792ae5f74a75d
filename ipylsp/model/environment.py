"""`Environment`: the environment a client's servers run in, as a value.

A service runs its servers with its client's environment: the client's interpreter (the
kernel's, the CLI's: where servers installed beside it are found, and the Python environment
Python servers are handed) and the client's values of the variables that a language server,
or ipylsp's search for it, reads. In one process (a kernel) that is the process's own
(`Environment.current`); a process that serves other processes (a broker) is given each
client's, in its one JSON form (`model/wire.py`: `{"executable", "prefix", "variables":
[[name, value], ...]}`).

Which variables (`relevant`), by name or prefix:

- finding programs and the user's files: ``PATH``, ``HOME``, ``TMPDIR``, ``LANG``,
  ``LANGUAGE``, ``LC_*``, ``XDG_CONFIG_HOME``, ``XDG_CACHE_HOME``, ``XDG_DATA_HOME``,
  ``LD_LIBRARY_PATH``;
- Python: ``VIRTUAL_ENV``, ``CONDA_*``, ``PYTHON*`` (``PYTHONPATH``, ``PYTHONHOME``...), and
  the servers' own: ``RUFF_*``, ``TY_*``, ``PYRIGHT*``, ``BASEDPYRIGHT*``, ``PYREFLY*``,
  ``MYPY*`` (``MYPYPATH``);
- Go: ``GO*`` (``GOPATH``, ``GOROOT``, ``GOFLAGS``, ``GO111MODULE``, ``GOWORK``, ``GOENV``,
  ``GOPROXY``...; not ``GOOGLE_*``), ``CGO_*``;
- C and C++: ``CC``, ``CXX``, ``CPATH``, ``C_INCLUDE_PATH``, ``CPLUS_INCLUDE_PATH``,
  ``LIBRARY_PATH``, ``CLANGD*``;
- JavaScript: ``NODE_*``, ``NPM_CONFIG_*`` (and npm's lower-case ``npm_config_*``);
- Rust: ``RUST*`` (``RUSTUP_HOME``, ``RUSTUP_TOOLCHAIN``, ``RUSTFLAGS``), ``CARGO_*``;
- Java: ``JAVA_HOME``.

Never one that belongs to a process rather than to the user's setup: ``JPY_*``,
``KERNEL_*``, ``IPYLSP_*`` (``IPYLSP_SERVER_TAG``, the tag `lsp.process` gives each server),
whatever their prefix would say. Such a variable given to `Environment` is dropped, so it
changes no `digest`.

`spawn_environ` is what a server is started with: the spawning process's own environment
without any relevant variable, plus the client's values: the client's ``PATH`` and
``GOPATH`` win, and a relevant variable the client lacks is absent. A plain value: it reads
this process's state only in `current` and `spawn_environ`'s default.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass

NAMES: frozenset[str] = frozenset({
    "PATH", "HOME", "TMPDIR", "LANG", "LANGUAGE", "XDG_CONFIG_HOME", "XDG_CACHE_HOME",
    "XDG_DATA_HOME", "LD_LIBRARY_PATH", "VIRTUAL_ENV", "CC", "CXX", "CPATH", "C_INCLUDE_PATH",
    "CPLUS_INCLUDE_PATH", "LIBRARY_PATH", "JAVA_HOME",
})
"""Variables servers read, by exact name."""

PREFIXES: tuple[str, ...] = (
    "LC_", "CONDA_", "PYTHON", "RUFF_", "TY_", "PYRIGHT", "BASEDPYRIGHT", "PYREFLY", "MYPY",
    "GO", "CGO_", "CLANGD", "NODE_", "NPM_CONFIG_", "npm_config_", "RUST", "CARGO_",
)
"""Variables servers read, by prefix."""

EXCLUDED_PREFIXES: tuple[str, ...] = ("JPY_", "KERNEL_", "IPYLSP_", "GOOGLE_")
"""Never relevant, whatever `PREFIXES` says: a process's own (a kernel's parent, a server's
tag) or another tool's that only shares a prefix (``GOOGLE_*`` is not Go's)."""


def relevant(name: str) -> bool:
    """Whether a server (or ipylsp's search for one) reads variable `name` (module doc)."""
    if name.startswith(EXCLUDED_PREFIXES):
        return False
    return name in NAMES or name.startswith(PREFIXES)


@dataclass(frozen=True, slots=True)
class Environment:
    """A client's interpreter and its values of the relevant variables (module doc). Fields
    are plain (str and tuples of str): the value is sent as JSON."""

    executable: str
    """The client's interpreter (``sys.executable``); "" when it has none."""
    prefix: str
    """Its environment's directory (``sys.prefix``); "" when unknown."""
    variables: tuple[tuple[str, str], ...] = ()
    """(name, value) of the relevant variables, sorted by name; given unsorted, duplicated
    (the last wins) or with irrelevant names, they are sorted, deduplicated and filtered."""

    def __post_init__(self) -> None:
        kept = {str(name): str(value) for name, value in self.variables if relevant(str(name))}
        normal = tuple(sorted(kept.items()))
        if normal != self.variables:
            object.__setattr__(self, "variables", normal)

    @classmethod
    def current(cls, environ: Mapping[str, str] | None = None) -> Environment:
        """This process's: its interpreter, prefix and relevant variables (of `environ`, when
        given, instead of ``os.environ``)."""
        source = os.environ if environ is None else environ
        return cls(sys.executable or "", sys.prefix or "",
                   tuple((k, v) for k, v in source.items() if relevant(k)))

    def get(self, name: str, default: str | None = None) -> str | None:
        """The client's value of `name` (a relevant variable), or `default`."""
        for key, value in self.variables:
            if key == name:
                return value
        return default

    def path(self) -> tuple[str, ...]:
        """The directories of the client's ``PATH``, in order (empty ones dropped)."""
        return tuple(d for d in (self.get("PATH") or "").split(os.pathsep) if d)

    def spawn_environ(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """The environment to start a server with: `base` (default: this process's
        ``os.environ``) without any relevant variable, plus the client's values."""
        source = os.environ if base is None else base
        merged = {name: value for name, value in source.items() if not relevant(name)}
        merged.update(self.variables)
        return merged

    def digest(self) -> str:
        """A stable hex digest of the value (sha256 of its one JSON form, `model/wire.py`):
        part of a key."""
        from ipylsp.model.wire import to_wire

        text = json.dumps(to_wire(self), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
