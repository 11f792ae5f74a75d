"""ipylsp: real language servers behind a Jupyter kernel.

The public Python API is re-exported lazily so that ``import ipylsp`` stays cheap.
"""

from __future__ import annotations

__version__ = "0.1.0"
