"""Step 13 (data store): change images of a property's tax history.

Images of a property's tax history (`property.updated` when it alone changed): a load
replaces a property's histories row (delete, then insert), so the producer gets the tax
history before from the deletion's image and after from the insertion's, as
`{"tax_history": [...]}`, beside the row's own images (`events.produce.collapse`).

Frozen: the statements this step ran the day it landed. Never edit them; a change is a new
step (docs/architecture.md, "Schema steps").
"""

from __future__ import annotations

from propdata.kit.steps import Step
from propdata.migrations.steps.base import DATA, WATCHING, images_function_postgresql, statements

SQLITE = (
    f"""CREATE TRIGGER IF NOT EXISTS property_images_taxes_gone AFTER DELETE
            ON property_histories WHEN {WATCHING} BEGIN
            INSERT INTO property_images (property_id, before, after) VALUES (OLD.property_id, json_object('tax_history', json(OLD.tax_history)), NULL); END""",
    f"""CREATE TRIGGER IF NOT EXISTS property_images_taxes_made AFTER INSERT
            ON property_histories WHEN {WATCHING} BEGIN
            INSERT INTO property_images (property_id, before, after) VALUES (NEW.property_id, NULL, json_object('tax_history', json(NEW.tax_history))); END""",
)

POSTGRESQL = (
    images_function_postgresql(
        "propdata_property_images_taxes",
        """        IF TG_OP = 'INSERT' THEN
            IF EXISTS (SELECT 1 FROM made) THEN
                LOCK TABLE property_images IN SHARE ROW EXCLUSIVE MODE;
                INSERT INTO property_images (property_id, before, after) SELECT n.property_id, NULL, json_build_object('tax_history', n.tax_history::json)::text FROM made n;
            END IF;
        ELSIF EXISTS (SELECT 1 FROM gone) THEN
            LOCK TABLE property_images IN SHARE ROW EXCLUSIVE MODE;
            INSERT INTO property_images (property_id, before, after) SELECT o.property_id, json_build_object('tax_history', o.tax_history::json)::text, NULL FROM gone o;
        END IF;""",
    ),
    """CREATE OR REPLACE TRIGGER property_images_taxes_made AFTER INSERT
        ON property_histories REFERENCING NEW TABLE AS made FOR EACH STATEMENT
        EXECUTE FUNCTION propdata_property_images_taxes()""",
    """CREATE OR REPLACE TRIGGER property_images_taxes_gone AFTER DELETE
        ON property_histories REFERENCING OLD TABLE AS gone FOR EACH STATEMENT
        EXECUTE FUNCTION propdata_property_images_taxes()""",
)

STORE = DATA
STEP = Step(13, "change images of a property's tax history", statements(SQLITE, POSTGRESQL))
