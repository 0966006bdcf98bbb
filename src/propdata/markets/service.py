"""Market decisions: snapshot, history and search answers from the stored statistics."""

from __future__ import annotations

from propdata.api.schemas import PageMeta
from propdata.errors import NotFound
from propdata.kit.db import Database
from propdata.markets.repository import MarketRepository, SnapshotRow
from propdata.markets.schemas import (
    HistoryEntry,
    Market,
    MarketHistory,
    MarketSearchResponse,
    Snapshot,
)


class MarketService:
    def __init__(self, db: Database) -> None:
        self.repo = MarketRepository(db)

    async def market(self, zip_code: str) -> Market:
        return market_of(await self._snapshot(zip_code))

    async def history(self, zip_code: str, months: int) -> MarketHistory:
        row = await self._snapshot(zip_code)
        entries = [
            HistoryEntry(
                month=r.month,
                median_list_price=r.median_list_price,
                median_sold_price=r.median_sold_price,
                active_listings=r.active_listings,
                sold_count=r.sold_count,
                median_days_on_market=r.median_days_on_market,
                average_price_per_sqft=r.average_price_per_sqft,
            )
            for r in await self.repo.history(zip_code, months)
        ]
        return MarketHistory(zip_code=row.zip_code, city=row.city, state=row.state, history=entries)

    async def _snapshot(self, zip_code: str) -> SnapshotRow:
        row = await self.repo.snapshot(zip_code)
        if row is None:
            raise no_market(zip_code)
        return row

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
            meta=PageMeta(total=total, limit=limit, offset=offset),
            data=[market_of(r) for r in rows],
        )


def no_market(zip_code: str) -> NotFound:
    """The 404 for a ZIP code without statistics."""
    return NotFound(f"No market data for ZIP code {zip_code}.")


def market_of(r: SnapshotRow) -> Market:
    """The wire market of a stored snapshot row."""
    return Market(
        zip_code=r.zip_code, city=r.city, state=r.state,
        snapshot=Snapshot(
            date=r.date, median_list_price=r.median_list_price,
            median_sold_price=r.median_sold_price, active_listings=r.active_listings,
            new_listings30d=r.new_listings_30d, sold_last30d=r.sold_last_30d,
            median_days_on_market=r.median_days_on_market,
            average_price_per_sqft=r.average_price_per_sqft,
            inventory_months=r.inventory_months, list_to_sold_ratio=r.list_to_sold_ratio,
        ),
    )  # fmt: skip
