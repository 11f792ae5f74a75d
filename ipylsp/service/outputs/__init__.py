"""Where reports go once made: the pending channel (problems not yet handed over) and the
subscribers. Never checks anything."""
