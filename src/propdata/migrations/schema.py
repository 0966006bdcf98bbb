"""The one schema definition, for SQLite and PostgreSQL, and the numbered steps that make it.

`STEPS` is one ordered list for both stores: each step belongs to the data store or the
accounts store (one PostgreSQL database holds both at scale-out; embedded, each is a SQLite
file). `migrate` and `migrate_accounts` run a store's steps through `kit.steps.upgrade`:
each once, in order, recorded in the store's `schema_steps`.

A step never changes once landed, and neither do the statements it runs: `TABLES`,
`ACCOUNT_TABLES`, the indexes and the feed below are what steps 1 and 2 create. A schema
change is a new step at the end of `STEPS` with its own statements (ALTER TABLE ...), and
`table_columns` learns of it: tests/migrations/test_steps.py compares the columns of a
store brought through every step with `table_columns`, on both stores.
"""

from __future__ import annotations

import re
import secrets
import uuid
from collections.abc import Awaitable, Callable

from propdata.kit.addresses import city_key
from propdata.kit.db import Database
from propdata.kit.geography import zip_places
from propdata.kit.steps import Step, upgrade
from propdata.plans import OWNER_LIMITS, PLANS

TABLES = [
    """
    CREATE TABLE IF NOT EXISTS meta (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL
    )""",
    """
    CREATE TABLE IF NOT EXISTS properties (
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
    # A property's two histories, one row per property (docs/architecture.md, "Histories
    # travel with their property"): a load of a million properties writes a million rows
    # here, not 17 million event and tax rows, and every reader takes a property's whole
    # history at once. JSON arrays in the wire's order: price_history [[date, event, price,
    # source], ...] newest first, tax_history [[year, taxPaid, assessedValue], ...] newest
    # year first (properties.repository.pack_histories / unpack_events).
    """
    CREATE TABLE IF NOT EXISTS property_histories (
        property_id TEXT PRIMARY KEY,
        price_history TEXT NOT NULL,
        tax_history TEXT NOT NULL
    ) WITHOUT ROWID""",
    """
    CREATE TABLE IF NOT EXISTS market_snapshots (
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
    """
    CREATE TABLE IF NOT EXISTS market_history (
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
    # The comparable sales behind each stored value estimate (valuation.service), as a JSON
    # list: one row per property keeps a million-property rebuild to a million inserts.
    """
    CREATE TABLE IF NOT EXISTS valuation_comparables (
        property_id TEXT PRIMARY KEY,
        comparables TEXT NOT NULL
    )""",
]

ACCOUNT_TABLES = [
    """
    CREATE TABLE IF NOT EXISTS meta (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL
    )""",
    """
    CREATE TABLE IF NOT EXISTS plans (
        name TEXT PRIMARY KEY,
        per_minute INTEGER NOT NULL,
        daily INTEGER,
        default_page_size INTEGER NOT NULL,
        max_page_size INTEGER NOT NULL,
        price_usd INTEGER
    )""",
    """
    CREATE TABLE IF NOT EXISTS api_keys (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        prefix TEXT NOT NULL,
        key_hash TEXT NOT NULL UNIQUE,
        plan TEXT NOT NULL REFERENCES plans(name),
        per_minute INTEGER,
        daily INTEGER,
        default_page_size INTEGER,
        max_page_size INTEGER,
        status TEXT NOT NULL,
        created_at TEXT NOT NULL,
        revoked_at TEXT,
        account_id TEXT
    )""",
    # The portal: people, their sessions, their one-time links, the audit log.
    """
    CREATE TABLE IF NOT EXISTS accounts (
        id TEXT PRIMARY KEY,
        email TEXT NOT NULL UNIQUE,
        password_hash TEXT NOT NULL,
        status TEXT NOT NULL,
        is_admin INTEGER NOT NULL,
        email_verified_at TEXT,
        created_at TEXT NOT NULL
    )""",
    """
    CREATE TABLE IF NOT EXISTS sessions (
        token_hash TEXT PRIMARY KEY,
        account_id TEXT NOT NULL,
        created_at TEXT NOT NULL,
        seen_at REAL NOT NULL,
        flash TEXT
    )""",
    """
    CREATE TABLE IF NOT EXISTS account_tokens (
        token_hash TEXT PRIMARY KEY,
        account_id TEXT NOT NULL,
        purpose TEXT NOT NULL,
        expires_at REAL NOT NULL
    )""",
    """
    CREATE TABLE IF NOT EXISTS audit_log (
        id TEXT PRIMARY KEY,
        at TEXT NOT NULL,
        actor TEXT NOT NULL,
        account_id TEXT,
        key_id TEXT,
        action TEXT NOT NULL,
        from_value TEXT,
        to_value TEXT,
        client TEXT
    )""",
]
"""The accounts store: plans, keys (and the portal's tables). Embedded, a SQLite file of its
own beside the data (config.accounts_url), so a data load never holds it up; at scale-out,
the same PostgreSQL database as the data."""

ACCOUNT_INDEXES = [
    "CREATE INDEX IF NOT EXISTS ix_keys_account ON api_keys (account_id, created_at)",
    "CREATE INDEX IF NOT EXISTS ix_sessions_account ON sessions (account_id)",
    "CREATE INDEX IF NOT EXISTS ix_sessions_seen ON sessions (seen_at)",
    "CREATE INDEX IF NOT EXISTS ix_tokens_account ON account_tokens (account_id, purpose)",
    "CREATE INDEX IF NOT EXISTS ix_audit_account ON audit_log (account_id, at)",
    "CREATE INDEX IF NOT EXISTS ix_audit_at ON audit_log (at)",
]

INDEXES = [
    "CREATE INDEX IF NOT EXISTS ix_prop_updated ON properties (last_updated, id)",
    "CREATE INDEX IF NOT EXISTS ix_prop_zip ON properties (zip_code, last_updated, id)",
    "CREATE INDEX IF NOT EXISTS ix_prop_city ON properties (city_key, state, last_updated, id)",
    "CREATE INDEX IF NOT EXISTS ix_prop_state ON properties (state, status, last_updated, id)",
    "CREATE INDEX IF NOT EXISTS ix_prop_status ON properties (status, last_updated, id)",
    "CREATE INDEX IF NOT EXISTS ix_prop_price ON properties (list_price, id)",
    # Range filters on these count from the index alone (national minSqft: 170 ms -> 8 ms).
    "CREATE INDEX IF NOT EXISTS ix_prop_dom ON properties (days_on_market, id)",
    "CREATE INDEX IF NOT EXISTS ix_prop_area ON properties (living_area, id)",
    # Every filter can be answered from an index when the search index is off or building
    # (tests/properties/test_plans.py checks each with EXPLAIN).
    "CREATE INDEX IF NOT EXISTS ix_prop_type ON properties (property_type)",
    # The box of a bbox or radius search: a latitude range, longitudes read from the index.
    "CREATE INDEX IF NOT EXISTS ix_prop_geo ON properties (latitude, longitude)",
    "CREATE INDEX IF NOT EXISTS ix_prop_beds ON properties (bedrooms)",
    "CREATE INDEX IF NOT EXISTS ix_prop_baths ON properties (bathrooms)",
    "CREATE INDEX IF NOT EXISTS ix_prop_year ON properties (year_built)",
    "CREATE INDEX IF NOT EXISTS ix_prop_origin ON properties (origin)",
    "CREATE INDEX IF NOT EXISTS ix_prop_street ON properties (street_key, city_key, state)",
    "CREATE INDEX IF NOT EXISTS ix_market_place ON market_snapshots (state, city_key)",
]

POSTGRES_INDEXES = [
    # "ORDER BY x DESC NULLS LAST, id DESC": SQLite walks (x, id) backwards for it; a
    # PostgreSQL b-tree read backwards gives nulls first, so it needs these.
    "CREATE INDEX IF NOT EXISTS ix_prop_price_desc ON properties (list_price DESC NULLS LAST, id DESC)",
    "CREATE INDEX IF NOT EXISTS ix_prop_dom_desc ON properties (days_on_market DESC NULLS LAST, id DESC)",
    "CREATE INDEX IF NOT EXISTS ix_prop_area_desc ON properties (living_area DESC NULLS LAST, id DESC)",
]

_CREATE = re.compile(r"CREATE TABLE IF NOT EXISTS (\w+) \((.*)\)", re.DOTALL)
_PRIMARY = re.compile(r"PRIMARY KEY \(([^)]*)\)")


def table_columns(
    statements: list[str] | None = None,
) -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
    """Every table of the data schema (or of `statements`, such as ACCOUNT_TABLES or
    COPIED_ACCOUNTS): (primary key columns, the other columns), in their order.

    Read off the CREATE TABLE statements, so everything that walks the whole store
    (`propdata data copy`) and the change feed's triggers know every column without a second
    list.
    """
    tables: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}
    for statement in TABLES if statements is None else statements:
        match = _CREATE.search(statement.replace("{seq}", "INTEGER PRIMARY KEY"))
        if match is None:  # an index among a step's statements
            continue
        name, body = match[1], match[2]
        columns: list[str] = []
        key: list[str] = []
        for line in (part.strip() for part in body.split("\n")):
            composite = _PRIMARY.match(line)
            if composite:
                key = [c.strip() for c in composite[1].split(",")]
            elif line:
                column = line.split()[0]
                columns.append(column)
                if "PRIMARY KEY" in line:
                    key = [column]
        assert key, f"table {name} has no primary key"
        columns += ADDED_COLUMNS.get(name, ())
        tables[name] = (tuple(key), tuple(c for c in columns if c not in key))
    return tables


ADDED_COLUMNS: dict[str, tuple[str, ...]] = {
    # step 14: an events cap for each plan, and an Enterprise key's own; step 15: the
    # saved searches and webhook endpoints likewise
    "plans": ("events_per_day", "saved_searches", "webhook_endpoints"),
    "api_keys": ("events_per_day", "saved_searches", "webhook_endpoints"),
}
"""Columns later steps added (ALTER TABLE) to the tables of TABLES and ACCOUNT_TABLES, in
the order they were added."""


FEED_TABLE = """
    CREATE TABLE IF NOT EXISTS property_changes (
        seq {seq},
        property_id TEXT NOT NULL,
        change_type TEXT NOT NULL,
        last_updated TEXT NOT NULL,
        changed_at TEXT NOT NULL DEFAULT {now}
    )"""
"""The change feed (GET /v1/properties/changes): a row for every property created, changed
or removed, in the order the store changed them, written by triggers on `properties` in the
writing transaction itself, so every path that writes the table (loads, rebuilds, ageing,
`data copy`) is in it and a rolled-back load leaves none. Not one of TABLES: `data copy`
does not copy it, the target's triggers write it again as the properties arrive."""

_SQLITE_NOW = "(strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))"
_POSTGRES_NOW = """(to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))"""
_ADDRESS_KEYS = ("street_key", "city_key")
_CHANGED_COLUMNS = tuple(c for c in table_columns()["properties"][1] if c not in _ADDRESS_KEYS)
"""Columns whose change is a change of the record: every column of `properties` but the id
and the keys derived from the address. A load that changes only the histories changes
content_hash."""

_FEED_ROW = "INSERT INTO property_changes (property_id, change_type, last_updated)"

FEED_SQLITE = [
    FEED_TABLE.format(seq="INTEGER PRIMARY KEY", now=_SQLITE_NOW),
    f"""CREATE TRIGGER IF NOT EXISTS feed_created AFTER INSERT ON properties BEGIN
        {_FEED_ROW} VALUES (NEW.id, 'created', NEW.last_updated); END""",
    f"""CREATE TRIGGER IF NOT EXISTS feed_updated AFTER UPDATE ON properties
        WHEN {" OR ".join(f"OLD.{c} IS NOT NEW.{c}" for c in _CHANGED_COLUMNS)} BEGIN
        {_FEED_ROW} VALUES (NEW.id, 'updated', NEW.last_updated); END""",
    f"""CREATE TRIGGER IF NOT EXISTS feed_removed AFTER DELETE ON properties BEGIN
        {_FEED_ROW} VALUES (OLD.id, 'updated', OLD.last_updated); END""",
]
"""SQLite runs one writer at a time, so rowid order is commit order. Step 5 replaces the
removal trigger (`_REMOVED_SQLITE`)."""


def _feed_rows_function(*, removal: str) -> str:
    """PostgreSQL's statement-level feed function: created rows as 'created', deleted ones as
    `removal` (step 1 wrote 'updated', step 5 'removed'; a landed step's text never changes)."""
    return f"""CREATE OR REPLACE FUNCTION propdata_feed_rows() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP = 'DELETE' THEN
            IF EXISTS (SELECT 1 FROM gone) THEN
                LOCK TABLE property_changes IN SHARE ROW EXCLUSIVE MODE;
                {_FEED_ROW} SELECT id, '{removal}', last_updated FROM gone;
            END IF;
        ELSIF EXISTS (SELECT 1 FROM made) THEN
            LOCK TABLE property_changes IN SHARE ROW EXCLUSIVE MODE;
            {_FEED_ROW} SELECT id, 'created', last_updated FROM made;
        END IF;
        RETURN NULL;
    END $$"""


FEED_POSTGRES = [
    FEED_TABLE.format(seq="BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY", now=_POSTGRES_NOW),
    # One feed writer at a time, until its commit: a later writer's rows get later numbers
    # and become visible after this one's, so a reader that has seen number n has seen every
    # row below it (a sequence alone hands out numbers before commits).
    f"""CREATE OR REPLACE FUNCTION propdata_feed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        LOCK TABLE property_changes IN SHARE ROW EXCLUSIVE MODE;
        {_FEED_ROW} VALUES (NEW.id, 'updated', NEW.last_updated);
        RETURN NULL;
    END $$""",
    # Rows created or removed: once a statement, from its transition table in the order the
    # rows were written (the rows and numbers a trigger a row gave; a COPY of 50,000 rows
    # took 3.7-4.2 s against 5.1-5.8 s with a trigger call, a lock and an INSERT a row).
    # Step 5 replaces this function with removals written as 'removed'.
    _feed_rows_function(removal="updated"),
    """CREATE OR REPLACE TRIGGER feed_inserted AFTER INSERT ON properties
        REFERENCING NEW TABLE AS made FOR EACH STATEMENT EXECUTE FUNCTION propdata_feed_rows()""",
    """CREATE OR REPLACE TRIGGER feed_deleted AFTER DELETE ON properties
        REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION propdata_feed_rows()""",
    # Updates stay a row at a time: the WHEN clause skips unchanged rows without a call, and
    # the order of a many-row UPDATE's feed rows stays the order the rows were changed.
    f"""CREATE OR REPLACE TRIGGER feed_updated AFTER UPDATE ON properties FOR EACH ROW
        WHEN ({" OR ".join(f"OLD.{c} IS DISTINCT FROM NEW.{c}" for c in _CHANGED_COLUMNS)})
        EXECUTE FUNCTION propdata_feed()""",
]

_REMOVED_SQLITE = [
    "DROP TRIGGER IF EXISTS feed_removed",
    f"""CREATE TRIGGER feed_removed AFTER DELETE ON properties BEGIN
        {_FEED_ROW} VALUES (OLD.id, 'removed', OLD.last_updated); END""",
]
_REMOVED_POSTGRES = [_feed_rows_function(removal="removed")]
"""Step 5: a removed property's feed row is 'removed' (the trigger or function step 1 made
wrote 'updated'; rows a store holds stay as they were written)."""


PLAN_COLUMNS = ("name", "per_minute", "daily", "default_page_size", "max_page_size", "price_usd",
                *OWNER_LIMITS)  # fmt: skip
"""What the `plans` table holds of each of `propdata.plans.PLANS` (keys join it for their
limits); the rest of a plan is read from that module."""


async def seed_plans(db: Database) -> None:
    """Make the `plans` table hold what `propdata.plans` says, at every migrate.

    A changed limit so reaches a store made earlier; an Enterprise key's own limits are
    columns of the key and stay as they are. Reads first, and writes (taking the lock) only
    when a plan differs.
    """
    wanted = [tuple(getattr(plan, c) for c in PLAN_COLUMNS) for plan in PLANS]
    held = {
        tuple(row) for row in await db.fetch_all(f"SELECT {', '.join(PLAN_COLUMNS)} FROM plans")
    }
    if held.issuperset(wanted):
        return
    if db.dialect == "postgresql":
        row = await db.fetch_one("SELECT pg_is_in_recovery()")
        if row and row[0]:
            return  # a read replica: the primary is seeded, and a standby cannot write
    updates = ", ".join(f"{c} = excluded.{c}" for c in PLAN_COLUMNS[1:])
    async with db.transaction():
        await db.executemany(
            f"INSERT INTO plans ({', '.join(PLAN_COLUMNS)})"
            f" VALUES ({', '.join('?' for _ in PLAN_COLUMNS)})"
            f" ON CONFLICT (name) DO UPDATE SET {updates}",
            wanted,
        )


EVENTS_TABLE = """
    CREATE TABLE IF NOT EXISTS events (
        seq {seq},
        id TEXT NOT NULL UNIQUE,
        owner TEXT NOT NULL,
        type TEXT NOT NULL,
        search_id TEXT,
        endpoint_id TEXT,
        created_at TEXT NOT NULL,
        body TEXT NOT NULL
    )"""
"""The event log (accounts store): every event of every owner in the order it was produced.
`seq` is the event's `sequence` and what its cursors stand for; `endpoint_id` is set only on
a `webhook.test` event, which goes to that endpoint alone and is not listed. `body` is the
event's JSON as listed, streamed and delivered."""

EVENTS_INDEXES = [
    "CREATE INDEX IF NOT EXISTS ix_events_owner ON events (owner, seq)",
    "CREATE INDEX IF NOT EXISTS ix_events_created ON events (created_at)",
]


async def _events_table(db: Database) -> None:
    seq = (
        "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY"
        if db.dialect == "postgresql"
        else "INTEGER PRIMARY KEY"
    )
    await db.execute(EVENTS_TABLE.format(seq=seq))
    for statement in EVENTS_INDEXES:
        await db.execute(statement)


IMAGE_TABLES = [
    """
    CREATE TABLE IF NOT EXISTS property_images (
        seq {seq},
        property_id TEXT NOT NULL,
        before TEXT,
        after TEXT
    )""",
    """
    CREATE TABLE IF NOT EXISTS market_images (
        seq {seq},
        zip_code TEXT NOT NULL,
        before TEXT,
        after TEXT
    )""",
]
"""What the event producer (`events.produce`) reads (data store): a row for every property
and every ZIP snapshot written while a saved search exists (`meta` key `events_watching` is
'1'), the row's columns as JSON before (null: it was created) and after (null: it was
removed), written by triggers in the writing transaction, so a rolled-back load leaves none.
The producer deletes the rows it has turned into events. SQLite numbers them AUTOINCREMENT:
a number is never handed out twice, even once every row is deleted."""

_WATCHING = "(SELECT value FROM meta WHERE key = 'events_watching') = '1'"
_IMAGED = {
    "property_images": ("properties", "property_id", "id"),
    "market_images": ("market_snapshots", "zip_code", "zip_code"),
}
"""Each image table: the table it watches, its key column and the watched table's key."""


def _watched_columns(table: str) -> tuple[str, ...]:
    key, others = table_columns()[table]
    return tuple(c for c in (*key, *others) if c != "content_hash")


def _images_sqlite() -> list[str]:
    statements = [t.format(seq="INTEGER PRIMARY KEY AUTOINCREMENT") for t in IMAGE_TABLES]
    for images, (table, key, source_key) in _IMAGED.items():
        columns = _watched_columns(table)
        changed = _CHANGED_COLUMNS if table == "properties" else columns

        def row(alias: str, columns: tuple[str, ...] = columns) -> str:
            return "json_object(" + ", ".join(f"'{c}', {alias}.{c}" for c in columns) + ")"

        insert = f"INSERT INTO {images} ({key}, before, after)"
        statements += [
            f"""CREATE TRIGGER IF NOT EXISTS {images}_inserted AFTER INSERT ON {table}
                WHEN {_WATCHING} BEGIN
                {insert} VALUES (NEW.{source_key}, NULL, {row("NEW")}); END""",
            f"""CREATE TRIGGER IF NOT EXISTS {images}_updated AFTER UPDATE ON {table}
                WHEN {_WATCHING} AND ({" OR ".join(f"OLD.{c} IS NOT NEW.{c}" for c in changed)})
                BEGIN {insert} VALUES (NEW.{source_key}, {row("OLD")}, {row("NEW")}); END""",
            f"""CREATE TRIGGER IF NOT EXISTS {images}_deleted AFTER DELETE ON {table}
                WHEN {_WATCHING} BEGIN
                {insert} VALUES (OLD.{source_key}, {row("OLD")}, NULL); END""",
        ]
    return statements


def _images_postgres() -> list[str]:
    statements = [
        t.format(seq="BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY") for t in IMAGE_TABLES
    ]
    for images, (table, key, source_key) in _IMAGED.items():
        columns = _watched_columns(table)
        changed = _CHANGED_COLUMNS if table == "properties" else columns
        json = "(to_jsonb({0}) - 'content_hash')::text"
        insert = f"INSERT INTO {images} ({key}, before, after)"
        was = ", ".join(f"o.{c}" for c in changed)
        now = ", ".join(f"n.{c}" for c in changed)
        # Once a statement, from its transition tables (as the feed's insertions); the
        # rows in the order they were written. Locked until the commit, as the feed, so a
        # reader that has seen number n has seen every number below it.
        statements.append(f"""CREATE OR REPLACE FUNCTION propdata_{images}() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
        IF NOT COALESCE({_WATCHING}, false) THEN
            RETURN NULL;
        END IF;
        IF TG_OP = 'INSERT' THEN
            IF EXISTS (SELECT 1 FROM made) THEN
                LOCK TABLE {images} IN SHARE ROW EXCLUSIVE MODE;
                {insert} SELECT n.{source_key}, NULL, {json.format("n")} FROM made n;
            END IF;
        ELSIF TG_OP = 'DELETE' THEN
            IF EXISTS (SELECT 1 FROM gone) THEN
                LOCK TABLE {images} IN SHARE ROW EXCLUSIVE MODE;
                {insert} SELECT o.{source_key}, {json.format("o")}, NULL FROM gone o;
            END IF;
        ELSIF EXISTS (SELECT 1 FROM was o JOIN now n USING ({source_key})
                      WHERE ({was}) IS DISTINCT FROM ({now})) THEN
            LOCK TABLE {images} IN SHARE ROW EXCLUSIVE MODE;
            {insert} SELECT n.{source_key}, {json.format("o")}, {json.format("n")}
                FROM was o JOIN now n USING ({source_key})
                WHERE ({was}) IS DISTINCT FROM ({now});
        END IF;
        RETURN NULL;
    END $$""")
        statements += [
            f"""CREATE OR REPLACE TRIGGER {images}_inserted AFTER INSERT ON {table}
        REFERENCING NEW TABLE AS made FOR EACH STATEMENT EXECUTE FUNCTION propdata_{images}()""",
            f"""CREATE OR REPLACE TRIGGER {images}_updated AFTER UPDATE ON {table}
        REFERENCING OLD TABLE AS was NEW TABLE AS now
        FOR EACH STATEMENT EXECUTE FUNCTION propdata_{images}()""",
            f"""CREATE OR REPLACE TRIGGER {images}_deleted AFTER DELETE ON {table}
        REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION propdata_{images}()""",
        ]
    return statements


async def _change_images(db: Database) -> None:
    for statement in _images_postgres() if db.dialect == "postgresql" else _images_sqlite():
        await db.execute(statement)


SAVED_SEARCH_TABLES = [
    """
    CREATE TABLE IF NOT EXISTS saved_searches (
        id TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        name TEXT NOT NULL,
        filters TEXT NOT NULL,
        property_ids TEXT NOT NULL,
        created_at TEXT NOT NULL
    )""",
    """
    CREATE TABLE IF NOT EXISTS event_counts (
        owner TEXT NOT NULL,
        minute INTEGER NOT NULL,
        produced INTEGER NOT NULL,
        PRIMARY KEY (owner, minute)
    )""",
    """
    CREATE TABLE IF NOT EXISTS event_drops (
        owner TEXT PRIMARY KEY,
        dropped INTEGER NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS ix_searches_owner ON saved_searches (owner, created_at, id)",
]
"""Saved searches (accounts store; `filters` and `property_ids` as JSON), and what the
producer keeps of each owner's daily event cap: events produced per minute (unix minute),
and the events not produced since the cap was reached (`data.dropped` of the next one)."""


async def _saved_searches(db: Database) -> None:
    for statement in SAVED_SEARCH_TABLES:
        await db.execute(ddl(statement, db.dialect))


WEBHOOK_TABLES = [
    """
    CREATE TABLE IF NOT EXISTS webhook_endpoints (
        id TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        url TEXT NOT NULL,
        event_types TEXT,
        search_ids TEXT,
        description TEXT,
        status TEXT NOT NULL,
        disabled_reason TEXT,
        secret TEXT NOT NULL,
        old_secret TEXT,
        old_secret_until REAL,
        cursor_seq INTEGER NOT NULL,
        created_at TEXT NOT NULL,
        failing_since REAL
    )""",
    """
    CREATE TABLE IF NOT EXISTS webhook_deliveries (
        id {seq},
        endpoint_id TEXT NOT NULL,
        event_seq INTEGER NOT NULL,
        event_id TEXT NOT NULL,
        type TEXT NOT NULL,
        state TEXT NOT NULL,
        attempt INTEGER NOT NULL,
        next_attempt_at REAL,
        claimed_until REAL,
        response_status INTEGER,
        error TEXT,
        duration_ms INTEGER,
        attempted_at TEXT,
        made_at REAL NOT NULL
    )""",
]
"""Webhook endpoints and their deliveries (accounts store). An endpoint's `cursor_seq` is the
last event of its owner already fanned out to it; `event_types` and `search_ids` are JSON
lists (NULL: all); the secret is kept as issued (deliveries are signed with it), and during
a rotation's grace the previous one beside it until `old_secret_until` (unix seconds).
`failing_since`: the first failed attempt since the last success. A delivery is `pending`
until it succeeds or fails for good; `claimed_until` is the lease of the dispatcher that is
attempting it (a crashed one's lease runs out and the delivery is attempted again)."""

WEBHOOK_INDEXES = [
    "CREATE INDEX IF NOT EXISTS ix_webhook_endpoints_owner ON webhook_endpoints (owner, created_at)",
    "CREATE INDEX IF NOT EXISTS ix_webhook_deliveries_due ON webhook_deliveries (next_attempt_at)"
    " WHERE state = 'pending'",
    "CREATE INDEX IF NOT EXISTS ix_webhook_deliveries_endpoint ON webhook_deliveries"
    " (endpoint_id, id)",
]


async def _webhook_tables(db: Database) -> None:
    seq = (
        "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY"
        if db.dialect == "postgresql"
        else "INTEGER PRIMARY KEY"
    )
    for statement in WEBHOOK_TABLES:
        await db.execute(ddl(statement, db.dialect).format(seq=seq))
    for statement in WEBHOOK_INDEXES:
        await db.execute(statement)


def ddl(statement: str, dialect: str) -> str:
    """One schema for both stores: SQLite's INTEGER/REAL become BIGINT/DOUBLE PRECISION, and
    text ids compare by bytes on both (SQLite's BINARY; PostgreSQL's "C", whatever the
    database's collation), so ties in a sort and the search index agree on either store."""
    if dialect != "postgresql":
        return statement
    statement = statement.replace("id TEXT PRIMARY KEY", 'id TEXT COLLATE "C" PRIMARY KEY')
    statement = statement.replace(" WITHOUT ROWID", "")  # SQLite's clustered table
    return re.sub(r"\bREAL\b", "DOUBLE PRECISION", re.sub(r"\bINTEGER\b", "BIGINT", statement))


Apply = Callable[[Database], Awaitable[None]]


async def _data_tables(db: Database) -> None:
    extra = POSTGRES_INDEXES + FEED_POSTGRES if db.dialect == "postgresql" else FEED_SQLITE
    for statement in TABLES + INDEXES + extra:
        await db.execute(ddl(statement, db.dialect))
    for key, value in (
        ("data_version", "0"),
        # Tells this store's cached answers from another's in a shared Redis.
        ("store_id", uuid.uuid4().hex),
        # Signs search cursors (search.cursor), so none can be forged or altered.
        ("cursor_secret", secrets.token_hex(32)),
    ):
        await db.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING", (key, value)
        )


async def _feed_removals(db: Database) -> None:
    for statement in _REMOVED_POSTGRES if db.dialect == "postgresql" else _REMOVED_SQLITE:
        await db.execute(statement)


async def _account_tables(db: Database) -> None:
    for statement in ACCOUNT_TABLES + ACCOUNT_INDEXES:
        await db.execute(ddl(statement, db.dialect))
    # The secret behind the portal's form tokens: one per store, so every instance agrees.
    await db.execute(
        "INSERT INTO meta (key, value) VALUES ('portal_secret', ?) ON CONFLICT (key) DO NOTHING",
        (secrets.token_hex(32),),
    )


def _forget(*keys: str) -> Apply:
    async def forget(db: Database) -> None:
        marks = ", ".join("?" for _ in keys)
        await db.execute(f"DELETE FROM meta WHERE key IN ({marks})", keys)

    return forget


async def _city_keys(db: Database) -> None:
    """Recompute the stored city keys with `city_key`: one UPDATE per city whose key changes,
    and a new data version when any does, so cached answers and search snapshots follow."""
    changed = False
    for table in ("properties", "market_snapshots"):
        held = await db.fetch_all(f"SELECT DISTINCT city, city_key FROM {table}")
        for city, key in held:
            fresh = city_key(city)
            if fresh != key:
                await db.execute(
                    f"UPDATE {table} SET city_key = ? WHERE city = ? AND city_key = ?",
                    (fresh, city, key),
                )
                changed = True
    if changed:
        await db.execute(
            "UPDATE meta SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT)"
            " WHERE key = 'data_version'"
        )


MODEL_TABLES = [
    # The fitted valuation models (valuation.stored): one row per kind (the value model on
    # sales, the rent model on rentals), written by every full rebuild, so a load values its
    # new records without refitting. `changed` counts the records loads changed since the
    # fit (the refit rule of ingest.pipeline).
    """
    CREATE TABLE IF NOT EXISTS valuation_models (
        kind TEXT PRIMARY KEY,
        version INTEGER NOT NULL,
        as_of TEXT NOT NULL,
        properties INTEGER NOT NULL,
        learnt INTEGER NOT NULL,
        changed INTEGER NOT NULL,
        model BLOB NOT NULL
    )""",
    # What each model learnt from, one row per kind and market (ZIP code): a load reads
    # only the markets of the records it values.
    """
    CREATE TABLE IF NOT EXISTS valuation_training (
        kind TEXT NOT NULL,
        zip_code TEXT NOT NULL,
        ids TEXT NOT NULL,
        sales BLOB NOT NULL,
        PRIMARY KEY (kind, zip_code)
    )""",
]
"""Step 8's tables (copied by `data copy`: COPIED_DATA)."""


async def _model_tables(db: Database) -> None:
    for statement in MODEL_TABLES:
        statement = ddl(statement, db.dialect)
        if db.dialect == "postgresql":
            statement = statement.replace(" BLOB ", " BYTEA ")
        await db.execute(statement)


ZIP_PLACES_TABLE = """
    CREATE TABLE IF NOT EXISTS zip_places (
        zip_code TEXT PRIMARY KEY,
        city TEXT,
        state TEXT
    )"""
"""Step 12's table: the zipcodes package's primary city and state of each ZIP code with
records (NULL for a ZIP the package does not know), as the market statistics name the ZIP
(markets.builder). Every full rebuild rewrites it; a load reads its ZIP codes here, so a
command need not load the package's whole table (most of a second) for a few ZIPs."""


async def _zip_places(db: Database) -> None:
    await db.execute(ddl(ZIP_PLACES_TABLE, db.dialect))
    codes = [str(row[0]) for row in await db.fetch_all("SELECT DISTINCT zip_code FROM properties")]
    found = zip_places(codes) if codes else {}
    await db.executemany(
        "INSERT INTO zip_places (zip_code, city, state) VALUES (?, ?, ?)"
        " ON CONFLICT (zip_code) DO NOTHING",
        [(code, *found.get(code, (None, None))) for code in codes],
    )


def _tax_images_sqlite() -> list[str]:
    insert = "INSERT INTO property_images (property_id, before, after)"
    taxes = "json_object('tax_history', json({0}.tax_history))"
    return [
        f"""CREATE TRIGGER IF NOT EXISTS property_images_taxes_gone AFTER DELETE
            ON property_histories WHEN {_WATCHING} BEGIN
            {insert} VALUES (OLD.property_id, {taxes.format("OLD")}, NULL); END""",
        f"""CREATE TRIGGER IF NOT EXISTS property_images_taxes_made AFTER INSERT
            ON property_histories WHEN {_WATCHING} BEGIN
            {insert} VALUES (NEW.property_id, NULL, {taxes.format("NEW")}); END""",
    ]


def _tax_images_postgres() -> list[str]:
    insert = "INSERT INTO property_images (property_id, before, after)"
    taxes = "json_build_object('tax_history', {0}.tax_history::json)::text"
    return [
        f"""CREATE OR REPLACE FUNCTION propdata_property_images_taxes() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
        IF NOT COALESCE({_WATCHING}, false) THEN
            RETURN NULL;
        END IF;
        IF TG_OP = 'INSERT' THEN
            IF EXISTS (SELECT 1 FROM made) THEN
                LOCK TABLE property_images IN SHARE ROW EXCLUSIVE MODE;
                {insert} SELECT n.property_id, NULL, {taxes.format("n")} FROM made n;
            END IF;
        ELSIF EXISTS (SELECT 1 FROM gone) THEN
            LOCK TABLE property_images IN SHARE ROW EXCLUSIVE MODE;
            {insert} SELECT o.property_id, {taxes.format("o")}, NULL FROM gone o;
        END IF;
        RETURN NULL;
    END $$""",
        """CREATE OR REPLACE TRIGGER property_images_taxes_made AFTER INSERT
        ON property_histories REFERENCING NEW TABLE AS made FOR EACH STATEMENT
        EXECUTE FUNCTION propdata_property_images_taxes()""",
        """CREATE OR REPLACE TRIGGER property_images_taxes_gone AFTER DELETE
        ON property_histories REFERENCING OLD TABLE AS gone FOR EACH STATEMENT
        EXECUTE FUNCTION propdata_property_images_taxes()""",
    ]


async def _tax_images(db: Database) -> None:
    """Images of a property's tax history (`property.updated` when it alone changed): a
    load replaces a property's histories row (delete, then insert), so the producer gets
    the tax history before from the deletion's image and after from the insertion's, as
    `{"tax_history": [...]}`, beside the row's own images (`events.produce.collapse`)."""
    for statement in _tax_images_postgres() if db.dialect == "postgresql" else _tax_images_sqlite():
        await db.execute(statement)


async def _events_caps(db: Database) -> None:
    """Plans hold their events cap beside their request limits (seeded at every migrate), so
    a key's cap in force is read like its other limits; an operator may set a key's own."""
    for table in ("plans", "api_keys"):
        await db.execute(f"ALTER TABLE {table} ADD COLUMN events_per_day INTEGER")


async def _owner_counts(db: Database) -> None:
    """Plans hold their saved searches and webhook endpoints beside their events cap (seeded
    at every migrate), so all of an owner's limits (`plans.OWNER_LIMITS`) are read alike; an
    operator may set an Enterprise key's own."""
    for table in ("plans", "api_keys"):
        for column in ("saved_searches", "webhook_endpoints"):
            await db.execute(f"ALTER TABLE {table} ADD COLUMN {column} INTEGER")


COPIED_DATA = [*TABLES, *MODEL_TABLES, ZIP_PLACES_TABLE]
"""The data store's tables `data copy` moves: the records, statistics, the stored valuation
models and the ZIP places. The change feed and the change images stay behind: a copy starts
its own feed, and its source's producer has turned every image into events before the copy
(`propdata data copy` runs it first)."""
COPIED_ACCOUNTS = [*ACCOUNT_TABLES, EVENTS_TABLE, *SAVED_SEARCH_TABLES, *WEBHOOK_TABLES]
"""The accounts store's tables `data copy` moves (its `meta` holds only bookkeeping):
plans, keys, the portal's people, the event log with its numbers (so clients' cursors and
endpoints' places hold), saved searches, the events' daily counts, webhook endpoints with
their secrets, and their deliveries."""


DATA, ACCOUNTS = "data", "accounts"

STEPS: list[tuple[str, Step[Apply]]] = [
    # Steps 1 and 2 are the layout a store had when stores began to record their steps.
    # Every statement is IF NOT EXISTS, CREATE OR REPLACE or ON CONFLICT DO NOTHING, so
    # such a store runs them without a change and records them.
    (DATA, Step(1, "data tables, indexes, the change feed, the store's id and secret",
                _data_tables)),
    (ACCOUNTS, Step(2, "plans, keys, the portal's people, sessions, links and audit log",
                    _account_tables)),
    # That layout's bookkeeping: a fingerprint of the schema in `meta`, and the mark of
    # keys once moved out of the data file.
    (DATA, Step(3, "forget the schema fingerprint", _forget("schema:data"))),
    (ACCOUNTS, Step(4, "forget the schema fingerprint and the keys' move",
                    _forget("schema:accounts", "keys_moved"))),
    (DATA, Step(5, "the change feed writes a removal as 'removed'", _feed_removals)),
    (DATA, Step(6, "city keys read Saint/Fort/Mount as St/Ft/Mt and drop all punctuation",
                _city_keys)),
    (ACCOUNTS, Step(7, "the event log", _events_table)),
    (DATA, Step(8, "stored valuation models and what they learnt from", _model_tables)),
    (DATA, Step(9, "change images of properties and ZIP snapshots for the event producer",
                _change_images)),
    (ACCOUNTS, Step(10, "saved searches and the events' daily counts", _saved_searches)),
    (ACCOUNTS, Step(11, "webhook endpoints and deliveries", _webhook_tables)),
    (DATA, Step(12, "the zipcodes package's city and state of each ZIP code with records",
                _zip_places)),
    (DATA, Step(13, "change images of a property's tax history", _tax_images)),
    (ACCOUNTS, Step(14, "an events cap for each plan, and an Enterprise key's own",
                    _events_caps)),
    (ACCOUNTS, Step(15, "each plan's saved searches and webhook endpoints, and an Enterprise"
                    " key's own", _owner_counts)),
]  # fmt: skip
"""Every schema step of both stores, in the order they were written."""


def steps_of(part: str) -> list[Step[Apply]]:
    """The steps of one store (DATA or ACCOUNTS), in order."""
    return [step for owner, step in STEPS if owner == part]


async def migrate(db: Database) -> None:
    """Bring the data store up to date: its steps of `STEPS` it has not recorded.

    Does nothing, and takes no lock, when the store is current: a server starting, or a key
    command, never waits on a data load that holds the write lock.
    """
    await upgrade(db, steps_of(DATA))


async def migrate_accounts(db: Database) -> None:
    """Bring the accounts store up to date (its steps), then seed the plans."""
    await upgrade(db, steps_of(ACCOUNTS))
    await seed_plans(db)


async def initialised(db: Database) -> bool:
    """Whether `migrate` ever ran on this store (commands that only read or manage a store
    refuse one that was never made, rather than make an empty one)."""
    if db.dialect == "postgresql":
        row = await db.fetch_one("SELECT to_regclass('meta') IS NOT NULL")
        return bool(row and row[0])
    row = await db.fetch_one("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'")
    return row is not None
