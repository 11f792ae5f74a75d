"""ipylsp: real language servers behind a Jupyter kernel.

``import ipylsp`` is cheap: the service, its loop and every server start on first use.

    >>> import ipylsp
    >>> report = ipylsp.check("src/app.py")      # what the file's current text introduced
    >>> report                                  # prints as the <diagnostics> block agents read
"""

from __future__ import annotations

import os

from ipylsp._version import __version__

TYPE_CHECKING = False
"""`typing.TYPE_CHECKING` without importing `typing` (mypy reads the name alike): a CLI call
an agent makes after each edit pays for every module it imports."""
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar

    from ipylsp.lsp.requests import Feature, FeatureResult
    from ipylsp.model.answers import Completion, Location, Symbol
    from ipylsp.model.diagnostics import Report
    from ipylsp.model.settings import Settings
    from ipylsp.model.status import ServerStatus
    from ipylsp.service import Service

    A = TypeVar("A")


def get_service(settings: Settings | None = None) -> Service:
    """The service of this process: in a kernel that ran `%load_ext ipylsp`, the extension's
    (its checks and hand-overs are the cell hooks', on the user's broker when it runs); else
    the process-wide `Service` (created on first use; `settings` only applies then)."""
    loaded = _kernel_service()
    if loaded is not None:
        return loaded
    from ipylsp.service import get_service as shared

    return shared(settings)


def _kernel_service() -> Service | None:
    """The service of the `%load_ext ipylsp` of this process's IPython shell, if any (IPython
    is not imported for the question)."""
    import sys

    if "IPython" not in sys.modules:
        return None
    from IPython import get_ipython

    shell = get_ipython()
    if shell is None:
        return None
    from ipylsp.ipython.extension import current

    checks = current(shell)
    return None if checks is None else checks.service


def _reset_service() -> None:
    """Close and forget the process-wide service (used by `%unload_ext` and tests)."""
    from ipylsp.service import reset_service

    reset_service()


def _shown(report: Report, empty: str) -> Report:
    """`report`, printing as `%lsp` answers (its text block with the service's options)."""
    from ipylsp.analysis.report import FormatOptions, ShownReport

    options = FormatOptions.from_settings(get_service().settings)
    return ShownReport.of(report, options, empty)


def check(
    path: str | os.PathLike[str],
    *,
    content: str | None = None,
    before: str | None = None,
    timeout: float | None = None,
) -> Report:
    """Problems the file's text (or `content`, not written) introduced relative to `before`.

    The report prints as its `<diagnostics>` block (`format_report` for other options)."""
    report = get_service().check(path, content=content, before=before, timeout=timeout)
    clean = "no problems" if before == "" else "no new problems"  # before="": everything
    return _shown(report, f"{os.fspath(path)}: {clean}")


def check_cell(code: str, *, timeout: float | None = None) -> Report:
    """What `code` would introduce if it ran now as a notebook cell, against the cells this
    kernel has run (with `%load_ext ipylsp`: its namespace too). Nothing is run."""
    if not isinstance(code, str):
        raise TypeError(f"code must be a str, not {type(code).__name__}")
    from ipylsp.cells.session import process_session
    from ipylsp.ipython.extension import current_session

    report = current_session(process_session).preflight(code, timeout=timeout)
    return _shown(report, "the cell: no new problems (nothing was run)")


def diagnostics(path: str | os.PathLike[str] | None = None) -> Report:
    """The current diagnostics of one file or of every checked file: a file never checked, or
    changed on disk since its check, is checked first (the rule of every surface)."""
    report = get_service().diagnostics(path)
    return _shown(report, "no known problems" if report.files else "nothing checked yet")


def pending() -> Report:
    """Problems introduced by writes and not yet handed over; handing them over forgets them.

    Newest writes first, at most 10 per file and 30 in all, and no more than a report of
    them shows within the configured `max_report_chars`; what does not fit stays pending for
    the next call (a note says how many).
    """
    from ipylsp.analysis.report import FormatOptions

    service = get_service()
    options = FormatOptions.from_settings(service.settings, severity="all")
    return service.pending(options, again="ipylsp.pending()")


