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
from propdata.migrations.steps.base import DATA, statements

SQLITE = (
    """CREATE TABLE IF NOT EXISTS property_images (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        property_id TEXT NOT NULL,
        before TEXT,
        after TEXT
    )""",
    """CREATE TABLE IF NOT EXISTS market_images (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        zip_code TEXT NOT NULL,
        before TEXT,
        after TEXT
    )""",
    """CREATE TRIGGER IF NOT EXISTS property_images_inserted AFTER INSERT ON properties
                WHEN (SELECT value FROM meta WHERE key = 'events_watching') = '1' BEGIN
                INSERT INTO property_images (property_id, before, after) VALUES (NEW.id, NULL, json_object('id', NEW.id, 'origin', NEW.origin, 'status', NEW.status, 'list_price', NEW.list_price, 'street_address', NEW.street_address, 'street_key', NEW.street_key, 'city', NEW.city, 'city_key', NEW.city_key, 'state', NEW.state, 'zip_code', NEW.zip_code, 'county', NEW.county, 'fips_code', NEW.fips_code, 'bedrooms', NEW.bedrooms, 'bathrooms', NEW.bathrooms, 'living_area', NEW.living_area, 'lot_size', NEW.lot_size, 'year_built', NEW.year_built, 'property_type', NEW.property_type, 'days_on_market', NEW.days_on_market, 'listing_type', NEW.listing_type, 'listing_date', NEW.listing_date, 'original_list_price', NEW.original_list_price, 'previous_list_price', NEW.previous_list_price, 'last_price_change_date', NEW.last_price_change_date, 'removed_date', NEW.removed_date, 'last_sale_price', NEW.last_sale_price, 'last_sale_date', NEW.last_sale_date, 'stories', NEW.stories, 'latitude', NEW.latitude, 'longitude', NEW.longitude, 'walk_score', NEW.walk_score, 'transit_score', NEW.transit_score, 'bike_score', NEW.bike_score, 'rent_value', NEW.rent_value, 'rent_low', NEW.rent_low, 'rent_high', NEW.rent_high, 'rent_as_of', NEW.rent_as_of, 'value_value', NEW.value_value, 'value_low', NEW.value_low, 'value_high', NEW.value_high, 'value_as_of', NEW.value_as_of, 'last_updated', NEW.last_updated)); END""",
    """CREATE TRIGGER IF NOT EXISTS property_images_updated AFTER UPDATE ON properties
                WHEN (SELECT value FROM meta WHERE key = 'events_watching') = '1' AND (OLD.origin IS NOT NEW.origin OR OLD.status IS NOT NEW.status OR OLD.list_price IS NOT NEW.list_price OR OLD.street_address IS NOT NEW.street_address OR OLD.city IS NOT NEW.city OR OLD.state IS NOT NEW.state OR OLD.zip_code IS NOT NEW.zip_code OR OLD.county IS NOT NEW.county OR OLD.fips_code IS NOT NEW.fips_code OR OLD.bedrooms IS NOT NEW.bedrooms OR OLD.bathrooms IS NOT NEW.bathrooms OR OLD.living_area IS NOT NEW.living_area OR OLD.lot_size IS NOT NEW.lot_size OR OLD.year_built IS NOT NEW.year_built OR OLD.property_type IS NOT NEW.property_type OR OLD.days_on_market IS NOT NEW.days_on_market OR OLD.listing_type IS NOT NEW.listing_type OR OLD.listing_date IS NOT NEW.listing_date OR OLD.original_list_price IS NOT NEW.original_list_price OR OLD.previous_list_price IS NOT NEW.previous_list_price OR OLD.last_price_change_date IS NOT NEW.last_price_change_date OR OLD.removed_date IS NOT NEW.removed_date OR OLD.last_sale_price IS NOT NEW.last_sale_price OR OLD.last_sale_date IS NOT NEW.last_sale_date OR OLD.stories IS NOT NEW.stories OR OLD.latitude IS NOT NEW.latitude OR OLD.longitude IS NOT NEW.longitude OR OLD.walk_score IS NOT NEW.walk_score OR OLD.transit_score IS NOT NEW.transit_score OR OLD.bike_score IS NOT NEW.bike_score OR OLD.rent_value IS NOT NEW.rent_value OR OLD.rent_low IS NOT NEW.rent_low OR OLD.rent_high IS NOT NEW.rent_high OR OLD.rent_as_of IS NOT NEW.rent_as_of OR OLD.value_value IS NOT NEW.value_value OR OLD.value_low IS NOT NEW.value_low OR OLD.value_high IS NOT NEW.value_high OR OLD.value_as_of IS NOT NEW.value_as_of OR OLD.last_updated IS NOT NEW.last_updated OR OLD.content_hash IS NOT NEW.content_hash)
                BEGIN INSERT INTO property_images (property_id, before, after) VALUES (NEW.id, json_object('id', OLD.id, 'origin', OLD.origin, 'status', OLD.status, 'list_price', OLD.list_price, 'street_address', OLD.street_address, 'street_key', OLD.street_key, 'city', OLD.city, 'city_key', OLD.city_key, 'state', OLD.state, 'zip_code', OLD.zip_code, 'county', OLD.county, 'fips_code', OLD.fips_code, 'bedrooms', OLD.bedrooms, 'bathrooms', OLD.bathrooms, 'living_area', OLD.living_area, 'lot_size', OLD.lot_size, 'year_built', OLD.year_built, 'property_type', OLD.property_type, 'days_on_market', OLD.days_on_market, 'listing_type', OLD.listing_type, 'listing_date', OLD.listing_date, 'original_list_price', OLD.original_list_price, 'previous_list_price', OLD.previous_list_price, 'last_price_change_date', OLD.last_price_change_date, 'removed_date', OLD.removed_date, 'last_sale_price', OLD.last_sale_price, 'last_sale_date', OLD.last_sale_date, 'stories', OLD.stories, 'latitude', OLD.latitude, 'longitude', OLD.longitude, 'walk_score', OLD.walk_score, 'transit_score', OLD.transit_score, 'bike_score', OLD.bike_score, 'rent_value', OLD.rent_value, 'rent_low', OLD.rent_low, 'rent_high', OLD.rent_high, 'rent_as_of', OLD.rent_as_of, 'value_value', OLD.value_value, 'value_low', OLD.value_low, 'value_high', OLD.value_high, 'value_as_of', OLD.value_as_of, 'last_updated', OLD.last_updated), json_object('id', NEW.id, 'origin', NEW.origin, 'status', NEW.status, 'list_price', NEW.list_price, 'street_address', NEW.street_address, 'street_key', NEW.street_key, 'city', NEW.city, 'city_key', NEW.city_key, 'state', NEW.state, 'zip_code', NEW.zip_code, 'county', NEW.county, 'fips_code', NEW.fips_code, 'bedrooms', NEW.bedrooms, 'bathrooms', NEW.bathrooms, 'living_area', NEW.living_area, 'lot_size', NEW.lot_size, 'year_built', NEW.year_built, 'property_type', NEW.property_type, 'days_on_market', NEW.days_on_market, 'listing_type', NEW.listing_type, 'listing_date', NEW.listing_date, 'original_list_price', NEW.original_list_price, 'previous_list_price', NEW.previous_list_price, 'last_price_change_date', NEW.last_price_change_date, 'removed_date', NEW.removed_date, 'last_sale_price', NEW.last_sale_price, 'last_sale_date', NEW.last_sale_date, 'stories', NEW.stories, 'latitude', NEW.latitude, 'longitude', NEW.longitude, 'walk_score', NEW.walk_score, 'transit_score', NEW.transit_score, 'bike_score', NEW.bike_score, 'rent_value', NEW.rent_value, 'rent_low', NEW.rent_low, 'rent_high', NEW.rent_high, 'rent_as_of', NEW.rent_as_of, 'value_value', NEW.value_value, 'value_low', NEW.value_low, 'value_high', NEW.value_high, 'value_as_of', NEW.value_as_of, 'last_updated', NEW.last_updated)); END""",
    """CREATE TRIGGER IF NOT EXISTS property_images_deleted AFTER DELETE ON properties
                WHEN (SELECT value FROM meta WHERE key = 'events_watching') = '1' BEGIN
                INSERT INTO property_images (property_id, before, after) VALUES (OLD.id, json_object('id', OLD.id, 'origin', OLD.origin, 'status', OLD.status, 'list_price', OLD.list_price, 'street_address', OLD.street_address, 'street_key', OLD.street_key, 'city', OLD.city, 'city_key', OLD.city_key, 'state', OLD.state, 'zip_code', OLD.zip_code, 'county', OLD.county, 'fips_code', OLD.fips_code, 'bedrooms', OLD.bedrooms, 'bathrooms', OLD.bathrooms, 'living_area', OLD.living_area, 'lot_size', OLD.lot_size, 'year_built', OLD.year_built, 'property_type', OLD.property_type, 'days_on_market', OLD.days_on_market, 'listing_type', OLD.listing_type, 'listing_date', OLD.listing_date, 'original_list_price', OLD.original_list_price, 'previous_list_price', OLD.previous_list_price, 'last_price_change_date', OLD.last_price_change_date, 'removed_date', OLD.removed_date, 'last_sale_price', OLD.last_sale_price, 'last_sale_date', OLD.last_sale_date, 'stories', OLD.stories, 'latitude', OLD.latitude, 'longitude', OLD.longitude, 'walk_score', OLD.walk_score, 'transit_score', OLD.transit_score, 'bike_score', OLD.bike_score, 'rent_value', OLD.rent_value, 'rent_low', OLD.rent_low, 'rent_high', OLD.rent_high, 'rent_as_of', OLD.rent_as_of, 'value_value', OLD.value_value, 'value_low', OLD.value_low, 'value_high', OLD.value_high, 'value_as_of', OLD.value_as_of, 'last_updated', OLD.last_updated), NULL); END""",
    """CREATE TRIGGER IF NOT EXISTS market_images_inserted AFTER INSERT ON market_snapshots
                WHEN (SELECT value FROM meta WHERE key = 'events_watching') = '1' BEGIN
                INSERT INTO market_images (zip_code, before, after) VALUES (NEW.zip_code, NULL, json_object('zip_code', NEW.zip_code, 'city', NEW.city, 'state', NEW.state, 'city_key', NEW.city_key, 'date', NEW.date, 'median_list_price', NEW.median_list_price, 'median_sold_price', NEW.median_sold_price, 'active_listings', NEW.active_listings, 'new_listings_30d', NEW.new_listings_30d, 'sold_last_30d', NEW.sold_last_30d, 'median_days_on_market', NEW.median_days_on_market, 'average_price_per_sqft', NEW.average_price_per_sqft, 'inventory_months', NEW.inventory_months, 'list_to_sold_ratio', NEW.list_to_sold_ratio)); END""",
    """CREATE TRIGGER IF NOT EXISTS market_images_updated AFTER UPDATE ON market_snapshots
                WHEN (SELECT value FROM meta WHERE key = 'events_watching') = '1' AND (OLD.zip_code IS NOT NEW.zip_code OR OLD.city IS NOT NEW.city OR OLD.state IS NOT NEW.state OR OLD.city_key IS NOT NEW.city_key OR OLD.date IS NOT NEW.date OR OLD.median_list_price IS NOT NEW.median_list_price OR OLD.median_sold_price IS NOT NEW.median_sold_price OR OLD.active_listings IS NOT NEW.active_listings OR OLD.new_listings_30d IS NOT NEW.new_listings_30d OR OLD.sold_last_30d IS NOT NEW.sold_last_30d OR OLD.median_days_on_market IS NOT NEW.median_days_on_market OR OLD.average_price_per_sqft IS NOT NEW.average_price_per_sqft OR OLD.inventory_months IS NOT NEW.inventory_months OR OLD.list_to_sold_ratio IS NOT NEW.list_to_sold_ratio)
                BEGIN INSERT INTO market_images (zip_code, before, after) VALUES (NEW.zip_code, json_object('zip_code', OLD.zip_code, 'city', OLD.city, 'state', OLD.state, 'city_key', OLD.city_key, 'date', OLD.date, 'median_list_price', OLD.median_list_price, 'median_sold_price', OLD.median_sold_price, 'active_listings', OLD.active_listings, 'new_listings_30d', OLD.new_listings_30d, 'sold_last_30d', OLD.sold_last_30d, 'median_days_on_market', OLD.median_days_on_market, 'average_price_per_sqft', OLD.average_price_per_sqft, 'inventory_months', OLD.inventory_months, 'list_to_sold_ratio', OLD.list_to_sold_ratio), json_object('zip_code', NEW.zip_code, 'city', NEW.city, 'state', NEW.state, 'city_key', NEW.city_key, 'date', NEW.date, 'median_list_price', NEW.median_list_price, 'median_sold_price', NEW.median_sold_price, 'active_listings', NEW.active_listings, 'new_listings_30d', NEW.new_listings_30d, 'sold_last_30d', NEW.sold_last_30d, 'median_days_on_market', NEW.median_days_on_market, 'average_price_per_sqft', NEW.average_price_per_sqft, 'inventory_months', NEW.inventory_months, 'list_to_sold_ratio', NEW.list_to_sold_ratio)); END""",
    """CREATE TRIGGER IF NOT EXISTS market_images_deleted AFTER DELETE ON market_snapshots
                WHEN (SELECT value FROM meta WHERE key = 'events_watching') = '1' BEGIN
                INSERT INTO market_images (zip_code, before, after) VALUES (OLD.zip_code, json_object('zip_code', OLD.zip_code, 'city', OLD.city, 'state', OLD.state, 'city_key', OLD.city_key, 'date', OLD.date, 'median_list_price', OLD.median_list_price, 'median_sold_price', OLD.median_sold_price, 'active_listings', OLD.active_listings, 'new_listings_30d', OLD.new_listings_30d, 'sold_last_30d', OLD.sold_last_30d, 'median_days_on_market', OLD.median_days_on_market, 'average_price_per_sqft', OLD.average_price_per_sqft, 'inventory_months', OLD.inventory_months, 'list_to_sold_ratio', OLD.list_to_sold_ratio), NULL); END""",
)

