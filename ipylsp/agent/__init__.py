"""ipylsp for models: LSP tools with JSON-schema definitions, answers sized for a model, and
errors as codes (see ARCHITECTURE.md). Every agent surface (in-kernel tool loops, `ipylsp mcp`,
the Jupyter server's routes) serves this one tool table."""
