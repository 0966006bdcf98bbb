"""Event decisions: whose events are whose."""

from __future__ import annotations

from propdata.accounts.schemas import ApiKey


def owner_of(key: ApiKey) -> str:
    """Who owns the saved searches, webhook endpoints and events a key sees: the portal
    account that holds it (every active key of the account sees the same), else the key."""
    if key.account_id is not None:
        return f"acct:{key.account_id}"
    return f"key:{key.id}"
