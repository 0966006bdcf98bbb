"""HTTP endpoints for ZIP-level market statistics."""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Request, get
from litestar.params import QueryParameter

from propdata.api import paging
from propdata.api.dependencies import Injected
from propdata.api.openapi import documented, errors
from propdata.api.params import (
    CityQuery,
    PageLimit,
    PageOffset,
    StateQuery,
    ZipPath,
)
from propdata.api.values import city_filter, state_code, zip_code
from propdata.errors import InvalidParameter
from propdata.markets.schemas import MarketHistoryResponse, MarketResponse, MarketSearchResponse
from propdata.markets.service import MarketService, no_market

_BAD_ZIP = InvalidParameter(
    "zipCode", "Invalid value for 'zipCode'; expected: five-digit ZIP code, such as 50010."
)


@get(
    "/markets/search",
    opt={"paged": True},
    responses=errors(
        examples=[
            paging.below_one(),
            InvalidParameter(
                "zipCode",
                "Invalid value for 'zipCode'; expected: ZIP code or its first 1 to 4 digits.",
            ),
        ]
    ),
    **documented("markets", "Search markets", "searchMarkets"),
)
async def search_markets(
    markets: Injected[MarketService],
    request: Request[Any, Any, Any],
    city: CityQuery = None,
    state_: StateQuery = None,
    zipCode: Annotated[
        str | None,
        QueryParameter(pattern=r"^[0-9]{1,5}$", description="ZIP code or its first 1 to 4 digits"),
    ] = None,
    limit: PageLimit = None,  # declared for the reference; the size applied is paging's
    offset: PageOffset = 0,
) -> MarketSearchResponse:
    """Search ZIP-code markets by city, state or ZIP prefix, in ZIP order."""
    return await markets.search(
        city_filter(city),
        state_code(state_),
        zipCode,
        paging.applied_page_size(request.scope),
        offset,
    )


@get(
    "/markets/{zipCode:str}",
    responses=errors(
        404,
        examples=[
            _BAD_ZIP,
            no_market("99999"),
        ],
    ),
    **documented("markets", "Market snapshot for a ZIP code", "getMarket"),
)
async def get_market(markets: Injected[MarketService], zipCode: ZipPath) -> MarketResponse:
    """Return the current market snapshot of a ZIP code."""
    return MarketResponse(data=await markets.market(zip_code(zipCode)))


@get(
    "/markets/{zipCode:str}/history",
    responses=errors(
        404,
        examples=[
            _BAD_ZIP,
            InvalidParameter(
                "months", "Invalid value for 'months'; expected: a whole number from 1 to 60."
            ),
            no_market("99999"),
        ],
    ),
    **documented("markets", "Monthly market history for a ZIP code", "getMarketHistory"),
)
async def get_market_history(
    markets: Injected[MarketService],
    zipCode: ZipPath,
    months: Annotated[
        int, QueryParameter(ge=1, le=60, description="Months of history, newest first")
    ] = 12,
) -> MarketHistoryResponse:
    """Return up to `months` monthly entries, newest first."""
    return MarketHistoryResponse(data=await markets.history(zip_code(zipCode), months))


HANDLERS = [search_markets, get_market, get_market_history]
