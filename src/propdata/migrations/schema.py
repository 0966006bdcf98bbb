"""The one schema definition, applied by `migrate` (SQLite now; PostgreSQL uses the same tables)."""

from __future__ import annotations

import hashlib
import re
import secrets
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec

from propdata.kit.db import Database, StoreUnavailable
from propdata.plans import PLANS

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
    # The portal (portal.md): people, their sessions, their one-time links, the audit log.
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
_CHANGED_COLUMNS = (
    "origin", "status", "list_price", "street_address", "city", "state", "zip_code", "county",
    "fips_code", "bedrooms", "bathrooms", "living_area", "lot_size", "year_built",
    "property_type", "days_on_market", "listing_type", "listing_date", "original_list_price",
    "previous_list_price", "last_price_change_date", "removed_date", "last_sale_price",
    "last_sale_date", "stories", "latitude", "longitude", "walk_score", "transit_score",
    "bike_score", "rent_value", "rent_low", "rent_high", "rent_as_of", "value_value",
    "value_low", "value_high", "value_as_of", "last_updated", "content_hash",
)  # fmt: skip
"""Columns whose change is a change of the record (every column but the id and the keys
derived from the address); a load that changes only the histories changes content_hash."""

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
"""SQLite runs one writer at a time, so rowid order is commit order."""

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
    f"""CREATE OR REPLACE FUNCTION propdata_feed_rows() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP = 'DELETE' THEN
            IF EXISTS (SELECT 1 FROM gone) THEN
                LOCK TABLE property_changes IN SHARE ROW EXCLUSIVE MODE;
                {_FEED_ROW} SELECT id, 'updated', last_updated FROM gone;
            END IF;
        ELSIF EXISTS (SELECT 1 FROM made) THEN
            LOCK TABLE property_changes IN SHARE ROW EXCLUSIVE MODE;
            {_FEED_ROW} SELECT id, 'created', last_updated FROM made;
        END IF;
        RETURN NULL;
    END $$""",
    "DROP TRIGGER IF EXISTS feed_created ON properties",  # the one a row, before the above
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

FEED_BACKFILL = (
    f"{_FEED_ROW} SELECT id, 'created', last_updated FROM properties"
    " WHERE NOT EXISTS (SELECT 1 FROM property_changes) ORDER BY last_updated, id"
)
"""A store made before the feed: every property it holds, as created, oldest first."""


PLAN_COLUMNS = ("name", "per_minute", "daily", "default_page_size", "max_page_size", "price_usd")
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


_CREATE = re.compile(r"CREATE TABLE IF NOT EXISTS (\w+) \((.*)\)", re.DOTALL)
_PRIMARY = re.compile(r"PRIMARY KEY \(([^)]*)\)")


def table_columns(
    statements: list[str] | None = None,
) -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
    """Every table of the data schema (or of `statements`, such as ACCOUNT_TABLES): (primary
    key columns, the other columns), in their order.

    Read off the CREATE TABLE statements, so a table or column added there is known to
    everything that walks the whole store (`propdata data copy`) without a second list.
    """
    tables: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}
    for statement in TABLES if statements is None else statements:
        match = _CREATE.search(statement)
        assert match is not None, statement
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
        tables[name] = (tuple(key), tuple(c for c in columns if c not in key))
    return tables


def ddl(statement: str, dialect: str) -> str:
    """One schema for both stores: SQLite's INTEGER/REAL become BIGINT/DOUBLE PRECISION, and
    text ids compare by bytes on both (SQLite's BINARY; PostgreSQL's "C", whatever the
    database's collation), so ties in a sort and the search index agree on either store."""
    if dialect != "postgresql":
        return statement
    statement = statement.replace("id TEXT PRIMARY KEY", 'id TEXT COLLATE "C" PRIMARY KEY')
    statement = statement.replace(" WITHOUT ROWID", "")  # SQLite's clustered table
    return re.sub(r"\bREAL\b", "DOUBLE PRECISION", re.sub(r"\bINTEGER\b", "BIGINT", statement))


