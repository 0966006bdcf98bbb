"""HTTP endpoint for a property's value and rent estimates."""

from __future__ import annotations

from litestar import get

from propdata.api.dependencies import Injected
from propdata.api.openapi import RATE_HEADERS, errors
from propdata.properties.endpoints import PropertyId
from propdata.valuation.schemas import ValuationResponse
from propdata.valuation.service import ValuationService


@get(
    "/properties/{id:str}/valuation",
    responses=errors(404),
    response_headers=RATE_HEADERS,
    tags=["properties"],
    summary="Value and rent estimates with comparable sales",
    operation_id="getPropertyValuation",
)
async def get_property_valuation(
    valuations: Injected[ValuationService],
    id: PropertyId,
) -> ValuationResponse:
    """Return the value and rent estimates, gross yield and the closest comparable sales."""
    return ValuationResponse(data=await valuations.valuation(id))


HANDLERS = [get_property_valuation]
