"""`ipylsp` on the command line: status, list, which, install, check, mcp.

Exit codes: 0 clean, 1 problems found, 2 failure or unknown results (a timed-out or missing
server is never reported as clean), 141 when the reader closed the pipe (`ipylsp status | head`:
quiet, as other Unix tools end on SIGPIPE).
"""

from __future__ import annotations

import os
import sys

from ipylsp.model.verdict import EXIT_CLEAN, EXIT_FAILURE, EXIT_PROBLEMS

TYPE_CHECKING = False  # `typing.TYPE_CHECKING`, without importing typing (see ipylsp/__init__)
if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence
    from pathlib import Path
    from typing import Any, TextIO, TypeAlias

    from ipylsp.agent.result import ToolCaller
    from ipylsp.broker.client import RelayedTools
    from ipylsp.model.server_spec import ServerSpec
    from ipylsp.model.settings import Settings
    from ipylsp.model.verdict import Verdict
    from ipylsp.service import InstallProgress, InstallResult

EXIT_CLOSED_PIPE = 141
"""128 + SIGPIPE: what a shell shows for a tool that SIGPIPE ended (`yes | head -1`)."""


Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


def _status_arguments(sub: Subparsers) -> None:
    sub.add_parser("status", help="servers running in any process (kernels); installed ones")


def _list_arguments(sub: Subparsers) -> None:
    listing = sub.add_parser(
        "list", help="every server ipylsp knows: its command, or how to install it"
    )
    listing.add_argument("--installed", action="store_true", help="only installed servers")


def _which_arguments(sub: Subparsers) -> None:
    which = sub.add_parser("which", help="the command ipylsp would run for a server")
    which.add_argument("server_id")


def _install_arguments(sub: Subparsers) -> None:
    install = sub.add_parser("install", help="install servers into ipylsp's data dir")
    install.add_argument("server_ids", nargs="*", metavar="ID")
    install.add_argument("--all", action="store_true", help="every server with a recipe")


def _check_arguments(sub: Subparsers) -> None:
    from pathlib import Path

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


def _diagnostics_arguments(sub: Subparsers) -> None:
    from pathlib import Path

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


def _cache_arguments(sub: Subparsers) -> None:
    cache = sub.add_parser("cache", help="the store of servers' answers: info, or clear it")
    cache.add_argument("action", choices=("info", "clear"))


def _broker_arguments(sub: Subparsers) -> None:
    broker = sub.add_parser(
        "broker", help="your broker, which keeps servers warm for the CLI and `ipylsp mcp`")
    broker.add_argument("action", choices=("status", "stop"))


def _mcp_arguments(sub: Subparsers) -> None:
    from pathlib import Path

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


COMMANDS = {
    "status": _status_arguments,
    "list": _list_arguments,
    "which": _which_arguments,
    "install": _install_arguments,
    "check": _check_arguments,
    "diagnostics": _diagnostics_arguments,
    "cache": _cache_arguments,
    "broker": _broker_arguments,
    "mcp": _mcp_arguments,
}
"""Each command, and how its arguments are declared."""


