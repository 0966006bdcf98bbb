"""Market decisions: snapshot, history and search answers from the stored statistics."""

from __future__ import annotations

from propdata.errors import NotFound
from propdata.kit.db import Database, Row
from propdata.markets.repository import MarketRepository
from propdata.markets.schemas import (
    HistoryEntry,
    Market,
    MarketHistory,
    MarketSearchResponse,
    Snapshot,
)
from propdata.properties.schemas import PageMeta


class MarketService:
    def __init__(self, db: Database) -> None:
        self.repo = MarketRepository(db)

    async def market(self, zip_code: str) -> Market:
        row = await self.repo.snapshot(zip_code)
        if row is None:
            raise NotFound(f"No market data for ZIP code {zip_code}.")
        return _market(row)

    async def history(self, zip_code: str, months: int) -> MarketHistory:
        row = await self.repo.snapshot(zip_code)
        if row is None:
            raise NotFound(f"No market data for ZIP code {zip_code}.")
        entries = [
            HistoryEntry(
                month=r[0],
                median_list_price=r[1],
                median_sold_price=r[2],
                active_listings=r[3],
                sold_count=r[4],
                median_days_on_market=r[5],
                average_price_per_sqft=r[6],
            )
            for r in await self.repo.history(zip_code, months)
        ]
        return MarketHistory(zip_code=row[0], city=row[1], state=row[2], history=entries)

    async def search(
        self,
        city_key: str | None,
        state: str | None,
        zip_prefix: str | None,
        limit: int,
        offset: int,
    ) -> MarketSearchResponse:
        total, rows = await self.repo.search(city_key, state, zip_prefix, limit, offset)
        return MarketSearchResponse(
            meta=PageMeta(total=total, limit=limit, offset=offset), data=[_market(r) for r in rows]
        )


def _market(r: Row) -> Market:
    return Market(
        zip_code=r[0], city=r[1], state=r[2],
        snapshot=Snapshot(
            date=r[3], median_list_price=r[4], median_sold_price=r[5], active_listings=r[6],
            new_listings30d=r[7], sold_last30d=r[8], median_days_on_market=r[9],
            average_price_per_sqft=r[10], inventory_months=r[11], list_to_sold_ratio=r[12],
        ),
    )  # fmt: skip
