"""The Jupyter server extension's routes on a real jupyter_server (pytest-jupyter) with real
ty + ruff: every route answers with a token and refuses without one, paths stay inside the
server's root, and a check through HTTP equals the same check in process."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tornado.httpclient import HTTPClientError

from ipylsp.analysis.report import FormatOptions, to_json
from ipylsp.model.settings import Settings
from ipylsp.server.handlers import NO_TOKEN
from ipylsp.service.service import Service
from tests.real_servers import DATA_DIR, require

pytestmark = pytest.mark.real

pytest_plugins = ("pytest_jupyter.jupyter_server",)

BROKEN = "def total(xs: list[int]) -> int:\n    return sum(xs)\n\ntotal('abc')\nprint(totl)\n"

ROUTES = [
    ("GET", "status", None),
    ("POST", "check", {"path": "app.py"}),
    ("GET", "diagnostics", None),
    ("GET", "pending", None),
    ("GET", "tools", None),
    ("POST", "tools/lsp_status", {}),
]


@pytest.fixture
def jp_server_config(
    jp_root_dir: Path, jp_environ: None, monkeypatch: pytest.MonkeyPatch
) -> dict[str, Any]:
    # pytest-jupyter sets PYTHONPATH to this process's sys.path, the stdlib's source directory
    # included; ty then reads `typing.py` instead of its stubs and calls `list[int]` an error.
    # A kernel started by Jupyter has no such PYTHONPATH.
    monkeypatch.delenv("PYTHONPATH", raising=False)
    require("ty")
    require("ruff")
    subprocess.run(["git", "init", "-q", str(jp_root_dir)], check=True)
    return {
        "ServerApp": {"jpserver_extensions": {"ipylsp.server": True}},
        "IPyLSP": {"language_servers": {"python": ["ty", "ruff"]}, "data_dir": str(DATA_DIR)},
    }


@pytest.fixture
def app_py(jp_root_dir: Path) -> Path:
    path = jp_root_dir / "app.py"
    path.write_text(BROKEN, encoding="utf-8")
    return path


@pytest.fixture
def stop_state() -> Iterator[None]:
    yield
    from ipylsp.server import state

    state.stop()  # the server app's stop_extension runs at teardown too; stop() is idempotent


async def call(jp_fetch: Any, method: str, route: str, body: object = None, **params: str
               ) -> tuple[int, Any]:
    try:
        response = await jp_fetch(
            "ipylsp", "api", *route.split("/"), method=method, params=params or None,
            body=None if method == "GET" else json.dumps(body or {}),
        )
    except HTTPClientError as error:
        assert error.response is not None
        return error.code, json.loads(error.response.body)
    return response.code, json.loads(response.body)


@pytest.mark.parametrize(("method", "route", "body"), ROUTES, ids=[r[1] for r in ROUTES])
async def test_every_route_needs_the_token(
    jp_fetch: Any, jp_http_port: int, jp_base_url: str, app_py: Path, stop_state: None,
    method: str, route: str, body: object,
) -> None:
    from tornado.httpclient import AsyncHTTPClient

    code, _ = await call(jp_fetch, method, route, body)
    assert code == 200
    url = f"http://localhost:{jp_http_port}{jp_base_url}ipylsp/api/{route}"
    for headers in ({"Authorization": ""}, {"Authorization": "token wrong"}):
        with pytest.raises(HTTPClientError) as refused:
            await AsyncHTTPClient().fetch(
                url, method=method, body=None if method == "GET" else json.dumps(body or {}),
                headers=headers,
            )
        assert refused.value.code == 403
        assert refused.value.response is not None
        assert json.loads(refused.value.response.body)["message"] == NO_TOKEN  # never _xsrf


async def test_check_over_http_equals_the_check_in_process(
    jp_fetch: Any, jp_root_dir: Path, app_py: Path, stop_state: None
) -> None:
    code, over_http = await call(jp_fetch, "POST", "check", {"path": "app.py"})
    assert code == 200
    in_process = Service(Settings(language_servers={"python": ("ty", "ruff")},
                                  data_dir=DATA_DIR))
    try:
        report = in_process.check(app_py)
    finally:
        in_process.close()
    expected = to_json(report, FormatOptions(max_report_chars=4000, more_hint="lsp_pending"))
    for body in (over_http, expected):
        body.pop("root")
        for file in body["files"]:  # type: ignore[union-attr]
            file.pop("absolute_path")
    assert over_http == expected
    messages = [d["message"] for f in over_http["files"] for d in f["diagnostics"]]
    assert any("totl" in m for m in messages)


async def test_escaping_paths_are_refused(
    jp_fetch: Any, jp_root_dir: Path, app_py: Path, stop_state: None
) -> None:
    outside = jp_root_dir.parent / "outside.py"
    outside.write_text("x = 1\n")
    for path in ("../outside.py", str(outside)):
        code, body = await call(jp_fetch, "POST", "check", {"path": path})
        assert code == 403
        assert body["error"]["code"] == "outside_workspace"
    code, body = await call(jp_fetch, "GET", "diagnostics", path="../outside.py")
    assert (code, body["error"]["code"]) == (403, "outside_workspace")


async def test_diagnostics_status_and_tools(
    jp_fetch: Any, jp_root_dir: Path, app_py: Path, stop_state: None
) -> None:
    code, one = await call(jp_fetch, "GET", "diagnostics", path="app.py")
    assert code == 200 and one["schema"] == "ipylsp.diagnostics/2"
    assert [f["path"] for f in one["files"]] == ["app.py"]
    code, status = await call(jp_fetch, "GET", "status")
    assert code == 200
    assert {row["server"] for row in status["servers"] if row["state"] == "running"} >= {
        "ty", "ruff"
    }
    assert status["errors"] >= 2
    app_py.write_text("def total(xs: list[int]) -> int:\n    return sum(xs)\n", encoding="utf-8")
    code, fixed = await call(jp_fetch, "GET", "diagnostics")
    assert code == 200 and [f["diagnostics"] for f in fixed["files"]] == [[]]
    code, tools = await call(jp_fetch, "GET", "tools", format="openai")
    assert tools["tools"][0]["function"]["name"] == "lsp_check"
    code, result = await call(jp_fetch, "POST", "tools/lsp_hover",
                              {"path": "app.py", "line": 1, "symbol": "total"})
    assert code == 200 and result["ok"] and "def total" in result["text"]
    code, missing = await call(jp_fetch, "POST", "tools/lsp_nope", {})
    assert (code, missing["error_code"]) == (404, "unknown_tool")
    code, bad = await call(jp_fetch, "GET", "tools", format="xml")
    assert (code, bad["error"]["code"]) == (400, "invalid_argument")


async def test_diagnostics_from_the_store_start_no_server(
    jp_fetch: Any, jp_root_dir: Path, app_py: Path, stop_state: None
) -> None:
    """A kernel's answers (here: a Service of this process on the same store, as a kernel
    would be) are read by the server extension with no server of its own (issue 14)."""
    settings = Settings(language_servers={"python": ["ty"]}, data_dir=DATA_DIR)
    with Service(settings) as kernel_side:
        kernel_side.check(app_py, before="")
    code, stored = await call(jp_fetch, "GET", "diagnostics", path="app.py", cached="1")
    assert code == 200, stored
    (entry,) = stored["files"]
    assert (entry["path"], entry["source"]) == ("app.py", "cache")
    assert [(d["line"], d["code"], d["cached"]["stale"]) for d in entry["diagnostics"]] == [
        (4, "invalid-argument-type", False), (5, "unresolved-reference", False),
    ]
    code, status = await call(jp_fetch, "GET", "status")
    assert [row for row in status["servers"] if row["owner"] == os.getpid()] == []


async def test_an_editor_gets_every_stored_problem_of_a_file(
    jp_fetch: Any, jp_root_dir: Path, stop_state: None
) -> None:
    """`max_per_file`: a file editor's marks are every problem, not a report's first 20; a
    value that is not a count is refused."""
    path = jp_root_dir / "many.py"
    path.write_text("".join(f"print(missing_{i:02d})\n" for i in range(26)), encoding="utf-8")
    settings = Settings(language_servers={"python": ["ty"]}, data_dir=DATA_DIR)
    with Service(settings) as kernel_side:
        kernel_side.check(path, before="")

    async def lines(**params: str) -> tuple[list[int], int]:
        code, stored = await call(jp_fetch, "GET", "diagnostics", path="many.py", cached="1",
                                  **params)
        assert code == 200, stored
        (entry,) = stored["files"]
        return [d["line"] for d in entry["diagnostics"]], entry["omitted"]

    assert await lines() == (list(range(1, 21)), 6)
    assert await lines(max_per_file="0") == (list(range(1, 27)), 0)
    assert await lines(max_per_file="24") == (list(range(1, 25)), 2)
    for count in ("all", "-1", "²"):  # "²".isdigit(), but int() refuses it
        code, bad = await call(jp_fetch, "GET", "diagnostics", path="many.py", cached="1",
                               max_per_file=count)
        assert (code, bad["error"]["code"]) == (400, "invalid_argument"), count
