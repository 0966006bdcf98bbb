"""Wire shapes of a property search: its items, its page's meta, its sorts."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from propdata.api.schemas import Base, PageMeta
from propdata.properties.schemas import ShortAddress, Status

SortField = Literal["listPrice", "daysOnMarket", "livingArea", "lastUpdated", "distance"]
SortOrder = Literal["asc", "desc"]


class PropertySearchItem(Base):
    """One item of GET /v1/properties and /v1/properties/search."""

    id: str
    status: Status
    list_price: int | None
    address: ShortAddress
    bedrooms_total: int | None
    bathrooms_total: float | None
    living_area: int | None
    days_on_market: int | None
    last_sale_price: int | None
    last_sale_date: str | None
    last_updated: str
    distance_miles: Annotated[
        float | msgspec.UnsetType | None,
        msgspec.Meta(
            description="Great-circle (haversine) miles from the radius search's point, to two"
            " decimals; present only on a radius search's items",
            examples=[1.27],
        ),
    ] = msgspec.UNSET


class SearchMeta(PageMeta):
    """`meta` of a property search: the page's place, and the cursor of the next page."""

    next_cursor: Annotated[
        str | None,
        msgspec.Meta(
            description="Opaque: send it as `cursor` with the same filters, sort and order for"
            " the next page; null on the last page",
            examples=[
                "WzEsMiwiNDFjMDY1MTBiNDU0MGVlMCIsNywyMzAwLG51bGwsInQtMDI2Il0.ta8UjIiXfjolUvbMYm2Vyg"
            ],
        ),
    ]


class SearchResponse(Base):
    meta: SearchMeta
    data: list[PropertySearchItem]


class EncodedSearchResponse(Base):
    """A `SearchResponse` whose items are already encoded (a search index snapshot's, see
    `search.items`): the same bytes on the wire."""

    meta: SearchMeta
    data: msgspec.Raw
