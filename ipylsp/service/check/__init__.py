"""The check pipeline: a batch of files, each planned (texts, syntax gate, servers), each
server's run (sync then diagnostics for the version), the delta against the baseline, the
files a write broke elsewhere, answers that arrive late, and `FileReport`s. Asks the runtime
for clients (a server starts on its first use); never stops, restarts or lists servers (that
is `runtime/` and `admin/`)."""
