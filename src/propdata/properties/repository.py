"""Every SQL statement about properties: reads for the API, the one write path for loads."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import msgspec

from propdata.kit import meta
from propdata.kit.db import Database
from propdata.properties.schemas import (
    Event,
    ListingType,
    PriceEvent,
    PropertyType,
    Source,
    Status,
    TaxRecord,
)


class PropertyRow(NamedTuple):
    """One row of `properties`: field names are the column names, in the table's order."""

    id: str
    origin: str
    status: Status
    list_price: int | None
    street_address: str | None
    street_key: str | None
    city: str
    city_key: str
    state: str
    zip_code: str
    county: str | None
    fips_code: str | None
    bedrooms: int | None
    bathrooms: float | None
    living_area: int | None
    lot_size: int | None
    year_built: int | None
    property_type: PropertyType | None
    days_on_market: int | None
    listing_type: ListingType | None
    listing_date: str | None
    original_list_price: int | None
    previous_list_price: int | None
    last_price_change_date: str | None
    removed_date: str | None
    last_sale_price: int | None
    last_sale_date: str | None
    stories: int | None
    latitude: float | None
    longitude: float | None
    walk_score: int | None
    transit_score: int | None
    bike_score: int | None
    rent_value: int | None
    rent_low: int | None
    rent_high: int | None
    rent_as_of: str | None
    value_value: int | None
    value_low: int | None
    value_high: int | None
    value_as_of: str | None
    last_updated: str
    content_hash: str
    parcel_id: str | None
    garage_spaces: float | None
    basement_finished_area: int | None
    fireplaces: int | None
    overall_quality: int | None
    overall_condition: int | None


class PriceHistoryRow(NamedTuple):
    """One price event of a property (seq 0 is the newest), as `price_history` gives it."""

    property_id: str
    seq: int
    date: str
    event: Event
    price: int | None
    source: Source


class TaxRow(NamedTuple):
    """One tax record of a property, as `tax_history` gives it."""

    property_id: str
    year: int
    tax_paid: int | None
    assessed_value: int | None


HISTORY_COLUMNS = ("property_id", "price_history", "tax_history")
"""The columns of `property_histories`: one row per property holding both its histories."""

_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder().decode


def pack_histories(
    property_id: str, history: Sequence[PriceEvent], taxes: Sequence[TaxRecord]
) -> tuple[str, str, str]:
    """The `property_histories` row of a property (HISTORY_COLUMNS' order): its price events
    newest first as [date, event, price, source] arrays, its tax records newest year first
    as [year, taxPaid, assessedValue], both JSON text (the order the API answers in).

    Plain tuples and lists: a load packs a million of them.
    """
    events = _encode([(e.date, e.event, e.price, e.source) for e in history]).decode()
    if not taxes:
        return property_id, events, "[]"
    ordered = sorted(taxes, key=_year, reverse=True)
    paid = _encode([(t.year, t.tax_paid, t.assessed_value) for t in ordered]).decode()
    return property_id, events, paid


def _year(t: TaxRecord) -> int:
    return t.year


def unpack_events(text: str | bytes) -> list[list[Any]]:
    """A stored price history as [date, event, price, source] lists, newest first."""
    events: list[list[Any]] = _decode(text)
    return events


def _place(city_key: str | None, state: str | None, zip_code: str | None) -> tuple[str, list[Any]]:
    """The conditions (each after AND) and parameters of a lookup's place."""
    where, params = "", []
    for column, value in (("city_key", city_key), ("state", state), ("zip_code", zip_code)):
        if value is not None:
            where += f" AND {column} = ?"
            params.append(value)
    return where, params


class LookupRow(NamedTuple):
    """What a lookup shows of a property."""

    id: str
    status: Status
    list_price: int | None
    street_address: str | None
    city: str
    state: str
    zip_code: str
    bedrooms: int | None
    bathrooms: float | None
    living_area: int | None
    last_updated: str


class AgingRow(NamedTuple):
    """What the daily re-ageing reads of a listed or recently sold property."""

    id: str
    status: Status
    listing_date: str | None
    last_sale_date: str | None
    days_on_market: int | None


COLUMNS = PropertyRow._fields
_INSERT = (
    f"INSERT INTO properties ({', '.join(COLUMNS)}) VALUES ({', '.join('?' for _ in COLUMNS)})"
    " ON CONFLICT (id) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in COLUMNS if c != "id")
)
SORT_CACHE_KIB = -8192
"""SQLite's page cache while a bulk load builds its indexes (negative: KiB), which sets the
size of the sorted runs; see `PropertyRepository.restore_indexes`."""


