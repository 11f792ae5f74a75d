# shellcheck shell=bash
# Sourced by scripts/bootstrap and scripts/test: the venv beside Jupyter AI, where the tests
# marked mcp_sdk run on the MCP SDK's 1.x line (as Jupyter AI 3.x pins it) and
# tests/beside_jupyter_ai.py calls ipylsp's tools through jupyter-server-mcp, as Jupyter AI does.
# shellcheck disable=SC2034  # read by the scripts that source this file
JUPYTER_AI_VENV=.venv-jupyter-ai
JUPYTER_AI_REQUIREMENTS="jupyter-ai>=3.2,<4 mcp<2"

# jupyter_ai_venv_ok: status 0 when the venv has Jupyter AI, jupyter-server-mcp and the MCP SDK's
# 1.x line beside ipylsp; otherwise what is wrong, with the fix, on stderr.
jupyter_ai_venv_ok() {
  if [ ! -x "$JUPYTER_AI_VENV/bin/python" ]; then
    echo "$JUPYTER_AI_VENV is missing (the MCP tests beside Jupyter AI run there): run scripts/bootstrap" >&2
    return 1
  fi
  "$JUPYTER_AI_VENV/bin/python" - <<'PYCHECK' && return 0
import sys
from importlib.metadata import PackageNotFoundError, version
found = {}
for name in ("jupyter-ai", "jupyter-server-mcp", "mcp", "ipylsp"):
    try:
        found[name] = version(name)
    except PackageNotFoundError:
        sys.exit(f"{name} is not installed there")
if not found["mcp"].startswith("1."):
    sys.exit(f"its MCP SDK is {found['mcp']}, not the 1.x line")
PYCHECK
  echo "$JUPYTER_AI_VENV is not Jupyter AI beside ipylsp on the MCP SDK's 1.x line (above):" \
    "remove it and run scripts/bootstrap" >&2
  return 1
}
