"""Events: saved searches, the event log and its stream (contract.md "Events")."""
