"""Step 5 (data store): the change feed writes a removal as 'removed'.

A removed property's feed row is 'removed' (step 1 wrote 'updated'; rows a store holds stay
as they were written).

Frozen: the statements this step ran the day it landed. Never edit them; a change is a new
step (docs/architecture.md, "Schema steps").
"""

from __future__ import annotations

from propdata.kit.steps import Step
from propdata.migrations.steps.base import DATA, feed_rows_postgresql, statements

SQLITE = (
    """DROP TRIGGER IF EXISTS feed_removed""",
    """CREATE TRIGGER feed_removed AFTER DELETE ON properties BEGIN
        INSERT INTO property_changes (property_id, change_type, last_updated) VALUES (OLD.id, 'removed', OLD.last_updated); END""",
)

POSTGRESQL = (feed_rows_postgresql("removed"),)

STORE = DATA
STEP = Step(5, "the change feed writes a removal as 'removed'", statements(SQLITE, POSTGRESQL))
