"""Step 7 (accounts store): the event log.

The event log: every event of every owner in the order it was produced. `seq` is the event's
`sequence` and what its cursors stand for; `endpoint_id` is set only on a `webhook.test`
event, which goes to that endpoint alone and is not listed. `body` is the event's JSON as
listed, streamed and delivered.

Frozen: the statements this step ran the day it landed. Never edit them; a change is a new
step (docs/architecture.md, "Schema steps").
"""

from __future__ import annotations

from propdata.kit.steps import Step
from propdata.migrations.steps.base import ACCOUNTS, dialects, statements

SQLITE, POSTGRESQL = dialects(
    """CREATE TABLE IF NOT EXISTS events (
        seq {serial},
        id TEXT NOT NULL UNIQUE,
        owner TEXT NOT NULL,
        type TEXT NOT NULL,
        search_id TEXT,
        endpoint_id TEXT,
        created_at TEXT NOT NULL,
        body TEXT NOT NULL
    )""",
    """CREATE INDEX IF NOT EXISTS ix_events_owner ON events (owner, seq)""",
    """CREATE INDEX IF NOT EXISTS ix_events_created ON events (created_at)""",
)

STORE = ACCOUNTS
STEP = Step(7, "the event log", statements(SQLITE, POSTGRESQL))
