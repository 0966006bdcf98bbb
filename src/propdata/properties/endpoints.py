"""HTTP endpoints for property records: parse, call the service, answer."""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Request, get
from litestar.params import PathParameter, QueryParameter

from propdata.accounts.middleware import current_key
from propdata.errors import InvalidParameter
from propdata.kit.addresses import city_key
from propdata.kit.geography import US_STATES
from propdata.kit.http import MAX_INT, RATE_HEADERS, errors
from propdata.properties.repository import SearchFilters
from propdata.properties.schemas import (
    HistoryResponse,
    LookupResponse,
    PropertyResponse,
    PropertyType,
    SearchResponse,
    SortField,
    SortOrder,
    Status,
    ValuationResponse,
)
from propdata.properties.service import PropertyService

ZIP = r"^\d{5}$"
TEXT = r"[A-Za-z0-9]"
"""Names and streets hold at least one letter or digit; anything else cannot match."""
# Every US state code in either case, spelled out: JSON Schema patterns take no flags.
STATE = (
    "^(" + "|".join("".join(f"[{c}{c.lower()}]" for c in code) for code in sorted(US_STATES)) + ")$"
)


# Litestar leaves `minimum: 0` out of the OpenAPI document for optional parameters (it tests
# `ge` for truth), so it is restated in schema_extra; the runtime check is the same.
NON_NEGATIVE = {"minimum": 0}


# Parameters several operations take, declared once (used as they are: wrapping an Annotated
# alias in another QueryParameter would drop its constraints from the OpenAPI document).
CityQuery = Annotated[
    str | None,
    QueryParameter(min_length=1, max_length=100, pattern=TEXT, description="City name, any case"),
]
StateQuery = Annotated[
    str | None,
    QueryParameter(name="state", pattern=STATE, description="Two-letter state code, any case"),
]
PageLimit = Annotated[
    int | None,
    QueryParameter(
        ge=1, le=MAX_INT, description="Page size; plan default, clamped to the plan maximum"
    ),
]
PageOffset = Annotated[int, QueryParameter(ge=0, le=MAX_INT, description="Results to skip")]
PropertyId = Annotated[str, PathParameter(description="Property id")]


def _money(description: str) -> Any:
    return QueryParameter(ge=0, le=MAX_INT, description=description, schema_extra=NON_NEGATIVE)


def _count(description: str) -> Any:
    return QueryParameter(ge=0, le=100_000, description=description, schema_extra=NON_NEGATIVE)


def _service(request: Request[Any, Any, Any]) -> PropertyService:
    service: PropertyService = request.app.state.services.properties
    return service


def state_code(value: str | None, parameter: str = "state") -> str | None:
    """Two-letter US state code, case-insensitive in, upper-case out."""
    if value is None:
        return None
    code = value.upper()
    if code not in US_STATES:
        raise InvalidParameter(parameter, f"'{value}' is not a two-letter US state code.")
    return code


def applied_page_size(request: Request[Any, Any, Any], limit: int | None) -> int:
    """Plan default when absent; above the plan maximum it is clamped (meta.limit shows it)."""
    key = current_key(request.scope)
    return key.default_page_size if limit is None else min(limit, key.max_page_size)


def _check_range(low: float | None, high: float | None, low_name: str, high_name: str) -> None:
    if low is not None and high is not None and low > high:
        raise InvalidParameter(
            low_name, f"'{low_name}' ({low}) is greater than '{high_name}' ({high})."
        )


async def search_properties(
    request: Request[Any, Any, Any],
    zipCode: Annotated[
        str | None, QueryParameter(pattern=ZIP, description="Five-digit ZIP code")
    ] = None,
    city: CityQuery = None,
    state_: StateQuery = None,
    status: Annotated[Status | None, QueryParameter(description="Listing status")] = None,
    propertyType: Annotated[
        PropertyType | None, QueryParameter(description="Property type")
    ] = None,
    minPrice: Annotated[int | None, _money("Minimum listPrice")] = None,
    maxPrice: Annotated[int | None, _money("Maximum listPrice")] = None,
    minBeds: Annotated[int | None, _count("Minimum bedrooms")] = None,
    maxBeds: Annotated[int | None, _count("Maximum bedrooms")] = None,
    minBaths: Annotated[
        float | None,
        QueryParameter(
            ge=0, le=100_000, description="Minimum bathrooms", schema_extra=NON_NEGATIVE
        ),
    ] = None,
    minSqft: Annotated[int | None, _money("Minimum living area, square feet")] = None,
    maxSqft: Annotated[int | None, _money("Maximum living area, square feet")] = None,
    minYearBuilt: Annotated[
        int | None,
        QueryParameter(ge=0, le=9999, description="Minimum year built", schema_extra=NON_NEGATIVE),
    ] = None,
    maxDaysOnMarket: Annotated[int | None, _count("Maximum days on market")] = None,
    limit: PageLimit = None,
    offset: PageOffset = 0,
    sort: Annotated[SortField, QueryParameter(description="Sort field")] = "lastUpdated",
    order: Annotated[SortOrder, QueryParameter(description="Sort order")] = "desc",
) -> SearchResponse:
    """Search properties with filters, sort and pagination; meta.total is exact.

    Served at /v1/properties and, with the same parameters, at /v1/properties/search.
    """
    _check_range(minPrice, maxPrice, "minPrice", "maxPrice")
    _check_range(minBeds, maxBeds, "minBeds", "maxBeds")
    _check_range(minSqft, maxSqft, "minSqft", "maxSqft")
    filters = SearchFilters(
        zip_code=zipCode, city=city_filter(city), state=state_code(state_), status=status,
        property_type=propertyType, min_price=minPrice, max_price=maxPrice, min_beds=minBeds,
        max_beds=maxBeds, min_baths=minBaths, min_sqft=minSqft, max_sqft=maxSqft,
        min_year_built=minYearBuilt, max_days_on_market=maxDaysOnMarket,
    )  # fmt: skip
    size = applied_page_size(request, limit)
    return await _service(request).search(filters, sort, order, size, offset)


