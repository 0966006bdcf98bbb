"""The stores' schema: the numbered steps that make it, and the plans' rows it is seeded with.

The steps live in `migrations/steps/`, one frozen module each (`steps.STEPS`, one ordered
list for both stores: each step belongs to the data store or the accounts store; one
PostgreSQL database holds both at scale-out, embedded each is a SQLite file). `migrate` and
`migrate_accounts` run a store's steps through `kit.steps.upgrade`: each once, in order,
recorded in the store's `schema_steps`. The layout they make is `migrations/schema.sql`
(`migrations.layout`); tests/migrations/test_steps.py holds a store upgraded from every step
to a fresh one.
"""

from __future__ import annotations

from propdata.kit.db import Database
from propdata.kit.steps import upgrade
from propdata.migrations.steps import ACCOUNTS, DATA, STEPS, steps_of
from propdata.plans import OWNER_LIMITS, PLANS

__all__ = ["ACCOUNTS", "COPIED_ACCOUNTS", "COPIED_DATA", "DATA", "LEFT_BEHIND", "STEPS",
           "initialised", "migrate", "migrate_accounts", "seed_plans", "steps_of"]  # fmt: skip

COPIED_DATA = (
    "meta", "properties", "property_histories", "market_snapshots", "market_history",
    "market_stale", "valuation_comparables", "valuation_models", "valuation_training",
    "zip_places", "replication_sources",
)  # fmt: skip
"""The data store's tables `data copy` moves: the records, statistics (and the ZIP codes
whose statistics are still to recompute), the stored valuation models, the ZIP places and
the replication sources with their watermarks."""
COPIED_ACCOUNTS = (
    "plans", "api_keys", "accounts", "sessions", "account_tokens", "audit_log", "events",
    "event_sequences", "saved_searches", "event_counts", "event_drops", "webhook_endpoints",
    "webhook_deliveries", "webhook_attempts", "webhook_replays",
)  # fmt: skip
"""The accounts store's tables `data copy` moves (its `meta` holds only bookkeeping): plans,
keys, the portal's people, the event log with its numbers and each owner's last (so clients'
cursors and endpoints' places hold), saved searches, the events' daily counts, webhook
endpoints with their secrets, their deliveries, the attempts made and the replays asked."""
LEFT_BEHIND = (
    "schema_steps", "property_changes", "property_images", "market_images", "ingest_counts",
    "ingest_feeds",
)  # fmt: skip
"""Tables a copy leaves: the target records its own steps, starts its own change feed as the
properties arrive (its triggers write it), and the source's producer has turned every change
image into events before the copy (`propdata data copy` runs it first); the target's loads
count from zero, and no feed loads it yet. Every table of a store is in exactly one of the
three lists (tests/migrations/test_transfer.py)."""


PLAN_COLUMNS = ("name", "per_minute", "daily", "default_page_size", "max_page_size", "price_usd",
                *OWNER_LIMITS)  # fmt: skip
"""What the `plans` table holds of each of `propdata.plans.PLANS` (keys join it for their
limits); the rest of a plan is read from that module."""


async def seed_plans(db: Database) -> None:
    """Make the `plans` table hold what `propdata.plans` says, at every migrate.

    A changed limit so reaches a store made earlier; an Enterprise key's own limits are
    columns of the key and stay as they are. Reads first, and writes (taking the lock) only
    when a plan differs.
    """
    wanted = [tuple(getattr(plan, c) for c in PLAN_COLUMNS) for plan in PLANS]
    held = {
        tuple(row) for row in await db.fetch_all(f"SELECT {', '.join(PLAN_COLUMNS)} FROM plans")
    }
    if held.issuperset(wanted):
        return
    if db.dialect == "postgresql":
        row = await db.fetch_one("SELECT pg_is_in_recovery()")
        if row and row[0]:
            return  # a read replica: the primary is seeded, and a standby cannot write
    updates = ", ".join(f"{c} = excluded.{c}" for c in PLAN_COLUMNS[1:])
    async with db.transaction():
        await db.executemany(
            f"INSERT INTO plans ({', '.join(PLAN_COLUMNS)})"
            f" VALUES ({', '.join('?' for _ in PLAN_COLUMNS)})"
            f" ON CONFLICT (name) DO UPDATE SET {updates}",
            wanted,
        )


async def migrate(db: Database) -> None:
    """Bring the data store up to date: its steps of `STEPS` it has not recorded.

    Does nothing, and takes no lock, when the store is current: a server starting, or a key
    command, never waits on a data load that holds the write lock.
    """
    await upgrade(db, steps_of(DATA))


async def migrate_accounts(db: Database) -> None:
    """Bring the accounts store up to date (its steps), then seed the plans."""
    await upgrade(db, steps_of(ACCOUNTS))
    await seed_plans(db)


async def initialised(db: Database) -> bool:
    """Whether `migrate` ever ran on this store (commands that only read or manage a store
    refuse one that was never made, rather than make an empty one)."""
    if db.dialect == "postgresql":
        row = await db.fetch_one("SELECT to_regclass('meta') IS NOT NULL")
        return bool(row and row[0])
    row = await db.fetch_one("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'")
    return row is not None
