"""The store shared by many processes at once (issue 28): every row a `flush()` acknowledged is
in the file afterwards, the file stays sound, and nothing needs a rebuild.

Each test runs real processes of `tests/store_worker.py` in the patterns ipylsp makes: a
long-lived kernel (a reader connection and a writer thread) beside short-lived CLI calls,
two kernels, `cache clear` while another writes, eviction while another reads, a writer
SIGKILLed mid-transaction. Each worker says which rows its flushes acknowledged; the test
counts every one of them in the file, then runs `PRAGMA integrity_check`.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from ipylsp.store import Store

pytestmark = pytest.mark.real

WORKER = Path(__file__).with_name("store_worker.py")


class Worker:
    """A running `store_worker.py`, its store open (it said `ready`). Its output is read as
    it comes, on a thread: a writer whose pipe filled up would stall, and the test would
    prove nothing about writes at once."""

    def __init__(self, role: str, store: Path, name: str) -> None:
        self.name = name
        self.process = subprocess.Popen(
            [sys.executable, str(WORKER), role, str(store), name], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        self.lines: list[str] = []
        self._arrived = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        assert self.wait_lines(1) and self.lines[0] == "ready\n", self.lines

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            with self._arrived:
                self.lines.append(line)
                self._arrived.notify_all()
        with self._arrived:
            self._arrived.notify_all()

    def wait_lines(self, count: int, timeout: float = 120) -> bool:
        """Until it printed `count` lines (False: it ended, or `timeout` passed first)."""
        with self._arrived:
            return self._arrived.wait_for(
                lambda: len(self.lines) >= count or not self._reader.is_alive(), timeout
            ) and len(self.lines) >= count

    @property
    def acks(self) -> int:
        with self._arrived:
            return sum(line.startswith("ack ") for line in self.lines)

    def stop(self, timeout: float = 120) -> tuple[str, str]:
        """Tell it to stop; what it printed after `ready`, and its stderr."""
        assert self.process.stdin is not None and self.process.stderr is not None
        self.process.stdin.write("stop\n")
        self.process.stdin.close()
        err = self.process.stderr.read()
        self.process.wait(timeout)
        self._reader.join(timeout)
        assert self.process.returncode == 0, (self.process.returncode, err)
        return "".join(self.lines[1:]), err


def acknowledged(out: str, name: str) -> dict[str, float]:
    """The paths of the rows `name`'s flushes acknowledged, each with when it was put."""
    rows: dict[str, float] = {}
    for line in out.splitlines():
        word, *fields = line.split()
        if word == "ack":
            first, last, put_at = int(fields[0]), int(fields[1]), float(fields[2])
            rows.update({f"/w/{name}/{n}.py": put_at for n in range(first, last + 1)})
    return rows


def stored_paths(store: Path) -> set[str]:
    conn = sqlite3.connect(store)
    try:
        return {row[0] for row in conn.execute("SELECT path FROM answers")}
    finally:
        conn.close()


def assert_sound(store: Path, *stderrs: str) -> None:
    """The file passes `integrity_check`, was never moved aside, and no process warned."""
    conn = sqlite3.connect(store)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    finally:
        conn.close()
    assert list(store.parent.glob("*.corrupt-*")) == []
    assert [err for err in stderrs if err] == []


