"""The protocol: one language-server process and the JSON-RPC spoken with it.

Owns framing and JSON-RPC (`framing`, `jsonrpc`), the server process and its supervision
(`process`, `procfs`), the client and its state machine (`client`, `handshake`, `errors`),
capabilities, document sync, diagnostics for a document version, the server's own requests
(`server_requests`), the wire-to-model conversion (`convert`) and one module per feature
request (`requests/`). The only layer that speaks JSON-RPC; it knows nothing of checks,
deltas, reports, the store or any surface.
"""
