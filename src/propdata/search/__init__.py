"""Property search: one query type, two engines (the in-memory index and SQL) and the planner
that picks one, the index's snapshots and life cycle, and `match.matches`, the same filters
over records in hand (one, or a batch at once)."""