def _parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The command line's parser: with only the command `argv` names when it names one
    (a CLI call an agent makes after each edit does not build ten subparsers), else all."""
    import argparse
    from pathlib import Path

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
    named = _command(argv)
    for name, declare in COMMANDS.items():
        if named is None or name == named:
            declare(sub)
    return parser


def _command(argv: Sequence[str] | None) -> str | None:
    """The command `argv` names (its first word that is not an option or an option's
    value), when it is one of `COMMANDS`."""
    words = list(sys.argv[1:] if argv is None else argv)
    while words:
        word = words.pop(0)
        if word in ("--data-dir", "--config"):
            if words:
                words.pop(0)
        elif not word.startswith("-"):
            return word if word in COMMANDS else None
    return None


def main(argv: Sequence[str] | None = None, *, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    try:
        code = _quick(argv, out)
        if code is None:
            code = _main(argv, out)
        out.flush()  # here, where a closed pipe can still be caught, not at interpreter exit
    except BrokenPipeError:
        _discard_output(out)
        return EXIT_CLOSED_PIPE
    return code


def _quick(argv: Sequence[str] | None, out: TextIO) -> int | None:
    """A plain `check` answered by a running broker (`broker.quick`); None: the full path.
    A broker that took the call's connection and did not say hello is not waited for twice:
    the full path then checks in-process."""
    from ipylsp.broker.quick import check

    try:
        return check(sys.argv[1:] if argv is None else argv, out)
    except BrokenPipeError:
        raise
    except KeyboardInterrupt:
        print("ipylsp: interrupted", file=sys.stderr)
        return EXIT_FAILURE
    except Exception as exc:  # the full path answers, with its own messages
        from ipylsp.broker.client import BrokerSilent

        if not isinstance(exc, BrokerSilent):
            return None
        silent = exc
    print(f"ipylsp: no broker ({silent}); checking in-process", file=sys.stderr)
    return _main(argv, out, broker=False)


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


def _main(argv: Sequence[str] | None, out: TextIO, *, broker: bool = True) -> int:
    """The command `argv` names; `broker` False: `check` runs in-process, saying nothing."""
    args = _parser(argv).parse_args(argv)
    try:
        defaults = args.command == "check" and _defaults_only(args)
        settings = None if defaults else _settings(args)
    except ValueError as exc:  # traitlets validation and unreadable config files
        print(f"ipylsp: bad configuration: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    try:
        if settings is None:  # `check` with the defaults: no settings read
            return _check(None, out, args, broker=broker)
        if args.command == "status":
            return _status(settings, out)
        if args.command == "list":
            return _list(settings, out, installed_only=args.installed)
        if args.command == "which":
            return _which(settings, out, args.server_id)
        if args.command == "install":
            return _install(settings, out, args.server_ids, install_all=args.all)
        if args.command == "check":
            return _check(settings, out, args, broker=broker)
        if args.command == "diagnostics":
            return _stored(settings, out, args)
        if args.command == "cache":
            return _cache(settings, out, args.action)
        if args.command == "mcp":
            return _mcp(settings, args)
        if args.command == "broker":
            return _broker(settings, out, args.action)
    except KeyboardInterrupt:
        print("ipylsp: interrupted", file=sys.stderr)
        return EXIT_FAILURE
    except BrokenPipeError:
        raise
    except Exception as exc:  # exit 1 means "problems found": a crash must not look like that
        print(f"ipylsp: internal error: {exc!r}", file=sys.stderr)
        return EXIT_FAILURE
    return EXIT_FAILURE


def _replace(settings: Settings, **changes: Any) -> Settings:
    """`dataclasses.replace`, imported here: the thin path never needs it."""
    import dataclasses

    return dataclasses.replace(settings, **changes)


def _defaults_only(args: argparse.Namespace) -> bool:
    """No settings file, and no flag that changes settings: the defaults hold. (Jupyter's
    config dirs are kept in the broker's private directory, when there is one.)"""
    from pathlib import Path

    from ipylsp.broker.client import wanted
    from ipylsp.broker.place import place
    from ipylsp.settings_files import config_files

    if args.config is not None or args.data_dir is not None:
        return False
    cache: Path | None = None
    if wanted(None):  # with the broker off, nothing is made for it
        try:
            cache = Path(place(_default_data_dir).directory)
        except OSError:
            cache = None
    return not config_files(cache)


def _default_data_dir() -> Path:
    from ipylsp.service import data_dir

    return data_dir(None)


def _settings(args: argparse.Namespace) -> Settings:
    from ipylsp.settings_files import config_files

    if args.config is None and not config_files():
        from ipylsp.model.settings import Settings

        settings = Settings()  # no file to read: no traitlets to import
    else:
        from ipylsp.config import load_settings

        settings = load_settings(args.config)
    if args.data_dir is not None:
        settings = _replace(settings, data_dir=args.data_dir)
    return settings


def _status(settings: Settings, out: TextIO) -> int:
    """The broker when one runs, then what runs in any process (kernels, the broker's
    services) and what is installed: `%lsp status`'s rendering, made by the broker when one
    runs (asking never starts one), else here."""
    from ipylsp.broker.client import BrokerError, BrokerUnavailable, running_broker, summary

    broker = running_broker(settings)
    if broker is not None:
        try:
            with broker:
                info = broker.status()
                view = broker.call("servers_status", {}, timeout=5.0)
            print(summary(info), file=out)
            print(view, file=out)
            return EXIT_CLEAN
        except (BrokerUnavailable, BrokerError):
            pass
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


def _stored(settings: Settings, out: TextIO, args: argparse.Namespace) -> int:
    """`ipylsp diagnostics [PATH]`: the store's answers; no server starts."""
    from pathlib import Path

    from ipylsp.analysis import report as fmt
    from ipylsp.service import Service

    path = args.path if args.path is not None else Path.cwd()
    if not path.exists():
        print(f"ipylsp diagnostics: no such file or directory: {path}", file=sys.stderr)
        return EXIT_FAILURE
    settings = _replace(settings, severity=args.severity or settings.severity)
    with Service(settings) as service:
        report = service.diagnostics(path, cached=True)
        problem = service.store_info().problem
    if problem:  # configured but unreadable: not "clean"
        print(f"ipylsp diagnostics: the store cannot be read: {problem}", file=sys.stderr)
        return EXIT_FAILURE
    from ipylsp.analysis.report.verdict import rendered, shows_problems

    options = fmt.FormatOptions.from_settings(settings, more_hint="")
    text = rendered(report, options, as_json=args.json)
    if text:
        print(text, file=out)
    return EXIT_PROBLEMS if shows_problems(report, options) else EXIT_CLEAN


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


def _broker(settings: Settings, out: TextIO, action: str) -> int:
    """`ipylsp broker status|stop`: never starts one."""
    from ipylsp.broker.client import Broker, BrokerError, BrokerUnavailable

    try:
        with Broker.attach(settings, budget=5.0, start=False) as broker:
            if action == "stop":
                broker.stop()
                print(f"broker {broker.pid} stopped", file=out)
                return EXIT_CLEAN
            import json

            print(json.dumps(broker.status(), indent=2), file=out)
    except (BrokerUnavailable, BrokerError) as exc:
        print(f"ipylsp broker: no broker runs ({exc})", file=out)
    return EXIT_CLEAN


def _check(settings: Settings | None, out: TextIO, args: argparse.Namespace, *,
           broker: bool = True) -> int:
    """`ipylsp check`: `settings` None when no settings file nor flag says anything (the thin
    path: the broker's defaults; no traitlets, no model imported here)."""
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
    if args.servers:
        settings = _chosen_servers(settings or _defaults(), args)
        if settings is None:
            return EXIT_FAILURE
    # Without --before the CLI reports everything a file has: its baseline is empty.
    # `FileCheck`'s wire form (`model/wire.py`; tests/test_broker.py holds them equal).
    files = [{"path": str(p.resolve()), "before": before if before is not None else ""}
             for p in args.paths]
    from ipylsp.broker.client import wanted

    verdict = None
    if broker and wanted(settings):
        verdict = _broker_verdict(settings, files, args)
    if verdict is None:
        verdict = _in_process_verdict(settings or _defaults(), files, args)
    if verdict.stdout:
        print(verdict.stdout, file=out)
    for line in verdict.stderr:
        print(line, file=sys.stderr)
    return verdict.exit


def _defaults() -> Settings:
    from ipylsp.model.settings import Settings

    return Settings()


def _chosen_servers(settings: Settings, args: argparse.Namespace) -> Settings | None:
    """`--server ID` for the files' languages; None (said on stderr) for an unknown id."""
    from ipylsp.service import languages, registry

    unknown = [s for s in args.servers
               if registry.get(s) is None and s not in {x.id for x in settings.extra_specs}]
    if unknown:
        print(f"ipylsp check: unknown server(s): {', '.join(unknown)}", file=sys.stderr)
        return None
    chosen = dict(settings.language_servers)
    for path in args.paths:
        language = languages.language_id(path)
        if language is not None:
            chosen[language] = tuple(args.servers)
    return _replace(settings, language_servers=chosen)


def _broker_verdict(settings: Settings | None, files: list[dict[str, Any]],
                    args: argparse.Namespace) -> Verdict | None:
    """The broker's verdict (started if need be); None, said once on stderr, when there is
    no broker to be had: the caller checks in-process."""
    from ipylsp.broker.client import Broker, BrokerError, BrokerLate, BrokerUnavailable

    try:
        with Broker.attach(settings, budget=args.timeout) as broker:
            return broker.check(files, timeout=args.timeout, severity=args.severity,
                                as_json=args.json, more_hint=CLI_MORE_HINT)
    except BrokerLate as exc:  # its budget is spent: not a second one in-process
        return exc.verdict()
    except (BrokerUnavailable, BrokerError) as exc:
        print(f"ipylsp: no broker ({exc}); checking in-process", file=sys.stderr)
        return None


def _in_process_verdict(settings: Settings, files: list[dict[str, Any]],
                        args: argparse.Namespace) -> Verdict:
    from ipylsp.analysis import report as fmt
    from ipylsp.analysis.report.verdict import verdict
    from ipylsp.model.checks import FileCheck
    from ipylsp.model.wire import from_wire
    from ipylsp.service import Service

    checks = from_wire(list[FileCheck], files)
    with Service(settings) as service:
        report = service.check_files(checks, timeout=args.timeout)
    shown = _replace(settings, severity=args.severity or settings.severity)
    options = fmt.FormatOptions.from_settings(shown, more_hint=CLI_MORE_HINT)
    return verdict(report, [f.path for f in checks], options, as_json=args.json)


def _mcp(settings: Settings, args: argparse.Namespace) -> int:
    """`ipylsp mcp`: stdout carries protocol messages only; everything else goes to stderr."""
    import logging
    from pathlib import Path

    root = (args.root or Path.cwd()).expanduser().resolve()
    if not root.is_dir():
        print(f"ipylsp mcp: --root {args.root} is not a directory", file=sys.stderr)
        return EXIT_FAILURE
    if args.timeout is not None:
        settings = _replace(settings, wait_budget=args.timeout)
    if args.max_chars is not None:
        settings = _replace(settings, max_answer_chars=args.max_chars)
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING,
                        format="ipylsp mcp: %(levelname)s %(name)s: %(message)s")
    from ipylsp.agent.mcp_server import SdkMissing, run_stdio

    tools = _relayed_tools(_replace(settings, directory=root), root)
    try:
        return run_stdio(root, settings, tools)
    except SdkMissing as exc:
        print(exc, file=sys.stderr)
        return EXIT_FAILURE


