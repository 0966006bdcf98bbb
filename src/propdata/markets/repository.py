"""Every SQL statement about market statistics."""

from __future__ import annotations

from typing import Any

from propdata.kit.db import Database, Row

SNAPSHOT_COLUMNS = (
    "zip_code, city, state, date, median_list_price, median_sold_price, active_listings,"
    " new_listings_30d, sold_last_30d, median_days_on_market, average_price_per_sqft,"
    " inventory_months, list_to_sold_ratio"
)
HISTORY_COLUMNS = (
    "month, median_list_price, median_sold_price, active_listings, sold_count,"
    " median_days_on_market, average_price_per_sqft"
)


class MarketRepository:
    """Reads of the statistics that `markets.builder` computes."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def snapshot(self, zip_code: str) -> Row | None:
        return await self.db.fetch_one(
            f"SELECT {SNAPSHOT_COLUMNS} FROM market_snapshots WHERE zip_code = ?", (zip_code,)
        )

    async def history(self, zip_code: str, months: int) -> list[Row]:
        """The newest `months` entries, newest first."""
        return await self.db.fetch_all(
            f"SELECT {HISTORY_COLUMNS} FROM market_history WHERE zip_code = ?"
            " ORDER BY month DESC LIMIT ?",
            (zip_code, months),
        )

    async def search(
        self,
        city_key: str | None,
        state: str | None,
        zip_prefix: str | None,
        limit: int,
        offset: int,
    ) -> tuple[int, list[Row]]:
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
        return (int(count[0]) if count else 0), rows