def _at(
    feature: Feature[None, A], path: str | os.PathLike[str], line: int, column: int
) -> FeatureResult[A]:
    """`feature` at a 1-based line and column (in characters); it prints as the answer."""
    if not isinstance(line, int) or not isinstance(column, int) or line < 1 or column < 1:
        raise ValueError("line and column are 1-based positive integers")
    return get_service().feature(feature, path, line - 1, column - 1)


# The features, a function each (what each asks is its module in ipylsp/lsp/requests/): each
# imports its feature when called, so that `import ipylsp` stays cheap (`%load_ext` pays it);
# its docstring is its feature's `about` (tests/test_api.py holds them equal).


def hover(path: str | os.PathLike[str], line: int, column: int) -> FeatureResult[str]:
    """The type and documentation of the symbol at a place. Positions are 1-based
    (characters)."""
    from ipylsp.lsp.requests.hover import HOVER

    return _at(HOVER, path, line, column)


def definition(
    path: str | os.PathLike[str], line: int, column: int
) -> FeatureResult[tuple[Location, ...]]:
    """Where the symbol at a place is defined. Positions are 1-based (characters)."""
    from ipylsp.lsp.requests.locations import DEFINITION

    return _at(DEFINITION, path, line, column)


def references(
    path: str | os.PathLike[str], line: int, column: int
) -> FeatureResult[tuple[Location, ...]]:
    """Every reference to the symbol at a place, its definition included. Positions are
    1-based (characters)."""
    from ipylsp.lsp.requests.locations import REFERENCES

    return _at(REFERENCES, path, line, column)


def completions(
    path: str | os.PathLike[str], line: int, column: int
) -> FeatureResult[tuple[Completion, ...]]:
    """What may be written at a place: names, members, keywords. Positions are 1-based
    (characters)."""
    from ipylsp.lsp.requests.completion import COMPLETIONS

    return _at(COMPLETIONS, path, line, column)


def symbols(path: str | os.PathLike[str]) -> FeatureResult[tuple[Symbol, ...]]:
    """A file's outline: its classes, functions and variables, nested."""
    from ipylsp.lsp.requests.symbols import SYMBOLS

    return get_service().feature(SYMBOLS, path)


def signature_help(path: str | os.PathLike[str], line: int, column: int) -> FeatureResult[str]:
    """The signature of the call at a place, with the parameter being written. Positions are
    1-based (characters)."""
    from ipylsp.lsp.requests.signature_help import SIGNATURE_HELP

    return _at(SIGNATURE_HELP, path, line, column)


def document_highlight(
    path: str | os.PathLike[str], line: int, column: int
) -> FeatureResult[tuple[Location, ...]]:
    """Every place in its file where the symbol at a place is written or read. Positions are
    1-based (characters)."""
    from ipylsp.lsp.requests.document_highlight import DOCUMENT_HIGHLIGHT

    return _at(DOCUMENT_HIGHLIGHT, path, line, column)


def subscribe(callback: Callable[[Report], object]) -> None:
    """Call `callback(report)` with every report as it is made (each cell's check, each
    `check`, each agent tool's check, late answers): for agent loops in the kernel.

    It runs on the thread that made the report (ipylsp's loop for late answers): keep it
    quick. A callback that raises is logged and unsubscribed; it never breaks a check."""
    get_service().subscribe(callback)


def unsubscribe(callback: Callable[[Report], object]) -> bool:
    """Stop calling `callback`; False when it was not subscribed."""
    return get_service().unsubscribe(callback)


def status() -> list[ServerStatus]:
    """Running, starting and broken servers per (server, root)."""
    return get_service().status()


def format_report(report: Report, **options: Any) -> str:
    """The `<diagnostics>` text block for a report (errors only unless `severity=` says more)."""
    from ipylsp.analysis.report import FormatOptions, format_text

    return format_text(report, FormatOptions(**options))


def load_ipython_extension(ipython: Any) -> None:
    from ipylsp.ipython.loading import load_ipython_extension as load

    load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    from ipylsp.ipython.loading import unload_ipython_extension as unload

    unload(ipython)


__all__ = [
    "__version__",
    "check",
    "completions",
    "definition",
    "diagnostics",
    "document_highlight",
    "format_report",
    "get_service",
    "hover",
    "pending",
    "references",
    "signature_help",
    "status",
    "subscribe",
    "symbols",
    "unsubscribe",
]
