"""Step 18 (data store): a property's parcel number, garage, finished basement, fireplaces
and the assessor's grades of quality and condition.

Six columns of `properties`, null where a source does not carry them: `parcel_id` (the
assessor's parcel number, indexed for `GET /v1/properties/lookup?parcelId=`),
`garage_spaces`, `basement_finished_area` (square feet), `fireplaces`, `overall_quality`
and `overall_condition` (1-10). The change feed's trigger and the change images watch every
column, so both are written anew with the six (SQLite: dropped and made again; PostgreSQL:
the feed's trigger replaced, and the images' function, whose row images are already whole).

Frozen: the statements this step ran the day it landed. Never edit them; a change is a new
step (docs/architecture.md, "Schema steps").
"""

from __future__ import annotations

from propdata.kit.steps import Step
from propdata.migrations.steps import base, s01_data_tables, s09_change_images
from propdata.migrations.steps.base import DATA

ADDED = ("parcel_id", "garage_spaces", "basement_finished_area", "fireplaces", "overall_quality",
         "overall_condition")  # fmt: skip
"""The columns this step adds to `properties`: the feed and the images watch them too."""
WATCHED = (*s01_data_tables.WATCHED, *ADDED)
IMAGED = (*s09_change_images.PROPERTY_IMAGED, *ADDED)

SQLITE_COLUMNS, POSTGRESQL_COLUMNS = base.dialects(
    """ALTER TABLE properties ADD COLUMN parcel_id TEXT""",
    """ALTER TABLE properties ADD COLUMN garage_spaces {real}""",
    """ALTER TABLE properties ADD COLUMN basement_finished_area {int}""",
    """ALTER TABLE properties ADD COLUMN fireplaces {int}""",
    """ALTER TABLE properties ADD COLUMN overall_quality {int}""",
    """ALTER TABLE properties ADD COLUMN overall_condition {int}""",
    """CREATE INDEX IF NOT EXISTS ix_properties_parcel ON properties (parcel_id) WHERE parcel_id IS NOT NULL""",
)

SQLITE = (
    *SQLITE_COLUMNS,
    """DROP TRIGGER IF EXISTS feed_updated""",
    """DROP TRIGGER IF EXISTS property_images_inserted""",
    """DROP TRIGGER IF EXISTS property_images_updated""",
    """DROP TRIGGER IF EXISTS property_images_deleted""",
    base.feed_updated_sqlite(WATCHED),
    *base.images_sqlite("property_images", "properties", "property_id", "id", IMAGED, WATCHED),
)

POSTGRESQL = (
    *POSTGRESQL_COLUMNS,
    base.feed_updated_postgresql(WATCHED),
    base.images_postgresql("property_images", "property_id", "id", WATCHED),
)

STORE = DATA
STEP = Step(
    18,
    "parcel number, garage, finished basement, fireplaces, quality and condition",
    base.statements(SQLITE, POSTGRESQL),
)
