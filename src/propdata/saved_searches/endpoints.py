"""HTTP endpoints of saved searches (/v1/searches)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Annotated, Any

import msgspec
from litestar import Request, Response, delete, get, patch, post
from litestar.params import JSONBody
from litestar.response import Stream

from propdata.accounts.middleware import MANAGED
from propdata.accounts.schemas import ApiKey
from propdata.api import paging
from propdata.api.dependencies import Injected
from propdata.api.managed import managed_errors
from propdata.api.openapi import RATE_HEADERS, ApiOperation, documented, with_body
from propdata.api.params import PageLimit, PageOffset, path_parameter
from propdata.errors import (
    InvalidParameter,
    NotFound,
    PlanLimitReached,
)
from propdata.kit import memory
from propdata.saved_searches.schemas import (
    RawSavedSearch,
    RawSavedSearchList,
    SavedSearchChange,
    SavedSearchInput,
    SavedSearchList,
    SavedSearchResponse,
)
from propdata.saved_searches.service import SavedSearchService

SearchId = Annotated[str, path_parameter(
    "The saved search's id (srch_...)", "srch_de1b5b28624607aaffc8a493",
    pattern=r"^[A-Za-z0-9_.-]+$", min_length=1, max_length=100)]  # fmt: skip
_BODY_ERRORS = [
    InvalidParameter("filters.maxPrice", "Invalid value for 'filters.maxPrice'; expected: a"
                     " whole number from 0 to 9,007,199,254,740,991."),
    InvalidParameter("filters.limit", "'limit' is not a filter: a saved search has no page,"
                     " sort or fields."),
    InvalidParameter("name", "Invalid value for 'name': expected str of length >= 1."),
]  # fmt: skip


_EXAMPLE = {"name": "Houston under 400k", "filters": {
    "city": "Houston", "state": "TX", "status": "forSale", "maxPrice": 400000}}  # fmt: skip


_CREATE = with_body(
    SavedSearchInput, "The search: name, and filters, propertyIds or both", _EXAMPLE
)
_CHANGE = with_body(SavedSearchChange, "Any of name, filters and propertyIds", _EXAMPLE)
BODIES = (SavedSearchInput, SavedSearchChange)
"""The bodies whose component is msgspec's schema (`api.openapi.ExactBody`)."""


_NOT_FOUND = NotFound("No saved search with id 'srch_0123456789abcdef01234567'.")
_MANAGED = {**MANAGED}


def _documented(
    summary: str, operation_id: str, operation_class: type[ApiOperation] = ApiOperation
) -> dict[str, Any]:
    """A saved-search operation in the document: its answers carry the rate headers, no ETag."""
    return documented("searches", summary, operation_id, headers=RATE_HEADERS,
                      operation_class=operation_class)  # fmt: skip


@post(
    "/searches", opt=_MANAGED, status_code=201,
    **_documented("Save a search", "createSavedSearch", _CREATE),
    responses=managed_errors(403, 413, examples=[*_BODY_ERRORS, PlanLimitReached(
        "The Free plan holds at most 3 saved searches; the Developer plan holds 25.")]),
)  # fmt: skip
async def create_search(
    saved_searches: Injected[SavedSearchService],
    key: Injected[ApiKey],
    data: JSONBody[SavedSearchInput],
) -> SavedSearchResponse:
    """Save a search: filters as GET /v1/properties takes them, property ids, or both.

    Body: `{"name", "filters": {...}, "propertyIds": [...]}`. Its events are produced from
    the next change of a record that matches it.
    """
    return SavedSearchResponse(data=await saved_searches.create(key, _fields(data)))


@get(
    "/searches", opt={**_MANAGED, "paged": True}, responses=managed_errors(),
    **_documented("List saved searches", "listSavedSearches"),
)  # fmt: skip
async def list_searches(
    saved_searches: Injected[SavedSearchService],
    key: Injected[ApiKey],
    request: Request[Any, Any, Any],
    limit: PageLimit = None,  # declared for the reference; the size applied is paging's
    offset: PageOffset = 0,
) -> Response[SavedSearchList]:
    """List the saved searches of the key's owner, oldest first, each with its match count
    and the data version that count is exact for."""
    size = paging.applied_page_size(request.scope)
    page = await saved_searches.raw_page(key, size, offset)
    return Stream(_in_parts(page), media_type="application/json")  # type: ignore[return-value]


PART_BYTES = memory.THRESHOLD // 2
"""Stored JSON of the searches encoded and sent at a time (at least one search). A page of
500 searches that watch 1,000 ids each is 7.6 MB: written whole, it would hold the event loop
(and /health) for milliseconds; a part under the allocator's mmap threshold reuses the heap's
memory instead of mapping (and faulting in) fresh pages each time."""


def _parts(searches: list[RawSavedSearch]) -> Iterator[list[RawSavedSearch]]:
    part: list[RawSavedSearch] = []
    size = 0
    for search in searches:
        stored = len(search.property_ids) + len(search.filters)
        if part and size + stored > PART_BYTES:
            yield part
            part, size = [], 0
        part.append(search)
        size += stored
    if part:
        yield part


async def _in_parts(page: RawSavedSearchList) -> AsyncIterator[bytes]:
    """The page's JSON, the bytes one encoding of it gives, a part at a time with the event
    loop free between them."""
    empty = msgspec.json.encode(RawSavedSearchList(meta=page.meta, data=[]))
    assert empty.endswith(b"[]}")
    yield empty[:-2]
    for n, part in enumerate(_parts(page.data)):
        encoded = msgspec.json.encode(part)[1:-1]
        yield b"," + encoded if n else encoded
        await asyncio.sleep(0)
    yield b"]}"


@get(
    "/searches/{id:str}", opt=_MANAGED, responses=managed_errors(404, examples=[_NOT_FOUND]),
    **_documented("Get a saved search", "getSavedSearch"),
)  # fmt: skip
async def get_search(
    saved_searches: Injected[SavedSearchService],
    key: Injected[ApiKey],
    id: SearchId,
) -> SavedSearchResponse:
    """Get one saved search, with how many records match it now."""
    return SavedSearchResponse(data=await saved_searches.get(key, id))


@patch(
    "/searches/{id:str}", opt=_MANAGED,
    **_documented("Change a saved search", "updateSavedSearch", _CHANGE),
    responses=managed_errors(404, 413, examples=[*_BODY_ERRORS, _NOT_FOUND]),
)  # fmt: skip
async def update_search(
    saved_searches: Injected[SavedSearchService],
    key: Injected[ApiKey],
    id: SearchId,
    data: JSONBody[SavedSearchChange],
) -> SavedSearchResponse:
    """Change any of a saved search's name, filters and propertyIds (each replaced whole)."""
    return SavedSearchResponse(data=await saved_searches.update(key, id, _fields(data)))


@delete(
    "/searches/{id:str}", opt=_MANAGED, responses=managed_errors(404, examples=[_NOT_FOUND]),
    **_documented("Delete a saved search", "deleteSavedSearch"),
)  # fmt: skip
async def delete_search(
    saved_searches: Injected[SavedSearchService],
    key: Injected[ApiKey],
    id: SearchId,
) -> None:
    """Delete a saved search; it produces no more events (those produced are kept)."""
    await saved_searches.delete(key, id)


def _fields(body: SavedSearchInput | SavedSearchChange) -> dict[str, Any]:
    """The fields a body gave, by their wire names (what the service checks, as it checks
    the portal's form)."""
    given: dict[str, Any] = msgspec.to_builtins(body)
    return given


HANDLERS = [create_search, list_searches, get_search, update_search, delete_search]
