"""HTTP endpoint for a property's value and rent estimates."""

from __future__ import annotations

from typing import Annotated

from litestar import Response, get

from propdata.api.dependencies import Injected
from propdata.api.fields import answer, parameter, select
from propdata.api.openapi import documented
from propdata.properties.endpoints import BY_ID_ERRORS, PropertyId
from propdata.valuation.schemas import Valuation, ValuationResponse
from propdata.valuation.service import ValuationService


@get(
    "/properties/{id:str}/valuation",
    responses=BY_ID_ERRORS,
    **documented(
        "properties", "Value and rent estimates with comparable sales", "getPropertyValuation"
    ),
)
async def get_property_valuation(
    valuations: Injected[ValuationService],
    id: PropertyId,
    fields: Annotated[str | None, parameter(Valuation)] = None,
) -> Response[ValuationResponse]:
    """Return the value and rent estimates, gross yield and the closest comparable sales."""
    selection = select(fields, Valuation)
    return answer(ValuationResponse(data=await valuations.valuation(id)), selection)


HANDLERS = [get_property_valuation]
