"""A search query: its filters, geography, sort and paging, parsed once from its parameters.

The endpoint declares each parameter (its type and range, which Litestar checks alone and
the OpenAPI document shows); `parse` then checks what holds between parameters and makes
the one `SearchQuery` every engine answers and `search.match` tests records against.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from propdata.api.values import DECIMAL, check_range, city_filter, state_code
from propdata.errors import InvalidParameter
from propdata.search.filters import FILTERS, SearchFilters
from propdata.search.order import Order

GEO = ("latitude", "longitude", "radius")
BBOX = (
    "Bounding box 'west,south,east,north' in decimal degrees, edges included: west < east"
    " (both -180 to 180), south < north (both -90 to 90); not with a radius"
)
_NUMBER = DECIMAL.pattern
BBOX_PATTERN = rf"^{_NUMBER}(,{_NUMBER}){{3}}$"
"""Four numbers as JSON writes them, comma-separated (the ranges are checked by `bbox`)."""
RANGES = (("minPrice", "maxPrice"), ("minBeds", "maxBeds"), ("minSqft", "maxSqft"))
"""Bounds whose lower may not exceed their upper (a 400 naming the lower)."""


@dataclass(frozen=True, slots=True)
class SearchQuery:
    """One search: what it matches, in which order, which page."""

    filters: SearchFilters
    sort: str = "lastUpdated"
    """A `filters.SORT_COLUMNS` key, or "distance" (a radius search only)."""
    order: str = "desc"
    limit: int = 25
    offset: int = 0
    """Rows the page skips; with a cursor, the rows its earlier pages delivered."""
    cursor: str | None = None
    """meta.nextCursor of the page before, as the client sent it (`search.cursor`)."""

    @property
    def ordering(self) -> Order:
        """The order of its rows (`search.order`)."""
        return Order(self.sort, self.order == "desc")

    def probe(self, *, offset: int | None = None) -> SearchQuery:
        """The same search asking one row more (which tells whether rows follow the page),
        from `offset` when given."""
        at = self.offset if offset is None else offset
        return dataclasses.replace(self, limit=self.limit + 1, offset=at)


def bbox(raw: str | None) -> tuple[float, float, float, float] | None:
    """(west, south, east, north) of a `bbox` value; any malformed one is a 400."""
    if raw is None:
        return None
    parts = raw.split(",")
    if len(parts) != 4 or not all(DECIMAL.fullmatch(p) for p in parts):
        raise InvalidParameter("bbox", f"'bbox' must be four numbers, {BBOX[0].lower()}{BBOX[1:]}.")
    west, south, east, north = (float(p) for p in parts)
    if not (-180 <= west < east <= 180):
        raise InvalidParameter("bbox", "'bbox' needs -180 <= west < east <= 180 (longitudes).")
    if not (-90 <= south < north <= 90):
        raise InvalidParameter("bbox", "'bbox' needs -90 <= south < north <= 90 (latitudes).")
    return west, south, east, north


def near(
    latitude: float | None, longitude: float | None, radius: float | None
) -> tuple[float, float, float] | None:
    """The radius search's (latitude, longitude, miles), or None; a partial one is a 400."""
    given = (latitude, longitude, radius)
    if all(v is None for v in given):
        return None
    missing = [name for name, v in zip(GEO, given, strict=True) if v is None]
    if missing:
        raise InvalidParameter(
            missing[0], f"'{missing[0]}' is missing: a radius search takes latitude, longitude"
            " and radius together.",
        )  # fmt: skip
    assert latitude is not None and longitude is not None and radius is not None
    return latitude, longitude, radius


def parse(parameters: Mapping[str, Any], limit: int) -> SearchQuery:
    """The query of a search's parameters, by their wire names, each already of its type
    (absent ones may be left out or None); `limit` is the page size applied. A rule
    between parameters that does not hold is a 400 naming one of them."""
    value = parameters.get
    circle = near(value("latitude"), value("longitude"), value("radius"))
    area = bbox(value("bbox"))
    if circle is not None and area is not None:
        raise InvalidParameter("bbox", "'bbox' cannot be combined with a radius search.")
    sort = value("sort") or "lastUpdated"
    if sort == "distance" and circle is None:
        raise InvalidParameter(
            "sort", "'sort=distance' needs a radius search (latitude, longitude and radius)."
        )
    cursor, offset = value("cursor"), value("offset")
    if cursor is not None and offset is not None:
        raise InvalidParameter("offset", "'offset' cannot be combined with 'cursor'.")
    for low, high in RANGES:
        check_range(value(low), value(high), low, high)
    given = {f.field: value(f.parameter) for f in FILTERS}
    given["city"] = city_filter(given["city"])
    given["state"] = state_code(given["state"])
    filters = SearchFilters(**given, bbox=area, near=circle)
    order = value("order") or ("asc" if sort == "distance" else "desc")
    return SearchQuery(filters, sort, order, limit, offset or 0, cursor)
