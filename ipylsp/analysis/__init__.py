"""ipylsp.analysis layer (see ARCHITECTURE.md)."""
