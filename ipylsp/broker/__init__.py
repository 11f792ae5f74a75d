"""The broker: one process per user, machine and ipylsp build that keeps language servers warm
for every client (`ipylsp check`, `ipylsp mcp`), reached over a Unix socket in a directory only
the user can enter, with a secret only the user can read (docs/broker.md).

- `place` — where a build's broker lives (its directory, socket, secret, lock, log) and the
  build's identity; the one place that decides what is private enough to adopt.
- `frames` — the socket's messages: length-prefixed JSON, capped, read under a deadline.
- `client` — what a client does: reach the broker (start it when none runs, single-flight),
  send its settings and environment once, then calls; any failure is `BrokerUnavailable`,
  and the caller runs in-process instead (`RelayedTools`: an MCP server's tools).
- `quick` — a plain `ipylsp check` answered by a running broker, with nothing else imported.
- `ledger` — what a session owes its client, copied in the client (a kernel, a Jupyter server,
  `ipylsp mcp`) through the journal of its pending channel, and taken over by its session in
  a broker that replaces a killed one.
- `serve` — the broker process: a `Service` per client context (settings and environment),
  the agent tools per workspace, its end when idle or told to stop.

Client modules (`place`, `frames`, `client`, `quick`) import the standard library and the
model's plain values at the top, and the rest only where a path needs it (the data
directory, this process's tools when no broker can be had), so that a thin client stays thin;
`serve` is an adapter over the service's facade and the agent's tools, like the Jupyter
server extension.
"""
