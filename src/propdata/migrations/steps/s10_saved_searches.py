"""Step 10 (accounts store): saved searches and the events' daily counts.

Saved searches (`filters` and `property_ids` as JSON), and what the producer keeps of each
owner's daily event cap: events produced per minute (unix minute), and the events not
produced since the cap was reached (`data.dropped` of the next one).

Frozen: the statements this step ran the day it landed. Never edit them; a change is a new
step (docs/architecture.md, "Schema steps").
"""

from __future__ import annotations

from propdata.kit.steps import Step
from propdata.migrations.steps.base import ACCOUNTS, dialects, statements

SQLITE, POSTGRESQL = dialects(
    """CREATE TABLE IF NOT EXISTS saved_searches (
        id {key},
        owner TEXT NOT NULL,
        name TEXT NOT NULL,
        filters TEXT NOT NULL,
        property_ids TEXT NOT NULL,
        created_at TEXT NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS event_counts (
        owner TEXT NOT NULL,
        minute {int} NOT NULL,
        produced {int} NOT NULL,
        PRIMARY KEY (owner, minute)
    )""",
    """CREATE TABLE IF NOT EXISTS event_drops (
        owner TEXT PRIMARY KEY,
        dropped {int} NOT NULL
    )""",
    """CREATE INDEX IF NOT EXISTS ix_searches_owner ON saved_searches (owner, created_at, id)""",
)

STORE = ACCOUNTS
STEP = Step(10, "saved searches and the events' daily counts", statements(SQLITE, POSTGRESQL))
