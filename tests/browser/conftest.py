"""A real `jupyter lab` on a temporary root and a real Chromium (Debian's, /usr/bin/chromium)
driven by Playwright's sync API, for the JupyterLab extension's tests.

Both are module-scoped (not pytest-playwright's session-scoped browser): the suite's
`no_orphans` check runs at the end of every module, and a browser or a Jupyter server still
alive then would be a leaked process. Screenshots go to tests/browser/artifacts/ (gitignored).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

CHROMIUM = Path(os.environ.get("IPYLSP_CHROMIUM", "/usr/bin/chromium"))
ARTIFACTS = Path(__file__).parent / "artifacts"
LABEXTENSION = Path(sys.prefix) / "share" / "jupyter" / "labextensions" / "ipylsp" / "package.json"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
# What both the kernel and the server extension use: the embedded default, pinned.
SERVER_CONFIG = """\
c.IPyLSP.language_servers = {"python": ["ty", "ruff"]}
# Offline: no news feed, no update check.
c.LabApp.news_url = None
c.LabApp.check_for_updates_class = "jupyterlab.handlers.announcements.NeverCheckForUpdate"
"""


def _missing() -> str:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed: pip install -e '.[lab]'"
    if not CHROMIUM.exists():
        return f"no Chromium at {CHROMIUM}: apt-get install chromium"
    if not LABEXTENSION.exists():
        return f"no JupyterLab extension at {LABEXTENSION}: scripts/build-labextension"
    return ""


@pytest.fixture(autouse=True)
def _every_part_present() -> None:
    """A missing part fails each browser test loudly, with the command that installs it
    (never a skip: CI must not pass without the browser tests)."""
    reason = _missing()
    if reason:
        pytest.fail(f"the browser tests cannot run: {reason}", pytrace=False)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class Lab:
    url: str  # base URL, ending in "/"
    token: str
    root: Path
    process: subprocess.Popen[bytes]
    log: Path

    def open_url(self, path: str) -> str:
        """The URL that opens `path` (relative to the root) in a fresh JupyterLab workspace."""
        return f"{self.url}lab/tree/{path}?reset&token={self.token}"

    def notebook_url(self, path: str) -> str:
        """The URL that opens the notebook `path` in Notebook 7 (`running_lab(app="notebook")`)."""
        return f"{self.url}notebooks/{path}?token={self.token}"

    def api(self, route: str, body: object = None) -> object:
        """GET `route`, or POST `body` as JSON to it."""
        request = urllib.request.Request(
            f"{self.url}{route}", headers={"Authorization": f"token {self.token}"},
            data=None if body is None else json.dumps(body).encode(),
            method="GET" if body is None else "POST",
        )
        with urllib.request.urlopen(request, timeout=60) as answer:
            return json.loads(answer.read())


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    with running_lab(tmp_path_factory.mktemp("lab")) as lab:
        yield lab


@contextlib.contextmanager
def running_lab(base: Path, app: str = "jupyterlab") -> Iterator[Lab]:
    """`jupyter lab` on a temporary root under `base` (a workspace: it holds a
    pyproject.toml), on 127.0.0.1 with a token, its own config dir (the user's is not read),
    no browser; stopped (kernels and language servers with it) on exit. The benchmarks use
    it too (benchmarks/bench_lab.py). `app="notebook"`: Notebook 7 (`jupyter notebook`),
    the same prebuilt extension."""
    root = base / "root"
    root.mkdir()
    (root / "pyproject.toml").write_text('[project]\nname = "shop"\nversion = "0"\n')
    config = base / "config"
    config.mkdir()
    (config / "jupyter_server_config.py").write_text(SERVER_CONFIG)
    # No "official Jupyter news?" toast over the page.
    (config / "labconfig").mkdir()
    (config / "labconfig" / "page_config.json").write_text(
        json.dumps({"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}})
    )
    port = _free_port()
    token = secrets.token_hex(16)
    log = base / "jupyter-lab.log"
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(config),
        "JUPYTER_RUNTIME_DIR": str(base / "runtime"),
        "JUPYTERLAB_WORKSPACES_DIR": str(base / "workspaces"),
        # ipylsp's data dir (platformdirs): the status files the status item sums are this
        # Jupyter server's and its kernels' only, not those of whatever else runs on the machine
        "XDG_DATA_HOME": str(base / "data"),
    }
    command = [
        sys.executable,
        "-m",
        app,
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        "--ServerApp.allow_root=True",
        f"--ServerApp.root_dir={root}",
        *([f"--LabApp.workspaces_dir={base / 'workspaces'}"] if app == "jupyterlab" else []),
    ]
    with log.open("wb") as out:
        process = subprocess.Popen(
            command,
            cwd=root,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    lab = Lab(f"http://127.0.0.1:{port}/", token, root, process, log)
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"jupyter lab exited: {log.read_text()[-3000:]}")
            try:
                lab.api("api/status")
                break
            except OSError as error:
                if time.monotonic() > deadline:
                    tail = log.read_text()[-3000:]
                    raise RuntimeError(f"jupyter lab did not answer: {tail}") from error
                time.sleep(0.2)  # polling a starting server: nothing to wait on instead
        yield lab
    finally:
        _stop(process)


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM (the server shuts its kernels and language servers down), then the group."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(5)


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
        )
        try:
            yield browser
        finally:
            browser.close()


CONSOLES: dict[int, list[str]] = {}
"""What each open page (by `id`) logged, until its test ends."""


@pytest.fixture
def page(browser: object) -> Iterator[object]:
    from playwright.sync_api import Browser

    assert isinstance(browser, Browser)
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    page.set_default_timeout(30_000)
    console: list[str] = []  # what the page logged: left beside a failed test's screenshot
    page.on("console", lambda message: console.append(f"{message.type}: {message.text}"))
    page.on("pageerror", lambda error: console.append(f"pageerror: {error}"))
    CONSOLES[id(page)] = console
    try:
        yield page
    finally:
        CONSOLES.pop(id(page), None)
        context.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """A failed browser test leaves a screenshot of its page, `failed-<test>.png`, and what
    the page logged, `failed-<test>.log`."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    page = getattr(item, "funcargs", {}).get("page")
    if report.when == "call" and report.failed and page is not None:
        with contextlib.suppress(Exception):  # the page may be gone: the failure says why
            screenshot(page, f"failed-{item.name}")
        console = CONSOLES.get(id(page))
        if console is not None:  # the folder too: the screenshot may have failed first
            ARTIFACTS.mkdir(exist_ok=True)
            (ARTIFACTS / f"failed-{item.name}.log").write_text(
                "\n".join(console) + "\n", encoding="utf-8"
            )


def screenshot(page: object, name: str) -> Path:
    from playwright.sync_api import Page

    assert isinstance(page, Page)
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path))
    return path
