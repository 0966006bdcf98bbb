"""Step 10 (accounts store): saved searches and the events' daily counts.

Saved searches (`filters` and `property_ids` as JSON), and what the producer keeps of each
owner's daily event cap: events produced per minute (unix minute), and the events not
produced since the cap was reached (`data.dropped` of the next one).

Frozen: the statements this step ran the day it landed. Never edit them; a change is a new
step (docs/architecture.md, "Schema steps").
"""

from __future__ import annotations

from propdata.kit.steps import Step
from propdata.migrations.steps.base import ACCOUNTS, statements

SQLITE = (
    """CREATE TABLE IF NOT EXISTS saved_searches (
        id TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        name TEXT NOT NULL,
        filters TEXT NOT NULL,
        property_ids TEXT NOT NULL,
        created_at TEXT NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS event_counts (
        owner TEXT NOT NULL,
        minute INTEGER NOT NULL,
        produced INTEGER NOT NULL,
        PRIMARY KEY (owner, minute)
    )""",
    """CREATE TABLE IF NOT EXISTS event_drops (
        owner TEXT PRIMARY KEY,
        dropped INTEGER NOT NULL
    )""",
    """CREATE INDEX IF NOT EXISTS ix_searches_owner ON saved_searches (owner, created_at, id)""",
)

POSTGRESQL = (
    """CREATE TABLE IF NOT EXISTS saved_searches (
        id TEXT COLLATE "C" PRIMARY KEY,
        owner TEXT NOT NULL,
        name TEXT NOT NULL,
        filters TEXT NOT NULL,
        property_ids TEXT NOT NULL,
        created_at TEXT NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS event_counts (
        owner TEXT NOT NULL,
        minute BIGINT NOT NULL,
        produced BIGINT NOT NULL,
        PRIMARY KEY (owner, minute)
    )""",
    """CREATE TABLE IF NOT EXISTS event_drops (
        owner TEXT PRIMARY KEY,
        dropped BIGINT NOT NULL
    )""",
    """CREATE INDEX IF NOT EXISTS ix_searches_owner ON saved_searches (owner, created_at, id)""",
)

STORE = ACCOUNTS
STEP = Step(10, "saved searches and the events' daily counts", statements(SQLITE, POSTGRESQL))
