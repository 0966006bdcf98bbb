"""Property decisions: what each endpoint answers, built from repository rows."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

from propdata.errors import AmbiguousAddress, Candidate, CandidateAddress, NotFound
from propdata.kit.addresses import street_key
from propdata.kit.db import Database
from propdata.properties import aging
from propdata.properties.loads import LoadsRepository
from propdata.properties.repository import (
    LookupRow,
    PriceHistoryRow,
    PropertyRepository,
    PropertyRow,
    TaxRow,
    unpack_histories,
)
from propdata.properties.schemas import (
    Address,
    Coordinates,
    Estimate,
    PriceEvent,
    PropertyDetail,
    PropertyHistory,
    PropertyLookupItem,
    Scores,
    ShortAddress,
    TaxRecord,
)


class PropertyService:
    def __init__(self, db: Database) -> None:
        self.repo = PropertyRepository(db)
        self.loads = LoadsRepository(db)

    async def age(self, today: dt.date) -> aging.Aged | None:
        """Bring the store to `today` (`aging.age`); None when it was already aged to it."""
        return await aging.age(self.repo, today)

    async def keep_aged(self, today: Callable[[], dt.date], every: float = aging.AGE_EVERY) -> None:
        """Age the store now, then check again every `every` seconds (a server's task)."""
        await aging.keep_aged(self.repo, today, every)

    async def data_version(self) -> int:
        return await self.repo.data_version()

    async def load_counts(self) -> dict[str, int]:
        """Records every committed load read, per result, whichever process loaded them."""
        return await self.loads.counts()

    async def feeds(self) -> int:
        """Continuous feeds expected to load (followers started and not stopped on purpose)."""
        return await self.loads.feeds()

    async def replication_totals(self) -> list[tuple[str, int, int, int, str, str | None]]:
        """The replication sources' totals (`PropertyRepository.replication_totals`)."""
        return await self.repo.replication_totals()

    async def rebuild_pending(self) -> bool:
        """Whether a load's estimates and market statistics are still to be rebuilt."""
        return await self.repo.rebuild_pending() is not None

    async def cache_namespace(self) -> str:
        return await self.repo.cache_namespace()

    async def detail(self, property_id: str) -> PropertyDetail:
        found = await self.repo.detail(property_id)
        if found is None:
            raise NotFound(f"No property with id '{property_id}'.")
        return _detail(*found)

    async def history(self, property_id: str) -> PropertyHistory:
        found = await self.repo.histories(property_id)
        if found is None:
            raise NotFound(f"No property with id '{property_id}'.")
        return PropertyHistory(
            id=property_id, price_history=_events(found[0]), tax_history=_taxes(found[1])
        )

    async def lookup_parcel(self, parcel_id: str) -> PropertyLookupItem:
        """The one property with this assessor's parcel number. 404 when none has it, 409
        when several do (parcel numbers are unique within a county only), naming them."""
        rows = await self.repo.find_by_parcel(parcel_id)
        if len(rows) == 1:
            return _lookup_item(rows[0])
        if not rows:
            raise NotFound("No property has that parcel number.")
        zips = sorted({row.zip_code for row in rows})
        raise AmbiguousAddress(
            f"The parcel number belongs to {len(rows)} properties (ZIP codes"
            f" {', '.join(zips)}); look one up by its address.",
            candidates=[_candidate(row) for row in rows],
        )

    async def lookup(
        self, street: str, city: str | None, state: str | None, zip_code: str | None
    ) -> PropertyLookupItem:
        """The one property at a USPS-normalised address (`city` is a city key, `state` an
        upper-case code; any of the three may be None). 404 when none matches, 409 when
        several do; either names the properties at that street address as candidates."""
        key = street_key(street)
        rows = await self.repo.find_by_address(key, city, state, zip_code)
        if len(rows) == 1:
            return _lookup_item(rows[0])
        if not rows:
            # Another unit, or no unit where units are held: the properties at the street
            # address, so a caller can choose without parsing the message.
            street_only = key.partition(" #")[0]
            near = await self.repo.find_at_street(street_only, city, state, zip_code)
            raise NotFound(
                "No property matches that address exactly"
                + ("; candidates lists those at that street address." if near else "."),
                candidates=[_candidate(row) for row in near],
            )
        zips = sorted({row.zip_code for row in rows})
        if len(zips) > 1:
            raise AmbiguousAddress(
                f"The address matches properties in several ZIP codes: {', '.join(zips)};"
                " add zipCode to choose one.",
                candidates=[_candidate(row) for row in rows],
            )
        raise AmbiguousAddress(
            f"The address matches {len(rows)} properties in ZIP code {zips[0]}"
            f" ({', '.join(row.id for row in rows[:10])}); add the unit to the street address.",
            candidates=[_candidate(row) for row in rows],
        )


def _short(r: LookupRow) -> ShortAddress:
    return ShortAddress(
        street_address=r.street_address, city=r.city, state=r.state, zip_code=r.zip_code
    )


def _lookup_item(r: LookupRow) -> PropertyLookupItem:
    return PropertyLookupItem(
        id=r.id, status=r.status, list_price=r.list_price, address=_short(r),
        bedrooms_total=r.bedrooms, bathrooms_total=r.bathrooms, living_area=r.living_area,
        last_updated=r.last_updated,
    )  # fmt: skip


def _candidate(r: LookupRow) -> Candidate:
    return Candidate(
        id=r.id,
        address=CandidateAddress(
            street_address=r.street_address, city=r.city, state=r.state, zip_code=r.zip_code
        ),
    )


def _events(rows: list[PriceHistoryRow]) -> list[PriceEvent]:
    return [PriceEvent(date=r.date, event=r.event, price=r.price, source=r.source) for r in rows]


def _taxes(rows: list[TaxRow]) -> list[TaxRecord]:
    return [
        TaxRecord(year=r.year, tax_paid=r.tax_paid, assessed_value=r.assessed_value) for r in rows
    ]


def estimate(value: int | None, low: Any, high: Any, as_of: Any) -> Estimate | None:
    """A stored estimate's wire shape; None when the rebuild left it null."""
    if value is None:
        return None
    return Estimate(value=value, low=low, high=high, as_of_date=as_of)


def gross_yield(rent: Estimate | None, value: Estimate | None) -> float | None:
    """12 x monthly rent / value, a fraction (contract.md), to four places."""
    if rent is None or value is None:
        return None
    return yield_of(rent.value, value.value)


def yield_of(rent: int | None, value: int | None) -> float | None:
    """`gross_yield` of the two estimates' values (a rent, a home's value); None without
    either (or with a value of 0)."""
    if rent is None or not value:
        return None
    return round(12 * rent / value, 4)


def price_per_square_foot(
    status: str, list_price: int | None, last_sale_price: int | None, living_area: int | None
) -> int | None:
    """The asking price of a home for sale (else its last sale price) per square foot of
    living area, rounded; None without the price or the area."""
    basis = list_price if status == "forSale" else last_sale_price
    return round(basis / living_area) if basis is not None and living_area else None


def record_of(r: PropertyRow) -> PropertyDetail:
    """The wire record of a stored row, without its histories (empty lists)."""
    return _detail(r, [], [])


def full_record(
    r: PropertyRow, events: str | bytes | None, taxes: str | bytes | None
) -> PropertyDetail:
    """The wire record of a stored row with its packed histories (`pack_histories`), as
    GET /v1/properties/{id} answers it."""
    return _detail(r, *unpack_histories(r.id, events, taxes))


def _detail(r: PropertyRow, events: list[PriceHistoryRow], taxes: list[TaxRow]) -> PropertyDetail:
    rent = estimate(r.rent_value, r.rent_low, r.rent_high, r.rent_as_of)
    value = estimate(r.value_value, r.value_low, r.value_high, r.value_as_of)
    area = r.living_area
    ppsf = price_per_square_foot(r.status, r.list_price, r.last_sale_price, area)
    walk, transit, bike = r.walk_score, r.transit_score, r.bike_score
    has_scores = walk is not None or transit is not None or bike is not None
    lat, lon = r.latitude, r.longitude
    return PropertyDetail(
        id=r.id, status=r.status, list_price=r.list_price,
        address=Address(street_address=r.street_address, city=r.city, state=r.state,
                        zip_code=r.zip_code, county=r.county, fips_code=r.fips_code),
        bedrooms_total=r.bedrooms, bathrooms_total=r.bathrooms, living_area=area,
        lot_size=r.lot_size, year_built=r.year_built, property_type=r.property_type,
        days_on_market=r.days_on_market, price_history=_events(events),
        tax_history=_taxes(taxes),
        scores=Scores(walkability=walk, transit=transit, bike=bike) if has_scores else None,
        coordinates=Coordinates(latitude=lat, longitude=lon) if lat is not None and lon is not None else None,
        last_updated=r.last_updated, listing_type=r.listing_type,
        original_list_price=r.original_list_price, previous_list_price=r.previous_list_price,
        last_price_change_date=r.last_price_change_date, removed_date=r.removed_date,
        rent_estimate=rent, value_estimate=value, gross_yield=gross_yield(rent, value),
        price_per_square_foot=ppsf, stories=r.stories, parcel_id=r.parcel_id,
        garage_spaces=r.garage_spaces, basement_finished_area=r.basement_finished_area,
        fireplaces=r.fireplaces, overall_quality=r.overall_quality,
        overall_condition=r.overall_condition,
    )  # fmt: skip
