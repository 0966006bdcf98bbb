"""Step 22 (data store): the EntityEvent sequence a source notes before its catch-up pass.

A source that follows the feed's EntityEvent log starts, as RESO's RCP-27 asks, with a pass
by ModificationTimestamp, having noted the log's newest event first (`events_from`); once
that pass is caught up it follows the events after the noted one (`event_sequence`). Noted
in the store, a catch-up pass that is killed and started again keeps the first note, so no
event between the two starts is skipped.

Frozen: the statements this step ran the day it landed. Never edit them; a change is a new
step (docs/architecture.md, "Schema steps").
"""

from __future__ import annotations

from propdata.kit.steps import Step
from propdata.migrations.steps.base import DATA, statements

SQLITE = ("ALTER TABLE replication_sources ADD COLUMN events_from INTEGER",)

POSTGRESQL = ("ALTER TABLE replication_sources ADD COLUMN events_from BIGINT",)

STORE = DATA
STEP = Step(22, "the EntityEvent sequence a source notes before its catch-up pass",
            statements(SQLITE, POSTGRESQL))  # fmt: skip
