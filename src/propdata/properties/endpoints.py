"""HTTP endpoints for property records: parse, call the service, answer."""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Response, get
from litestar.params import PathParameter, QueryParameter

from propdata.api.dependencies import Injected
from propdata.api.fields import answer, parameter, select
from propdata.api.openapi import ANSWER_HEADERS, errors
from propdata.api.params import (
    CITY,
    MAX_INT,
    NON_NEGATIVE,
    STATE_CODE,
    TEXT,
    CityQuery,
    PageLimit,
    PageOffset,
    StateQuery,
    ZipQuery,
    check_range,
    city_filter,
    state_code,
)
from propdata.errors import InvalidParameter
from propdata.properties.repository import SearchFilters
from propdata.properties.schemas import (
    PROPERTY_ID,
    HistoryResponse,
    LookupResponse,
    PropertyDetail,
    PropertyHistory,
    PropertyLookupItem,
    PropertyResponse,
    PropertySearchItem,
    PropertyType,
    SearchResponse,
    SortField,
    SortOrder,
    Status,
)
from propdata.properties.service import PropertyService

PropertyId = Annotated[
    str,
    PathParameter(
        pattern=PROPERTY_ID, max_length=64,
        description="Property id: 1 to 64 letters, digits, '.', '_' or '-', starting with a"
        " letter or digit",
    ),
]  # fmt: skip


SearchFields = Annotated[str | None, parameter(PropertySearchItem)]
LookupFields = Annotated[str | None, parameter(PropertyLookupItem)]
DetailFields = Annotated[str | None, parameter(PropertyDetail)]
HistoryFields = Annotated[str | None, parameter(PropertyHistory)]


def _money(description: str) -> Any:
    return QueryParameter(ge=0, le=MAX_INT, description=description, schema_extra=NON_NEGATIVE)


def _count(description: str) -> Any:
    return QueryParameter(ge=0, le=100_000, description=description, schema_extra=NON_NEGATIVE)


async def search_properties(
    properties: Injected[PropertyService],
    page_size: Injected[int],
    zipCode: ZipQuery = None,
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
    limit: PageLimit = None,  # declared for the reference; the size applied is page_size
    offset: PageOffset = 0,
    sort: Annotated[SortField, QueryParameter(description="Sort field")] = "lastUpdated",
    order: Annotated[SortOrder, QueryParameter(description="Sort order")] = "desc",
    fields: SearchFields = None,
) -> Response[SearchResponse]:
    """Search properties with filters, sort and pagination; meta.total is exact.

    Served at /v1/properties and, with the same parameters, at /v1/properties/search.
    """
    selection = select(fields, PropertySearchItem)
    check_range(minPrice, maxPrice, "minPrice", "maxPrice")
    check_range(minBeds, maxBeds, "minBeds", "maxBeds")
    check_range(minSqft, maxSqft, "minSqft", "maxSqft")
    filters = SearchFilters(
        zip_code=zipCode, city=city_filter(city), state=state_code(state_), status=status,
        property_type=propertyType, min_price=minPrice, max_price=maxPrice, min_beds=minBeds,
        max_beds=maxBeds, min_baths=minBaths, min_sqft=minSqft, max_sqft=maxSqft,
        min_year_built=minYearBuilt, max_days_on_market=maxDaysOnMarket,
    )  # fmt: skip
    return answer(await properties.search(filters, sort, order, page_size, offset), selection)


@get(
    "/properties/lookup",
    responses=errors(400, 404, 409),
    response_headers=ANSWER_HEADERS,
    tags=["properties"],
    summary="Look up a property by street address",
    operation_id="lookupProperty",
)
async def lookup_property(
    properties: Injected[PropertyService],
    streetAddress: Annotated[
        str,
        QueryParameter(
            min_length=1,
            max_length=200,
            pattern=TEXT,
            description="Street address, with at least one letter or digit",
        ),
    ],
    city: Annotated[str, CITY],
    state_: Annotated[str, STATE_CODE],
    zipCode: ZipQuery = None,
    fields: LookupFields = None,
) -> Response[LookupResponse]:
    """Find the one property at an address, matched after USPS normalisation."""
    selection = select(fields, PropertyLookupItem)
    if not streetAddress.strip():
        raise InvalidParameter("streetAddress", "'streetAddress' must not be blank.")
    key = city_filter(city)
    assert key is not None
    code = state_code(state_)
    assert code is not None
    item = await properties.lookup(streetAddress, key, code, zipCode)
    return answer(LookupResponse(data=item), selection)


@get(
    "/properties/{id:str}",
    responses=errors(404),
    response_headers=ANSWER_HEADERS,
    tags=["properties"],
    summary="Get a property",
    operation_id="getProperty",
)
async def get_property(
    properties: Injected[PropertyService], id: PropertyId, fields: DetailFields = None
) -> Response[PropertyResponse]:
    """Return one property record with every field of the contract (or those of `fields`)."""
    selection = select(fields, PropertyDetail)
    return answer(PropertyResponse(data=await properties.detail(id)), selection)


@get(
    "/properties/{id:str}/history",
    responses=errors(404),
    response_headers=ANSWER_HEADERS,
    tags=["properties"],
    summary="Price and tax history of a property",
    operation_id="getPropertyHistory",
)
async def get_property_history(
    properties: Injected[PropertyService], id: PropertyId, fields: HistoryFields = None
) -> Response[HistoryResponse]:
    """Return a property's price history (newest first) and tax history."""
    selection = select(fields, PropertyHistory)
    return answer(HistoryResponse(data=await properties.history(id)), selection)


list_properties = get(
    "/properties", summary="Search properties", operation_id="searchProperties",
    opt={"paged": True}, responses=errors(400), response_headers=ANSWER_HEADERS, tags=["properties"],
)(search_properties)  # fmt: skip
search_properties_alias = get(
    "/properties/search", summary="Search properties (same as /v1/properties)",
    operation_id="searchPropertiesAlias",
    opt={"paged": True}, responses=errors(400), response_headers=ANSWER_HEADERS, tags=["properties"],
)(search_properties)  # fmt: skip

HANDLERS = [
    list_properties,
    search_properties_alias,
    lookup_property,
    get_property,
    get_property_history,
]
