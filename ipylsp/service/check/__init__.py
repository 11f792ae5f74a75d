"""The check pipeline: a batch of files, each planned (texts, syntax gate, servers), each
server's run (sync then diagnostics for the version), the delta against the baseline, the
files a write broke elsewhere, answers that arrive late, and `FileReport`s. Asks the runtime
for clients; never starts, stops or lists servers itself (that is `runtime/` and `admin/`)."""
