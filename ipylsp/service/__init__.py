"""The service: one facade (`service.Service`) over an asyncio loop on a daemon thread.

Rooms by concern: the check pipeline (`check/`), the runtime that runs servers (`runtime/`:
loop, pool, resolver, cleanup, the process-wide service, the status file), queries beyond
diagnostics (`queries`), the notebook's cells (`cells`), where reports go (`outputs/`),
administration of servers (`admin/`), and the store as a cache (`cache`). Never imports
IPython, Jupyter, tornado, traitlets or mcp: the surfaces adapt it.
"""
