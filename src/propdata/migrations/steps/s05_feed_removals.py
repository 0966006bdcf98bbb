"""Step 5 (data store): the change feed writes a removal as 'removed'.

A removed property's feed row is 'removed' (step 1 wrote 'updated'; rows a store holds stay
as they were written).

Frozen: the statements this step ran the day it landed. Never edit them; a change is a new
step (docs/architecture.md, "Schema steps").
"""

from __future__ import annotations

from propdata.kit.steps import Step
from propdata.migrations.steps.base import DATA, statements

SQLITE = (
    """DROP TRIGGER IF EXISTS feed_removed""",
    """CREATE TRIGGER feed_removed AFTER DELETE ON properties BEGIN
        INSERT INTO property_changes (property_id, change_type, last_updated) VALUES (OLD.id, 'removed', OLD.last_updated); END""",
)

POSTGRESQL = (
    """CREATE OR REPLACE FUNCTION propdata_feed_rows() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP = 'DELETE' THEN
            IF EXISTS (SELECT 1 FROM gone) THEN
                LOCK TABLE property_changes IN SHARE ROW EXCLUSIVE MODE;
                INSERT INTO property_changes (property_id, change_type, last_updated) SELECT id, 'removed', last_updated FROM gone;
            END IF;
        ELSIF EXISTS (SELECT 1 FROM made) THEN
            LOCK TABLE property_changes IN SHARE ROW EXCLUSIVE MODE;
            INSERT INTO property_changes (property_id, change_type, last_updated) SELECT id, 'created', last_updated FROM made;
        END IF;
        RETURN NULL;
    END $$""",
)

STORE = DATA
STEP = Step(5, "the change feed writes a removal as 'removed'", statements(SQLITE, POSTGRESQL))
