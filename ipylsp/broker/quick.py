"""`ipylsp check` in a few milliseconds of its own: the call a coding agent's post-edit hook
makes after each edit, answered by a broker that already runs.

`check(argv)` takes the plain forms only (paths, `--json`, `--severity LEVEL`, `--timeout S`,
`--before OLD`), with no settings file in Jupyter's config dirs (known from the broker's
directory) and a broker of this build running in the private runtime directory; anything else
(help, an unknown flag, a missing file, settings, no broker yet) is None, and the caller takes
the full path, with its parser, its messages and its starting of a broker. What it prints and
its exit code are the broker's `Verdict`, the same as the full path's.

Imports no `argparse`, `pathlib`, `typing` or `dataclasses`, nothing of the service or the
model but `Verdict`: each costs every call.
"""

from __future__ import annotations

import os
import sys

from ipylsp.broker import place
from ipylsp.settings_files import known_none

TYPE_CHECKING = False  # `typing.TYPE_CHECKING`, without importing typing (see ipylsp/__init__)
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any, TextIO

SEVERITIES = ("error", "warning", "all")
DEFAULT_TIMEOUT = 30.0
"""`ipylsp check --timeout`'s default (cli.py declares it too; tests/test_quick_check.py holds them
equal)."""
MORE_HINT = "check fewer files at a time"
"""`cli.CLI_MORE_HINT` (tests/test_quick_check.py holds them equal)."""


def _plain(argv: Sequence[str]) -> dict[str, Any] | None:
    """The arguments of a plain `check` command line; None for anything else."""
    if not argv or argv[0] != "check":
        return None
    found: dict[str, Any] = {"paths": [], "json": False, "severity": None,
                             "timeout": DEFAULT_TIMEOUT, "before": None}
    words = list(argv[1:])
    while words:
        word = words.pop(0)
        if word == "--json":
            found["json"] = True
        elif word in ("--severity", "--timeout", "--before") and words:
            value = words.pop(0)
            if word == "--severity":
                if value not in SEVERITIES:
                    return None
                found["severity"] = value
            elif word == "--timeout":
                try:
                    found["timeout"] = float(value)
                except ValueError:
                    return None
            else:
                found["before"] = value
        elif word.startswith("-") or not word:
            return None  # help, --server, `--`, --flag=value: the parser's
        else:
            found["paths"].append(word)
    return found if found["paths"] else None


def check(argv: Sequence[str], out: TextIO) -> int | None:
    """The exit code of a plain `ipylsp check` answered by a running broker, its output
    printed; None when the full path must answer (see the module doc)."""
    if place.switched_off():
        return None
    args = _plain(argv)
    if args is None:
        return None
    where = place.existing(place.default_data)
    if where is None or not known_none(where.directory):
        return None
    paths: list[str] = args["paths"]
    before = None
    if args["before"] is not None:
        if len(paths) != 1:
            return None
        try:
            with open(args["before"], "rb") as old:
                before = old.read().decode("utf-8", "replace")
        except OSError:
            return None
    elif not all(os.path.exists(p) for p in paths):
        return None
    from ipylsp.broker.client import (
        Broker,
        BrokerError,
        BrokerLate,
        BrokerSilent,
        BrokerUnavailable,
    )

    # `FileCheck`'s wire form, as cli.py builds it.
    files = [{"path": os.path.realpath(p), "before": before if before is not None else ""}
             for p in paths]
    try:
        with Broker.attach(None, budget=args["timeout"], start=False, where=where) as broker:
            verdict = broker.check(files, timeout=args["timeout"], severity=args["severity"],
                                   as_json=args["json"], more_hint=MORE_HINT)
    except BrokerLate as exc:  # its budget is spent: not a second one on the full path
        verdict = exc.verdict()
    except BrokerSilent:  # the full path would wait for it again: the caller says so
        raise
    except (BrokerUnavailable, BrokerError):
        return None
    if verdict.stdout:
        print(verdict.stdout, file=out)
    for line in verdict.stderr:
        print(line, file=sys.stderr)
    return verdict.exit
