"""Every SQL statement about market statistics."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from propdata.kit.db import Database, Row, in_lists


class SnapshotRow(NamedTuple):
    """One row of `market_snapshots` as the API reads it (field names are column names)."""

    zip_code: str
    city: str
    state: str
    date: str
    median_list_price: int | None
    median_sold_price: int | None
    active_listings: int
    new_listings_30d: int
    sold_last_30d: int
    median_days_on_market: int | None
    average_price_per_sqft: int | None
    inventory_months: float | None
    list_to_sold_ratio: float | None


class HistoryRow(NamedTuple):
    """One row of `market_history` as the API reads it."""

    month: str
    median_list_price: int | None
    median_sold_price: int | None
    active_listings: int
    sold_count: int
    median_days_on_market: int | None
    average_price_per_sqft: int | None


class PlaceCount(NamedTuple):
    zip_code: str
    city: str
    state: str
    records: int


SNAPSHOT_COLUMNS = ", ".join(SnapshotRow._fields)
HISTORY_COLUMNS = ", ".join(HistoryRow._fields)


class MarketRepository:
    """Reads of the statistics that `markets.builder` computes."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def snapshot(self, zip_code: str) -> SnapshotRow | None:
        row = await self.db.fetch_one(
            f"SELECT {SNAPSHOT_COLUMNS} FROM market_snapshots WHERE zip_code = ?", (zip_code,)
        )
        return None if row is None else SnapshotRow._make(row)

    async def history(self, zip_code: str, months: int) -> list[HistoryRow]:
        """The newest `months` entries, newest first."""
        rows = await self.db.fetch_all(
            f"SELECT {HISTORY_COLUMNS} FROM market_history WHERE zip_code = ?"
            " ORDER BY month DESC LIMIT ?",
            (zip_code, months),
        )
        return [HistoryRow._make(row) for row in rows]

    async def search(
        self,
        city_key: str | None,
        state: str | None,
        zip_prefix: str | None,
        limit: int,
        offset: int,
    ) -> tuple[int, list[SnapshotRow]]:
        """Snapshots of the matching ZIP codes in ZIP order, and the exact total."""
        clauses: list[str] = []
        params: list[Any] = []
        if city_key is not None:
            clauses.append("city_key = ?")
            params.append(city_key)
        if state is not None:
            clauses.append("state = ?")
            params.append(state)
        if zip_prefix is not None:
            # A range on the primary key rather than LIKE, so the index serves it.
            clauses.append("zip_code >= ? AND zip_code < ?")
            params.extend([zip_prefix, zip_prefix + "\uffff"])
        where = " WHERE " + " AND ".join(clauses) if clauses else ""
        rows = await self.db.fetch_all(
            f"SELECT {SNAPSHOT_COLUMNS} FROM market_snapshots{where}"
            " ORDER BY zip_code LIMIT ? OFFSET ?",
            [*params, limit, offset],
        )
        count = await self.db.fetch_one(f"SELECT count(*) FROM market_snapshots{where}", params)
        return (int(count[0]) if count else 0), [SnapshotRow._make(row) for row in rows]


