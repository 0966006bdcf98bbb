"""Step 17 (data store): the records every load read, and the feeds that load continuously.

`ingest_counts` holds, per result (accepted, rejected), the records that committed loads
read, added in each load's own transaction: whichever process loads (a command, a follower,
a replicator, a server), `/metrics` of every server reads the same totals.
`ingest_feeds` names each continuous feed (a follower) from its start until it is stopped on
purpose; one that crashed stays named, so an alert on a data version that stands still
fires only where a feed is expected to move it.

Frozen: the statements this step ran the day it landed. Never edit them; a change is a new
step (docs/architecture.md, "Schema steps").
"""

from __future__ import annotations

from propdata.kit.steps import Step
from propdata.migrations.steps.base import DATA, dialects, statements

SQLITE, POSTGRESQL = dialects(
    """CREATE TABLE ingest_counts (
        result TEXT PRIMARY KEY,
        records {int} NOT NULL
    )""",
    """CREATE TABLE ingest_feeds (
        name TEXT PRIMARY KEY,
        kind TEXT NOT NULL,
        since TEXT NOT NULL
    )""",
)

STORE = DATA
STEP = Step(
    17,
    "the records every load read, and the feeds that load continuously",
    statements(SQLITE, POSTGRESQL),
)
