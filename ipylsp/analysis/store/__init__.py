"""The persistent store (issue 14, in progress): servers' answers kept in SQLite, per (file,
text hash, server), so they can outlive the kernel and stand in for a server that is down.

Beside `analysis` (it keeps model values, imports nothing above them). What exists: the file
(`db.py`: WAL, versioned migrations, a corrupt file rebuilt), the rows (`codec.py`), a writer
thread (`writer.py`: writes never on the caller's path) and the facade (`store.py`: put, get,
latest, LRU eviction at a size cap, info, clear). Not yet wired into the service: see the
"Persistent store" section of ARCHITECTURE.md.
"""

from ipylsp.analysis.store.store import Store, Stored, text_hash

__all__ = ["Store", "Stored", "text_hash"]
