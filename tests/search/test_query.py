"""`query.parse`: a search's parameters, by their wire names, made into one SearchQuery."""

from __future__ import annotations

from typing import Any

import pytest

from propdata.errors import InvalidParameter
from propdata.search.filters import SearchFilters
from propdata.search.query import SearchQuery, parse


def test_every_filter_by_its_wire_name() -> None:
    query = parse(
        {"zipCode": "50010", "city": " west des-moines ", "state": "ia", "status": "forSale",
         "propertyType": "condo", "minPrice": 1, "maxPrice": 2, "minBeds": 3, "maxBeds": 4,
         "minBaths": 1.5, "minSqft": 5, "maxSqft": 6, "minYearBuilt": 1990,
         "maxDaysOnMarket": 7, "bbox": "-93.7,41.9,-93.5,42.1", "sort": "listPrice",
         "order": "asc", "offset": 20},
        limit=10,
    )  # fmt: skip
    assert query == SearchQuery(
        SearchFilters(zip_code="50010", city="WEST DES MOINES", state="IA", status="forSale",
                      property_type="condo", min_price=1, max_price=2, min_beds=3, max_beds=4,
                      min_baths=1.5, min_sqft=5, max_sqft=6, min_year_built=1990,
                      max_days_on_market=7, bbox=(-93.7, 41.9, -93.5, 42.1)),
        "listPrice", "asc", 10, 20,
    )  # fmt: skip


def test_defaults_and_a_radius() -> None:
    assert parse({}, 25) == SearchQuery(SearchFilters(), "lastUpdated", "desc", 25, 0, None)
    query = parse({"latitude": 42.0, "longitude": -93.6, "radius": 2.5, "sort": "distance"}, 5)
    assert query.filters.near == (42.0, -93.6, 2.5) and query.order == "asc"


@pytest.mark.parametrize(
    ("parameters", "named"),
    [
        ({"latitude": 42.0, "radius": 1.0}, "longitude"),
        ({"latitude": 42.0, "longitude": -93.6, "radius": 1.0, "bbox": "0,0,1,1"}, "bbox"),
        ({"bbox": "1,0,0,1"}, "bbox"),
        ({"sort": "distance"}, "sort"),
        ({"cursor": "x", "offset": 0}, "offset"),
        ({"minSqft": 9, "maxSqft": 1}, "minSqft"),
        ({"city": "  "}, "city"),
        ({"state": "ZZ"}, "state"),
    ],
)
def test_rules_between_parameters_are_400s_naming_one(
    parameters: dict[str, Any], named: str
) -> None:
    with pytest.raises(InvalidParameter) as refused:
        parse(parameters, 10)
    assert refused.value.parameter == named
