"""HTTP endpoints for property records: parse, call the service, answer."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated

from litestar import Response, get
from litestar.openapi.spec import Example
from litestar.params import PathParameter, QueryParameter

from propdata.api.dependencies import Injected
from propdata.api.fields import answer, parameter, select
from propdata.api.openapi import documented, errors
from propdata.api.params import CITY, STATE_CODE
from propdata.api.values import TEXT, state_code
from propdata.errors import (
    AmbiguousAddress,
    Candidate,
    CandidateAddress,
    InvalidParameter,
    NotFound,
)
from propdata.kit.addresses import ZIP_OR_ZIP4, city_key, split_address, zip5
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


BY_ID_ERRORS = errors(
    404,
    examples=[
        InvalidParameter(
            "id",
            "Invalid value for 'id'; expected: property id: 1 to 64 letters,"
            " digits, '.', '_' or '-', starting with a letter or digit.",
        ),
        NotFound("No property with id 'x-000'."),
    ],
)
"""What an operation on one property by its id answers besides 200 (by id, history,
valuation), with real examples."""

LookupFields = Annotated[str | None, parameter(PropertyLookupItem)]
DetailFields = Annotated[str | None, parameter(PropertyDetail)]
HistoryFields = Annotated[str | None, parameter(PropertyHistory)]


_OTHER_UNIT = Candidate(
    id="ames-0007",
    address=CandidateAddress(
        street_address="4125 Lincoln Way Apt 2", city="Ames", state="IA", zip_code="50014"
    ),
)
"""An example candidate, for the reference."""


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
            InvalidParameter(
                "address", "Give 'address' alone, or 'streetAddress' with the other fields."
            ),
            NotFound("No property matches that address exactly."),
            NotFound(
                "No property matches that address exactly; candidates lists those at that"
                " street address.",
                candidates=[_OTHER_UNIT],
            ),
            AmbiguousAddress(
                "The address matches properties in several ZIP codes: 50010, 50014;"
                " add zipCode to choose one.",
                candidates=[
                    Candidate(
                        id="ames-0003",
                        address=CandidateAddress(
                            street_address="100 Main St",
                            city="Ames",
                            state="IA",
                            zip_code="50010",
                        ),
                    ),
                    Candidate(
                        id="ames-0412",
                        address=CandidateAddress(
                            street_address="100 Main St",
                            city="Ames",
                            state="IA",
                            zip_code="50014",
                        ),
                    ),
                ],
            ),
        ],
    ),
    **documented("properties", "Look up a property by street address", "lookupProperty"),
)
async def lookup_property(
    properties: Injected[PropertyService],
    streetAddress: Annotated[
        str | None,
        QueryParameter(
            min_length=1,
            max_length=200,
            pattern=TEXT,
            description="Street address with its unit, if any, with at least one letter or"
            " digit; required unless address or parcelId is given",
            examples=[Example(value="123 Main St")],
        ),
    ] = None,
    city: Annotated[str | None, replace(CITY, examples=[Example(value="Ames")])] = None,
    state_: Annotated[str | None, replace(STATE_CODE, examples=[Example(value="IA")])] = None,
    zipCode: Annotated[
        str | None,
        QueryParameter(
            pattern=ZIP_OR_ZIP4,
            description="Five-digit ZIP code, or ZIP+4 (read as its five digits), such as"
            " 50010 or 50010-1234",
        ),
    ] = None,
    address: Annotated[
        str | None,
        QueryParameter(
            min_length=1,
            max_length=300,
            pattern=TEXT,
            # No example: /docs pre-fills examples, and this one is not taken beside the rest.
            description="The whole address on one line instead of the other address fields:"
            " street (with its unit), city, state and ZIP code, such as"
            " '123 Main St Apt 4, Ames, IA 50010'",
        ),
    ] = None,
    parcelId: Annotated[
        str | None,
        QueryParameter(
            min_length=1,
            max_length=64,
            pattern=TEXT,
            # No example: /docs pre-fills examples, and this one is not taken beside the rest.
            description="The assessor's parcel number (parcelId of the record), alone instead"
            " of the address fields, such as 0907202030 (Ames, IA); matched as written,"
            " surrounding spaces ignored",
        ),
    ] = None,
    fields: LookupFields = None,
) -> Response[LookupResponse]:
    """Find the one property at an address, matched after USPS normalisation.

    Give streetAddress with city and state, or with zipCode (city and state then optional,
    and when given they must agree with it); or the whole address on one line in address;
    or the assessor's parcel number alone in parcelId.
    """
    selection = select(fields, PropertyLookupItem)
    if parcelId is not None:
        if any(v is not None for v in (streetAddress, city, state_, zipCode, address)):
            raise InvalidParameter("parcelId", "Give 'parcelId' alone, or the address without it.")
        if not parcelId.strip():
            raise InvalidParameter("parcelId", "'parcelId' must not be blank.")
        found = await properties.lookup_parcel(parcelId.strip())
        return answer(LookupResponse(data=found), selection)
    if address is not None:
        if any(v is not None for v in (streetAddress, city, state_, zipCode)):
            raise InvalidParameter(
                "address", "Give 'address' alone, or 'streetAddress' with the other fields."
            )
        parts = split_address(address)
        if parts is None:
            raise InvalidParameter(
                "address",
                "'address' must read as a street address, then city, state and ZIP code,"
                " such as '123 Main St Apt 4, Ames, IA 50010'.",
            )
        streetAddress, city, state_, zipCode = parts
        parameters = ("address",) * 4
    else:
        parameters = ("streetAddress", "city", "state", "zipCode")
    if streetAddress is None:
        raise InvalidParameter("streetAddress", "The query parameter 'streetAddress' is required.")
    if not streetAddress.strip():
        raise InvalidParameter("streetAddress", "'streetAddress' must not be blank.")
    zip_key = None
    if zipCode is not None:
        zip_key = zip5(zipCode)
        if zip_key is None:
            raise InvalidParameter(parameters[3], f"'{zipCode}' is not a ZIP code.")
    elif city is None or state_ is None:
        missing = parameters[1] if city is None else parameters[2]
        raise InvalidParameter(
            missing,
            f"The query parameter '{missing}' is required unless zipCode is given."
            if address is None
            else "'address' needs a ZIP code, or a city and a state.",
        )
    key = None
    if city is not None:
        key = city_key(city)
        if not key:
            raise InvalidParameter(parameters[1], "'city' must not be blank.")
    code = state_code(state_, parameters[2])
    item = await properties.lookup(streetAddress, key, code, zip_key)
    return answer(LookupResponse(data=item), selection)


@get(
    "/properties/{id:str}",
    responses=BY_ID_ERRORS,
    **documented("properties", "Get a property", "getProperty"),
)
async def get_property(
    properties: Injected[PropertyService], id: PropertyId, fields: DetailFields = None
) -> Response[PropertyResponse]:
    """Return one property record with every field of the contract (or those of `fields`)."""
    selection = select(fields, PropertyDetail)
    return answer(PropertyResponse(data=await properties.detail(id)), selection)


@get(
    "/properties/{id:str}/history",
    responses=BY_ID_ERRORS,
    **documented("properties", "Price and tax history of a property", "getPropertyHistory"),
)
async def get_property_history(
    properties: Injected[PropertyService], id: PropertyId, fields: HistoryFields = None
) -> Response[HistoryResponse]:
    """Return a property's price history (newest first) and tax history."""
    selection = select(fields, PropertyHistory)
    return answer(HistoryResponse(data=await properties.history(id)), selection)


HANDLERS = [lookup_property, get_property, get_property_history]
