"""What runs servers for the service: the background loop, the client pool, the resolver
(which servers serve a path and where they are rooted), cleanup at exit, the process-wide
service and its status file. Knows nothing of deltas; of reports, only where a path is
shown relative to (`check.file_reports.display_root`)."""