def _relayed_tools(settings: Settings, root: Path) -> RelayedTools | None:
    """The broker's tools for `root` (the broker started if need be); None, said once on
    stderr, when there is no broker to be had: the tools run in this process."""
    from ipylsp.broker.client import (
        ANSWER_MARGIN,
        START_BUDGET,
        Broker,
        BrokerError,
        BrokerUnavailable,
        RelayedTools,
        wanted,
    )

    if not wanted(settings):
        return None
    try:
        broker = Broker.attach(settings, budget=START_BUDGET, cells_dir=root, ledger=True)
    except (BrokerUnavailable, BrokerError) as exc:
        print(f"ipylsp mcp: no broker ({exc}); serving in-process", file=sys.stderr)
        return None

    def local() -> ToolCaller:
        """This process's tools, owing what the broker's session owed (its ledger's copy)."""
        from ipylsp.agent.toolbox import Toolbox
        from ipylsp.service import Service

        service = Service(settings, cells_dir=root, pending=broker.release_ledger())
        return Toolbox(service, root)  # closed at exit (cleanup)

    return RelayedTools(broker, root, max_chars=settings.max_answer_chars,
                        timeout=settings.wait_budget + ANSWER_MARGIN, local=local)


if __name__ == "__main__":
    sys.exit(main())
