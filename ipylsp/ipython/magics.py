"""`%lsp <subcommand>`: every answer is a returned object whose repr carries it, so it lands in
the cell's `execute_result` `text/plain` (some agent tools read nothing else). Bad input raises
`UsageError` with a one-line reason; `%lsp -h` and `%lsp SUBCOMMAND -h` print help."""

from __future__ import annotations

import argparse
import os
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class

from ipylsp.analysis.report import ShownReport
from ipylsp.ipython.display import TextView, options_for
from ipylsp.ipython.extension import CellChecks
from ipylsp.lsp.requests.completion import COMPLETIONS
from ipylsp.lsp.requests.document_highlight import DOCUMENT_HIGHLIGHT
from ipylsp.lsp.requests.hover import HOVER
from ipylsp.lsp.requests.locations import DEFINITION, REFERENCES
from ipylsp.lsp.requests.signature_help import SIGNATURE_HELP
from ipylsp.lsp.requests.symbols import SYMBOLS

if TYPE_CHECKING:
    from ipylsp.lsp.requests import Feature

FEATURES: dict[str, Feature[None, Any]] = {
    "hover": HOVER,
    "definition": DEFINITION,
    "references": REFERENCES,
    "highlight": DOCUMENT_HIGHLIGHT,
    "completions": COMPLETIONS,
    "symbols": SYMBOLS,
    "signature": SIGNATURE_HELP,
}
"""`%lsp NAME` for each feature it answers, one line each: at PATH:LINE:COL, or of a file
(`takes` "file"); the answer is the feature's own text."""

SEE_LIST = "(see %lsp list)"
FAILURE_TAIL = 10
"""Lines of a failed installer's output shown with its message."""


class _HelpShown(Exception):
    def __init__(self, text: str) -> None:
        self.text = text


