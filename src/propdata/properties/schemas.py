"""Wire shapes of property records (interface.md + contract.md), as msgspec structs.

`PropertyDetail` is both the answer of GET /v1/properties/{id} and the "API's own shape"
that `propdata data import` accepts, so an export can be loaded back unchanged.
"""

from __future__ import annotations

from typing import Literal, get_args

from propdata.api.schemas import Base

Status = Literal["forSale", "recentlySold", "forRent", "offMarket"]
PropertyType = Literal["singleFamily", "condo", "townhouse", "multiFamily", "land"]
ListingType = Literal["standard", "newConstruction", "foreclosure", "shortSale", "auction"]
Event = Literal[
    "listedForSale",
    "priceChange",
    "pendingSale",
    "sold",
    "delisted",
    "relisted",
    "listedForRent",
    "rentalRemoved",
]
Source = Literal["mls", "publicRecord", "agent", "owner"]
PROPERTY_ID = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
"""What a property id is: 1 to 64 ASCII letters, digits, '.', '_' or '-', starting with a
letter or digit (the loader refuses any other; the API answers 400 for any other)."""

# The same vocabularies as tuples (readers and generators iterate them), made from the
# Literals so each is declared once.
STATUSES: tuple[str, ...] = get_args(Status)
PROPERTY_TYPES: tuple[str, ...] = get_args(PropertyType)
LISTING_TYPES: tuple[str, ...] = get_args(ListingType)
EVENTS: tuple[str, ...] = get_args(Event)
SOURCES: tuple[str, ...] = get_args(Source)


class Address(Base):
    street_address: str | None
    city: str
    state: str
    zip_code: str
    county: str | None = None
    fips_code: str | None = None


class ShortAddress(Base):
    """The address of lookup and search answers: the four fields interface.md lists."""

    street_address: str | None
    city: str
    state: str
    zip_code: str


class PriceEvent(Base):
    date: str
    event: Event
    price: int | None
    source: Source


class TaxRecord(Base):
    year: int
    tax_paid: int | None
    assessed_value: int | None


class Scores(Base):
    walkability: int | None
    transit: int | None
    bike: int | None


class Coordinates(Base):
    latitude: float
    longitude: float


class Estimate(Base):
    value: int
    low: int
    high: int
    as_of_date: str


class PropertyDetail(Base):
    """GET /v1/properties/{id}: interface.md's fields plus contract.md's named data points."""

    id: str
    status: Status
    list_price: int | None
    address: Address
    bedrooms_total: int | None
    bathrooms_total: float | None
    living_area: int | None
    lot_size: int | None
    year_built: int | None
    property_type: PropertyType | None
    days_on_market: int | None
    price_history: list[PriceEvent]
    tax_history: list[TaxRecord]
    scores: Scores | None
    coordinates: Coordinates | None
    last_updated: str
    listing_type: ListingType | None
    original_list_price: int | None
    previous_list_price: int | None
    last_price_change_date: str | None
    removed_date: str | None
    rent_estimate: Estimate | None
    value_estimate: Estimate | None
    gross_yield: float | None
    price_per_square_foot: int | None
    stories: int | None
    parcel_id: str | None
    """The assessor's parcel number (APN)."""
    garage_spaces: float | None
    basement_finished_area: int | None
    """Finished area below grade, square feet."""
    fireplaces: int | None
    overall_quality: int | None
    """1 (very poor) to 10 (very excellent), the assessor's grade of material and finish."""
    overall_condition: int | None
    """1 (very poor) to 10 (very excellent), as RESO's PropertyCondition."""


class PropertyLookupItem(Base):
    """GET /v1/properties/lookup."""

    id: str
    status: Status
    list_price: int | None
    address: ShortAddress
    bedrooms_total: int | None
    bathrooms_total: float | None
    living_area: int | None
    last_updated: str


class PropertyHistory(Base):
    """GET /v1/properties/{id}/history."""

    id: str
    price_history: list[PriceEvent]
    tax_history: list[TaxRecord]


class PropertyResponse(Base):
    data: PropertyDetail


class LookupResponse(Base):
    data: PropertyLookupItem


class HistoryResponse(Base):
    data: PropertyHistory
