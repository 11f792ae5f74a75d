"""ipylsp.lsp layer (see ARCHITECTURE.md)."""
