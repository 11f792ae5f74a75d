"""Language servers as data and on disk: which servers there are and where they run.

Owns the catalogue of servers (`catalogue`, rows only) and reading it (`registry`), file names
to LSP language ids (`languages`), workspace roots and the workspace gate (`roots`), finding a
server's executable (`executables`), installing one into ipylsp's data dir (`installers`), the
Python environment a Python server is handed (`python_env`), what a server's configuration
files say (`config_files`) and which files its rules exclude (`exclusions`), reading a file
that must be a regular file without blocking on what else it may be (`regular_file`), where
the cells' document says it lives (`cells_place`), and directory-validated caches
(`dircache`). Reads the file system and runs installers; never speaks JSON-RPC (that is
`lsp`) and knows nothing of checks, reports or surfaces.
"""
