"""Saved searches: what an owner watches (filters, property ids), their match counts."""
