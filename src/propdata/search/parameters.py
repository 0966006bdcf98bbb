"""Each filter parameter of a search as the API takes it: its type, range, pattern, length
and description, with no web framework. GET /v1/properties declares its query parameters
with these values (tests/search/test_parameters.py holds the two together), and a saved
search's filters are checked against them, in the server and in the command-line producer.

    DECLARED["minBeds"]   # Declared(kind=int, description="Minimum bedrooms", ge=0, ...)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from propdata.api.values import MAX_INT, STATE, TEXT
from propdata.kit.geography import ZIP
from propdata.properties.schemas import PropertyType, Status
from propdata.search.query import BBOX, BBOX_PATTERN


@dataclass(frozen=True, slots=True)
class Declared:
    """One filter parameter: its type and what a value of it may be."""

    kind: Any
    """str, int, float or a Literal of strings."""
    description: str
    ge: float | None = None
    le: float | None = None
    gt: float | None = None
    pattern: str | None = None
    min_length: int | None = None
    max_length: int | None = None


def _count(description: str, high: int = 100_000) -> Declared:
    return Declared(int, description, ge=0, le=high)


DECLARED: dict[str, Declared] = {
    "zipCode": Declared(str, "Five-digit ZIP code, such as 50010", pattern=ZIP),
    "city": Declared(str, "City name, any case, with at least one letter or digit",
                     pattern=TEXT, min_length=1, max_length=100),
    "state": Declared(str, "Two-letter US state code, any case, such as IA", pattern=STATE),
    "status": Declared(Status, "Listing status"),
    "propertyType": Declared(PropertyType, "Property type"),
    "minPrice": _count("Minimum listPrice", MAX_INT),
    "maxPrice": _count("Maximum listPrice", MAX_INT),
    "minBeds": _count("Minimum bedrooms"),
    "maxBeds": _count("Maximum bedrooms"),
    "minBaths": Declared(float, "Minimum bathrooms", ge=0, le=100_000),
    "minSqft": _count("Minimum living area, square feet", MAX_INT),
    "maxSqft": _count("Maximum living area, square feet", MAX_INT),
    "minYearBuilt": _count("Minimum year built", 9999),
    "maxDaysOnMarket": _count("Maximum days on market"),
    "latitude": Declared(float, "Latitude of a radius search's center, decimal degrees from"
                         " -90 to 90, such as 42.0267 (with longitude and radius)", ge=-90, le=90),
    "longitude": Declared(float, "Longitude of a radius search's center, decimal degrees from"
                          " -180 to 180, such as -93.6465 (with latitude and radius)",
                          ge=-180, le=180),
    "radius": Declared(float, "Radius in miles, above 0 and at most 100 (with latitude and"
                       " longitude): records within it, great-circle distance", gt=0, le=100),
    "bbox": Declared(str, f"{BBOX}; such as -93.70,41.98,-93.57,42.08", pattern=BBOX_PATTERN,
                     max_length=200),
}  # fmt: skip
"""Every filter parameter of GET /v1/properties by its wire name, in the endpoint's order."""
