"""Property decisions: what each endpoint answers, built from repository rows."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections import OrderedDict
from typing import Any

from propdata.errors import AmbiguousAddress, NotFound
from propdata.kit import memory
from propdata.kit.addresses import city_key, street_key
from propdata.kit.db import Database, Row
from propdata.properties.index import INDEX_COLUMNS, IndexBuilder, SearchIndex
from propdata.properties.repository import PropertyRepository, SearchFilters
from propdata.properties.schemas import (
    Address,
    Coordinates,
    Estimate,
    PageMeta,
    PriceEvent,
    PropertyDetail,
    PropertyHistory,
    PropertyLookupItem,
    PropertySearchItem,
    Scores,
    SearchResponse,
    ShortAddress,
    TaxRecord,
    Valuation,
)
from propdata.valuation.service import comparables

TOTALS_KEPT = 20_000
INDEX_PAGE = 10_000
"""Rows a page of the index build reads: about 50 ms of SQLite work between requests."""

INDEX_RETRY = 60
"""Seconds before a failed build is tried again (each try reads the whole table)."""

log = logging.getLogger("propdata")


class PropertyService:
    def __init__(self, db: Database, *, search_index: bool = True) -> None:
        self.repo = PropertyRepository(db)
        # Exact totals by (store id, data version, filters): only a load changes the data and
        # every load bumps the version, so a kept total is never stale. Paging through one
        # search counts once. (Used while the search index is off or being built.)
        self._totals: OrderedDict[tuple[str, str], int] = OrderedDict()
        self._use_index = search_index
        self._index: SearchIndex | None = None
        self._building: asyncio.Task[None] | None = None
        self._failed_at = -math.inf

    # -- the search index ----------------------------------------------------------------

    async def index_status(self) -> str:
        """The index: "ok" when it answers for the current data, "building", or "off"."""
        if not self._use_index:
            return "off"
        current = self._current_index(await self.repo.cache_namespace())
        return "ok" if current is not None else "building"

    def warm(self) -> None:
        """Start building the search index (at start-up, so the first searches find it)."""
        if self._use_index and self._index is None and self._building is None:
            self._building = asyncio.create_task(self._build())

    async def close(self) -> None:
        if self._building is not None and not self._building.done():
            self._building.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._building

    def _current_index(self, namespace: str) -> SearchIndex | None:
        """The index when it was built from this data version; else start building it."""
        if not self._use_index:
            return None
        index = self._index
        if index is not None and index.namespace == namespace:
            return index
        self._index = None  # built from an older version: it can never answer again
        idle = self._building is None or self._building.done()
        if idle and time.monotonic() - self._failed_at > INDEX_RETRY:
            self._building = asyncio.create_task(self._build())
        return None

    async def _build(self) -> None:
        try:
            namespace = await self.repo.cache_namespace()
            builder = IndexBuilder(namespace)
            while True:
                rows = await self.repo.index_page(INDEX_COLUMNS, builder.last_id, INDEX_PAGE)
                builder.add(rows)
                if len(rows) < INDEX_PAGE:
                    break
                await asyncio.sleep(0)  # let requests in between pages
            if await self.repo.cache_namespace() != namespace:
                return  # a load landed meanwhile: the next search starts again
            index = await asyncio.to_thread(builder.finish)  # numpy's sorts release the GIL
            self._index = index
            await self.repo.release_cache()  # the build read every row through it
            memory.trim()
            log.info("search index ready: %d properties, %.0f MB", index.size, index.nbytes / 1e6)
        except asyncio.CancelledError:
            raise
        except Exception:  # searches go on through SQL; a search tries again later
            self._failed_at = time.monotonic()
            log.exception("building the search index failed; trying again in %d s", INDEX_RETRY)

    async def data_version(self) -> int:
        return await self.repo.data_version()

    async def cache_namespace(self) -> str:
        return await self.repo.cache_namespace()

    async def detail(self, property_id: str) -> PropertyDetail:
        row = await self.repo.get(property_id)
        if row is None:
            raise NotFound(f"No property with id '{property_id}'.")
        return _detail(
            row,
            await self.repo.price_history(property_id),
            await self.repo.tax_history(property_id),
        )

    async def history(self, property_id: str) -> PropertyHistory:
        if not await self.repo.exists(property_id):
            raise NotFound(f"No property with id '{property_id}'.")
        return PropertyHistory(
            id=property_id,
            price_history=_events(await self.repo.price_history(property_id)),
            tax_history=_taxes(await self.repo.tax_history(property_id)),
        )

    async def lookup(
        self, street: str, city: str, state: str, zip_code: str | None
    ) -> PropertyLookupItem:
        """The one property at a USPS-normalised address; 409 when ZIP codes disagree."""
        rows = await self.repo.find_by_address(street_key(street), city_key(city), state, zip_code)
        if not rows:
            raise NotFound("No property matches that address exactly.")
        zips = sorted({row[6] for row in rows})
        if len(zips) > 1:
            raise AmbiguousAddress(
                f"The address matches properties in several ZIP codes: {', '.join(zips)};"
                " add zipCode to choose one."
            )
        if len(rows) > 1:
            raise AmbiguousAddress(
                f"The address matches {len(rows)} properties in ZIP code {zips[0]}"
                f" ({', '.join(row[0] for row in rows[:10])}); add the unit to the street address."
            )
        r = rows[0]
        return PropertyLookupItem(
            id=r[0], status=r[1], list_price=r[2], address=ShortAddress(
                street_address=r[3], city=r[4], state=r[5], zip_code=r[6]),
            bedrooms_total=r[7], bathrooms_total=r[8], living_area=r[9], last_updated=r[10],
        )  # fmt: skip

    async def search(
        self, filters: SearchFilters, sort: str, order: str, limit: int, offset: int
    ) -> SearchResponse:
        namespace = await self.repo.cache_namespace()
        index = self._current_index(namespace)
        rows: list[Row] | None = None
        if index is not None:
            total, ids = index.search(filters, sort, order, limit, offset)
            rows = await self.repo.search_rows(ids)
            if len(rows) != len(ids) or await self.repo.cache_namespace() != namespace:
                rows = None  # a load landed while we read: answer from the store itself
        if rows is None:
            rows = await self.repo.search_page(filters, sort, order, limit, offset)
            total = await self._total(filters)
        items = [
            PropertySearchItem(
                id=r[0],
                status=r[1],
                list_price=r[2],
                address=ShortAddress(street_address=r[3], city=r[4], state=r[5], zip_code=r[6]),
                bedrooms_total=r[7],
                bathrooms_total=r[8],
                living_area=r[9],
                days_on_market=r[10],
                last_sale_price=r[11],
                last_sale_date=r[12],
                last_updated=r[13],
            )
            for r in rows
        ]
        return SearchResponse(meta=PageMeta(total=total, limit=limit, offset=offset), data=items)

    async def _total(self, filters: SearchFilters) -> int:
        key = (await self.repo.cache_namespace(), repr(filters))
        total = self._totals.get(key)
        if total is None:
            total = self._totals[key] = await self.repo.count_matches(filters)
            if len(self._totals) > TOTALS_KEPT:
                self._totals.popitem(last=False)
        else:
            self._totals.move_to_end(key)
        return total

    async def valuation(self, property_id: str) -> Valuation:
        """The stored estimates and the comparable sales the last rebuild blended into them."""
        detail = await self.detail(property_id)
        return Valuation(
            id=detail.id,
            value_estimate=detail.value_estimate,
            rent_estimate=detail.rent_estimate,
            gross_yield=detail.gross_yield,
            comparables=await comparables(self.repo.db, property_id),
        )


def _events(rows: list[Row]) -> list[PriceEvent]:
    return [PriceEvent(date=r[0], event=r[1], price=r[2], source=r[3]) for r in rows]


def _taxes(rows: list[Row]) -> list[TaxRecord]:
    return [TaxRecord(year=r[0], tax_paid=r[1], assessed_value=r[2]) for r in rows]


def _estimate(value: Any, low: Any, high: Any, as_of: Any) -> Estimate | None:
    if value is None:
        return None
    return Estimate(value=value, low=low, high=high, as_of_date=as_of)


def _detail(r: Row, events: list[Row], taxes: list[Row]) -> PropertyDetail:
    (pid, _origin, status, list_price, street, _sk, city, _ck, state, zip_code, county, fips,
     beds, baths, area, lot, year, ptype, dom, listing_type, _ld, original, previous,
     change_date, removed, last_sale_price, _last_sale_date, stories, lat, lon, walk,
     transit, bike, rv, rl, rh, ra, vv, vl, vh, va, updated, _hash) = r  # fmt: skip
    rent = _estimate(rv, rl, rh, ra)
    value = _estimate(vv, vl, vh, va)
    gross_yield = (
        round(12 * rent.value / value.value, 4) if rent and value and value.value else None
    )
    basis = list_price if status == "forSale" else last_sale_price
    ppsf = round(basis / area) if basis is not None and area else None
    has_scores = walk is not None or transit is not None or bike is not None
    return PropertyDetail(
        id=pid, status=status, list_price=list_price,
        address=Address(street_address=street, city=city, state=state, zip_code=zip_code,
                        county=county, fips_code=fips),
        bedrooms_total=beds, bathrooms_total=baths, living_area=area, lot_size=lot,
        year_built=year, property_type=ptype, days_on_market=dom,
        price_history=_events(events), tax_history=_taxes(taxes),
        scores=Scores(walkability=walk, transit=transit, bike=bike) if has_scores else None,
        coordinates=Coordinates(latitude=lat, longitude=lon) if lat is not None and lon is not None else None,
        last_updated=updated, listing_type=listing_type, original_list_price=original,
        previous_list_price=previous, last_price_change_date=change_date, removed_date=removed,
        rent_estimate=rent, value_estimate=value, gross_yield=gross_yield,
        price_per_square_foot=ppsf, stories=stories,
    )  # fmt: skip