async def migrate(db: Database) -> None:
    """Bring the data schema up to date: tables, indexes, the data version and store id.

    Does nothing, and takes no lock, when the schema is already current: a server starting,
    or a key command, never waits on a data load that holds the write lock.
    """
    extra = POSTGRES_INDEXES + FEED_POSTGRES if db.dialect == "postgresql" else FEED_SQLITE
    seeds = [
        ("INSERT INTO meta (key, value) VALUES ('data_version', '0') ON CONFLICT (key) DO NOTHING", ()),
        # Tells this store's cached answers from another's in a shared Redis.
        ("INSERT INTO meta (key, value) VALUES ('store_id', ?) ON CONFLICT (key) DO NOTHING",
         (uuid.uuid4().hex,)),
        # Signs search cursors (properties.cursor), so none can be forged or altered.
        ("INSERT INTO meta (key, value) VALUES ('cursor_secret', ?) ON CONFLICT (key) DO NOTHING",
         (secrets.token_hex(32),)),
        (FEED_BACKFILL, ()),
    ]  # fmt: skip
    await _apply(db, "data", TABLES + INDEXES + extra, seeds, _pack_histories)


HISTORY_PAGE = 5_000
"""Properties a page while an older store's history rows are packed (`_pack_histories`)."""


async def _pack_histories(db: Database) -> None:
    """Move an older store's `price_events` and `tax_records` rows into `property_histories`
    (one row per property) and drop those tables; inside the migration's transaction, so a
    store is either migrated whole or not at all. Nothing to do for a store made without them.
    """
    if not await _has_table(db, "price_events"):
        return
    taxes = await _has_table(db, "tax_records")
    encode = msgspec.json.encode
    after: str | None = None
    while True:
        where, params = ("", []) if after is None else (" WHERE id > ?", [after])
        ids = [row[0] for row in await db.fetch_all(
            f"SELECT id FROM properties{where} ORDER BY id LIMIT ?", [*params, HISTORY_PAGE]
        )]  # fmt: skip
        if not ids:
            break
        span = (ids[0], ids[-1])
        events: dict[str, list[Any]] = {}
        for pid, date, event, price, source in await db.fetch_all(
            "SELECT property_id, date, event, price, source FROM price_events"
            " WHERE property_id >= ? AND property_id <= ? ORDER BY property_id, seq",
            span,
        ):
            events.setdefault(pid, []).append((date, event, price, source))
        paid: dict[str, list[Any]] = {}
        if taxes:
            for pid, year, tax_paid, assessed in await db.fetch_all(
                "SELECT property_id, year, tax_paid, assessed_value FROM tax_records"
                " WHERE property_id >= ? AND property_id <= ? ORDER BY property_id, year DESC",
                span,
            ):
                paid.setdefault(pid, []).append((year, tax_paid, assessed))
        await db.copy_into(
            "property_histories",
            ("property_id", "price_history", "tax_history"),
            [(i, encode(events.get(i, [])).decode(), encode(paid.get(i, [])).decode())
             for i in ids],
        )  # fmt: skip
        after = ids[-1]
    await db.execute("DROP TABLE price_events")
    if taxes:
        await db.execute("DROP TABLE tax_records")


async def initialised(db: Database) -> bool:
    """Whether `migrate` ever ran on this store (commands that only read or manage a store
    refuse one that was never made, rather than make an empty one)."""
    return await _has_table(db, "meta")


async def _has_table(db: Database, name: str) -> bool:
    if db.dialect == "postgresql":
        row = await db.fetch_one("SELECT to_regclass(?) IS NOT NULL", (name,))
        return bool(row and row[0])
    row = await db.fetch_one(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
    )
    return row is not None


async def migrate_accounts(db: Database, legacy: Database | None = None) -> None:
    """Bring the accounts schema up to date (plans, keys); likewise a no-op when current.

    `legacy`: the data store of an embedded install made before keys had their own file;
    its keys are copied over once.
    """
    seeds: list[tuple[str, tuple[Any, ...]]] = [
        # The secret behind the portal's form tokens: one per store, so every instance agrees.
        ("INSERT INTO meta (key, value) VALUES ('portal_secret', ?) ON CONFLICT (key) DO NOTHING",
         (secrets.token_hex(32),))
    ]  # fmt: skip
    await _apply(db, "accounts", ACCOUNT_TABLES + ACCOUNT_INDEXES, seeds)
    await seed_plans(db)
    if legacy is not None and legacy is not db:
        await _move_keys(legacy, db)


