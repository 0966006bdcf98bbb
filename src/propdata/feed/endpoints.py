"""HTTP endpoint of the change feed."""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Request, get

from propdata.api import paging
from propdata.api.dependencies import Injected
from propdata.api.openapi import documented, errors
from propdata.api.params import PageLimit, token_query
from propdata.errors import InvalidParameter
from propdata.feed.schemas import ChangesResponse
from propdata.feed.service import FeedService


@get(
    "/properties/changes",
    opt={"paged": True},
    responses=errors(
        examples=[
            paging.below_one(),
            InvalidParameter(
                "since", "'since' is not a cursor of this feed: pass meta.nextCursor as it came."
            ),
        ]
    ),
    **documented(
        "properties",
        "Changes to property records, in the order the store made them",
        "listPropertyChanges",
    ),
)
async def list_changes(
    feed: Injected[FeedService],
    request: Request[Any, Any, Any],
    since: Annotated[
        str | None,
        token_query(
            "meta.nextCursor of the previous page; without it the feed starts at"
            " the oldest change kept",
        ),
    ] = None,
    limit: PageLimit = None,  # declared for the reference; the size applied is paging's
) -> ChangesResponse:
    """Every property created or updated by a load or a rebuild, oldest change first.

    Follow meta.nextCursor; an empty page means you are up to date: ask again later with
    the same cursor. Apply a change by fetching the record (a 404 means it was removed).
    """
    return await feed.changes(since, paging.applied_page_size(request.scope))


HANDLERS = [list_changes]
