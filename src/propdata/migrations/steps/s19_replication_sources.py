"""Step 19 (data store): the RESO Web API feeds `propdata data replicate` follows.

`replication_sources` holds each source's name, collection URL, how it authenticates (the
names of the environment variables that hold its secrets, never a secret: `auth` is JSON),
its filter and manners, and where its replication stands: the watermark (the last committed
record's `ModificationTimestamp` and key), moved in the transaction that commits the records
it covers, with the totals of records and rejects, the last pass and its state, and the
requests made by HTTP status (`requests`, JSON), which `/metrics` reads from the store
whichever process replicates.

Frozen: the statements this step ran the day it landed. Never edit them; a change is a new
step (docs/architecture.md, "Schema steps").
"""

from __future__ import annotations

from propdata.kit.steps import Step
from propdata.migrations.steps.base import DATA, dialects, statements

SQLITE, POSTGRESQL = dialects(
    """CREATE TABLE IF NOT EXISTS replication_sources (
        name TEXT PRIMARY KEY,
        url TEXT NOT NULL,
        auth TEXT NOT NULL,
        filter TEXT,
        page_size INTEGER NOT NULL,
        requests_per_hour INTEGER NOT NULL,
        overlap_seconds INTEGER NOT NULL,
        created_at TEXT NOT NULL,
        watermark TEXT,
        watermark_key TEXT,
        committed_at TEXT,
        records {int} NOT NULL DEFAULT 0,
        rejects {int} NOT NULL DEFAULT 0,
        removed {int} NOT NULL DEFAULT 0,
        last_pass_at TEXT,
        state TEXT NOT NULL DEFAULT 'new',
        error TEXT,
        requests TEXT NOT NULL DEFAULT '{}'
    )""",
)

STORE = DATA
STEP = Step(19, "the RESO Web API feeds data replicate follows", statements(SQLITE, POSTGRESQL))
