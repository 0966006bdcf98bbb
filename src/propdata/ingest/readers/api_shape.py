"""The API's own record shape as input: what GET /v1/properties/{id} returns, read back.

The wire structs in properties/schemas.py have every field required (a response always
carries them); an input may leave out what it does not know, so these mirror them with null
defaults and refuse fields they do not know. JSON Lines and API-shaped CSV both end here.
"""

from __future__ import annotations

import re
from typing import Annotated

import msgspec

from propdata.properties.schemas import (
    EVENTS,
    LISTING_TYPES,
    PROPERTY_TYPES,
    SOURCES,
    STATUSES,
    Address,
    Coordinates,
    Estimate,
    Event,
    ListingType,
    PriceEvent,
    PropertyDetail,
    PropertyType,
    Scores,
    Source,
    Status,
    TaxRecord,
)

Int = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]
"""An integer SQLite can store; a larger one is a reject, not an error halfway into a load."""


class _In(msgspec.Struct, rename="camel", kw_only=True, forbid_unknown_fields=True):
    pass


class _AddressIn(_In):
    city: str
    state: str
    zip_code: str
    street_address: str | None = None
    county: str | None = None
    fips_code: str | None = None


class _PriceEventIn(_In):
    date: str
    event: Event
    source: Source
    price: Int | None = None


class _TaxRecordIn(_In):
    year: Int
    tax_paid: Int | None = None
    assessed_value: Int | None = None


class _ScoresIn(_In):
    walkability: Int | None = None
    transit: Int | None = None
    bike: Int | None = None


class _CoordinatesIn(_In):
    latitude: float
    longitude: float


class _EstimateIn(_In):
    value: Int
    low: Int
    high: Int
    as_of_date: str


class PropertyIn(_In):
    id: str
    status: Status
    address: _AddressIn
    last_updated: str
    list_price: Int | None = None
    bedrooms_total: Int | None = None
    bathrooms_total: float | None = None
    living_area: Int | None = None
    lot_size: Int | None = None
    year_built: Int | None = None
    property_type: PropertyType | None = None
    days_on_market: Int | None = None
    price_history: list[_PriceEventIn] = []
    tax_history: list[_TaxRecordIn] = []
    scores: _ScoresIn | None = None
    coordinates: _CoordinatesIn | None = None
    listing_type: ListingType | None = None
    original_list_price: Int | None = None
    stories: Int | None = None
    parcel_id: str | None = None
    garage_spaces: float | None = None
    basement_finished_area: Int | None = None
    fireplaces: Int | None = None
    overall_quality: Int | None = None
    overall_condition: Int | None = None
    rent_estimate: _EstimateIn | None = None
    value_estimate: _EstimateIn | None = None
    # Derived from priceHistory or computed on output: accepted so that an export loads
    # back, and ignored (the loader derives them again).
    previous_list_price: Int | None = None
    last_price_change_date: str | None = None
    removed_date: str | None = None
    gross_yield: float | None = None
    price_per_square_foot: Int | None = None


class Envelope(msgspec.Struct, forbid_unknown_fields=True):
    data: PropertyIn


line_decoder = msgspec.json.Decoder(PropertyIn)
envelope_decoder = msgspec.json.Decoder(Envelope)
any_decoder = msgspec.json.Decoder()
"""Any JSON value (the JSON cells of an API-shaped CSV, ids of rejected lines)."""


def to_detail(p: PropertyIn) -> PropertyDetail:
    """The stored shape of an input record; the derived and computed fields are left null."""
    a = p.address
    return PropertyDetail(
        id=p.id,
        status=p.status,
        list_price=p.list_price,
        address=Address(
            street_address=a.street_address,
            city=a.city,
            state=a.state,
            zip_code=a.zip_code,
            county=a.county,
            fips_code=a.fips_code,
        ),
        bedrooms_total=p.bedrooms_total,
        bathrooms_total=p.bathrooms_total,
        living_area=p.living_area,
        lot_size=p.lot_size,
        year_built=p.year_built,
        property_type=p.property_type,
        days_on_market=p.days_on_market,
        price_history=[
            PriceEvent(date=e.date, event=e.event, price=e.price, source=e.source)
            for e in p.price_history
        ],
        tax_history=[
            TaxRecord(year=t.year, tax_paid=t.tax_paid, assessed_value=t.assessed_value)
            for t in p.tax_history
        ],
        scores=(
            Scores(walkability=p.scores.walkability, transit=p.scores.transit, bike=p.scores.bike)
            if p.scores is not None
            else None
        ),
        coordinates=(
            Coordinates(latitude=p.coordinates.latitude, longitude=p.coordinates.longitude)
            if p.coordinates is not None
            else None
        ),
        last_updated=p.last_updated,
        listing_type=p.listing_type,
        original_list_price=p.original_list_price,
        previous_list_price=None,
        last_price_change_date=None,
        removed_date=None,
        rent_estimate=_estimate(p.rent_estimate),
        value_estimate=_estimate(p.value_estimate),
        gross_yield=None,
        price_per_square_foot=None,
        stories=p.stories,
        parcel_id=p.parcel_id,
        garage_spaces=p.garage_spaces,
        basement_finished_area=p.basement_finished_area,
        fireplaces=p.fireplaces,
        overall_quality=p.overall_quality,
        overall_condition=p.overall_condition,
    )


def _estimate(e: _EstimateIn | None) -> Estimate | None:
    if e is None:
        return None
    return Estimate(value=e.value, low=e.low, high=e.high, as_of_date=e.as_of_date)


_AT = re.compile(r"^(?P<message>.*) - at `\$(?P<path>[^`]*)`$", re.DOTALL)
_ENUMS: dict[str, tuple[str, ...]] = {
    "status": STATUSES,
    "propertyType": PROPERTY_TYPES,
    "listingType": LISTING_TYPES,
    "event": EVENTS,
    "source": SOURCES,
}


def explain(exc: msgspec.ValidationError, strip: str = "") -> str:
    """msgspec's "Expected `int`, got `str` - at `$.address.zipCode`" as "address.zipCode: ..."."""
    text = str(exc)
    match = _AT.match(text)
    if match is None:
        return text
    path = match["path"].lstrip(".")
    if strip and path.startswith(strip):
        path = path[len(strip) :].lstrip(".")
    message = match["message"]
    if message.startswith("Invalid enum value"):
        allowed = _ENUMS.get(re.sub(r"^.*\.", "", path))
        if allowed:
            message += f" (allowed: {', '.join(allowed)})"
    return f"{path}: {message}" if path else message
