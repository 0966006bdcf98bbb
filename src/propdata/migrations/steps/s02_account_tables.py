"""Step 2 (accounts store): plans, keys, the portal's people, sessions, links and audit log.

The accounts store: plans, keys, the portal's people, their sessions, one-time links and the
audit log. Embedded, a SQLite file of its own beside the data (config.accounts_url), so a
data load never holds it up; at scale-out, the same PostgreSQL database as the data. Like
step 1, this is also the layout stores had before steps were recorded.

Frozen: the statements this step ran the day it landed. Never edit them; a change is a new
step (docs/architecture.md, "Schema steps").
"""

from __future__ import annotations

import secrets

from propdata.kit.db import Database
from propdata.kit.steps import Step
from propdata.migrations.steps.base import ACCOUNTS, dialects, run

SQLITE, POSTGRESQL = dialects(
    """CREATE TABLE IF NOT EXISTS meta (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS plans (
        name TEXT PRIMARY KEY,
        per_minute {int} NOT NULL,
        daily {int},
        default_page_size {int} NOT NULL,
        max_page_size {int} NOT NULL,
        price_usd {int}
    )""",
    """CREATE TABLE IF NOT EXISTS api_keys (
        id {key},
        name TEXT NOT NULL,
        prefix TEXT NOT NULL,
        key_hash TEXT NOT NULL UNIQUE,
        plan TEXT NOT NULL REFERENCES plans(name),
        per_minute {int},
        daily {int},
        default_page_size {int},
        max_page_size {int},
        status TEXT NOT NULL,
        created_at TEXT NOT NULL,
        revoked_at TEXT,
        account_id TEXT
    )""",
    """CREATE TABLE IF NOT EXISTS accounts (
        id {key},
        email TEXT NOT NULL UNIQUE,
        password_hash TEXT NOT NULL,
        status TEXT NOT NULL,
        is_admin {int} NOT NULL,
        email_verified_at TEXT,
        created_at TEXT NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS sessions (
        token_hash TEXT PRIMARY KEY,
        account_id TEXT NOT NULL,
        created_at TEXT NOT NULL,
        seen_at {real} NOT NULL,
        flash TEXT
    )""",
    """CREATE TABLE IF NOT EXISTS account_tokens (
        token_hash TEXT PRIMARY KEY,
        account_id TEXT NOT NULL,
        purpose TEXT NOT NULL,
        expires_at {real} NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS audit_log (
        id {key},
        at TEXT NOT NULL,
        actor TEXT NOT NULL,
        account_id TEXT,
        key_id TEXT,
        action TEXT NOT NULL,
        from_value TEXT,
        to_value TEXT,
        client TEXT
    )""",
    """CREATE INDEX IF NOT EXISTS ix_keys_account ON api_keys (account_id, created_at)""",
    """CREATE INDEX IF NOT EXISTS ix_sessions_account ON sessions (account_id)""",
    """CREATE INDEX IF NOT EXISTS ix_sessions_seen ON sessions (seen_at)""",
    """CREATE INDEX IF NOT EXISTS ix_tokens_account ON account_tokens (account_id, purpose)""",
    """CREATE INDEX IF NOT EXISTS ix_audit_account ON audit_log (account_id, at)""",
    """CREATE INDEX IF NOT EXISTS ix_audit_at ON audit_log (at)""",
)


async def _apply(db: Database) -> None:
    await run(db, SQLITE, POSTGRESQL)
    # The secret behind the portal's form tokens: one per store, so every instance agrees.
    await db.execute(
        "INSERT INTO meta (key, value) VALUES ('portal_secret', ?) ON CONFLICT (key) DO NOTHING",
        (secrets.token_hex(32),),
    )


STORE = ACCOUNTS
STEP = Step(2, "plans, keys, the portal's people, sessions, links and audit log", _apply)
