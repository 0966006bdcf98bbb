"""Events: the event log, its producer and its stream (contract.md "Events")."""
