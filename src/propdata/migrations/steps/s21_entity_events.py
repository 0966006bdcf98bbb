"""Step 21 (data store): a replication source that follows the feed's EntityEvent resource.

RESO's EntityEvent resource (RCP-27) is an append-only log of which records changed, each
event numbered by `EntityEventSequence`. A source given its URL (`events_url`) replicates by
the events after its `event_sequence` instead of by `ModificationTimestamp`, and learns of a
deletion when the feed no longer returns a record an event names.

Frozen: the statements this step ran the day it landed. Never edit them; a change is a new
step (docs/architecture.md, "Schema steps").
"""

from __future__ import annotations

from propdata.kit.steps import Step
from propdata.migrations.steps.base import DATA, statements

SQLITE = (
    "ALTER TABLE replication_sources ADD COLUMN events_url TEXT",
    "ALTER TABLE replication_sources ADD COLUMN event_sequence INTEGER",
)

POSTGRESQL = (
    "ALTER TABLE replication_sources ADD COLUMN events_url TEXT",
    "ALTER TABLE replication_sources ADD COLUMN event_sequence BIGINT",
)

STORE = DATA
STEP = Step(21, "a replication source that follows the feed's EntityEvent resource",
            statements(SQLITE, POSTGRESQL))  # fmt: skip
