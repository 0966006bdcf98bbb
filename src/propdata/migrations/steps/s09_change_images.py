"""Step 9 (data store): change images of properties and ZIP snapshots for the event producer.

What the event producer (`events.produce`) reads: a row for every property and every ZIP
snapshot written while a saved search exists (`meta` key `events_watching` is '1'), the row's
columns as JSON before (null: it was created) and after (null: it was removed), written by
triggers in the writing transaction, so a rolled-back load leaves none. The producer deletes
the rows it has turned into events. SQLite numbers them AUTOINCREMENT: a number is never
handed out twice, even once every row is deleted.

Frozen: the statements this step ran the day it landed. Never edit them; a change is a new
step (docs/architecture.md, "Schema steps").
"""

from __future__ import annotations

from propdata.kit.steps import Step
from propdata.migrations.steps import base, s01_data_tables
from propdata.migrations.steps.base import DATA

PROPERTY_IMAGED = tuple(c for c in s01_data_tables.COLUMNS if c != "content_hash")
"""What a property's image holds: every column of step 1 but the content hash."""
MARKET = (
    "zip_code", "city", "state", "city_key", "date", "median_list_price", "median_sold_price",
    "active_listings", "new_listings_30d", "sold_last_30d", "median_days_on_market",
    "average_price_per_sqft", "inventory_months", "list_to_sold_ratio",
)  # fmt: skip
"""The columns of `market_snapshots`: a ZIP snapshot's image holds, and watches, them all."""

SQLITE_TABLES, POSTGRESQL_TABLES = base.dialects(
    """CREATE TABLE IF NOT EXISTS property_images (
        seq {autoincrement},
        property_id TEXT NOT NULL,
        before TEXT,
        after TEXT
    )""",
    """CREATE TABLE IF NOT EXISTS market_images (
        seq {autoincrement},
        zip_code TEXT NOT NULL,
        before TEXT,
        after TEXT
    )""",
)

SQLITE = (
    *SQLITE_TABLES,
    *base.images_sqlite(
        "property_images",
        "properties",
        "property_id",
        "id",
        PROPERTY_IMAGED,
        s01_data_tables.WATCHED,
    ),
    *base.images_sqlite(
        "market_images", "market_snapshots", "zip_code", "zip_code", MARKET, MARKET
    ),
)

POSTGRESQL = (
    *POSTGRESQL_TABLES,
    base.images_postgresql("property_images", "property_id", "id", s01_data_tables.WATCHED),
    *base.image_triggers_postgresql("property_images", "properties"),
    base.images_postgresql("market_images", "zip_code", "zip_code", MARKET),
    *base.image_triggers_postgresql("market_images", "market_snapshots"),
)

STORE = DATA
STEP = Step(
    9,
    "change images of properties and ZIP snapshots for the event producer",
    base.statements(SQLITE, POSTGRESQL),
)
