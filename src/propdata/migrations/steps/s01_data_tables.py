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
from propdata.migrations.steps.base import DATA, run

SQLITE = (
    """CREATE TABLE IF NOT EXISTS meta (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS properties (
        id TEXT PRIMARY KEY,
        origin TEXT NOT NULL,
        status TEXT NOT NULL,
        list_price INTEGER,
        street_address TEXT,
        street_key TEXT,
        city TEXT NOT NULL,
        city_key TEXT NOT NULL,
        state TEXT NOT NULL,
        zip_code TEXT NOT NULL,
        county TEXT,
        fips_code TEXT,
        bedrooms INTEGER,
        bathrooms REAL,
        living_area INTEGER,
        lot_size INTEGER,
        year_built INTEGER,
        property_type TEXT,
        days_on_market INTEGER,
        listing_type TEXT,
        listing_date TEXT,
        original_list_price INTEGER,
        previous_list_price INTEGER,
        last_price_change_date TEXT,
        removed_date TEXT,
        last_sale_price INTEGER,
        last_sale_date TEXT,
        stories INTEGER,
        latitude REAL,
        longitude REAL,
        walk_score INTEGER,
        transit_score INTEGER,
        bike_score INTEGER,
        rent_value INTEGER,
        rent_low INTEGER,
        rent_high INTEGER,
        rent_as_of TEXT,
        value_value INTEGER,
        value_low INTEGER,
        value_high INTEGER,
        value_as_of TEXT,
        last_updated TEXT NOT NULL,
        content_hash TEXT NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS property_histories (
        property_id TEXT PRIMARY KEY,
        price_history TEXT NOT NULL,
        tax_history TEXT NOT NULL
    ) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS market_snapshots (
        zip_code TEXT PRIMARY KEY,
        city TEXT NOT NULL,
        state TEXT NOT NULL,
        city_key TEXT NOT NULL,
        date TEXT NOT NULL,
        median_list_price INTEGER,
        median_sold_price INTEGER,
        active_listings INTEGER NOT NULL,
        new_listings_30d INTEGER NOT NULL,
        sold_last_30d INTEGER NOT NULL,
        median_days_on_market INTEGER,
        average_price_per_sqft INTEGER,
        inventory_months REAL,
        list_to_sold_ratio REAL
    )""",
    """CREATE TABLE IF NOT EXISTS market_history (
        zip_code TEXT NOT NULL,
        month TEXT NOT NULL,
        median_list_price INTEGER,
        median_sold_price INTEGER,
        active_listings INTEGER NOT NULL,
        sold_count INTEGER NOT NULL,
        median_days_on_market INTEGER,
        average_price_per_sqft INTEGER,
        PRIMARY KEY (zip_code, month)
    )""",
    """CREATE TABLE IF NOT EXISTS valuation_comparables (
        property_id TEXT PRIMARY KEY,
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
    """CREATE TABLE IF NOT EXISTS property_changes (
        seq INTEGER PRIMARY KEY,
        property_id TEXT NOT NULL,
        change_type TEXT NOT NULL,
        last_updated TEXT NOT NULL,
        changed_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
    )""",
    """CREATE TRIGGER IF NOT EXISTS feed_created AFTER INSERT ON properties BEGIN
        INSERT INTO property_changes (property_id, change_type, last_updated) VALUES (NEW.id, 'created', NEW.last_updated); END""",
    """CREATE TRIGGER IF NOT EXISTS feed_updated AFTER UPDATE ON properties
        WHEN OLD.origin IS NOT NEW.origin OR OLD.status IS NOT NEW.status OR OLD.list_price IS NOT NEW.list_price OR OLD.street_address IS NOT NEW.street_address OR OLD.city IS NOT NEW.city OR OLD.state IS NOT NEW.state OR OLD.zip_code IS NOT NEW.zip_code OR OLD.county IS NOT NEW.county OR OLD.fips_code IS NOT NEW.fips_code OR OLD.bedrooms IS NOT NEW.bedrooms OR OLD.bathrooms IS NOT NEW.bathrooms OR OLD.living_area IS NOT NEW.living_area OR OLD.lot_size IS NOT NEW.lot_size OR OLD.year_built IS NOT NEW.year_built OR OLD.property_type IS NOT NEW.property_type OR OLD.days_on_market IS NOT NEW.days_on_market OR OLD.listing_type IS NOT NEW.listing_type OR OLD.listing_date IS NOT NEW.listing_date OR OLD.original_list_price IS NOT NEW.original_list_price OR OLD.previous_list_price IS NOT NEW.previous_list_price OR OLD.last_price_change_date IS NOT NEW.last_price_change_date OR OLD.removed_date IS NOT NEW.removed_date OR OLD.last_sale_price IS NOT NEW.last_sale_price OR OLD.last_sale_date IS NOT NEW.last_sale_date OR OLD.stories IS NOT NEW.stories OR OLD.latitude IS NOT NEW.latitude OR OLD.longitude IS NOT NEW.longitude OR OLD.walk_score IS NOT NEW.walk_score OR OLD.transit_score IS NOT NEW.transit_score OR OLD.bike_score IS NOT NEW.bike_score OR OLD.rent_value IS NOT NEW.rent_value OR OLD.rent_low IS NOT NEW.rent_low OR OLD.rent_high IS NOT NEW.rent_high OR OLD.rent_as_of IS NOT NEW.rent_as_of OR OLD.value_value IS NOT NEW.value_value OR OLD.value_low IS NOT NEW.value_low OR OLD.value_high IS NOT NEW.value_high OR OLD.value_as_of IS NOT NEW.value_as_of OR OLD.last_updated IS NOT NEW.last_updated OR OLD.content_hash IS NOT NEW.content_hash BEGIN
        INSERT INTO property_changes (property_id, change_type, last_updated) VALUES (NEW.id, 'updated', NEW.last_updated); END""",
    """CREATE TRIGGER IF NOT EXISTS feed_removed AFTER DELETE ON properties BEGIN
        INSERT INTO property_changes (property_id, change_type, last_updated) VALUES (OLD.id, 'updated', OLD.last_updated); END""",
    """INSERT INTO meta (key, value) VALUES ('data_version', '0') ON CONFLICT (key) DO NOTHING""",
)

POSTGRESQL = (
    """CREATE TABLE IF NOT EXISTS meta (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS properties (
        id TEXT COLLATE "C" PRIMARY KEY,
        origin TEXT NOT NULL,
        status TEXT NOT NULL,
        list_price BIGINT,
        street_address TEXT,
        street_key TEXT,
        city TEXT NOT NULL,
        city_key TEXT NOT NULL,
        state TEXT NOT NULL,
        zip_code TEXT NOT NULL,
        county TEXT,
        fips_code TEXT,
        bedrooms BIGINT,
        bathrooms DOUBLE PRECISION,
        living_area BIGINT,
        lot_size BIGINT,
        year_built BIGINT,
        property_type TEXT,
        days_on_market BIGINT,
        listing_type TEXT,
        listing_date TEXT,
        original_list_price BIGINT,
        previous_list_price BIGINT,
        last_price_change_date TEXT,
        removed_date TEXT,
        last_sale_price BIGINT,
        last_sale_date TEXT,
        stories BIGINT,
        latitude DOUBLE PRECISION,
        longitude DOUBLE PRECISION,
        walk_score BIGINT,
        transit_score BIGINT,
        bike_score BIGINT,
        rent_value BIGINT,
        rent_low BIGINT,
        rent_high BIGINT,
        rent_as_of TEXT,
        value_value BIGINT,
        value_low BIGINT,
        value_high BIGINT,
        value_as_of TEXT,
        last_updated TEXT NOT NULL,
        content_hash TEXT NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS property_histories (
        property_id TEXT COLLATE "C" PRIMARY KEY,
        price_history TEXT NOT NULL,
        tax_history TEXT NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS market_snapshots (
        zip_code TEXT PRIMARY KEY,
        city TEXT NOT NULL,
        state TEXT NOT NULL,
        city_key TEXT NOT NULL,
        date TEXT NOT NULL,
        median_list_price BIGINT,
        median_sold_price BIGINT,
        active_listings BIGINT NOT NULL,
        new_listings_30d BIGINT NOT NULL,
        sold_last_30d BIGINT NOT NULL,
        median_days_on_market BIGINT,
        average_price_per_sqft BIGINT,
        inventory_months DOUBLE PRECISION,
        list_to_sold_ratio DOUBLE PRECISION
    )""",
    """CREATE TABLE IF NOT EXISTS market_history (
        zip_code TEXT NOT NULL,
        month TEXT NOT NULL,
        median_list_price BIGINT,
        median_sold_price BIGINT,
        active_listings BIGINT NOT NULL,
        sold_count BIGINT NOT NULL,
        median_days_on_market BIGINT,
        average_price_per_sqft BIGINT,
        PRIMARY KEY (zip_code, month)
    )""",
    """CREATE TABLE IF NOT EXISTS valuation_comparables (
        property_id TEXT COLLATE "C" PRIMARY KEY,
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
    """CREATE OR REPLACE FUNCTION propdata_feed_rows() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP = 'DELETE' THEN
            IF EXISTS (SELECT 1 FROM gone) THEN
                LOCK TABLE property_changes IN SHARE ROW EXCLUSIVE MODE;
                INSERT INTO property_changes (property_id, change_type, last_updated) SELECT id, 'updated', last_updated FROM gone;
            END IF;
        ELSIF EXISTS (SELECT 1 FROM made) THEN
            LOCK TABLE property_changes IN SHARE ROW EXCLUSIVE MODE;
            INSERT INTO property_changes (property_id, change_type, last_updated) SELECT id, 'created', last_updated FROM made;
        END IF;
        RETURN NULL;
    END $$""",
    """CREATE OR REPLACE TRIGGER feed_inserted AFTER INSERT ON properties
        REFERENCING NEW TABLE AS made FOR EACH STATEMENT EXECUTE FUNCTION propdata_feed_rows()""",
    """CREATE OR REPLACE TRIGGER feed_deleted AFTER DELETE ON properties
        REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION propdata_feed_rows()""",
    """CREATE OR REPLACE TRIGGER feed_updated AFTER UPDATE ON properties FOR EACH ROW
        WHEN (OLD.origin IS DISTINCT FROM NEW.origin OR OLD.status IS DISTINCT FROM NEW.status OR OLD.list_price IS DISTINCT FROM NEW.list_price OR OLD.street_address IS DISTINCT FROM NEW.street_address OR OLD.city IS DISTINCT FROM NEW.city OR OLD.state IS DISTINCT FROM NEW.state OR OLD.zip_code IS DISTINCT FROM NEW.zip_code OR OLD.county IS DISTINCT FROM NEW.county OR OLD.fips_code IS DISTINCT FROM NEW.fips_code OR OLD.bedrooms IS DISTINCT FROM NEW.bedrooms OR OLD.bathrooms IS DISTINCT FROM NEW.bathrooms OR OLD.living_area IS DISTINCT FROM NEW.living_area OR OLD.lot_size IS DISTINCT FROM NEW.lot_size OR OLD.year_built IS DISTINCT FROM NEW.year_built OR OLD.property_type IS DISTINCT FROM NEW.property_type OR OLD.days_on_market IS DISTINCT FROM NEW.days_on_market OR OLD.listing_type IS DISTINCT FROM NEW.listing_type OR OLD.listing_date IS DISTINCT FROM NEW.listing_date OR OLD.original_list_price IS DISTINCT FROM NEW.original_list_price OR OLD.previous_list_price IS DISTINCT FROM NEW.previous_list_price OR OLD.last_price_change_date IS DISTINCT FROM NEW.last_price_change_date OR OLD.removed_date IS DISTINCT FROM NEW.removed_date OR OLD.last_sale_price IS DISTINCT FROM NEW.last_sale_price OR OLD.last_sale_date IS DISTINCT FROM NEW.last_sale_date OR OLD.stories IS DISTINCT FROM NEW.stories OR OLD.latitude IS DISTINCT FROM NEW.latitude OR OLD.longitude IS DISTINCT FROM NEW.longitude OR OLD.walk_score IS DISTINCT FROM NEW.walk_score OR OLD.transit_score IS DISTINCT FROM NEW.transit_score OR OLD.bike_score IS DISTINCT FROM NEW.bike_score OR OLD.rent_value IS DISTINCT FROM NEW.rent_value OR OLD.rent_low IS DISTINCT FROM NEW.rent_low OR OLD.rent_high IS DISTINCT FROM NEW.rent_high OR OLD.rent_as_of IS DISTINCT FROM NEW.rent_as_of OR OLD.value_value IS DISTINCT FROM NEW.value_value OR OLD.value_low IS DISTINCT FROM NEW.value_low OR OLD.value_high IS DISTINCT FROM NEW.value_high OR OLD.value_as_of IS DISTINCT FROM NEW.value_as_of OR OLD.last_updated IS DISTINCT FROM NEW.last_updated OR OLD.content_hash IS DISTINCT FROM NEW.content_hash)
        EXECUTE FUNCTION propdata_feed()""",
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
