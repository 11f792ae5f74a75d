"""notebooks/agent_tools.ipynb on a real kernel (nbclient, the embedded ty + ruff): the scripted
model's exact tool calls, what ipylsp answered each time, and the clean end; and the in-kernel
tool loop of docs/agents.md ("Using ipylsp from an agent") run as written."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import nbformat
import pytest

from ipylsp.agent import TOOLS, call_tool
from tests.real_servers import require
from tests.test_ipython_kernel import REPO, Kernel, kernel_dir_for, seed_workspace

pytestmark = [pytest.mark.real, pytest.mark.timeout(180)]

NOTEBOOK = REPO / "notebooks" / "agent_tools.ipynb"

DRAFT = (
    "import json\n"
    "import sys\n"
    "\n"
    "from inventory import Item, total\n"
    "\n"
    'cart = [Item("pen", 1.5, 4), Item("book", 12.0)]\n'
    "sys.stdout.write(f\"to pay: {total(cart, '0.2')}\\n\")\n"
)
FIXED = (
    "import sys\n"
    "\n"
    "from inventory import Item, total\n"
    "\n"
    'cart = [Item("pen", 1.5, 4), Item("book", 12.0)]\n'
    'sys.stdout.write(f"to pay: {total(cart, 0.2)}\\n")\n'
)
REPORT = (
    '<diagnostics file="checkout.py">\n'
    "ERROR [7:41] Argument to function `total` is incorrect: Expected `float`, found "
    '`Literal["0.2"]` [invalid-argument-type] (ty)\n'
    "WARN [1:8] `json` imported but unused; help: Remove unused import: `json` [F401] (Ruff)\n"
    "</diagnostics>"
)
HOVER = (
    "def total(\n"
    "    items: list[Item],\n"
    "    tax_rate: float\n"
    ") -> float\n"
    "---------------------------------------------\n"
    "The cart's total, tax included."
)
DEFINITION = "inventory.py:11:5: def total(items: list[Item], tax_rate: float) -> float:"
ACTIONS = (
    "1. Ruff (F401): Remove unused import: `json` [ruff] (F401)\n"
    "--- a/checkout.py\n"
    "+++ b/checkout.py\n"
    "@@ -1,4 +1,3 @@\n"
    "-import json\n"
    " import sys\n"
    " \n"
    " from inventory import Item, total\n"
    "2. Ruff (F401): Disable for this line [ruff] (F401)\n"
    "--- a/checkout.py\n"
    "+++ b/checkout.py\n"
    "@@ -1,4 +1,4 @@\n"
    "-import json\n"
    "+import json  # noqa: F401\n"
    " import sys\n"
    " \n"
    " from inventory import Item, total"
)
PREFLIGHT = "fixed 1 error and 1 warning in checkout.py\n(proposed content; nothing was written)"
AT_TOTAL = {"path": "checkout.py", "line": 7, "symbol": "total"}

# (name, arguments, the text the model read), per assistant turn
TURNS: list[list[tuple[str, dict[str, Any], str]]] = [
    [("write_file", {"path": "checkout.py", "content": DRAFT}, "wrote checkout.py (7 lines)"),
     ("lsp_check", {"path": "checkout.py", "severity": "all"}, REPORT)],
    [("lsp_definition", AT_TOTAL, DEFINITION),
     ("lsp_hover", AT_TOTAL, HOVER),
     ("lsp_code_actions", {"path": "checkout.py", "line": 1}, ACTIONS)],
    [("lsp_check", {"path": "checkout.py", "content": FIXED, "severity": "all"}, PREFLIGHT)],
    [("write_file", {"path": "checkout.py", "content": FIXED}, "wrote checkout.py (6 lines)"),
     ("lsp_check", {"path": "checkout.py", "severity": "all"},
      "fixed 1 error and 1 warning in checkout.py")],
    [("lsp_diagnostics", {"path": "checkout.py", "severity": "all"}, "no known problems")],
]

ANSWER = (
    "line 7: `total` (defined at inventory.py:11) takes `tax_rate: float`; I passed '0.2', "
    "now 0.2.\n"
    "line 1: applied Ruff (F401): Remove unused import: `json`.\n"
    "preflight: fixed 1 error and 1 warning in checkout.py\n"
    "checkout.py is written and has no known problems."
)

DUMP = """
import json as _json
print(_json.dumps({"messages": messages, "cwd": os.getcwd(), "workspace": workspace}))
"""


def transcript() -> str:
    """What the notebook's loop prints for TURNS."""

    def shown(arguments: dict[str, Any]) -> str:
        return ", ".join(f"{k}=<{v.count(chr(10))} lines>" if k == "content" else f"{k}={v!r}"
                         for k, v in arguments.items())

    return "".join(
        f"-> {name}({shown(arguments)})\n   " + text.replace("\n", "\n   ") + "\n"
        for turn in TURNS for name, arguments, text in turn
    )


