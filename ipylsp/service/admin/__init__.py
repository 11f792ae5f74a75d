"""Administration of servers: the table of servers every surface shows, starting, stopping
and restarting them, and automatic installs. Never checks files."""
