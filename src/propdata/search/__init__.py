"""Property search: one query type, two engines (the in-memory index and SQL) and the planner
that picks one, and the index's snapshots and life cycle."""
