"""lsp_check, lsp_check_cell, lsp_diagnostics, lsp_pending, lsp_status: what writes (or a
cell's code) introduced and fixed, what is wrong now, what runs. Reports come as the
`<diagnostics>` text block cells show and as the versioned JSON (`data`), their paths relative
to the agent's workspace root."""

from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

from ipylsp.agent.errors import ToolError
from ipylsp.agent.registry import PATH, SEVERITY, Arguments, tool
from ipylsp.agent.result import ToolResult
from ipylsp.model.diagnostics import Report

if TYPE_CHECKING:
    from ipylsp.agent.toolbox import Toolbox
    from ipylsp.analysis.report import FormatOptions

MORE_HINT = "lsp_pending"


def _options(box: Toolbox, args: Arguments) -> FormatOptions:
    """The settings' options, sized for an answer, with the call's `severity` if it has one."""
    from ipylsp.analysis.report import FormatOptions

    return FormatOptions.from_settings(box.service.settings, severity=args.get("severity"),
                                       max_report_chars=box.max_chars, more_hint=MORE_HINT)


def _in_workspace(box: Toolbox, report: Report) -> Report:
    """The report's files inside the workspace, shown relative to its root."""
    files = tuple(
        dataclasses.replace(f, display_path=box.workspace.shown(f.path))
        for f in report.files
        if box.workspace.contains(f.path)
    )
    return dataclasses.replace(report, files=files, root=box.workspace.root)


def _answer(
    report: Report, options: FormatOptions, empty: str, *, data: FormatOptions | None = None
) -> ToolResult:
    """The text under `options`; the data under `data` (default: the same selection)."""
    from ipylsp.analysis.report import format_text, to_json

    text = format_text(report, options).strip() or empty + _hidden(report, options)
    return ToolResult(ok=True, text=text, data=to_json(report, data or options))


def _hidden(report: Report, options: FormatOptions) -> str:
    """`; 2 warnings not shown (severity="all" shows them)` for an empty answer that the
    severity filter emptied: "no problems" must not hide that there are some."""
    below = Counter(
        d.severity.name.lower() for f in report.files for d in f.diagnostics
        if not options.shows(d.severity)
    )
    if not below:
        return ""
    counts = ", ".join(
        f"{n} {kind}{'s' if n > 1 and kind != 'information' else ''}"
        for kind, n in sorted(below.items())
    )
    return f"; {counts} not shown (severity=\"all\" shows them)"


def _servers(report: Report) -> str:
    names = sorted({s for f in report.files for s in f.servers})
    return f" ({', '.join(names)})" if names else ""


def _require_language(box: Toolbox, path: Path) -> None:
    from ipylsp.service import languages

    if languages.language_id(path) is None:
        raise ToolError(
            "unsupported_language",
            f"no language server reads {box.workspace.shown(path)} (unknown file type)",
        )


@tool(
    "lsp_check",
    "What the file's current text introduced since ipylsp last saw it (or, with `content`, "
    "what that proposed text would introduce: nothing is written), and what it fixed, in "
    "this file and in files it breaks elsewhere. Call it after every edit, or before writing.",
    {
        "path": PATH,
        "content": {
            "type": "string",
            "description": "A proposed full text for the file, checked without being written.",
        },
        "severity": SEVERITY,
    },
    required=("path",),
)
def lsp_check(box: Toolbox, args: Arguments) -> ToolResult:
    content = args.get("content")
    path = box.workspace.resolve(args["path"], must_exist=content is None)
    _require_language(box, path)
    report = _in_workspace(box, box.service.check(path, content=content,
                                                   timeout=box.budget))
    shown = box.workspace.shown(path)
    if content is not None:
        empty = f"proposed content of {shown}: no new problems{_servers(report)}; not written"
        result = _answer(report, _options(box, args), empty)
        if result.text != empty:
            result = dataclasses.replace(result, text=result.text + "\n(proposed content; "
                                         "nothing was written)")
        return result
    return _answer(report, _options(box, args), f"{shown}: no new problems{_servers(report)}")


