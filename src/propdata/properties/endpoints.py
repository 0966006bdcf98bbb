"""HTTP endpoints for property records: parse, call the service, answer."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated, Any

from litestar import Request, Response, get
from litestar.openapi.spec import Example
from litestar.params import PathParameter, QueryParameter

from propdata.api import paging
from propdata.api.dependencies import Injected
from propdata.api.fields import answer, parameter, select
from propdata.api.openapi import ANSWER_HEADERS, ApiOperation, errors
from propdata.api.params import (
    CITY,
    DECIMAL,
    MAX_INT,
    NON_NEGATIVE,
    STATE_CODE,
    TEXT,
    CityQuery,
    PageLimit,
    StateQuery,
    ZipQuery,
    check_range,
    city_filter,
    state_code,
)
from propdata.errors import AmbiguousAddress, InvalidParameter, NotFound, ServiceUnavailable
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
        examples=[Example(summary="A property of the demo data", value="ames-0001")],
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


GEO = ("latitude", "longitude", "radius")
BBOX = (
    "Bounding box 'west,south,east,north' in decimal degrees, edges included: west < east"
    " (both -180 to 180), south < north (both -90 to 90); not with a radius"
)


_NUMBER = DECIMAL.pattern
BBOX_PATTERN = rf"^{_NUMBER}(,{_NUMBER}){{3}}$"
"""Four numbers as JSON writes them, comma-separated (the ranges are checked by `_bbox`)."""


def _bbox(raw: str | None) -> tuple[float, float, float, float] | None:
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


def _near(
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


async def search_properties(
    properties: Injected[PropertyService],
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
    near = _near(latitude, longitude, radius)
    box = _bbox(bbox)
    if near is not None and box is not None:
        raise InvalidParameter("bbox", "'bbox' cannot be combined with a radius search.")
    if sort == "distance" and near is None:
        raise InvalidParameter(
            "sort", "'sort=distance' needs a radius search (latitude, longitude and radius)."
        )
    if cursor is not None and offset is not None:
        raise InvalidParameter("offset", "'offset' cannot be combined with 'cursor'.")
    check_range(minPrice, maxPrice, "minPrice", "maxPrice")
    check_range(minBeds, maxBeds, "minBeds", "maxBeds")
    check_range(minSqft, maxSqft, "minSqft", "maxSqft")
    filters = SearchFilters(
        zip_code=zipCode, city=city_filter(city), state=state_code(state_), status=status,
        property_type=propertyType, min_price=minPrice, max_price=maxPrice, min_beds=minBeds,
        max_beds=maxBeds, min_baths=minBaths, min_sqft=minSqft, max_sqft=maxSqft,
        min_year_built=minYearBuilt, max_days_on_market=maxDaysOnMarket, bbox=box, near=near,
    )  # fmt: skip
    direction = order or ("asc" if sort == "distance" else "desc")
    size = paging.applied_page_size(request.scope)
    page = await properties.search(
        filters, sort, direction, size, offset or 0, cursor, encoded=True
    )
    return answer(page, selection)


@get(
    "/properties/lookup",
    responses=errors(
        404,
        409,
        examples=[
            InvalidParameter(
                "state",
                "Invalid value for 'state'; expected: two-letter US state"
                " code, any case, such as IA.",
            ),
            InvalidParameter("streetAddress", "The query parameter 'streetAddress' is required."),
            NotFound("No property matches that address exactly."),
            AmbiguousAddress(
                "The address matches properties in several ZIP codes: 50010, 50014;"
                " add zipCode to choose one."
            ),
        ],
    ),
    operation_class=ApiOperation,
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
            examples=[Example(value="123 Main St")],
        ),
    ],
    city: Annotated[str, replace(CITY, examples=[Example(value="Ames")])],
    state_: Annotated[str, replace(STATE_CODE, examples=[Example(value="IA")])],
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
    responses=errors(
        404,
        examples=[
            InvalidParameter(
                "id",
                "Invalid value for 'id'; expected: property id: 1 to 64 letters,"
                " digits, '.', '_' or '-', starting with a letter or digit.",
            ),
            NotFound("No property with id 'x-000'."),
        ],
    ),
    operation_class=ApiOperation,
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
    responses=errors(
        404,
        examples=[
            InvalidParameter(
                "id",
                "Invalid value for 'id'; expected: property id: 1 to 64 letters,"
                " digits, '.', '_' or '-', starting with a letter or digit.",
            ),
            NotFound("No property with id 'x-000'."),
        ],
    ),
    operation_class=ApiOperation,
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


SEARCH_ERRORS = errors(examples=[
    InvalidParameter("limit", "'limit' must be at least 1."),
    InvalidParameter("status", "Invalid value for 'status'; expected: one of forSale,"
                     " recentlySold, forRent, offMarket."),
    InvalidParameter("minPrice", "'minPrice' (500000) is greater than 'maxPrice' (100000)."),
    InvalidParameter("bbox", "'bbox' cannot be combined with a radius search."),
    ServiceUnavailable("Pages past offset 10,000 are served once the search index is ready (it"
                       " is being built: seconds after a start or a data load); a cursor reaches"
                       " any depth meanwhile."),
])  # fmt: skip
list_properties = get(
    "/properties", summary="Search properties", operation_id="searchProperties",
    opt={"paged": True}, responses=SEARCH_ERRORS, response_headers=ANSWER_HEADERS,
    tags=["properties"], operation_class=ApiOperation,
)(search_properties)  # fmt: skip
search_properties_alias = get(
    "/properties/search", summary="Search properties (same as /v1/properties)",
    operation_id="searchPropertiesAlias",
    opt={"paged": True}, responses=SEARCH_ERRORS, response_headers=ANSWER_HEADERS,
    tags=["properties"], operation_class=ApiOperation,
)(search_properties)  # fmt: skip

HANDLERS = [
    list_properties,
    search_properties_alias,
    lookup_property,
    get_property,
    get_property_history,
]
