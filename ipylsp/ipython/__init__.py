"""ipylsp.ipython layer (see ARCHITECTURE.md)."""
