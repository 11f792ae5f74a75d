"""lsp_rename_preview and lsp_code_actions: edits shown as unified diffs and never applied,
so a model sees exactly what would change and writes it itself (or not)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from ipylsp.agent.errors import ToolError
from ipylsp.agent.registry import PATH, POSITION, Arguments, tool
from ipylsp.agent.result import ToolResult
from ipylsp.agent.targets import target
from ipylsp.agent.text import fit
from ipylsp.lsp.requests.code_actions import CODE_ACTIONS
from ipylsp.lsp.requests.rename import RENAME
from ipylsp.model.answers import CodeAction
from ipylsp.model.edits import EditConflict, TextEdit, preview

if TYPE_CHECKING:
    from ipylsp.agent.toolbox import Toolbox


MAX_ACTIONS_SHOWN = 6
"""Actions shown with their diff; the rest are named on one line (ty offers an import from
every module that defines a name)."""


_SILENCING = re.compile(r"\b(ignore|disable|noqa|suppress)\b", re.IGNORECASE)


def _silences(action: CodeAction) -> bool:
    """A comment that hides the problem (`# noqa`, `# pyright: ignore`, `# ty: ignore`), not a
    fix: listed after the fixes."""
    return bool(_SILENCING.search(action.title))


def _diff(box: Toolbox, edits: Iterable[TextEdit]) -> str:
    edits = list(edits)
    paths = list(dict.fromkeys(edit.path for edit in edits))
    texts = {path: box.read(path) for path in paths}
    shown = {path: box.workspace.shown(path) for path in paths}
    try:
        return preview(edits, texts, shown)
    except EditConflict as exc:
        message = f"the server's edits overlap ({exc}); nothing to show"
        raise ToolError("lsp_error", message) from None


def _files(box: Toolbox, edits: Iterable[TextEdit]) -> list[str]:
    return [box.workspace.shown(p) for p in dict.fromkeys(e.path for e in edits)]


@tool(
    "lsp_rename_preview",
    "What renaming the symbol at a place to `new_name` would change in every file, as a "
    "unified diff. Nothing is written. Point at the symbol with `path` + `line` + `symbol` "
    "(or `column`), or a `symbol` name alone.",
    {"new_name": {"type": "string", "minLength": 1, "description": "The new name."}, **POSITION},
    required=("new_name",),
)
def lsp_rename_preview(box: Toolbox, args: Arguments) -> ToolResult:
    at = target(box, args)
    answer = box.feature(RENAME, at.path, at.line, at.column, new_name=args["new_name"])
    edits = answer.answer or ()
    if not edits:
        return ToolResult(ok=True, text="(nothing to rename here)", data={"files": [], "diff": ""})
    diff = _diff(box, edits)
    files = _files(box, edits)
    head = f"renaming changes {len(edits)} places in {len(files)} files (not applied):"
    return ToolResult(
        ok=True,
        text=head + "\n" + fit(diff.splitlines(), box.max_chars - len(head)),
        data={"files": files, "edits": len(edits), "diff": diff,
              "server": answer.server_id},
    )


@tool(
    "lsp_code_actions",
    "The quick fixes the language servers offer for the problems on a line (e.g. remove an "
    "unused import, add a missing import), each with its unified diff. Nothing is applied.",
    {"path": PATH, "line": POSITION["line"]},
    required=("path", "line"),
)
def lsp_code_actions(box: Toolbox, args: Arguments) -> ToolResult:
    path: Path = box.workspace.resolve(args["path"])
    at = target(box, {"path": args["path"], "line": args["line"], "column": 1})
    answer = box.feature(CODE_ACTIONS, path, at.line, 0)
    if not answer.answer:
        return ToolResult(ok=True, text=f"(no quick fixes for line {args['line']})",
                          data={"actions": []})
    blocks: list[str] = []
    data: list[dict[str, object]] = []
    actions = sorted(answer.answer, key=_silences)  # fixes first, then ways to look away
    shown = actions[:MAX_ACTIONS_SHOWN]
    for number, action in enumerate(actions, 1):
        fixes = f" ({', '.join(action.fixes)})" if action.fixes else ""
        title = f"{number}. {action.title} [{action.server_id}]{fixes}"
        diff = _diff(box, action.edits) if action.edits else ""
        data.append({"title": action.title, "server": action.server_id, "kind": action.kind,
                     "fixes": list(action.fixes), "diff": diff, "command": action.command})
        if number > len(shown):
            continue
        if diff:
            blocks.append(title + "\n" + diff.rstrip("\n"))  # a blank context line stays
        else:
            command = f" `{action.command}`" if action.command else ""
            blocks.append(f"{title}: runs the server's command{command}; no preview")
    rest = actions[MAX_ACTIONS_SHOWN:]
    if rest:
        titles = "; ".join(f"{n}. {a.title}" for n, a in enumerate(rest, len(shown) + 1))
        blocks.append(f"... {len(rest)} more: {titles}")
    text = fit([line for block in blocks for line in block.splitlines()], box.max_chars)
    return ToolResult(ok=True, text=text, data={"actions": data})
