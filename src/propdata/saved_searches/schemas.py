"""Wire shapes of saved searches."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from propdata.api.schemas import Base, PageMeta


class SavedSearch(Base):
    """A saved search: what it watches (filters as GET /v1/properties takes them, and/or
    property ids) and how many records match it now."""

    id: Annotated[str, msgspec.Meta(examples=["srch_5mXw2kV9qLr0aT3bYc8dZe1f"])]
    name: str
    filters: Annotated[
        dict[str, Any],
        msgspec.Meta(
            description="GET /v1/properties' filter parameters under the same names: numbers"
            " as JSON numbers, bbox as its string",
            examples=[{"city": "Ames", "state": "IA", "status": "forSale", "maxPrice": 350000}],
        ),
    ]
    property_ids: Annotated[
        list[str], msgspec.Meta(description="The records watched (all, when empty)")
    ]
    created_at: str
    match_count: Annotated[
        int,
        msgspec.Meta(
            description="How many records match the search: exact for data version"
            " `dataVersion` (counted again once the data changed)"
        ),
    ]
    data_version: Annotated[
        int,
        msgspec.Meta(
            description="The data version (it grows with every load of the records)"
            " matchCount was counted at",
            examples=[42],
        ),
    ]


class SavedSearchInput(Base, forbid_unknown_fields=True):
    """The body of POST /v1/searches (PATCH: any of the three)."""

    name: Annotated[str, msgspec.Meta(min_length=1, max_length=100)]
    filters: dict[str, Any] = msgspec.field(default_factory=dict)
    property_ids: Annotated[list[str], msgspec.Meta(max_length=1000)] = msgspec.field(
        default_factory=list
    )


class SavedSearchResponse(Base):
    data: SavedSearch


class SavedSearchList(Base):
    meta: PageMeta
    data: list[SavedSearch]


class RawSavedSearch(Base):
    """A `SavedSearch` whose filters and ids are their stored JSON (the same on the wire)."""

    id: str
    name: str
    filters: msgspec.Raw
    property_ids: msgspec.Raw
    created_at: str
    match_count: int
    data_version: int


class RawSavedSearchList(Base):
    """A `SavedSearchList` of `RawSavedSearch`es: a page of searches that each watch 1,000 ids
    is written without decoding and encoding their ids again."""

    meta: PageMeta
    data: list[RawSavedSearch]
