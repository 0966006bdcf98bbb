"""HTTP endpoints for ZIP-level market statistics."""

from __future__ import annotations

import re
from typing import Annotated, Any

from litestar import Request, get
from litestar.params import PathParameter, QueryParameter

from propdata.errors import InvalidParameter
from propdata.kit.http import RATE_HEADERS, errors
from propdata.markets.schemas import MarketHistoryResponse, MarketResponse, MarketSearchResponse
from propdata.markets.service import MarketService
from propdata.properties.endpoints import (
    CityQuery,
    PageLimit,
    PageOffset,
    StateQuery,
    applied_page_size,
    city_filter,
    state_code,
)

_ZIP = re.compile(r"^\d{5}$")


def _service(request: Request[Any, Any, Any]) -> MarketService:
    service: MarketService = request.app.state.services.markets
    return service


def _zip(value: str) -> str:
    if not _ZIP.match(value):
        raise InvalidParameter("zipCode", f"'{value}' is not a five-digit ZIP code.")
    return value


@get(
    "/markets/search",
    opt={"paged": True},
    responses=errors(400),
    response_headers=RATE_HEADERS,
    tags=["markets"],
    summary="Search markets",
    operation_id="searchMarkets",
)
async def search_markets(
    request: Request[Any, Any, Any],
    city: CityQuery = None,
    state_: StateQuery = None,
    zipCode: Annotated[
        str | None,
        QueryParameter(pattern=r"^\d{1,5}$", description="ZIP code or its first 1-4 digits"),
    ] = None,
    limit: PageLimit = None,
    offset: PageOffset = 0,
) -> MarketSearchResponse:
    """Search ZIP-code markets by city, state or ZIP prefix, in ZIP order."""
    size = applied_page_size(request, limit)
    return await _service(request).search(
        city_filter(city), state_code(state_), zipCode, size, offset
    )


@get(
    "/markets/{zipCode:str}",
    responses=errors(400, 404),
    response_headers=RATE_HEADERS,
    tags=["markets"],
    summary="Market snapshot for a ZIP code",
    operation_id="getMarket",
)
async def get_market(
    request: Request[Any, Any, Any],
    zipCode: Annotated[str, PathParameter(pattern=r"^\d{5}$", description="Five-digit ZIP code")],
) -> MarketResponse:
    """Return the current market snapshot of a ZIP code."""
    return MarketResponse(data=await _service(request).market(_zip(zipCode)))


@get(
    "/markets/{zipCode:str}/history",
    responses=errors(400, 404),
    response_headers=RATE_HEADERS,
    tags=["markets"],
    summary="Monthly market history for a ZIP code",
    operation_id="getMarketHistory",
)
async def get_market_history(
    request: Request[Any, Any, Any],
    zipCode: Annotated[str, PathParameter(pattern=r"^\d{5}$", description="Five-digit ZIP code")],
    months: Annotated[
        int, QueryParameter(ge=1, le=60, description="Months of history, newest first")
    ] = 12,
) -> MarketHistoryResponse:
    """Return up to `months` monthly entries, newest first."""
    return MarketHistoryResponse(data=await _service(request).history(_zip(zipCode), months))


HANDLERS = [search_markets, get_market, get_market_history]
