"""Step 1 (data store): data tables, indexes, the change feed, the store's id and secret.

The property records (`properties`), their two histories (`property_histories`: one row per
property, JSON arrays in the wire's order, docs/architecture.md "Histories travel with their
property"), the ZIP snapshots and monthly history, the comparables behind each value
estimate, and the change feed (`property_changes`, GET /v1/properties/changes): a row for
every property created, changed or removed, in the order the store changed them, written by
triggers on `properties` in the writing transaction itself, so every path that writes the
table (loads, rebuilds, ageing, `data copy`) is in it and a rolled-back load leaves none.
The feed watches every column of `properties` but the id and the address keys.

SQLite runs one writer at a time, so rowid order is commit order. On PostgreSQL one feed
writer at a time holds the feed's lock until its commit, so a reader that has seen number n
has seen every row below it (a sequence alone hands out numbers before commits); rows created
or removed are written once a statement from the transition table (a COPY of 50,000 rows took
3.7-4.2 s against 5.1-5.8 s with a trigger call a row), updates a row at a time, so the WHEN
clause skips unchanged rows. PostgreSQL also gets descending indexes for "ORDER BY x DESC
NULLS LAST, id DESC", which SQLite walks backwards. Every filter can be answered from an
index while the search index builds (tests/properties/test_plans.py checks each).

These statements are also the layout stores had before steps were recorded: every one is IF
NOT EXISTS, CREATE OR REPLACE or ON CONFLICT DO NOTHING, so such a store runs them unchanged.

Frozen: the statements this step ran the day it landed. Never edit them; a change is a new
step (docs/architecture.md, "Schema steps").
"""

from __future__ import annotations

import secrets
import uuid

from propdata.kit.db import Database
from propdata.kit.steps import Step
from propdata.migrations.steps import base
from propdata.migrations.steps.base import DATA, run

COLUMNS = (
    "id", "origin", "status", "list_price", "street_address", "street_key", "city", "city_key",
    "state", "zip_code", "county", "fips_code", "bedrooms", "bathrooms", "living_area", "lot_size",
    "year_built", "property_type", "days_on_market", "listing_type", "listing_date",
    "original_list_price", "previous_list_price", "last_price_change_date", "removed_date",
    "last_sale_price", "last_sale_date", "stories", "latitude", "longitude", "walk_score",
    "transit_score", "bike_score", "rent_value", "rent_low", "rent_high", "rent_as_of",
    "value_value", "value_low", "value_high", "value_as_of", "last_updated", "content_hash",
)  # fmt: skip
"""The columns of `properties` this step makes, in order."""
WATCHED = tuple(c for c in COLUMNS if c not in ("id", "street_key", "city_key"))
"""The columns whose change writes a row of the change feed: all but the id and the address
keys."""

SQLITE_TABLES, POSTGRESQL_TABLES = base.dialects(
    """CREATE TABLE IF NOT EXISTS meta (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS properties (
        id {key},
        origin TEXT NOT NULL,
        status TEXT NOT NULL,
        list_price {int},
        street_address TEXT,
        street_key TEXT,
        city TEXT NOT NULL,
        city_key TEXT NOT NULL,
        state TEXT NOT NULL,
        zip_code TEXT NOT NULL,
        county TEXT,
        fips_code TEXT,
        bedrooms {int},
        bathrooms {real},
        living_area {int},
        lot_size {int},
        year_built {int},
        property_type TEXT,
        days_on_market {int},
        listing_type TEXT,
        listing_date TEXT,
        original_list_price {int},
        previous_list_price {int},
        last_price_change_date TEXT,
        removed_date TEXT,
        last_sale_price {int},
        last_sale_date TEXT,
        stories {int},
        latitude {real},
        longitude {real},
        walk_score {int},
        transit_score {int},
        bike_score {int},
        rent_value {int},
        rent_low {int},
        rent_high {int},
        rent_as_of TEXT,
        value_value {int},
        value_low {int},
        value_high {int},
        value_as_of TEXT,
        last_updated TEXT NOT NULL,
        content_hash TEXT NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS property_histories (
        property_id {key},
        price_history TEXT NOT NULL,
        tax_history TEXT NOT NULL
    ){without_rowid}""",
    """CREATE TABLE IF NOT EXISTS market_snapshots (
        zip_code TEXT PRIMARY KEY,
        city TEXT NOT NULL,
        state TEXT NOT NULL,
        city_key TEXT NOT NULL,
        date TEXT NOT NULL,
        median_list_price {int},
        median_sold_price {int},
        active_listings {int} NOT NULL,
        new_listings_30d {int} NOT NULL,
        sold_last_30d {int} NOT NULL,
        median_days_on_market {int},
        average_price_per_sqft {int},
        inventory_months {real},
        list_to_sold_ratio {real}
    )""",
    """CREATE TABLE IF NOT EXISTS market_history (
        zip_code TEXT NOT NULL,
        month TEXT NOT NULL,
        median_list_price {int},
        median_sold_price {int},
        active_listings {int} NOT NULL,
        sold_count {int} NOT NULL,
        median_days_on_market {int},
        average_price_per_sqft {int},
        PRIMARY KEY (zip_code, month)
    )""",
    """CREATE TABLE IF NOT EXISTS valuation_comparables (
        property_id {key},
        comparables TEXT NOT NULL
    )""",
    """CREATE INDEX IF NOT EXISTS ix_prop_updated ON properties (last_updated, id)""",
    """CREATE INDEX IF NOT EXISTS ix_prop_zip ON properties (zip_code, last_updated, id)""",
    """CREATE INDEX IF NOT EXISTS ix_prop_city ON properties (city_key, state, last_updated, id)""",
    """CREATE INDEX IF NOT EXISTS ix_prop_state ON properties (state, status, last_updated, id)""",
    """CREATE INDEX IF NOT EXISTS ix_prop_status ON properties (status, last_updated, id)""",
    """CREATE INDEX IF NOT EXISTS ix_prop_price ON properties (list_price, id)""",
    """CREATE INDEX IF NOT EXISTS ix_prop_dom ON properties (days_on_market, id)""",
    """CREATE INDEX IF NOT EXISTS ix_prop_area ON properties (living_area, id)""",
    """CREATE INDEX IF NOT EXISTS ix_prop_type ON properties (property_type)""",
    """CREATE INDEX IF NOT EXISTS ix_prop_geo ON properties (latitude, longitude)""",
    """CREATE INDEX IF NOT EXISTS ix_prop_beds ON properties (bedrooms)""",
    """CREATE INDEX IF NOT EXISTS ix_prop_baths ON properties (bathrooms)""",
    """CREATE INDEX IF NOT EXISTS ix_prop_year ON properties (year_built)""",
    """CREATE INDEX IF NOT EXISTS ix_prop_origin ON properties (origin)""",
    """CREATE INDEX IF NOT EXISTS ix_prop_street ON properties (street_key, city_key, state)""",
    """CREATE INDEX IF NOT EXISTS ix_market_place ON market_snapshots (state, city_key)""",
)

