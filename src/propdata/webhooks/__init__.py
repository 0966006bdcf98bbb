"""Webhooks: endpoints, deliveries and the dispatcher (contract.md "Webhooks")."""