def _fingerprint(statements: list[str], seeds: list[tuple[str, tuple[Any, ...]]]) -> str:
    text = "\n".join(statements) + repr([sql for sql, _ in seeds])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


async def _current(db: Database, part: str, fingerprint: str) -> bool:
    """Whether `part` of the schema was applied as it is now (a read: no lock taken)."""
    try:
        row = await db.fetch_one("SELECT value FROM meta WHERE key = ?", (f"schema:{part}",))
    except StoreUnavailable:
        raise
    except Exception:  # no meta table yet: a new store
        return False
    return row is not None and row[0] == fingerprint


async def _apply(
    db: Database,
    part: str,
    statements: list[str],
    seeds: list[tuple[str, tuple[Any, ...]]],
    upgrade: Callable[[Database], Awaitable[None]] | None = None,
) -> None:
    statements = [ddl(statement, db.dialect) for statement in statements]
    fingerprint = _fingerprint(statements, seeds)
    if await _current(db, part, fingerprint):
        return
    if db.dialect == "postgresql":
        row = await db.fetch_one("SELECT pg_is_in_recovery()")
        if row and row[0]:
            return  # a read replica: the primary is migrated, and a standby cannot write
    async with db.transaction():
        if db.dialect == "postgresql":
            # Several workers may start at once; one migrates, the others wait for it.
            await db.execute("SELECT pg_advisory_xact_lock(7231001)")
        for statement in statements:
            await db.execute(statement)
            await _add_new_columns(db, statement)
        for sql, params in seeds:
            await db.execute(sql, params)
        if upgrade is not None:  # moves rows of an older layout, in the same transaction
            await upgrade(db)
        await db.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?)"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (f"schema:{part}", fingerprint),
        )


async def _add_new_columns(db: Database, statement: str) -> None:
    """Add the columns a CREATE TABLE gained since the table was made (CREATE TABLE IF NOT
    EXISTS leaves an existing table as it was): new columns are always nullable."""
    if not statement.lstrip().startswith("CREATE TABLE"):
        return
    ((table, (key, others)),) = table_columns([statement]).items()
    if db.dialect == "postgresql":
        rows = await db.fetch_all(
            "SELECT column_name FROM information_schema.columns"
            " WHERE table_schema = current_schema() AND table_name = ?",
            (table,),
        )
    else:
        rows = [(row[1],) for row in await db.fetch_all(f"PRAGMA table_info({table})")]
    present = {row[0] for row in rows}
    for column in (*key, *others):
        if column not in present:
            line = next(
                part.strip().rstrip(",") for part in statement.split("\n")
                if part.strip().split(" ")[0] == column
            )  # fmt: skip
            await db.execute(f"ALTER TABLE {table} ADD COLUMN {line}")


async def _move_keys(data: Database, accounts: Database) -> None:
    """Copy the keys an older embedded install kept in its data file, once."""
    moved = await accounts.fetch_one("SELECT value FROM meta WHERE key = 'keys_moved'")
    if moved is not None:
        return
    rows: list[Any] = []
    try:
        columns = ", ".join(_KEY_COLUMNS)
        rows = await data.fetch_all(f"SELECT {columns} FROM api_keys")
    except StoreUnavailable:
        raise
    except Exception:  # no api_keys table in the data store: nothing to move
        rows = []
    async with accounts.transaction():
        marks = ", ".join("?" for _ in _KEY_COLUMNS)
        await accounts.executemany(
            f"INSERT INTO api_keys ({', '.join(_KEY_COLUMNS)}) VALUES ({marks})"
            " ON CONFLICT (id) DO NOTHING",
            rows,
        )
        await accounts.execute(
            # Workers starting together may both get here: the first one's mark stands.
            "INSERT INTO meta (key, value) VALUES ('keys_moved', ?) ON CONFLICT (key) DO NOTHING",
            (str(len(rows)),),
        )


_KEY_COLUMNS = ("id",) + table_columns(ACCOUNT_TABLES)["api_keys"][1]
