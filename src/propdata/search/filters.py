"""What a search may ask: each filter and each sort, defined once.

`FILTERS` is the one definition of the column filters: the parameter a client sends, the
`SearchFilters` field it fills, the `properties` column it tests and how. The SQL WHERE
clause (`search.repository`), the index's masks (`search.index`) and the predicate over
records (`search.match`) are all made from it, with SQL's NULL semantics everywhere: a
record without a value never passes a filter on that column.

The geography is not a column comparison: `box` is the one box that SQL, the index and the
predicate read (a `bbox`, or the box around a radius), and a radius then keeps what
`kit.geodesy.miles` puts within it. tests/search/test_parity.py holds the three together,
filter by filter, over generated records.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from propdata.kit.geodesy import around

Test = Literal["eq", "ge", "le"]
"""Equal to, at least, at most the filter's value."""


@dataclass(frozen=True, slots=True)
class Filter:
    """One column filter of a search."""

    parameter: str
    """The query parameter (wire name)."""
    field: str
    """The `SearchFilters` field it fills."""
    column: str
    """The `properties` column it tests (the index keeps a column of the same name)."""
    test: Test


FILTERS = (
    Filter("zipCode", "zip_code", "zip_code", "eq"),
    Filter("city", "city", "city_key", "eq"),  # the value is a city key (kit.addresses)
    Filter("state", "state", "state", "eq"),
    Filter("status", "status", "status", "eq"),
    Filter("propertyType", "property_type", "property_type", "eq"),
    Filter("minPrice", "min_price", "list_price", "ge"),
    Filter("maxPrice", "max_price", "list_price", "le"),
    Filter("minBeds", "min_beds", "bedrooms", "ge"),
    Filter("maxBeds", "max_beds", "bedrooms", "le"),
    Filter("minBaths", "min_baths", "bathrooms", "ge"),
    Filter("minSqft", "min_sqft", "living_area", "ge"),
    Filter("maxSqft", "max_sqft", "living_area", "le"),
    Filter("minYearBuilt", "min_year_built", "year_built", "ge"),
    Filter("maxDaysOnMarket", "max_days_on_market", "days_on_market", "le"),
)
SQL_TESTS: dict[Test, str] = {"eq": "=", "ge": ">=", "le": "<="}

CATEGORICAL = tuple(dict.fromkeys(f.column for f in FILTERS if f.test == "eq"))
"""The text columns filtered by equality, in `FILTERS` order."""
NUMERIC = tuple(dict.fromkeys(f.column for f in FILTERS if f.test != "eq"))
"""The number columns filtered by range, in `FILTERS` order."""

SORT_COLUMNS = {
    "listPrice": "list_price",
    "daysOnMarket": "days_on_market",
    "livingArea": "living_area",
    "lastUpdated": "last_updated",
}
"""The column of each sort but `distance` (which only a radius search has)."""


@dataclass(slots=True)
class SearchFilters:
    """Validated search filters; None means "not filtered"."""

    zip_code: str | None = None
    city: str | None = None
    state: str | None = None
    status: str | None = None
    property_type: str | None = None
    min_price: int | None = None
    max_price: int | None = None
    min_beds: int | None = None
    max_beds: int | None = None
    min_baths: float | None = None
    min_sqft: int | None = None
    max_sqft: int | None = None
    min_year_built: int | None = None
    max_days_on_market: int | None = None
    bbox: tuple[float, float, float, float] | None = None
    """(west, south, east, north), degrees, edges included."""
    near: tuple[float, float, float] | None = None
    """(latitude, longitude, radius in miles): the records in the box around the circle
    (`box`) whose great-circle distance is within the radius."""


def given(filters: SearchFilters) -> Iterator[tuple[Filter, Any]]:
    """The column filters `filters` sets, with their values, in `FILTERS` order."""
    for f in FILTERS:
        value = getattr(filters, f.field)
        if value is not None:
            yield f, value


def box(filters: SearchFilters) -> tuple[float, float, float, float] | None:
    """(west, south, east, north) every match lies in, edges included: the `bbox`, or the
    box around the radius (`kit.geodesy.around`); None when the search has neither."""
    return filters.bbox if filters.near is None else around(*filters.near)
