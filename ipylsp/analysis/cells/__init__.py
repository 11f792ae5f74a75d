"""The notebook's own cells as a document servers can check (pure: no kernel, no server)."""
