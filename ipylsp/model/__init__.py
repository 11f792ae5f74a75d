"""The model: plain, frozen values every layer stands on.

Owns diagnostics and reports (`diagnostics`), what feature requests answer (`answers`), text
edits (`edits`), positions and the one conversion between the wire's encodings and code points
(`positions`), a server as data (`server_spec`), what runs (`status`), the core's knobs
(`settings`) and the client's environment servers run in (`environment`). Imports nothing of
ipylsp's but itself: no I/O, no processes, no protocol (`Environment.current` reads this
process's variables, nothing else).
"""