def run_cli_calls(store: Path, count: int, at_once: int, prefix: str = "cli"
                  ) -> list[tuple[str, str, str]]:
    """`count` short-lived processes (`at_once` at a time): each opens, puts one answer,
    flushes and closes. Their names (`prefix` and a number), outputs and stderrs."""
    done: list[tuple[str, str, str]] = []
    for start in range(0, count, at_once):
        names = [f"{prefix}{n}" for n in range(start, min(start + at_once, count))]
        processes = [
            subprocess.Popen([sys.executable, str(WORKER), "cli", str(store), name],
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
            for name in names
        ]
        for name, process in zip(names, processes, strict=True):
            out, err = process.communicate(timeout=120)
            assert process.returncode == 0, err
            done.append((name, out, err))
    return done


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "data" / "store.sqlite3"
    Store(path).close()  # the file and its schema exist before the processes race
    yield path


def test_a_kernel_beside_sixty_cli_calls_loses_nothing(store: Path) -> None:
    """The pattern that lost every row of the kernel's and half of the CLI's, then corrupted
    the file: a long-lived store and sixty short-lived ones at once."""
    kernel = Worker("kernel", store, "kernel")
    before = kernel.acks
    calls = run_cli_calls(store, 60, at_once=6)
    assert kernel.acks > before  # the kernel kept writing while the calls came and went
    out, err = kernel.stop()
    promised = acknowledged(out, "kernel")
    for name, cli_out, _ in calls:
        assert acknowledged(cli_out, name), (name, cli_out)  # every flush said written
        promised.update(acknowledged(cli_out, name))
    assert len(promised) > 60
    assert sorted(set(promised) - stored_paths(store)) == []
    assert_sound(store, err, *(cli_err for _, _, cli_err in calls))


def test_two_kernels_and_cli_calls_lose_nothing(store: Path) -> None:
    kernels = [Worker("kernel", store, name) for name in ("k1", "k2")]
    calls = run_cli_calls(store, 20, at_once=4)
    ends = [(k.name, *k.stop()) for k in kernels]
    promised: dict[str, float] = {}
    for name, out, _ in [*ends, *calls]:
        promised.update(acknowledged(out, name))
    assert sorted(set(promised) - stored_paths(store)) == []
    assert_sound(store, *(err for _, _, err in ends), *(err for _, _, err in calls))


def test_cache_clear_while_another_process_writes(store: Path) -> None:
    """A clear removes rows on purpose: every row put after it said done is kept."""
    kernel = Worker("kernel", store, "kernel")
    cleared = run_cli_calls(store, 4, at_once=2)  # rows to clear, and CLI traffic
    clear = Worker("clear", store, "-")
    clear_out, clear_err = clear.stop()
    cleared_at = float(clear_out.split()[1])
    before = kernel.acks
    after = run_cli_calls(store, 4, at_once=2, prefix="after")
    assert kernel.wait_lines(len(kernel.lines) + 1) and kernel.acks > before  # after the clear
    out, err = kernel.stop()
    promised = {path: at for path, at in acknowledged(out, "kernel").items() if at > cleared_at}
    for name, cli_out, _ in after:
        promised.update(acknowledged(cli_out, name))
    kept = stored_paths(store)
    assert promised and sorted(set(promised) - kept) == []
    assert not {f"/w/{name}/0.py" for name, _, _ in cleared} & kept  # the clear happened
    assert_sound(store, err, clear_err, *(e for _, _, e in cleared), *(e for _, _, e in after))


def test_eviction_while_another_process_reads(store: Path) -> None:
    """Every batch of the writer evicts (a 256 KB cap); a reader in another process reads all
    along without an error, and the writer's newest acknowledged rows are there."""
    reader = Worker("reader", store, "evicting")
    writer = Worker("evicting", store, "evicting")
    before = writer.acks
    calls = run_cli_calls(store, 12, at_once=3)
    assert writer.acks > before
    out, err = writer.stop()
    reads, read_err = reader.stop()
    assert reads.startswith("reads ") and int(reads.split()[1]) > 0
    promised = acknowledged(out, "evicting")
    newest = sorted(promised, key=lambda p: int(Path(p).stem))[-10:]
    assert len(newest) == 10 and sorted(set(newest) - stored_paths(store)) == []
    assert_sound(store, err, read_err, *(e for _, _, e in calls))


def test_a_writer_killed_mid_transaction_loses_nothing_it_acknowledged(store: Path) -> None:
    kernel = Worker("kernel", store, "killed")
    assert kernel.wait_lines(21)  # twenty flushes done
    os.kill(kernel.process.pid, signal.SIGKILL)  # it writes without a pause: mid-batch
    assert kernel.process.wait(60) == -signal.SIGKILL
    kernel._reader.join(60)
    assert kernel.process.stderr is not None
    err = kernel.process.stderr.read()
    calls = run_cli_calls(store, 6, at_once=3)  # the next processes open it as it was left
    promised = acknowledged("".join(kernel.lines[1:]), "killed")
    for name, cli_out, _ in calls:
        promised.update(acknowledged(cli_out, name))
    assert len(promised) >= 200 and sorted(set(promised) - stored_paths(store)) == []
    assert_sound(store, err, *(e for _, _, e in calls))
