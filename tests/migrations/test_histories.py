"""A store made when histories were rows of `price_events` and `tax_records` migrates to one
`property_histories` row per property: every history reads back the same, in the same
order, the old tables are gone, and a second migration does nothing (both stores)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from propdata.ingest.loader import load
from propdata.ingest.synthetic import generate
from propdata.kit.db import Database
from propdata.migrations.schema import migrate
from propdata.properties.repository import PropertyRepository
from propdata.properties.schemas import TaxRecord
from tests.conftest import drop_store, new_store, open_db

AS_OF = dt.date(2026, 11, 21)
OLD_TABLES = [
    """CREATE TABLE price_events (
        property_id TEXT NOT NULL, seq INTEGER NOT NULL, date TEXT NOT NULL,
        event TEXT NOT NULL, price INTEGER, source TEXT NOT NULL,
        PRIMARY KEY (property_id, seq))""",
    """CREATE TABLE tax_records (
        property_id TEXT NOT NULL, year INTEGER NOT NULL, tax_paid INTEGER,
        assessed_value INTEGER, PRIMARY KEY (property_id, year))""",
    "CREATE INDEX ix_events_kind ON price_events (event, date)",
]


async def histories(db: Database) -> dict[str, tuple[list[tuple[object, ...]], list[object]]]:
    repo = PropertyRepository(db)
    ids = [row[0] for row in await db.fetch_all("SELECT id FROM properties ORDER BY id")]
    return {i: ([tuple(e) for e in await repo.price_history(i)],
                [tuple(t) for t in await repo.tax_history(i)]) for i in ids}  # fmt: skip


async def make_old(db: Database) -> None:
    """Turn a current store into the older layout, rows and all."""
    kept = await histories(db)
    async with db.transaction():
        for statement in OLD_TABLES:
            await db.execute(statement)
        for events, taxes in kept.values():
            await db.executemany(
                "INSERT INTO price_events (property_id, seq, date, event, price, source)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                events,
            )
            # stored in ascending years, as the old loader might have: reads sort them
            await db.executemany(
                "INSERT INTO tax_records (property_id, year, tax_paid, assessed_value)"
                " VALUES (?, ?, ?, ?)",
                sorted(taxes, key=lambda t: t[1]),  # type: ignore[arg-type, return-value]
            )
        await db.execute("DROP TABLE property_histories")
        await db.execute("DELETE FROM meta WHERE key = 'schema:data'")


async def test_an_older_store_packs_its_histories(backend: str, tmp_path: Path) -> None:
    store = await new_store(backend, tmp_path)
    db = await open_db(store)
    try:
        records = [r for _, r in generate(120, 5, AS_OF)]
        # one record with taxes given oldest first: read back newest first either way
        shuffled = records[0].tax_history[::-1]
        records[0] = records[0].__class__(
            **{f: getattr(records[0], f) for f in records[0].__struct_fields__
               if f != "tax_history"},
            tax_history=[TaxRecord(year=t.year, tax_paid=t.tax_paid,
                                   assessed_value=t.assessed_value) for t in shuffled],
        )  # fmt: skip
        await load(db, enumerate(records, 1), origin="synthetic", as_of=AS_OF)
        before = await histories(db)
        assert sum(len(events) for events, _ in before.values()) > 120
        assert any(len(taxes) > 1 for _, taxes in before.values())
        await make_old(db)
        version = await PropertyRepository(db).data_version()

        await migrate(db)
        assert await histories(db) == before
        for table in ("price_events", "tax_records"):
            if backend == "embedded":
                gone = await db.fetch_one(
                    "SELECT count(*) FROM sqlite_master WHERE name = ?", (table,)
                )
            else:
                gone = await db.fetch_one("SELECT count(*) FROM pg_tables WHERE tablename = ?"
                                          " AND schemaname = current_schema()", (table,))  # fmt: skip
            assert gone == (0,)
        assert await PropertyRepository(db).data_version() == version
        await migrate(db)  # current: nothing to do
        assert await histories(db) == before
    finally:
        await db.close()
        await drop_store(store)
