"""Feature requests, one module per request: what is asked of a running client and the model
values it answers with. No state of their own; the service decides which client to ask."""