SNAPSHOT_INSERT = (
    "INSERT INTO market_snapshots (zip_code, city, state, city_key, date, median_list_price,"
    " median_sold_price, active_listings, new_listings_30d, sold_last_30d,"
    " median_days_on_market, average_price_per_sqft, inventory_months, list_to_sold_ratio)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
HISTORY_INSERT = (
    "INSERT INTO market_history (zip_code, month, median_list_price, median_sold_price,"
    " active_listings, sold_count, median_days_on_market, average_price_per_sqft)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)
ZIP_PLACES_INSERT = (
    "INSERT INTO zip_places (zip_code, city, state) VALUES (?, ?, ?)"
    " ON CONFLICT (zip_code) DO NOTHING"
)


class MarketStatsWriter:
    """The statements of `markets.builder.rebuild`: paged reads of the records, one replace.

    Plain portable SQL (keyset pages on the primary keys, no SQLite-only functions), so the
    PostgreSQL engine runs the same statements.
    """

    def __init__(self, db: Database) -> None:
        self.db = db

    async def property_page(
        self, columns: Sequence[str], before: str | None, limit: int
    ) -> list[Row]:
        """`columns` (id first) of the next `limit` properties, as tuples in that order: a
        rebuild reads a million, and unpacks them where it names the columns.

        Pages run in descending id order (`before` is the lowest id of the previous page),
        and `histories_between` reads the same range of histories by their primary key.
        """
        where, params = ("", []) if before is None else (" WHERE id < ?", [before])
        return await self.db.fetch_all(
            f"SELECT {', '.join(columns)} FROM properties{where} ORDER BY id DESC LIMIT ?",
            [*params, limit],
        )

    async def histories_between(self, low_id: str, high_id: str) -> list[Row]:
        """(property_id, price_history) of the properties low_id..high_id, the history as
        stored (`properties.repository.pack_histories`): one primary key range read."""
        return await self.db.fetch_all(
            "SELECT property_id, price_history FROM property_histories"
            " WHERE property_id >= ? AND property_id <= ?",
            (low_id, high_id),
        )

    async def place_counts(self, zip_codes: Sequence[str]) -> list[PlaceCount]:
        """How many records of the given ZIP codes name each (city, state)."""
        rows: list[PlaceCount] = []
        for chunk, marks in in_lists(zip_codes):
            found = await self.db.fetch_all(
                "SELECT zip_code, city, state, count(*) FROM properties"
                f" WHERE zip_code IN ({marks}) GROUP BY zip_code, city, state",
                chunk,
            )
            rows.extend(PlaceCount._make(row) for row in found)
        return rows

    async def replace(
        self, snapshots: Sequence[Sequence[Any]], history: Sequence[Sequence[Any]]
    ) -> None:
        """Swap every stored statistic for the given rows (none is left to recompute); call
        inside a transaction."""
        await self.db.execute("DELETE FROM market_snapshots")
        await self.db.execute("DELETE FROM market_history")
        await self.db.execute("DELETE FROM market_stale")
        await self.db.executemany(SNAPSHOT_INSERT, snapshots)
        await self.db.executemany(HISTORY_INSERT, history)

    async def mark_stale(self, zip_codes: Iterable[str]) -> None:
        """Name ZIP codes whose statistics a load left to recompute (`stale`)."""
        await self.db.executemany(
            "INSERT INTO market_stale (zip_code) VALUES (?) ON CONFLICT (zip_code) DO NOTHING",
            [(code,) for code in sorted(set(zip_codes))],
        )

    async def stale(self) -> list[str]:
        """The ZIP codes named by `mark_stale` and not recomputed since, in order."""
        rows = await self.db.fetch_all("SELECT zip_code FROM market_stale ORDER BY zip_code")
        return [str(row[0]) for row in rows]

    async def clear_stale(self, zip_codes: Sequence[str]) -> None:
        """The given ZIP codes' statistics are recomputed: no longer `stale`."""
        for chunk, marks in in_lists(zip_codes):
            await self.db.execute(f"DELETE FROM market_stale WHERE zip_code IN ({marks})", chunk)

    async def zip_places(self, zip_codes: Sequence[str]) -> dict[str, tuple[str, str] | None]:
        """The stored answers of the zipcodes package for the given ZIP codes: (city, state),
        or None for a ZIP the package does not know; ZIPs never looked up are absent."""
        found: dict[str, tuple[str, str] | None] = {}
        for chunk, marks in in_lists(zip_codes):
            rows = await self.db.fetch_all(
                f"SELECT zip_code, city, state FROM zip_places WHERE zip_code IN ({marks})", chunk
            )
            for zip_code, city, state in rows:
                found[zip_code] = None if city is None else (city, state)
        return found

    async def replace_zip_places(self, places: Sequence[Sequence[Any]]) -> None:
        """Swap every stored answer of the zipcodes package for `places` (zip_code, city,
        state); inside a transaction."""
        await self.db.execute("DELETE FROM zip_places")
        await self.add_zip_places(places)

    async def add_zip_places(self, places: Sequence[Sequence[Any]]) -> None:
        """Store the package's answers for ZIP codes it was asked about (zip_code, city,
        state); a ZIP already stored keeps its row."""
        await self.db.executemany(ZIP_PLACES_INSERT, places)

    async def properties_in(self, columns: Sequence[str], zip_codes: Sequence[str]) -> list[Row]:
        """`columns` of every property of the given ZIP codes (a load's touched ZIPs: the
        ZIP code index serves it)."""
        rows: list[Row] = []
        for chunk, marks in in_lists(zip_codes):
            rows += await self.db.fetch_all(
                f"SELECT {', '.join(columns)} FROM properties WHERE zip_code IN ({marks})", chunk
            )
        return rows

    async def histories_of(self, ids: Sequence[str]) -> list[Row]:
        """As `histories_between`, for the given properties."""
        found: list[Row] = []
        for chunk, marks in in_lists(ids):
            found += await self.db.fetch_all(
                "SELECT property_id, price_history FROM property_histories"
                f" WHERE property_id IN ({marks})",
                chunk,
            )
        return found

    async def replace_zips(
        self,
        zip_codes: Sequence[str],
        snapshots: Sequence[Sequence[Any]],
        history: Sequence[Sequence[Any]],
    ) -> None:
        """Swap the statistics of the given ZIP codes for the given rows; inside a
        transaction."""
        for chunk, marks in in_lists(zip_codes):
            await self.db.execute(
                f"DELETE FROM market_snapshots WHERE zip_code IN ({marks})", chunk
            )
            await self.db.execute(f"DELETE FROM market_history WHERE zip_code IN ({marks})", chunk)
        await self.db.executemany(SNAPSHOT_INSERT, snapshots)
        await self.db.executemany(HISTORY_INSERT, history)

    async def snapshot_dates(self) -> set[str]:
        """The distinct dates of the stored snapshots."""
        rows = await self.db.fetch_all("SELECT DISTINCT date FROM market_snapshots")
        return {str(row[0]) for row in rows}