def test_the_scripted_agent_fixes_its_module_through_the_tools(tmp_path: Path) -> None:
    require("ty")
    require("ruff")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    sources = [c.source for c in nb.cells if c.cell_type == "code"]
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")  # committed clean
    ws = seed_workspace(tmp_path)
    with Kernel(kernel_dir_for(tmp_path), ws) as kernel:
        cells = [kernel.run(source) for source in sources]
        dump = kernel.run(DUMP)
    for cell in [*cells, dump]:
        assert cell.error is None, (cell.source, cell.outputs)
    setup, schemas, loop, model, run, answer, ran = cells
    state = json.loads(dump.stdout)

    # it worked in a temporary git worktree of its own, and left nothing where it started
    workspace = Path(state["workspace"])
    assert state["cwd"] == state["workspace"] and (workspace / ".git").is_dir()
    assert not workspace.is_relative_to(REPO) and not workspace.is_relative_to(ws)
    assert sorted(p.name for p in ws.iterdir()) == [".git"]
    assert sorted(p.name for p in workspace.iterdir()) == [".git", "checkout.py", "inventory.py"]
    assert (workspace / "checkout.py").read_text() == FIXED

    assert setup.outputs == [] and loop.outputs == [] and model.outputs == []
    assert schemas.stdout == repr([*TOOLS, "write_file"]) + "\n"

    # the exact calls, turn by turn, in the OpenAI shape; each answered by its own tool message
    messages = state["messages"]
    assert messages[0] == {"role": "user",
                           "content": "Write checkout.py: print what the cart costs with 20% tax."}
    expected: list[dict[str, Any]] = []
    number = 0
    for turn in TURNS:
        calls = []
        for name, arguments, _ in turn:
            number += 1
            calls.append({"id": f"call_{number}", "type": "function",
                          "function": {"name": name, "arguments": json.dumps(arguments)}})
        expected.append({"role": "assistant", "content": None, "tool_calls": calls})
        expected += [{"role": "tool", "tool_call_id": call["id"], "content": text}
                     for call, (_, _, text) in zip(calls, turn, strict=True)]
    expected.append({"role": "assistant", "content": ANSWER})
    assert messages[1:] == expected
    assert run.stdout == transcript()

    assert answer.stdout == f"{ANSWER}\n\n{FIXED}\n"
    assert ran.stdout == "to pay: 21.6\n"


# -- docs/agents.md: "Using ipylsp from an agent" -------------------------------------------


def documented_loop() -> str:
    doc = (REPO / "docs" / "agents.md").read_text(encoding="utf-8")
    return re.findall(r"```python\n(.*?)```", doc, re.S)[0]


class TwoTurns:
    """A model that checks app.py, then says what it read."""

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
                 ) -> dict[str, Any]:
        assert [t["function"]["name"] for t in tools] == list(TOOLS)
        if messages[-1]["role"] != "tool":
            call = {"id": "c1", "type": "function",
                    "function": {"name": "lsp_check", "arguments": '{"path": "app.py"}'}}
            return {"role": "assistant", "content": None, "tool_calls": [call]}
        return {"role": "assistant", "content": f"ipylsp says: {messages[-1]['content']}"}


def test_the_documented_tool_loop_runs_as_written(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    require("ty")
    ws = seed_workspace(tmp_path, {"app.py": "x: int = 1\n"})
    (ws / "app.py").write_text('x: int = "a"\n')
    monkeypatch.chdir(ws)
    namespace: dict[str, Any] = {"model": TwoTurns()}
    exec(compile(documented_loop(), "docs/agents.md", "exec"), namespace)
    report = call_tool("lsp_check", {"path": "app.py"}).text  # nothing new since the loop's
    assert report == "app.py: no new problems (ruff, ty)"
    assert namespace["messages"][-1] == {"role": "assistant", "content": (
        'ipylsp says: <diagnostics file="app.py">\n'
        'ERROR [1:10] Object of type `Literal["a"]` is not assignable to `int` '
        "[invalid-assignment] (ty)\n"
        "</diagnostics>"
    )}
    assert [m["role"] for m in namespace["messages"]] == ["user", "assistant", "tool",
                                                          "assistant"]
