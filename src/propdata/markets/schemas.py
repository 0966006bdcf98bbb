"""Wire shapes of market statistics."""

from __future__ import annotations

import msgspec

from propdata.api.schemas import Base, PageMeta


class Snapshot(Base, kw_only=True):
    date: str
    median_list_price: int | None
    median_sold_price: int | None
    active_listings: int
    new_listings30d: int = msgspec.field(name="newListings30d")
    sold_last30d: int = msgspec.field(name="soldLast30d")
    median_days_on_market: int | None
    average_price_per_sqft: int | None
    inventory_months: float | None
    list_to_sold_ratio: float | None


class HistoryEntry(Base):
    month: str
    median_list_price: int | None
    median_sold_price: int | None
    active_listings: int
    sold_count: int
    median_days_on_market: int | None
    average_price_per_sqft: int | None


class Market(Base):
    zip_code: str
    city: str
    state: str
    snapshot: Snapshot


class MarketHistory(Base):
    zip_code: str
    city: str
    state: str
    history: list[HistoryEntry]


class MarketResponse(Base):
    data: Market


class MarketHistoryResponse(Base):
    data: MarketHistory


class MarketSearchResponse(Base):
    meta: PageMeta
    data: list[Market]