@tool(
    "lsp_check_cell",
    "What a notebook cell's code would introduce if it ran now, checked against the cells "
    "the kernel already ran (their definitions, imports and the names they bound; outside a "
    "kernel, against nothing but the code). Nothing is run. IPython syntax (magics, !cmd, "
    "obj?) is understood. Problems are located as `cell [ ]` (this code) or `cell [n]` (an "
    "earlier cell it would break).",
    {
        "code": {"type": "string", "description": "The cell's code, as it would be run."},
        "severity": SEVERITY,
    },
    required=("code",),
)
def lsp_check_cell(box: Toolbox, args: Arguments) -> ToolResult:
    from ipylsp.ipython.extension import current_session  # how IPython reads the code

    report = dataclasses.replace(
        current_session(lambda: box.cells).preflight(args["code"], timeout=box.budget),
        root=box.workspace.root
    )
    empty = f"the cell: no new problems{_servers(report)}; nothing was run"
    return _answer(report, _options(box, args), empty)


@tool(
    "lsp_diagnostics",
    "Every current problem of one file, or of every file ipylsp has checked in the "
    "workspace. Files changed on disk since are checked again first. A file no server can "
    "answer for now (missing, broken, starting) gets its stored answers, marked "
    "`cached N min ago` (and `stale` when the file changed since).",
    {
        "path": PATH,
        "severity": SEVERITY,
        "cached": {
            "type": "boolean",
            "description": "Only what the store holds (answers of any kernel or session, no "
            "server started); with `path` a file or a directory, else the whole workspace.",
        },
        "max_per_file": {
            "type": "integer",
            "minimum": 0,
            "description": "Problems listed per file (default: the max_per_file setting, "
            "20); 0: every one. Given, it is the only count cap of the answer's data; its "
            "text is still cut to the answer's size.",
        },
    },
)
def lsp_diagnostics(box: Toolbox, args: Arguments) -> ToolResult:
    service = box.service
    options = _options(box, args)
    data = None
    if "max_per_file" in args:  # an editor's marks: the whole file, not the first 20
        options = dataclasses.replace(options, max_per_file=args["max_per_file"],
                                      max_per_report=0)
        data = dataclasses.replace(options, max_report_chars=0)  # the text alone is cut
    if args.get("cached"):
        where = (box.workspace.resolve(args["path"], must_exist=False) if "path" in args
                 else box.workspace.root)
        report = _in_workspace(box, service.diagnostics(where, cached=True))
        return _answer(report, options, "no stored problems", data=data)
    path: Path | None = None
    if "path" in args:
        path = box.workspace.resolve(args["path"])
        assert path is not None
        _require_language(box, path)
    # stored answers stand in for servers that did not answer
    report = _in_workspace(box, service.diagnostics(path, within=box.workspace.contains))
    empty = "no known problems" if report.files else "nothing checked yet: lsp_check a file"
    return _answer(report, options, empty, data=data)


@tool(
    "lsp_pending",
    "Problems that writes introduced and that have not been handed over yet (from cells, "
    "other tools, or answers that came late); each is handed over once.",
    {},
)
def lsp_pending(box: Toolbox, args: Arguments) -> ToolResult:
    shown = box.service.pending(_options(box, {"severity": "all"}), again="lsp_pending")
    return _answer(_in_workspace(box, shown), shown.options, shown.empty)


@tool(
    "lsp_status",
    "The language servers: which run for which workspace, which are starting or broken, and "
    "which are installed.",
    {},
)
def lsp_status(box: Toolbox, args: Arguments) -> ToolResult:
    view = box.service.servers_status()  # the one status view: this service's own rows
    rows = view.mine()
    lines = [f"workspace: {box.workspace.root}"]
    lines += [
        f"{r.server_id}: {r.state}{f' ({r.detail})' if r.detail and r.detail != r.state else ''}"
        f" for {box.workspace.shown(r.root)}"
        for r in rows
    ] or ["no server runs yet (they start on the first check or query)"]
    installed = list(view.installed)
    lines.append(f"installed: {', '.join(installed) or 'none'}")
    lines.append(f"pending problems: {view.pending}")
    from ipylsp.broker.client import running, summary

    broker = running(box.service.settings)
    if broker is not None:
        lines.append(summary(broker))
    why = box.in_process
    if why is not None:
        lines.append(f"servers run in this process, not in the user's broker: {why}")
    data = {
        "workspace": str(box.workspace.root),
        "servers": [row.to_json() for row in rows],
        "installed": installed,
        "pending": view.pending,
        "broker": broker,
        "in_process": why,
    }
    return ToolResult(ok=True, text="\n".join(lines), data=data)