SQLITE = (
    *SQLITE_TABLES,
    """CREATE TABLE IF NOT EXISTS property_changes (
        seq INTEGER PRIMARY KEY,
        property_id TEXT NOT NULL,
        change_type TEXT NOT NULL,
        last_updated TEXT NOT NULL,
        changed_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
    )""",
    """CREATE TRIGGER IF NOT EXISTS feed_created AFTER INSERT ON properties BEGIN
        INSERT INTO property_changes (property_id, change_type, last_updated) VALUES (NEW.id, 'created', NEW.last_updated); END""",
    base.feed_updated_sqlite(WATCHED),
    """CREATE TRIGGER IF NOT EXISTS feed_removed AFTER DELETE ON properties BEGIN
        INSERT INTO property_changes (property_id, change_type, last_updated) VALUES (OLD.id, 'updated', OLD.last_updated); END""",
    """INSERT INTO meta (key, value) VALUES ('data_version', '0') ON CONFLICT (key) DO NOTHING""",
)

POSTGRESQL = (
    *POSTGRESQL_TABLES,
    """CREATE INDEX IF NOT EXISTS ix_prop_price_desc ON properties (list_price DESC NULLS LAST, id DESC)""",
    """CREATE INDEX IF NOT EXISTS ix_prop_dom_desc ON properties (days_on_market DESC NULLS LAST, id DESC)""",
    """CREATE INDEX IF NOT EXISTS ix_prop_area_desc ON properties (living_area DESC NULLS LAST, id DESC)""",
    """CREATE TABLE IF NOT EXISTS property_changes (
        seq BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        property_id TEXT NOT NULL,
        change_type TEXT NOT NULL,
        last_updated TEXT NOT NULL,
        changed_at TEXT NOT NULL DEFAULT (to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
    )""",
    """CREATE OR REPLACE FUNCTION propdata_feed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        LOCK TABLE property_changes IN SHARE ROW EXCLUSIVE MODE;
        INSERT INTO property_changes (property_id, change_type, last_updated) VALUES (NEW.id, 'updated', NEW.last_updated);
        RETURN NULL;
    END $$""",
    base.feed_rows_postgresql("updated"),
    """CREATE OR REPLACE TRIGGER feed_inserted AFTER INSERT ON properties
        REFERENCING NEW TABLE AS made FOR EACH STATEMENT EXECUTE FUNCTION propdata_feed_rows()""",
    """CREATE OR REPLACE TRIGGER feed_deleted AFTER DELETE ON properties
        REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION propdata_feed_rows()""",
    base.feed_updated_postgresql(WATCHED),
    """INSERT INTO meta (key, value) VALUES ('data_version', '0') ON CONFLICT (key) DO NOTHING""",
)


async def _apply(db: Database) -> None:
    await run(db, SQLITE, POSTGRESQL)
    for key, value in (
        ("store_id", uuid.uuid4().hex),  # tells this store's cached answers from another's
        ("cursor_secret", secrets.token_hex(32)),  # signs search cursors (search.cursor)
    ):
        await db.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING", (key, value)
        )


STORE = DATA
STEP = Step(1, "data tables, indexes, the change feed, the store's id and secret", _apply)
