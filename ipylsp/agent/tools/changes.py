"""How rename and quick fixes read for a model (lsp_rename_preview, lsp_code_actions, made in
`features`): edits shown as unified diffs and never applied, so a model sees exactly what
would change and writes it itself (or not)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ipylsp.agent.errors import ToolError
from ipylsp.agent.targets import Target
from ipylsp.agent.text import fit
from ipylsp.model.answers import CodeAction
from ipylsp.model.edits import EditConflict, TextEdit, preview

if TYPE_CHECKING:
    from ipylsp.agent.toolbox import Toolbox
    from ipylsp.lsp.requests import FeatureResult


MAX_ACTIONS_SHOWN = 6
"""Actions shown with their diff; the rest are named on one line (ty offers an import from
every module that defines a name)."""


_SILENCING = re.compile(r"\b(ignore|disable|noqa|suppress)\b", re.IGNORECASE)


def _silences(action: CodeAction) -> bool:
    """A comment that hides the problem (`# noqa`, `# pyright: ignore`, `# ty: ignore`), not a
    fix: listed after the fixes."""
    return bool(_SILENCING.search(action.title))


def _diff(box: Toolbox, at: Target, edits: Iterable[TextEdit]) -> str:
    """The edits as a unified diff (the queried file's text as it was asked about, the
    others read)."""
    edits = list(edits)
    paths = list(dict.fromkeys(edit.path for edit in edits))
    texts = {path: at.text if path == at.path else box.read(path) for path in paths}
    shown = {path: box.workspace.shown(path) for path in paths}
    try:
        return preview(edits, texts, shown)
    except EditConflict as exc:
        message = f"the server's edits overlap ({exc}); nothing to show"
        raise ToolError("lsp_error", message) from None


def _files(box: Toolbox, edits: Iterable[TextEdit]) -> list[str]:
    return [box.workspace.shown(p) for p in dict.fromkeys(e.path for e in edits)]


def rename_diff(
    box: Toolbox, at: Target, answer: FeatureResult[tuple[TextEdit, ...]]
) -> tuple[str, dict[str, object]]:
    """The rename as one unified diff of every file it changes."""
    edits = answer.answer or ()
    if not edits:
        return "", {"files": [], "diff": ""}
    diff = _diff(box, at, edits)
    files = _files(box, edits)
    head = f"renaming changes {len(edits)} places in {len(files)} files (not applied):"
    return head + "\n" + fit(diff.splitlines(), box.max_chars - len(head)), {
        "files": files, "edits": len(edits), "diff": diff, "server": answer.server_id,
    }


def quick_fixes(
    box: Toolbox, at: Target, answer: FeatureResult[tuple[CodeAction, ...]]
) -> tuple[str, dict[str, object]]:
    """Each fix with its diff (fixes first, then ways to look away), the rest named."""
    if not answer.answer:
        return "", {"actions": []}
    blocks: list[str] = []
    data: list[dict[str, object]] = []
    actions = sorted(answer.answer, key=_silences)  # fixes first, then ways to look away
    shown = actions[:MAX_ACTIONS_SHOWN]
    for number, action in enumerate(actions, 1):
        fixes = f" ({', '.join(action.fixes)})" if action.fixes else ""
        title = f"{number}. {action.title} [{action.server_id}]{fixes}"
        diff = _diff(box, at, action.edits) if action.edits else ""
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
    return fit([line for block in blocks for line in block.splitlines()], box.max_chars), {
        "actions": data,
    }
