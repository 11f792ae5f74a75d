"""The watchdog (`lsp/process.py`), in both its forms (the POSIX shell script and the Python
one it falls back to): when the process that made it dies, even by `os._exit`, every process
group it was told about, and every process carrying the owner's tag that left all groups,
is killed; a group it was told to forget is left alone."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ipylsp.lsp.procfs import running, wait_exited

pytestmark = pytest.mark.real

OWNER = r"""
import json, os, subprocess, sys
from ipylsp.lsp import process
process._SHELL[:] = [sys.argv[1] == "shell"]
watchdog = process.Watchdog.get()
def spawn(env=None):
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                            env=env, start_new_session=True, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).pid
group, forgotten = spawn(), spawn()
tagged = spawn({**os.environ, process.TAG_VAR: watchdog.new_tag()})
watchdog.watch(group)
watchdog.watch(forgotten)
watchdog.forget(forgotten)
argv = open(f"/proc/{watchdog.pid}/cmdline").read().split("\0")
print(json.dumps({"group": group, "forgotten": forgotten, "tagged": tagged,
                  "watchdog": watchdog.pid, "argv": argv}), flush=True)
os._exit(0)
"""


@pytest.mark.parametrize("form", ["shell", "python"])
def test_a_dead_owners_groups_and_tagged_helpers_are_killed_a_forgotten_one_is_not(
    form: str,
) -> None:
    done = subprocess.run([sys.executable, "-c", OWNER, form], capture_output=True,
                          text=True, timeout=60, check=True)
    made = json.loads(done.stdout)
    try:
        assert ("/bin/sh" in made["argv"]) == (form == "shell")
        assert "ipylsp-watchdog" in made["argv"]
        assert wait_exited([made["group"], made["tagged"], made["watchdog"]], 10.0) == []
        assert running(made["forgotten"])
    finally:
        import os
        import signal

        for pid in (made["group"], made["forgotten"], made["tagged"]):
            if running(pid):
                os.kill(pid, signal.SIGKILL)


def test_the_shell_form_is_used_here() -> None:
    """This machine has `/bin/sh` and a `grep -z`: the 1 MB form, not the 9 MB one."""
    from ipylsp.lsp import process

    assert Path("/bin/sh").exists()
    assert process._shell_usable()