def city_filter(city: str | None) -> str | None:
    """Normalised city for matching; blank is a 400."""
    if city is None:
        return None
    key = city_key(city)
    if not key:
        raise InvalidParameter("city", "'city' must not be blank.")
    return key


@get(
    "/properties/lookup",
    responses=errors(400, 404, 409),
    response_headers=RATE_HEADERS,
    tags=["properties"],
    summary="Look up a property by street address",
    operation_id="lookupProperty",
)
async def lookup_property(
    request: Request[Any, Any, Any],
    streetAddress: Annotated[
        str,
        QueryParameter(min_length=1, max_length=200, pattern=TEXT, description="Street address"),
    ],
    city: Annotated[
        str, QueryParameter(min_length=1, max_length=100, pattern=TEXT, description="City name")
    ],
    state_: Annotated[
        str, QueryParameter(name="state", pattern=STATE, description="Two-letter state code")
    ],
    zipCode: Annotated[
        str | None, QueryParameter(pattern=ZIP, description="Five-digit ZIP code")
    ] = None,
) -> LookupResponse:
    """Find the one property at an address, matched after USPS normalisation."""
    if not streetAddress.strip():
        raise InvalidParameter("streetAddress", "'streetAddress' must not be blank.")
    key = city_filter(city)
    assert key is not None
    code = state_code(state_)
    assert code is not None
    item = await _service(request).lookup(streetAddress, key, code, zipCode)
    return LookupResponse(data=item)


@get(
    "/properties/{id:str}",
    responses=errors(404),
    response_headers=RATE_HEADERS,
    tags=["properties"],
    summary="Get a property",
    operation_id="getProperty",
)
async def get_property(request: Request[Any, Any, Any], id: PropertyId) -> PropertyResponse:
    """Return one property record with every field of the contract."""
    return PropertyResponse(data=await _service(request).detail(id))


@get(
    "/properties/{id:str}/history",
    responses=errors(404),
    response_headers=RATE_HEADERS,
    tags=["properties"],
    summary="Price and tax history of a property",
    operation_id="getPropertyHistory",
)
async def get_property_history(request: Request[Any, Any, Any], id: PropertyId) -> HistoryResponse:
    """Return a property's price history (newest first) and tax history."""
    return HistoryResponse(data=await _service(request).history(id))


@get(
    "/properties/{id:str}/valuation",
    responses=errors(404),
    response_headers=RATE_HEADERS,
    tags=["properties"],
    summary="Value and rent estimates with comparable sales",
    operation_id="getPropertyValuation",
)
async def get_property_valuation(
    request: Request[Any, Any, Any], id: PropertyId
) -> ValuationResponse:
    """Return the value and rent estimates, gross yield and the closest comparable sales."""
    return ValuationResponse(data=await _service(request).valuation(id))


list_properties = get(
    "/properties", summary="Search properties", operation_id="searchProperties",
    opt={"paged": True}, responses=errors(400), response_headers=RATE_HEADERS, tags=["properties"],
)(search_properties)  # fmt: skip
search_properties_alias = get(
    "/properties/search", summary="Search properties (same as /v1/properties)",
    operation_id="searchPropertiesAlias",
    opt={"paged": True}, responses=errors(400), response_headers=RATE_HEADERS, tags=["properties"],
)(search_properties)  # fmt: skip

HANDLERS = [
    list_properties,
    search_properties_alias,
    lookup_property,
    get_property,
    get_property_history,
    get_property_valuation,
]
