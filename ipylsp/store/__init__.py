"""The persistent store: servers' answers kept in SQLite, per (file, text hash, server,
configuration), so they outlive the kernel and stand in for a server that is down; and the
outlines servers gave, for symbols by name.

Owns the file (`db`: WAL, versioned migrations, a corrupt file rebuilt), the rows (`codec`), a
writer thread (`writer`: writes never on the caller's path) and the facade (`store`). Keeps
model values and imports nothing above them; which file, when to write and what to read back
is the service's side (`service/answers.py`). See docs/store.md.
"""

from ipylsp.store.db import STORE_ENV
from ipylsp.store.store import Store, Stored, StoredSymbols, StoreInfo, text_hash

__all__ = ["STORE_ENV", "Store", "StoreInfo", "Stored", "StoredSymbols", "text_hash"]
