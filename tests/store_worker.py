"""One process using the store the way one of ipylsp's does, for tests/test_store_processes.py.

    python store_worker.py ROLE STORE NAME

Roles:
- `kernel`: a long-lived `Store` (its reader connection and its writer thread), putting an
  answer for `/w/NAME/<n>.py` after another and flushing every `EVERY` puts, until a line on
  stdin says stop. After each flush that said the rows were written it prints
  `ack FIRST LAST PUT_AT` (rows FIRST..LAST, the first put at `time.monotonic()` PUT_AT, one
  clock for every process of the machine).
- `cli`: one open, one put, one flush, one close, as `ipylsp check` does: `ack 0 0 PUT_AT`.
- `clear`: `Store.clear()` as `ipylsp cache clear` does: `cleared AT` when it said done.
- `reader`: reads (a lookup, the latest, the paths, `info`) until stdin says stop, then prints
  `reads N`; an exception from the store ends it with a traceback.
- `evicting`: `kernel` with a 256 KB cap and big answers, so every batch evicts.
- `hold`: the store open and idle until stdin says stop.

Each prints `ready` once its store is open; stderr carries the store's warnings.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from pathlib import Path

from ipylsp.model.diagnostics import Diagnostic, Position, Range, Severity
from ipylsp.store import Store

EVERY = 10
DIAG = (Diagnostic(Range(Position(0, 0), Position(0, 1)), Severity.ERROR, "m", "s", "c", "srv"),)


def say(line: str) -> None:
    print(line, flush=True)


def stopped() -> threading.Event:
    """Set when stdin gives a line (or ends)."""
    event = threading.Event()

    def wait() -> None:
        sys.stdin.readline()
        event.set()

    threading.Thread(target=wait, daemon=True).start()
    return event


def kernel(store: Store, name: str, payload: tuple[Diagnostic, ...]) -> None:
    stop = stopped()
    n = 0
    while not stop.is_set():
        first, put_at = n, time.monotonic()
        for _ in range(EVERY):
            store.put_diagnostics(f"/w/{name}/{n}.py", str(n), "ty", payload)
            n += 1
        if store.flush(30):
            say(f"ack {first} {n - 1} {put_at}")


def main() -> None:
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(message)s")
    role, path, name = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
    evicting = role == "evicting"
    store = Store(path, max_bytes=256 * 1024) if evicting else Store(path)
    say("ready")
    try:
        if role in ("kernel", "evicting"):
            kernel(store, name, DIAG * 40 if evicting else DIAG)
        elif role == "cli":
            put_at = time.monotonic()
            store.put_diagnostics(f"/w/{name}/0.py", "0", "ty", DIAG)
            if store.flush(30):
                say(f"ack 0 0 {put_at}")
        elif role == "clear":
            if store.clear():
                say(f"cleared {time.monotonic()}")
        elif role == "reader":
            stop, reads = stopped(), 0
            while not stop.is_set():
                store.get_diagnostics(f"/w/{name}/1.py", "1", "ty")
                store.latest(f"/w/{name}/2.py", "ty")
                store.paths("/w", limit=10)
                store.info()
                reads += 1
            say(f"reads {reads}")
        elif role == "hold":
            stopped().wait()
        else:
            raise SystemExit(f"unknown role {role}")
    finally:
        store.close()


if __name__ == "__main__":
    main()
