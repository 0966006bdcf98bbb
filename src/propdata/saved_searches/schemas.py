"""Wire shapes of saved searches."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from propdata.api.schemas import Base, PageMeta
from propdata.properties.schemas import PROPERTY_ID
from propdata.search.parameters import DECLARED, Declared


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


MAX_IDS = 1_000
"""Property ids a saved search may watch."""
MAX_NAME = 100


def _filter(declared: Declared) -> Any:
    """A filter parameter's type with its range, pattern, length and description."""
    bounds = {
        "ge": declared.ge,
        "le": declared.le,
        "gt": declared.gt,
        "pattern": declared.pattern,
        "min_length": declared.min_length,
        "max_length": declared.max_length,
    }
    meta: Any = msgspec.Meta
    held = {name: value for name, value in bounds.items() if value is not None}
    return Annotated[declared.kind, meta(description=declared.description, **held)]  # fmt: skip


SavedSearchFilters: type[msgspec.Struct] = msgspec.defstruct(
    "SavedSearchFilters",
    [(name, _filter(found) | msgspec.UnsetType, msgspec.UNSET) for name, found in DECLARED.items()],
    kw_only=True,
    forbid_unknown_fields=True,
)
"""A saved search's `filters`: the search's filter parameters (`search.parameters`), each
optional, no other name."""
Filters = Annotated[
    dict[str, Any],
    msgspec.Meta(
        description="GET /v1/properties' filter parameters under the same names: numbers as"
        " JSON numbers, bbox as its string",
        extra_json_schema=msgspec.json.schema(SavedSearchFilters)["$defs"]["SavedSearchFilters"],
    ),
]
Name = Annotated[
    str,
    msgspec.Meta(min_length=1, max_length=MAX_NAME, pattern=r"\S",
                 description="What the search is called"),
]  # fmt: skip
PropertyIds = Annotated[
    list[Annotated[str, msgspec.Meta(pattern=PROPERTY_ID)]],
    msgspec.Meta(max_length=MAX_IDS, description="The records watched"),
]


class SavedSearchInput(Base, forbid_unknown_fields=True):
    """The body of POST /v1/searches: a name, and filters, property ids or both."""

    name: Name
    filters: Filters | msgspec.UnsetType = msgspec.UNSET
    property_ids: PropertyIds | msgspec.UnsetType = msgspec.UNSET


class SavedSearchChange(Base, forbid_unknown_fields=True):
    """The body of PATCH /v1/searches/{id}: any of a saved search's fields, each replaced."""

    name: Name | msgspec.UnsetType = msgspec.UNSET
    filters: Filters | msgspec.UnsetType = msgspec.UNSET
    property_ids: PropertyIds | msgspec.UnsetType = msgspec.UNSET


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
