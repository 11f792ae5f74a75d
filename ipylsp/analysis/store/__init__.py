"""The persistent store (issue 14): servers' answers kept in SQLite, per (file, text hash,
server), so they outlive the kernel and stand in for a server that is down; and the outlines
servers gave, for symbols by name.

Inside `analysis` (it keeps model values and imports nothing above them). The file (`db.py`:
WAL, versioned migrations, a corrupt file rebuilt), the rows (`codec.py`), a writer thread
(`writer.py`: writes never on the caller's path) and the facade (`store.py`). The service's
side (which file, when to write, what to read back) is `service/stored.py`.
"""

from ipylsp.analysis.store.store import Store, Stored, StoredSymbols, text_hash

__all__ = ["Store", "Stored", "StoredSymbols", "text_hash"]
