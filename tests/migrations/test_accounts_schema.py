"""An accounts store made before the portal gains its tables and the keys' account column,
keeps its keys, and a second migration does nothing (both stores)."""

from __future__ import annotations

from pathlib import Path

from propdata.accounts.repository import KeyRepository
from propdata.config import accounts_url
from propdata.kit.db import connect
from propdata.migrations.schema import migrate_accounts
from tests.conftest import drop_store, new_store

OLD_KEYS = """
    CREATE TABLE api_keys (
        id TEXT PRIMARY KEY, name TEXT NOT NULL, prefix TEXT NOT NULL,
        key_hash TEXT NOT NULL UNIQUE, plan TEXT NOT NULL, per_minute INTEGER, daily INTEGER,
        default_page_size INTEGER, max_page_size INTEGER, status TEXT NOT NULL,
        created_at TEXT NOT NULL, revoked_at TEXT
    )"""


async def test_an_older_accounts_store_is_brought_up_to_date(backend: str, tmp_path: Path) -> None:
    store = await new_store(backend, tmp_path)
    db = await connect(accounts_url(store.url))
    try:
        await db.execute(OLD_KEYS)
        await db.execute(
            "INSERT INTO api_keys (id, name, prefix, key_hash, plan, status, created_at)"
            " VALUES ('key_old', 'old', 'pmd_live_ab', 'h', 'pro', 'active', '2026-01-01T00:00:00Z')"
        )
        await migrate_accounts(db)
        (key,) = await KeyRepository(db).all()
        assert key.id == "key_old" and key.plan == "pro" and key.account_id is None
        assert key.per_minute == 500 and key.status == "active"
        secret = await db.fetch_one("SELECT value FROM meta WHERE key = 'portal_secret'")
        assert secret and len(secret[0]) == 64
        await migrate_accounts(db)  # current: nothing to do, the secret stays
        again = await db.fetch_one("SELECT value FROM meta WHERE key = 'portal_secret'")
        assert again == secret
    finally:
        await db.close()
        await drop_store(store)