POSTGRESQL = (
    """CREATE TABLE IF NOT EXISTS property_images (
        seq BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        property_id TEXT NOT NULL,
        before TEXT,
        after TEXT
    )""",
    """CREATE TABLE IF NOT EXISTS market_images (
        seq BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        zip_code TEXT NOT NULL,
        before TEXT,
        after TEXT
    )""",
    """CREATE OR REPLACE FUNCTION propdata_property_images() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
        IF NOT COALESCE((SELECT value FROM meta WHERE key = 'events_watching') = '1', false) THEN
            RETURN NULL;
        END IF;
        IF TG_OP = 'INSERT' THEN
            IF EXISTS (SELECT 1 FROM made) THEN
                LOCK TABLE property_images IN SHARE ROW EXCLUSIVE MODE;
                INSERT INTO property_images (property_id, before, after) SELECT n.id, NULL, (to_jsonb(n) - 'content_hash')::text FROM made n;
            END IF;
        ELSIF TG_OP = 'DELETE' THEN
            IF EXISTS (SELECT 1 FROM gone) THEN
                LOCK TABLE property_images IN SHARE ROW EXCLUSIVE MODE;
                INSERT INTO property_images (property_id, before, after) SELECT o.id, (to_jsonb(o) - 'content_hash')::text, NULL FROM gone o;
            END IF;
        ELSIF EXISTS (SELECT 1 FROM was o JOIN now n USING (id)
                      WHERE (o.origin, o.status, o.list_price, o.street_address, o.city, o.state, o.zip_code, o.county, o.fips_code, o.bedrooms, o.bathrooms, o.living_area, o.lot_size, o.year_built, o.property_type, o.days_on_market, o.listing_type, o.listing_date, o.original_list_price, o.previous_list_price, o.last_price_change_date, o.removed_date, o.last_sale_price, o.last_sale_date, o.stories, o.latitude, o.longitude, o.walk_score, o.transit_score, o.bike_score, o.rent_value, o.rent_low, o.rent_high, o.rent_as_of, o.value_value, o.value_low, o.value_high, o.value_as_of, o.last_updated, o.content_hash) IS DISTINCT FROM (n.origin, n.status, n.list_price, n.street_address, n.city, n.state, n.zip_code, n.county, n.fips_code, n.bedrooms, n.bathrooms, n.living_area, n.lot_size, n.year_built, n.property_type, n.days_on_market, n.listing_type, n.listing_date, n.original_list_price, n.previous_list_price, n.last_price_change_date, n.removed_date, n.last_sale_price, n.last_sale_date, n.stories, n.latitude, n.longitude, n.walk_score, n.transit_score, n.bike_score, n.rent_value, n.rent_low, n.rent_high, n.rent_as_of, n.value_value, n.value_low, n.value_high, n.value_as_of, n.last_updated, n.content_hash)) THEN
            LOCK TABLE property_images IN SHARE ROW EXCLUSIVE MODE;
            INSERT INTO property_images (property_id, before, after) SELECT n.id, (to_jsonb(o) - 'content_hash')::text, (to_jsonb(n) - 'content_hash')::text
                FROM was o JOIN now n USING (id)
                WHERE (o.origin, o.status, o.list_price, o.street_address, o.city, o.state, o.zip_code, o.county, o.fips_code, o.bedrooms, o.bathrooms, o.living_area, o.lot_size, o.year_built, o.property_type, o.days_on_market, o.listing_type, o.listing_date, o.original_list_price, o.previous_list_price, o.last_price_change_date, o.removed_date, o.last_sale_price, o.last_sale_date, o.stories, o.latitude, o.longitude, o.walk_score, o.transit_score, o.bike_score, o.rent_value, o.rent_low, o.rent_high, o.rent_as_of, o.value_value, o.value_low, o.value_high, o.value_as_of, o.last_updated, o.content_hash) IS DISTINCT FROM (n.origin, n.status, n.list_price, n.street_address, n.city, n.state, n.zip_code, n.county, n.fips_code, n.bedrooms, n.bathrooms, n.living_area, n.lot_size, n.year_built, n.property_type, n.days_on_market, n.listing_type, n.listing_date, n.original_list_price, n.previous_list_price, n.last_price_change_date, n.removed_date, n.last_sale_price, n.last_sale_date, n.stories, n.latitude, n.longitude, n.walk_score, n.transit_score, n.bike_score, n.rent_value, n.rent_low, n.rent_high, n.rent_as_of, n.value_value, n.value_low, n.value_high, n.value_as_of, n.last_updated, n.content_hash);
        END IF;
        RETURN NULL;
    END $$""",
    """CREATE OR REPLACE TRIGGER property_images_inserted AFTER INSERT ON properties
        REFERENCING NEW TABLE AS made FOR EACH STATEMENT EXECUTE FUNCTION propdata_property_images()""",
    """CREATE OR REPLACE TRIGGER property_images_updated AFTER UPDATE ON properties
        REFERENCING OLD TABLE AS was NEW TABLE AS now
        FOR EACH STATEMENT EXECUTE FUNCTION propdata_property_images()""",
    """CREATE OR REPLACE TRIGGER property_images_deleted AFTER DELETE ON properties
        REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION propdata_property_images()""",
    """CREATE OR REPLACE FUNCTION propdata_market_images() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
        IF NOT COALESCE((SELECT value FROM meta WHERE key = 'events_watching') = '1', false) THEN
            RETURN NULL;
        END IF;
        IF TG_OP = 'INSERT' THEN
            IF EXISTS (SELECT 1 FROM made) THEN
                LOCK TABLE market_images IN SHARE ROW EXCLUSIVE MODE;
                INSERT INTO market_images (zip_code, before, after) SELECT n.zip_code, NULL, (to_jsonb(n) - 'content_hash')::text FROM made n;
            END IF;
        ELSIF TG_OP = 'DELETE' THEN
            IF EXISTS (SELECT 1 FROM gone) THEN
                LOCK TABLE market_images IN SHARE ROW EXCLUSIVE MODE;
                INSERT INTO market_images (zip_code, before, after) SELECT o.zip_code, (to_jsonb(o) - 'content_hash')::text, NULL FROM gone o;
            END IF;
        ELSIF EXISTS (SELECT 1 FROM was o JOIN now n USING (zip_code)
                      WHERE (o.zip_code, o.city, o.state, o.city_key, o.date, o.median_list_price, o.median_sold_price, o.active_listings, o.new_listings_30d, o.sold_last_30d, o.median_days_on_market, o.average_price_per_sqft, o.inventory_months, o.list_to_sold_ratio) IS DISTINCT FROM (n.zip_code, n.city, n.state, n.city_key, n.date, n.median_list_price, n.median_sold_price, n.active_listings, n.new_listings_30d, n.sold_last_30d, n.median_days_on_market, n.average_price_per_sqft, n.inventory_months, n.list_to_sold_ratio)) THEN
            LOCK TABLE market_images IN SHARE ROW EXCLUSIVE MODE;
            INSERT INTO market_images (zip_code, before, after) SELECT n.zip_code, (to_jsonb(o) - 'content_hash')::text, (to_jsonb(n) - 'content_hash')::text
                FROM was o JOIN now n USING (zip_code)
                WHERE (o.zip_code, o.city, o.state, o.city_key, o.date, o.median_list_price, o.median_sold_price, o.active_listings, o.new_listings_30d, o.sold_last_30d, o.median_days_on_market, o.average_price_per_sqft, o.inventory_months, o.list_to_sold_ratio) IS DISTINCT FROM (n.zip_code, n.city, n.state, n.city_key, n.date, n.median_list_price, n.median_sold_price, n.active_listings, n.new_listings_30d, n.sold_last_30d, n.median_days_on_market, n.average_price_per_sqft, n.inventory_months, n.list_to_sold_ratio);
        END IF;
        RETURN NULL;
    END $$""",
    """CREATE OR REPLACE TRIGGER market_images_inserted AFTER INSERT ON market_snapshots
        REFERENCING NEW TABLE AS made FOR EACH STATEMENT EXECUTE FUNCTION propdata_market_images()""",
    """CREATE OR REPLACE TRIGGER market_images_updated AFTER UPDATE ON market_snapshots
        REFERENCING OLD TABLE AS was NEW TABLE AS now
        FOR EACH STATEMENT EXECUTE FUNCTION propdata_market_images()""",
    """CREATE OR REPLACE TRIGGER market_images_deleted AFTER DELETE ON market_snapshots
        REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION propdata_market_images()""",
)

STORE = DATA
STEP = Step(
    9,
    "change images of properties and ZIP snapshots for the event producer",
    statements(SQLITE, POSTGRESQL),
)