class Stored(NamedTuple):
    """What a load needs to know of a record that is already stored."""

    status: str
    content_hash: str
    origin: str
    zip_code: str
    listing_date: str | None


class PropertyRepository:
    def __init__(self, db: Database) -> None:
        self.db = db
        self._namespace = ""
        self._namespace_as_of: object | None = None
        """The store's `changes()` marker when `_namespace` was read (see `cache_namespace`)."""

    # -- reads -------------------------------------------------------------------------

    async def get(self, property_id: str) -> PropertyRow | None:
        row = await self.db.fetch_one(
            f"SELECT {', '.join(COLUMNS)} FROM properties WHERE id = ?", (property_id,)
        )
        return None if row is None else PropertyRow._make(row)

    async def price_history(self, property_id: str) -> list[PriceHistoryRow]:
        """Newest first."""
        row = await self.db.fetch_one(
            "SELECT price_history FROM property_histories WHERE property_id = ?", (property_id,)
        )
        if row is None:
            return []
        return [
            PriceHistoryRow(property_id, seq, date, event, price, source)
            for seq, (date, event, price, source) in enumerate(unpack_events(row[0]))
        ]

    async def tax_history(self, property_id: str) -> list[TaxRow]:
        """Newest year first."""
        row = await self.db.fetch_one(
            "SELECT tax_history FROM property_histories WHERE property_id = ?", (property_id,)
        )
        if row is None:
            return []
        return [TaxRow(property_id, *tax) for tax in _decode(row[0])]

    async def detail(
        self, property_id: str
    ) -> tuple[PropertyRow, list[PriceHistoryRow], list[TaxRow]] | None:
        """The record and both its histories in one statement (one round trip at scale-out);
        None when there is no such property."""
        row = await self.db.fetch_one(_DETAIL, (property_id, property_id))
        if row is None:
            return None
        return PropertyRow._make(row[:_WIDTH]), *unpack_histories(property_id, row[_WIDTH], row[-1])

    async def histories(
        self, property_id: str
    ) -> tuple[list[PriceHistoryRow], list[TaxRow]] | None:
        """Both histories of a property in one statement; None when there is no such property."""
        row = await self.db.fetch_one(_HISTORIES, (property_id, property_id))
        return None if row is None else unpack_histories(property_id, row[0], row[1])

    async def exists(self, property_id: str) -> bool:
        row = await self.db.fetch_one("SELECT 1 FROM properties WHERE id = ?", (property_id,))
        return row is not None

    async def find_by_address(
        self, street_key: str, city_key: str | None, state: str | None, zip_code: str | None
    ) -> list[LookupRow]:
        """Properties whose street key is `street_key`, in the place the other keys name."""
        where, params = _place(city_key, state, zip_code)
        rows = await self.db.fetch_all(
            f"SELECT {', '.join(LookupRow._fields)} FROM properties WHERE street_key = ?{where}"
            " ORDER BY zip_code, id LIMIT 50",
            [street_key, *params],
        )
        return [LookupRow._make(row) for row in rows]

    async def find_by_parcel(self, parcel_id: str) -> list[LookupRow]:
        """Properties with this parcel number, in order of ZIP code and id (the parcel index)."""
        rows = await self.db.fetch_all(
            f"SELECT {', '.join(LookupRow._fields)} FROM properties WHERE parcel_id = ?"
            " ORDER BY zip_code, id LIMIT 50",
            [parcel_id],
        )
        return [LookupRow._make(row) for row in rows]

    async def find_at_street(
        self, street_key: str, city_key: str | None, state: str | None, zip_code: str | None
    ) -> list[LookupRow]:
        """Properties at the street address of `street_key` (no unit) in that place: the one
        without a unit and every unit ("123 MAIN ST # 4"), in order of ZIP code and key."""
        where, params = _place(city_key, state, zip_code)
        units = street_key + " #"
        # A range on the key, so the street index serves it. It holds every unit in byte
        # order (SQLite's, and PostgreSQL's C and C.UTF-8 collations); the test below drops
        # what a linguistic collation, which ignores the space and '#', would let in beside.
        rows = await self.db.fetch_all(
            f"SELECT {', '.join(LookupRow._fields)}, street_key FROM properties"
            f" WHERE (street_key = ? OR (street_key >= ? AND street_key < ?)){where}"
            " ORDER BY zip_code, street_key, id LIMIT 50",
            [street_key, units, units + "\U0010ffff", *params],
        )
        return [
            LookupRow._make(row[:-1])
            for row in rows
            if row[-1] == street_key or row[-1].startswith(units)
        ]

    # -- the write path ----------------------------------------------------------------

    async def stored(self, ids: Sequence[str]) -> dict[str, Stored]:
        if not ids:
            return {}
        rows = await self.db.fetch_all(
            f"SELECT id, {', '.join(Stored._fields)} FROM properties"
            f" WHERE id IN ({', '.join('?' for _ in ids)})",
            list(ids),
        )
        return {row[0]: Stored._make(row[1:]) for row in rows}

    async def write(
        self,
        rows: Sequence[PropertyRow],
        histories: Sequence[Sequence[Any]],
        replaced: Sequence[str],
    ) -> None:
        """Upsert property rows and replace their histories (`pack_histories`, one row per
        property); `replaced` are the ids of `rows` already stored (updates), the rest are
        new. Call inside a transaction."""
        if replaced:
            marks = ", ".join("?" for _ in replaced)
            await self.db.execute(
                f"DELETE FROM property_histories WHERE property_id IN ({marks})", replaced
            )
        replacing = set(replaced)
        fresh = [row for row in rows if row.id not in replacing] if replacing else rows
        await self.db.copy_into("properties", COLUMNS, fresh)  # new ids: bulk path
        if replacing:
            await self.db.executemany(_INSERT, [row for row in rows if row.id in replacing])
        await self.db.copy_into("property_histories", HISTORY_COLUMNS, histories)

    async def defer_indexes(self) -> list[str]:
        """Drop the secondary indexes of the property tables for a bulk load; return the
        statements that recreate them, in the order they were made. SQLite only (elsewhere []).

        Call inside the load's transaction: a rollback brings them back, and readers keep
        their snapshot with its indexes. A million rows inserted at random places of each
        index cost more than sorting each index once afterwards (`restore_indexes`), which
        gives the same index contents. Primary keys (and any UNIQUE index, which must check
        every row as it arrives) stay, so lookups by id during the load stay indexed.
        """
        if self.db.dialect != "sqlite":
            return []
        made: list[tuple[int, str, str]] = []
        for table in ("properties", "property_histories"):
            for _, name, unique, origin, *_ in await self.db.fetch_all(
                f"PRAGMA index_list({table})"
            ):
                if origin != "c" or unique:
                    continue
                row = await self.db.fetch_one(
                    "SELECT rowid, sql FROM sqlite_master WHERE type = 'index' AND name = ?",
                    (name,),
                )
                if row is not None and row[1]:
                    made.append((row[0], name, row[1]))
        made.sort()
        for _, name, _ in made:
            await self.db.execute(f'DROP INDEX "{name}"')
        return [sql for _, _, sql in made]

    async def restore_indexes(self, statements: Sequence[str]) -> None:
        """Recreate the indexes `defer_indexes` dropped (inside the same transaction).

        SQLite sorts an index in runs the size of the page cache and merges them. Sorting the
        9.4 million rows of the (event, date) index of 1,000,000 properties' price events
        (when they were rows of their own) took 9-10 s CPU in runs of 4-8 MB
        merged through temporary files, 13 s in runs of 32 MB, 22 s in one run of 2 GB, and
        23-25 s whatever the runs with the connection's in-memory temporary storage
        (temp_store=MEMORY). Both settings are put back afterwards.
        """
        if not statements:
            return
        temp = await self.db.fetch_one("PRAGMA temp_store")
        cache = await self.db.fetch_one("PRAGMA cache_size")
        await self.db.execute("PRAGMA temp_store=FILE")
        await self.db.execute(f"PRAGMA cache_size={SORT_CACHE_KIB}")
        try:
            for sql in statements:
                await self.db.execute(sql)
        finally:
            await self.db.execute(f"PRAGMA temp_store={int(temp[0]) if temp else 0}")
            await self.db.execute(f"PRAGMA cache_size={int(cache[0]) if cache else -2000}")

    async def stored_history(self, property_id: str) -> list[PriceEvent]:
        return [
            PriceEvent(date=r.date, event=r.event, price=r.price, source=r.source)
            for r in await self.price_history(property_id)
        ]

    async def origin_zips(self, origin: str) -> set[str]:
        """The ZIP codes of one origin's records."""
        rows = await self.db.fetch_all(
            "SELECT DISTINCT zip_code FROM properties WHERE origin = ?", (origin,)
        )
        return {str(row[0]) for row in rows}

    async def delete_origin(self, origin: str) -> int:
        """Remove every record of one origin (a rebuild of the demo or synthetic set)."""
        sub = "SELECT id FROM properties WHERE origin = ?"
        await self.db.execute(
            f"DELETE FROM property_histories WHERE property_id IN ({sub})", (origin,)
        )
        return await self.db.execute("DELETE FROM properties WHERE origin = ?", (origin,))

    async def delete_ids(self, ids: Sequence[str]) -> int:
        """Remove these records and their histories; how many were removed."""
        if not ids:
            return 0
        marks = ", ".join("?" * len(ids))
        await self.db.execute(
            f"DELETE FROM property_histories WHERE property_id IN ({marks})", list(ids)
        )
        return await self.db.execute(f"DELETE FROM properties WHERE id IN ({marks})", list(ids))

    async def optimize(self) -> None:
        """Refresh the planner's statistics after a load (which index suits which filter)."""
        if self.db.dialect == "sqlite":
            # Full statistics (2.1-2.3 s after a load of 1,000,000 properties, whose pages
            # are still cached; bench/import_rate.py times it as optimize_s): with sampled
            # ones the planner walked a sort index past a selective filter (7 s, not 2 ms).
            await self.db.execute("PRAGMA analysis_limit=0")
            await self.db.execute("ANALYZE")
        else:
            await self.db.execute("ANALYZE properties")

    async def any(self) -> bool:
        """Whether the store holds any property."""
        return await self.db.fetch_one("SELECT 1 FROM properties LIMIT 1") is not None

    async def count_upto(self, most: int) -> int:
        """The number of properties, or `most` when there are at least as many (it reads
        no more rows than that)."""
        row = await self.db.fetch_one(
            "SELECT count(*) FROM (SELECT 1 FROM properties LIMIT ?) AS held", (max(0, most),)
        )
        return int(row[0]) if row else 0

    async def count(self, origin: str | None = None) -> int:
        if origin is None:
            row = await self.db.fetch_one("SELECT count(*) FROM properties")
        else:
            row = await self.db.fetch_one(
                "SELECT count(*) FROM properties WHERE origin = ?", (origin,)
            )
        return int(row[0]) if row else 0

    async def bump_data_version(self) -> None:
        await meta.bump(self.db, meta.DATA_VERSION)

    async def data_version(self) -> int:
        return await meta.get(self.db, meta.DATA_VERSION)

    async def aged_as_of(self) -> str:
        """The day the store was last aged to ('' before the first time)."""
        return await meta.get(self.db, meta.AGED_AS_OF)

    async def take_aging_turn(self, today: str) -> bool:
        """Claim the re-ageing of the store as of `today` (inside a write transaction): True
        for the one caller that moves `aged_as_of` forward, False when it is already there."""
        return await meta.advance(self.db, meta.AGED_AS_OF, today)

    async def listed(self) -> list[AgingRow]:
        """What ageing needs of every property whose status or days on market move with time."""
        rows = await self.db.fetch_all(
            f"SELECT {', '.join(AgingRow._fields)} FROM properties"
            " WHERE status IN ('forSale', 'forRent', 'recentlySold')",
            slow=True,
        )
        return [AgingRow._make(row) for row in rows]

    async def set_days_on_market(self, rows: Sequence[tuple[int, str]]) -> None:
        """(days, id) pairs; inside a transaction."""
        await self.db.executemany("UPDATE properties SET days_on_market = ? WHERE id = ?", rows)

    async def expire_sales(self, rows: Sequence[tuple[str, str]]) -> None:
        """(last_updated, id) of recentlySold properties the 180-day rule makes offMarket:
        they lose their listing's fields, as an offMarket record is loaded without them."""
        await self.db.executemany(
            "UPDATE properties SET status = 'offMarket', list_price = NULL,"
            " original_list_price = NULL, listing_type = NULL, listing_date = NULL,"
            " previous_list_price = NULL, last_price_change_date = NULL,"
            " days_on_market = NULL, last_updated = ? WHERE id = ? AND status = 'recentlySold'",
            rows,
        )

    async def counts(self) -> list[tuple[str, str, int]]:
        """(origin, status, records) of every pair the store holds, by origin then status."""
        rows = await self.db.fetch_all(
            "SELECT origin, status, count(*) FROM properties GROUP BY origin, status"
            " ORDER BY origin, status"
        )
        return [(str(r[0]), str(r[1]), int(r[2])) for r in rows]

    async def replication_totals(self) -> list[tuple[str, int, int, int, str, str | None]]:
        """Each replication source's (name, records written, rejects, removed, requests by
        status as JSON, when its watermark last moved): what `/metrics` shows of them, read
        from the store so every server shows the passes of whichever process ran them (the
        sources themselves are `replication`'s, a layer above every server's)."""
        rows = await self.db.fetch_all(
            "SELECT name, records, rejects, removed, requests, committed_at"
            " FROM replication_sources ORDER BY name"
        )
        return [(str(r[0]), int(r[1]), int(r[2]), int(r[3]), str(r[4]),
                 None if r[5] is None else str(r[5])) for r in rows]  # fmt: skip

    async def record_load(self, summary: dict[str, object]) -> None:
        """Keep what the last load did, in its own transaction (`propdata data status`)."""
        await meta.put(self.db, meta.LAST_LOAD, msgspec.json.encode(summary).decode())

    async def last_load(self) -> dict[str, object] | None:
        """What `record_load` kept of the last load, or None before the first."""
        text = await meta.get(self.db, meta.LAST_LOAD)
        if not text:
            return None
        found: dict[str, object] = msgspec.json.decode(text)
        return found

    async def rebuild_pending(self) -> str | None:
        """The data version a load left without its estimates and market statistics
        rebuilt, or None when they are up to date (see `mark_rebuild_pending`)."""
        return await meta.get(self.db, meta.REBUILD_PENDING) or None

    async def mark_rebuild_pending(self) -> None:
        """Record, in a load's transaction, that its rebuild has not run yet: a load that
        dies after its commit leaves this behind for the next start or command to finish."""
        await self.db.execute(
            f"INSERT INTO meta (key, value) VALUES (?, {meta.selected(meta.DATA_VERSION)})"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (meta.REBUILD_PENDING.name,),
        )

    async def clear_rebuild_pending(self, seen: str) -> bool:
        """Clear the mark a rebuild started from; a load that committed meanwhile left a
        newer one, which stays. True when cleared."""
        return bool(
            await self.db.execute(
                "UPDATE meta SET value = '' WHERE key = ? AND value = ?",
                (meta.REBUILD_PENDING.name, seen),
            )
        )

    async def meta_value(self, key: str) -> str | None:
        """One value of the `meta` table (None when the key is not there)."""
        row = await self.db.fetch_one("SELECT value FROM meta WHERE key = ?", (key,))
        return str(row[0]) if row else None

    async def set_meta(self, values: Mapping[str, str]) -> None:
        """Write values of the `meta` table (inside the caller's transaction)."""
        await self.db.executemany(
            "INSERT INTO meta (key, value) VALUES (?, ?)"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            list(values.items()),
        )

    async def cache_namespace(self) -> str:
        """The store's identity and data version: what every cached answer depends on.

        Asked on every search (and every cached request). The last one read is kept while
        the store's marker of data version moves (`Database.notices("data")`) stays put:
        on SQLite any commit, by any process, moves it, so a load's new version is seen by
        the next request; on PostgreSQL each move of the version is a notice delivered with
        its commit, heard by this process's listener within milliseconds (and the version
        is read again at least once a `wakeup.POLL`, for a notice lost), and this process's
        own writes move it at once. Without a marker (no listener yet) it is read each time."""
        marker = self.db.notices(meta.DATA_TOPIC)
        if marker is not None and marker == self._namespace_as_of:
            return self._namespace
        row = await self.db.fetch_one(
            f"SELECT {meta.selected(meta.STORE_ID)} || '.' || {meta.selected(meta.DATA_VERSION)}"
        )
        namespace = str(row[0]) if row else ""
        if marker is not None:  # taken before the read: a commit meanwhile moves it again
            self._namespace, self._namespace_as_of = namespace, marker
        return namespace


# The record and its `property_histories` row in one statement. The id is bound for the
# join rather than compared with `p.id`: on PostgreSQL that comparison would be made under the
# record's "C" collation and miss the history table's primary key (a scan).
_WIDTH = len(COLUMNS)
_DETAIL = (
    f"SELECT {', '.join(f'p.{c}' for c in COLUMNS)}, h.price_history, h.tax_history"
    " FROM properties p LEFT JOIN property_histories h ON h.property_id = ?"
    " WHERE p.id = ?"
)
_HISTORIES = (
    "SELECT h.price_history, h.tax_history"
    " FROM properties p LEFT JOIN property_histories h ON h.property_id = ?"
    " WHERE p.id = ?"
)


def unpack_histories(
    property_id: str, events: str | bytes | None, taxes: str | bytes | None
) -> tuple[list[PriceHistoryRow], list[TaxRow]]:
    """A stored history row as rows: events newest first, taxes newest year first (the
    order `pack_histories` stored them in); none when the property has no history row."""
    price = unpack_events(events) if events else []
    tax = _decode(taxes) if taxes else []
    return (
        [PriceHistoryRow(property_id, seq, *e) for seq, e in enumerate(price)],
        [TaxRow(property_id, *t) for t in tax],
    )
