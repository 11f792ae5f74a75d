"""ipylsp.service layer (see ARCHITECTURE.md)."""