class _Formatter(argparse.HelpFormatter):
    """Help lands in a cell's output, not a terminal: one width wherever the kernel runs
    (argparse would wrap to the kernel process's COLUMNS)."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, width=78)


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of exiting the kernel."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}")

    def print_help(self, file: Any = None) -> None:
        raise _HelpShown(self.format_help())

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        raise UsageError(message or "%lsp: invalid arguments")


def _parser() -> _Parser:
    parser = _Parser(prog="%lsp", description="Language servers for this notebook.")
    sub = parser.add_subparsers(dest="command", metavar="SUBCOMMAND", parser_class=_Parser)

    def add(name: str, summary: str) -> _Parser:  # the summary heads `%lsp NAME -h` too
        command: _Parser = sub.add_parser(name, help=summary, description=summary)
        return command

    add("status", "running, starting and broken servers; installed ones")
    listing = add("list", "every server ipylsp knows")
    listing.add_argument("--installed", action="store_true", help="only the installed ones")
    install = add("install", "install servers into ipylsp's data dir")
    install.add_argument("ids", nargs="*", metavar="ID", help="server ids (see %%lsp list)")
    install.add_argument(
        "--all", action="store_true", help="every server with a pip or npm recipe"
    )
    which = add("which", "the command ipylsp runs for a server")
    which.add_argument("id", help="a server id (see %%lsp list)")
    start = add("start", "start the servers for a file now")
    start.add_argument("path", help="a file (it need not exist yet)")
    for name in ("stop", "restart"):
        cmd = add(name, f"{name} servers (all, or one id)")
        cmd.add_argument("id", nargs="?", help="a server id (default: all)")
        cmd.add_argument(
            "--shared", action="store_true",
            help=f"{name} them also when other kernels or agents use them (the broker's)")
    check = add("check", "what a file's text introduced (all, with --all)")
    check.add_argument(
        "path", nargs="?", help="the file (none: the next files a cell wrote beyond "
        "IPyLSP.max_files_per_check)"
    )
    check.add_argument("--before", metavar="FILE", help="the text before the edit")
    check.add_argument("--all", action="store_true", help="every problem, not only new ones")
    check.add_argument(
        "--severity", choices=("error", "warning", "all"), help="default: IPyLSP.severity"
    )
    check_cell = add(
        "check_cell", "what CODE would introduce if it ran now as a cell (nothing runs)"
    )
    check_cell.add_argument(
        "code", nargs="*", help="the code, as written; as a cell magic: the cell's body"
    )
    diagnostics = add("diagnostics", "current diagnostics (changed files checked again)")
    diagnostics.add_argument("path", nargs="?", help="one file (default: all checked)")
    diagnostics.add_argument(
        "--cached", action="store_true",
        help="from the store (any kernel's answers, no server needed); PATH may be a "
        "directory (default: the current one)",
    )
    for name, feature in FEATURES.items():  # one subcommand each, from its `Feature`
        if feature.takes == "file":
            cmd = add(name, f"the {feature.kind} of a file")
            cmd.add_argument("path", help="the file")
        else:
            cmd = add(name, f"{name} at PATH:LINE:COL (1-based)")
            cmd.add_argument(
                "position", metavar="PATH:LINE:COL", help="1-based line and column (characters)"
            )
    add("pending", "problems not yet handed over, then forget them")
    cache = add("cache", "the store of servers' answers: its size, or clear it")
    cache.add_argument("action", choices=("info", "clear"))
    add("on", "check cells and the files they write")
    add("off", "stop checking cells and the files they write")
    return parser


def _this_kernel_once(info: dict[str, Any]) -> dict[str, Any]:
    """A broker's status with this kernel's sessions as one: `client.summary` leaves out the
    asking connection's, and this kernel's own (its checks') is no other client either."""
    own = os.getpid()
    theirs = [row for row in info.get("clients", [])
              if not (isinstance(row, dict) and row.get("pid") == own)]
    return {**info, "clients": [*theirs, {"pid": own}]}


def parse_position(text: str) -> tuple[str, int, int]:
    """`path:line:col` (1-based) -> (path, 0-based line, 0-based column)."""
    parts = text.rsplit(":", 2)
    if len(parts) != 3 or not parts[0]:
        raise UsageError(f"%lsp: expected PATH:LINE:COL, got {text!r}")
    try:
        line, column = int(parts[1]), int(parts[2])
    except ValueError:
        raise UsageError(f"%lsp: LINE and COL must be numbers in {text!r}") from None
    if line < 1 or column < 1:
        raise UsageError(f"%lsp: LINE and COL are 1-based, got {text!r}")
    return parts[0], line - 1, column - 1


@magics_class
class LspMagics(Magics):
    """`%lsp`, and the `CellChecks` it owns (one object to register and to remove, as
    IPython's autoreload does)."""

    def __init__(self, shell: Any) -> None:
        super().__init__(shell)
        self.checks = CellChecks(shell)

    @line_cell_magic
    def lsp(self, line: str, cell: str | None = None) -> Any:
        """Language servers: %lsp status | list | install | which | start | stop | restart |
        check | check_cell | diagnostics | pending | cache | on | off, and the features at
        PATH:LINE:COL (hover, definition, ...; `%lsp -h` lists them), each with -h."""
        parts = line.strip().split(None, 1)  # the code is taken as written, not shell-split
        is_check_cell = bool(parts) and parts[0] == "check_cell"
        rest = parts[1] if len(parts) > 1 else ""
        if is_check_cell and rest.strip() not in ("-h", "--help"):
            return self._preflight_cell(cell if cell is not None else rest)
        if cell is not None and not is_check_cell:
            raise UsageError("%%lsp: only `%%lsp check_cell` takes a cell body")
        try:
            args = _parser().parse_args(shlex.split(line))
        except _HelpShown as shown:
            return TextView(shown.text.rstrip())
        except ValueError as exc:  # shlex: unbalanced quotes
            raise UsageError(f"%lsp: {exc}") from None
        if args.command is None:
            return TextView(_parser().format_help().rstrip())
        feature = FEATURES.get(args.command)
        if feature is not None:
            return self._feature(args.command, feature, args)
        handler = getattr(self, "_" + args.command)
        return handler(args)

    # -- subcommands --------------------------------------------------------------------------

    def _status(self, args: argparse.Namespace) -> TextView:
        status = self.checks.service.servers_status()  # `ipylsp status` prints the same
        settings = self.checks.settings
        writes = "on" if settings.enabled else "off"
        code = "on" if settings.enabled and settings.check_cells else "off"
        from ipylsp.broker.client import running, summary

        broker = running(settings)
        line = "" if broker is None else summary(_this_kernel_once(broker)) + "\n"
        reason = self.checks.in_process_reason
        said = ("" if reason is None
                else f"\nthis kernel's servers run in it, not in the broker: {reason}")
        return TextView(f"{line}{status}\nchecking cell writes: {writes}, cells' code: {code}"
                        f"{said}")

    def _list(self, args: argparse.Namespace) -> TextView:
        return TextView(str(self.checks.service.servers(installed_only=args.installed)))

    def _which(self, args: argparse.Namespace) -> TextView:
        from ipylsp.service import UnknownServer

        try:
            return TextView(self.checks.service.which(args.id).which())
        except UnknownServer as exc:
            raise UsageError(f"%lsp which: {exc} {SEE_LIST}") from None

    def _install(self, args: argparse.Namespace) -> TextView:
        from ipylsp.ipython.progress import InstallLines, plain

        try:
            results = self.checks.service.install(
                args.ids, install_all=args.all, progress=InstallLines()
            )
        except ValueError as exc:  # an unknown id, or none
            raise UsageError(f"%lsp install: {exc} {SEE_LIST}") from None
        lines: list[str] = []
        for result in results:
            if not result.ok:  # the message points at the installer's output: show its tail
                lines.extend(f"  {plain(line)}" for line in result.output[-FAILURE_TAIL:])
            lines.append(result.message)  # names the server already
        return TextView("\n".join(lines))

    def _start(self, args: argparse.Namespace) -> TextView:
        started = self.checks.service.start(args.path)
        return TextView("\n".join(started) or "no server serves this file")

    def _stop(self, args: argparse.Namespace) -> TextView:
        return self._reach("stop", args, "stopped {count} server{s}")

    def _restart(self, args: argparse.Namespace) -> TextView:
        return self._reach("restart", args,
                           "restarted {count} server{s} (they start on next use)")

    def _reach(self, action: str, args: argparse.Namespace, done: str) -> TextView:
        """`stop` or `restart`: on the broker, only servers no other client uses, unless
        `--shared` (README: "Which servers %lsp stop reaches")."""
        from ipylsp.broker.relay import RelayedService, SharedServers

        service = self.checks.service
        shared = " (the broker's, for every client)" if args.shared else ""
        try:
            if isinstance(service, RelayedService):
                count = getattr(service, action)(args.id, shared=args.shared)
            else:
                count = getattr(service, action)(args.id)
                shared = ""
        except SharedServers as exc:
            return TextView(
                f"nothing {'stopped' if action == 'stop' else 'restarted'}: these servers are "
                f"{exc}; `%lsp {action}{' ' + args.id if args.id else ''} --shared` "
                f"{action}s them for all")
        return TextView(done.format(count=count, s="s" if count != 1 else "") + shared)

    def _check(self, args: argparse.Namespace) -> ShownReport:
        if args.path is None:  # the rest of a cell's writes beyond the file cap
            return ShownReport.of(self.checks.service.check_rest(),
                              options_for(self.checks.settings, severity=args.severity),
                              "no files left unchecked")
        before = None
        if args.before is not None:
            try:
                before = Path(args.before).read_bytes().decode("utf-8", "replace")
            except OSError as exc:
                raise UsageError(f"%lsp check: cannot read {args.before}: {exc.strerror}") from None
        if not Path(args.path).exists() and before is None:
            raise UsageError(f"%lsp check: no such file: {args.path}")
        if args.all:
            before = ""
        report = self.checks.service.check(args.path, before=before)
        clean = "no problems" if args.all else "no new problems"  # the words of the request
        return ShownReport.of(report, options_for(self.checks.settings, severity=args.severity),
                          f"{args.path}: {clean}")

    def _check_cell(self, args: argparse.Namespace) -> ShownReport:
        return self._preflight_cell(" ".join(args.code))

    def _preflight_cell(self, code: str) -> ShownReport:
        """The code as written (no shell quoting): a preflight of the cell session."""
        if not code.strip():
            raise UsageError("%lsp check_cell: no code (give it after the word, or use "
                             "%%lsp check_cell with the code as the cell's body)")
        report = self.checks.cells.session.preflight(code)
        return ShownReport.of(report, options_for(self.checks.settings),
                          "the cell: no new problems (nothing was run)")

    def _diagnostics(self, args: argparse.Namespace) -> ShownReport:
        report = self.checks.service.diagnostics(args.path, cached=args.cached)
        if args.cached:
            return ShownReport.of(report, options_for(self.checks.settings), "no stored problems")
        return ShownReport.of(report, options_for(self.checks.settings),
                          "no known problems" if report.files else "nothing checked yet")

    def _feature(self, name: str, feature: Feature[None, Any], args: argparse.Namespace
                 ) -> TextView:
        """A feature at PATH:LINE:COL, or of a file (`takes` "file")."""
        if feature.takes == "file":
            path, line, column = args.path, 0, 0
        else:
            path, line, column = parse_position(args.position)
        if not Path(path).exists():
            raise UsageError(f"%lsp {name}: no such file: {path}")
        result = self.checks.service.feature(feature, path, line, column)
        return TextView(result.format(Path.cwd()))

    def _cache(self, args: argparse.Namespace) -> TextView:
        info = self.checks.service.store_info(clear=args.action == "clear")
        if info.problem:
            return TextView(f"the store cannot be used: {info.problem}")
        from ipylsp.service import STORE_OFF

        if info.path is None:
            return TextView(STORE_OFF)
        return TextView(info.summary(cleared=args.action == "clear"))

    def _pending(self, args: argparse.Namespace) -> ShownReport:
        options = options_for(self.checks.settings, severity="all")
        return self.checks.service.pending(options, again="%lsp pending")

    def _on(self, args: argparse.Namespace) -> TextView:
        self._set_enabled(True)
        return TextView("ipylsp: checking files written by cells")

    def _off(self, args: argparse.Namespace) -> TextView:
        self._set_enabled(False)
        return TextView("ipylsp: not checking files written by cells")

    def _set_enabled(self, value: bool) -> None:
        """What `%config IPyLSP.enabled = value` does: the shell's config remembers it too, so
        a later `%reload_ext` (or unload + load) keeps the last word rather than an older one."""
        from traitlets.config import Config

        change = Config({"IPyLSP": {"enabled": value}})
        if self.shell is not None:
            self.shell.update_config(change)
        self.checks.config.update_config(change)
