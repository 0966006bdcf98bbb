"""HTTP endpoints for property records: parse, call the service, answer."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated

from litestar import Response, get
from litestar.openapi.spec import Example
from litestar.params import PathParameter, QueryParameter

from propdata.api.dependencies import Injected
from propdata.api.fields import answer, parameter, select
from propdata.api.openapi import ANSWER_HEADERS, ApiOperation, errors
from propdata.api.params import CITY, STATE_CODE, TEXT, ZipQuery, city_filter, state_code
from propdata.errors import AmbiguousAddress, InvalidParameter, NotFound
from propdata.properties.schemas import (
    PROPERTY_ID,
    HistoryResponse,
    LookupResponse,
    PropertyDetail,
    PropertyHistory,
    PropertyLookupItem,
    PropertyResponse,
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


LookupFields = Annotated[str | None, parameter(PropertyLookupItem)]
DetailFields = Annotated[str | None, parameter(PropertyDetail)]
HistoryFields = Annotated[str | None, parameter(PropertyHistory)]


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


HANDLERS = [lookup_property, get_property, get_property_history]
