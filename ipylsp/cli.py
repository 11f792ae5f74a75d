"""`ipylsp` on the command line: status, list, which, install, check, mcp.

Exit codes: 0 clean, 1 problems found, 2 failure or unknown results (a timed-out or missing
server is never reported as clean), 141 when the reader closed the pipe (`ipylsp status | head`:
quiet, as other Unix tools end on SIGPIPE).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from ipylsp.model.settings import Settings

if TYPE_CHECKING:
    from ipylsp.analysis.report import FormatOptions
    from ipylsp.model.diagnostics import Report
    from ipylsp.model.server_spec import ServerSpec
    from ipylsp.servers.installers import InstallResult
    from ipylsp.service import InstallProgress

EXIT_CLEAN, EXIT_PROBLEMS, EXIT_FAILURE = 0, 1, 2
EXIT_CLOSED_PIPE = 141
"""128 + SIGPIPE: what a shell shows for a tool that SIGPIPE ended (`yes | head -1`)."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ipylsp", description="Real language servers for notebooks and agents."
    )
    parser.add_argument(
        "--data-dir", type=Path, help="where ipylsp installs servers (default: user data dir)"
    )
    parser.add_argument(
        "--config", type=Path, metavar="FILE",
        help="an IPyLSP config file (.py or .json), read after the ipylsp_config.py/.json "
        "of the Jupyter config dirs",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    sub.add_parser("status", help="servers running in any process (kernels); installed ones")

    listing = sub.add_parser(
        "list", help="every server ipylsp knows: its command, or how to install it"
    )
    listing.add_argument("--installed", action="store_true", help="only installed servers")

    which = sub.add_parser("which", help="the command ipylsp would run for a server")
    which.add_argument("server_id")

    install = sub.add_parser("install", help="install servers into ipylsp's data dir")
    install.add_argument("server_ids", nargs="*", metavar="ID")
    install.add_argument("--all", action="store_true", help="every server with a recipe")

    check = sub.add_parser("check", help="diagnostics for files (exit 1 when problems found)")
    check.add_argument("paths", nargs="+", type=Path, metavar="PATH")
    check.add_argument("--json", action="store_true", help="the ipylsp.diagnostics/2 schema")
    check.add_argument(
        "--severity", choices=("error", "warning", "all"),
        help="lowest severity shown (default: IPyLSP.severity, error)",
    )
    check.add_argument(
        "--server", action="append", metavar="ID", dest="servers",
        help="use this server for the files (repeatable; default: IPyLSP.language_servers)",
    )
    check.add_argument("--timeout", type=float, default=30.0, help="seconds to wait (30)")
    check.add_argument(
        "--before", type=Path, metavar="OLD_FILE",
        help="the file's text before the edit: report only what the edit introduced",
    )

    stored = sub.add_parser(
        "diagnostics",
        help="what the store holds for files, with no server running (exit 1 when errors)",
    )
    stored.add_argument(
        "path", nargs="?", type=Path, default=None, metavar="PATH",
        help="a file, or a directory for every stored file under it (default: the current one)",
    )
    stored.add_argument("--json", action="store_true", help="the ipylsp.diagnostics/2 schema")
    stored.add_argument(
        "--severity", choices=("error", "warning", "all"),
        help="lowest severity shown (default: IPyLSP.severity, error)",
    )

    cache = sub.add_parser("cache", help="the store of servers' answers: info, or clear it")
    cache.add_argument("action", choices=("info", "clear"))

    mcp = sub.add_parser("mcp", help="serve the agent tools over MCP (stdio)")
    mcp.add_argument(
        "--root", type=Path, default=None, metavar="DIR",
        help="the agent's workspace: tools see only files under it (default: the current "
        "directory)",
    )
    mcp.add_argument(
        "--timeout", type=float, default=None, metavar="SECONDS",
        help="seconds one check may wait for its servers (default: IPyLSP.wait_budget, 10)",
    )
    mcp.add_argument(
        "--max-chars", type=int, default=None, metavar="N",
        help="characters of one answer (default: IPyLSP.max_answer_chars, 4000; 0: no limit)",
    )
    return parser


def main(argv: Sequence[str] | None = None, *, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    try:
        code = _main(argv, out)
        out.flush()  # here, where a closed pipe can still be caught, not at interpreter exit
    except BrokenPipeError:
        _discard_output(out)
        return EXIT_CLOSED_PIPE
    return code


def _discard_output(out: TextIO) -> None:
    """The reader went away: what is still buffered for it goes to /dev/null, so that the
    interpreter's last flush does not complain on stderr ("Exception ignored ...")."""
    try:
        fd = out.fileno()
    except (OSError, ValueError):  # not a real file (a test's StringIO)
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


def _main(argv: Sequence[str] | None, out: TextIO) -> int:
    args = _parser().parse_args(argv)
    try:
        settings = _settings(args)
    except ValueError as exc:  # traitlets validation and unreadable config files
        print(f"ipylsp: bad configuration: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    try:
        if args.command == "status":
            return _status(settings, out)
        if args.command == "list":
            return _list(settings, out, installed_only=args.installed)
        if args.command == "which":
            return _which(settings, out, args.server_id)
        if args.command == "install":
            return _install(settings, out, args.server_ids, install_all=args.all)
        if args.command == "check":
            return _check(settings, out, args)
        if args.command == "diagnostics":
            return _stored(settings, out, args)
        if args.command == "cache":
            return _cache(settings, out, args.action)
        if args.command == "mcp":
            return _mcp(settings, args)
    except KeyboardInterrupt:
        print("ipylsp: interrupted", file=sys.stderr)
        return EXIT_FAILURE
    except BrokenPipeError:
        raise
    except Exception as exc:  # exit 1 means "problems found": a crash must not look like that
        print(f"ipylsp: internal error: {exc!r}", file=sys.stderr)
        return EXIT_FAILURE
    return EXIT_FAILURE


def _settings(args: argparse.Namespace) -> Settings:
    from ipylsp.config import load_settings

    settings = load_settings(args.config)
    if args.data_dir is not None:
        settings = dataclasses.replace(settings, data_dir=args.data_dir)
    return settings


def _status(settings: Settings, out: TextIO) -> int:
    """What runs in any process (kernels), then what is installed: `%lsp status`'s rendering."""
    from ipylsp.service import Service

    with Service(settings) as service:
        print(service.servers_status(), file=out)
    return EXIT_CLEAN


def _list(settings: Settings, out: TextIO, *, installed_only: bool) -> int:
    from ipylsp.service import Service

    with Service(settings) as service:
        print(service.servers(installed_only=installed_only), file=out)
    return EXIT_CLEAN


SEE_LIST = "(see 'ipylsp list')"


def _which(settings: Settings, out: TextIO, server_id: str) -> int:
    from ipylsp.service import Service, UnknownServer

    with Service(settings) as service:
        try:
            row = service.which(server_id)
        except UnknownServer as exc:
            print(f"ipylsp: {exc} {SEE_LIST}", file=sys.stderr)
            return EXIT_FAILURE
    print(row.which(), file=out)
    return EXIT_CLEAN if row.installed else EXIT_FAILURE


def _install(settings: Settings, out: TextIO, server_ids: list[str], *, install_all: bool) -> int:
    from ipylsp.service import Service

    with Service(settings) as service:
        try:
            results = service.install(
                server_ids, install_all=install_all, progress=_install_printer(out)
            )
        except ValueError as exc:  # an unknown id, or none
            print(f"ipylsp install: {exc} {SEE_LIST}", file=sys.stderr)
            return EXIT_FAILURE
    return EXIT_CLEAN if all(r.ok for r in results) else EXIT_FAILURE


def _install_printer(out: TextIO) -> InstallProgress:
    """Each install as lines: `installing ID ...`, the installer's output (one status line
    rewritten in place on a terminal, plain lines elsewhere), then its outcome."""
    from ipylsp.service import InstallProgress

    tty = out.isatty()

    class Printer(InstallProgress):
        def started(self, spec: ServerSpec) -> None:
            print(f"installing {spec.id} ...", file=out, flush=True)

        def output(self, server_id: str, line: str) -> None:
            line = line.rstrip()
            if not line:
                return
            out.write("\r\x1b[K  " + line[:100] if tty else "  " + line + "\n")
            out.flush()

        def finished(self, result: InstallResult) -> None:
            if tty:
                out.write("\r\x1b[K")
            outcome = "installed" if result.ok else f"FAILED: {result.message}"
            print(f"{result.server_id}: {outcome}", file=out, flush=True)

    return Printer()


CLI_MORE_HINT = "check fewer files at a time"
"""How a cut text report gets the rest from the CLI (the notebook says `%lsp pending`)."""


def _print_report(report: Report, options: FormatOptions, out: TextIO, *, as_json: bool) -> None:
    """A report as `--json` (schema ipylsp.diagnostics/2) or as its text block (none: clean)."""
    from ipylsp.analysis import report as fmt

    if as_json:
        print(json.dumps(fmt.to_json(report, options), indent=2, ensure_ascii=False), file=out)
        return
    text = fmt.format_text(report, options)
    if text:
        print(text, file=out)


def _stored(settings: Settings, out: TextIO, args: argparse.Namespace) -> int:
    """`ipylsp diagnostics [PATH]`: the store's answers; no server starts."""
    from ipylsp.analysis import report as fmt
    from ipylsp.service import Service

    path = args.path if args.path is not None else Path.cwd()
    if not path.exists():
        print(f"ipylsp diagnostics: no such file or directory: {path}", file=sys.stderr)
        return EXIT_FAILURE
    settings = dataclasses.replace(settings, severity=args.severity or settings.severity)
    with Service(settings) as service:
        report = service.diagnostics(path, cached=True)
        problem = service.store_info().problem
    if problem:  # configured but unreadable: not "clean"
        print(f"ipylsp diagnostics: the store cannot be read: {problem}", file=sys.stderr)
        return EXIT_FAILURE
    options = fmt.FormatOptions.from_settings(settings, more_hint="")
    _print_report(report, options, out, as_json=args.json)
    views = fmt.select(report, options)
    return EXIT_PROBLEMS if any(v.shown or v.omitted for v in views) else EXIT_CLEAN


def _cache(settings: Settings, out: TextIO, action: str) -> int:
    """`ipylsp cache info|clear`."""
    from ipylsp.service import STORE_OFF, Service

    with Service(settings) as service:
        info = service.store_info(clear=action == "clear")
    if info.problem:
        print(f"ipylsp cache: the store cannot be used: {info.problem}", file=sys.stderr)
        return EXIT_FAILURE
    if info.path is None:
        print(f"ipylsp: {STORE_OFF}", file=out)
        return EXIT_CLEAN
    print(info.summary(cleared=action == "clear"), file=out)
    return EXIT_CLEAN


def _check(settings: Settings, out: TextIO, args: argparse.Namespace) -> int:
    from ipylsp.analysis import report as fmt
    from ipylsp.model.checks import FileCheck
    from ipylsp.service import Service

    before: str | None = None
    if args.before is not None:
        if len(args.paths) != 1:
            print("ipylsp check: --before takes exactly one PATH", file=sys.stderr)
            return EXIT_FAILURE
        try:
            before = args.before.read_bytes().decode("utf-8", "replace")
        except OSError as exc:
            print(f"ipylsp check: cannot read {args.before}: {exc.strerror}", file=sys.stderr)
            return EXIT_FAILURE
    missing = [p for p in args.paths if not p.exists()]
    if missing and before is None:
        print(f"ipylsp check: no such file: {', '.join(map(str, missing))}", file=sys.stderr)
        return EXIT_FAILURE
    severity = args.severity or settings.severity
    settings = dataclasses.replace(settings, severity=severity)
    if args.servers:
        from ipylsp.servers import languages, registry

        unknown = [s for s in args.servers
                   if registry.get(s) is None and s not in {x.id for x in settings.extra_specs}]
        if unknown:
            print(f"ipylsp check: unknown server(s): {', '.join(unknown)}", file=sys.stderr)
            return EXIT_FAILURE
        chosen = dict(settings.language_servers)
        for path in args.paths:
            language = languages.language_id(path)
            if language is not None:
                chosen[language] = tuple(args.servers)
        settings = dataclasses.replace(settings, language_servers=chosen)
    with Service(settings) as service:
        # Without --before the CLI reports everything a file has: its baseline is empty.
        files = [FileCheck(p.resolve(), before=before if before is not None else "")
                 for p in args.paths]
        report = service.check_files(files, timeout=args.timeout)
    options = fmt.FormatOptions.from_settings(settings, more_hint=CLI_MORE_HINT)
    _print_report(report, options, out, as_json=args.json)
    unchecked = [f.display_path for f in report.files if not f.servers and not f.diagnostics]
    if unchecked:  # nothing could check these: that is not "clean"
        print(f"ipylsp check: no language server for {', '.join(unchecked)}", file=sys.stderr)
        return EXIT_FAILURE
    reported = {f.path for f in report.files}
    if report.has_unknown or any(f.path not in reported for f in files):
        return EXIT_FAILURE  # a file not checked at all (a FIFO, too large): a note says why
    views = fmt.select(report, options)
    return EXIT_PROBLEMS if any(v.shown or v.omitted for v in views) else EXIT_CLEAN


def _mcp(settings: Settings, args: argparse.Namespace) -> int:
    """`ipylsp mcp`: stdout carries protocol messages only; everything else goes to stderr."""
    import logging

    root = (args.root or Path.cwd()).expanduser().resolve()
    if not root.is_dir():
        print(f"ipylsp mcp: --root {args.root} is not a directory", file=sys.stderr)
        return EXIT_FAILURE
    if args.timeout is not None:
        settings = dataclasses.replace(settings, wait_budget=args.timeout)
    if args.max_chars is not None:
        settings = dataclasses.replace(settings, max_answer_chars=args.max_chars)
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING,
                        format="ipylsp mcp: %(levelname)s %(name)s: %(message)s")
    from ipylsp.agent.mcp_server import SdkMissing, run_stdio

    try:
        return run_stdio(root, settings)
    except SdkMissing as exc:
        print(exc, file=sys.stderr)
        return EXIT_FAILURE


if __name__ == "__main__":
    sys.exit(main())
