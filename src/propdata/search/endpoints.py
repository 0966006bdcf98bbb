"""HTTP endpoint of property search: declare its parameters, parse them once, answer."""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Request, Response, get
from litestar.params import QueryParameter

from propdata.api import paging
from propdata.api.dependencies import Injected
from propdata.api.fields import answer, parameter, select
from propdata.api.openapi import documented, errors
from propdata.api.params import NON_NEGATIVE, CityQuery, PageLimit, StateQuery, ZipQuery
from propdata.api.values import MAX_INT
from propdata.errors import InvalidParameter, ServiceUnavailable
from propdata.kit.requests import keep_out_of_cache
from propdata.properties.schemas import PropertyType, Status
from propdata.search.query import BBOX, BBOX_PATTERN, parse
from propdata.search.schemas import PropertySearchItem, SearchResponse, SortField, SortOrder
from propdata.search.service import SearchService

SearchFields = Annotated[str | None, parameter(PropertySearchItem)]


def _money(description: str) -> Any:
    return QueryParameter(ge=0, le=MAX_INT, description=description, schema_extra=NON_NEGATIVE)


def _count(description: str) -> Any:
    return QueryParameter(ge=0, le=100_000, description=description, schema_extra=NON_NEGATIVE)


async def search_properties(
    search: Injected[SearchService],
    request: Request[Any, Any, Any],
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
    latitude: Annotated[
        float | None,
        QueryParameter(
            ge=-90,
            le=90,
            description="Latitude of a radius search's center, decimal degrees"
            " from -90 to 90, such as 42.0267 (with longitude and radius)",
        ),
    ] = None,
    longitude: Annotated[
        float | None,
        QueryParameter(
            ge=-180,
            le=180,
            description="Longitude of a radius search's center, decimal"
            " degrees from -180 to 180, such as -93.6465 (with latitude and radius)",
        ),
    ] = None,
    radius: Annotated[
        float | None,
        QueryParameter(
            gt=0,
            le=100,
            description="Radius in miles, above 0 and at most 100 (with latitude"
            " and longitude): records within it, great-circle distance",
            schema_extra={"exclusiveMinimum": 0},
        ),
    ] = None,
    bbox: Annotated[
        str | None,
        QueryParameter(
            max_length=200,
            pattern=BBOX_PATTERN,
            description=f"{BBOX}; such as -93.70,41.98,-93.57,42.08",
        ),
    ] = None,
    limit: PageLimit = None,  # declared for the reference; the size applied is paging's
    offset: Annotated[
        int | None,
        QueryParameter(
            ge=0,
            le=MAX_INT,
            description="Results to skip (0 when absent); not with cursor",
            schema_extra=NON_NEGATIVE,
        ),
    ] = None,
    cursor: Annotated[
        str | None,
        QueryParameter(
            min_length=1,
            max_length=1000,
            description="meta.nextCursor of the previous page: the next page of the same"
            " search (same filters, sort and order); not with offset",
        ),
    ] = None,
    sort: Annotated[
        SortField,
        QueryParameter(description="Sort field; distance only with a radius search"),
    ] = "lastUpdated",
    order: Annotated[
        SortOrder | None,
        QueryParameter(description="Sort order: desc by default, asc for sort=distance"),
    ] = None,
    fields: SearchFields = None,
) -> Response[SearchResponse]:
    """Search properties with filters, a radius or box, sort and pagination; meta.total is exact.

    Served at /v1/properties and, with the same parameters, at /v1/properties/search.
    """
    selection = select(fields, PropertySearchItem)
    query = parse(
        {
            "zipCode": zipCode, "city": city, "state": state_, "status": status,
            "propertyType": propertyType, "minPrice": minPrice, "maxPrice": maxPrice,
            "minBeds": minBeds, "maxBeds": maxBeds, "minBaths": minBaths, "minSqft": minSqft,
            "maxSqft": maxSqft, "minYearBuilt": minYearBuilt, "maxDaysOnMarket": maxDaysOnMarket,
            "latitude": latitude, "longitude": longitude, "radius": radius, "bbox": bbox,
            "offset": offset, "cursor": cursor, "sort": sort, "order": order,
        },
        paging.applied_page_size(request.scope),
    )  # fmt: skip
    page = await search.search(query, encoded=True,
                               behind=lambda: keep_out_of_cache(request.scope))  # fmt: skip
    return answer(page, selection)


SEARCH_ERRORS = errors(examples=[
    paging.below_one(),
    InvalidParameter("status", "Invalid value for 'status'; expected: one of forSale,"
                     " recentlySold, forRent, offMarket."),
    InvalidParameter("minPrice", "'minPrice' (500000) is greater than 'maxPrice' (100000)."),
    InvalidParameter("bbox", "'bbox' cannot be combined with a radius search."),
    ServiceUnavailable("Pages past offset 10,000 are served once the search index is ready (it"
                       " is being built: seconds after a start or a data load); a cursor reaches"
                       " any depth meanwhile."),
])  # fmt: skip
list_properties = get(
    "/properties", opt={"paged": True}, responses=SEARCH_ERRORS,
    **documented("properties", "Search properties", "searchProperties"),
)(search_properties)  # fmt: skip
search_properties_alias = get(
    "/properties/search", opt={"paged": True}, responses=SEARCH_ERRORS,
    **documented("properties", "Search properties (same as /v1/properties)",
                 "searchPropertiesAlias"),
)(search_properties)  # fmt: skip

HANDLERS = [list_properties, search_properties_alias]
