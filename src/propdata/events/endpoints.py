"""HTTP endpoint of the event log (GET /v1/events)."""

from __future__ import annotations

import re
from typing import Annotated, Any

from litestar import Request, Response, get
from litestar.params import QueryParameter

from propdata.accounts.schemas import ApiKey
from propdata.api import paging
from propdata.api.dependencies import Injected
from propdata.api.openapi import documented, errors
from propdata.api.params import PageLimit, token_query
from propdata.api.values import TEXT
from propdata.errors import InvalidParameter
from propdata.events.schemas import EVENT_TYPES, EventsResponse
from propdata.events.service import EventService

_ONE_TYPE = "|".join(re.escape(kind) for kind in EVENT_TYPES)
_TYPES = rf"^({_ONE_TYPE})(,({_ONE_TYPE}))*$"
"""A comma-separated list of event types."""


@get(
    "/events", opt={"paged": True, "cached": False},
    **documented("events", "The event log", "listEvents"),
    responses=errors(examples=[
        InvalidParameter("since", "'since' is not an event cursor: pass meta.nextCursor (or"
                         " an event's stream id) as it came."),
        InvalidParameter("types", f"Unknown event type 'property.sold' in 'types'; expected"
                         f" a comma-separated list of: {', '.join(EVENT_TYPES)}."),
    ]),
)  # fmt: skip
async def list_events(
    events: Injected[EventService],
    key: Injected[ApiKey],
    request: Request[Any, Any, Any],
    since: Annotated[
        str | None,
        token_query(
            "meta.nextCursor of the previous page (or a stream event's id);"
            " without it the log starts at the oldest event kept (30 days)",
        ),
    ] = None,
    types: Annotated[
        str | None,
        QueryParameter(
            min_length=1,
            max_length=500,
            pattern=_TYPES,
            description=f"Only these event types, comma-separated: {', '.join(EVENT_TYPES)}",
        ),
    ] = None,
    searchId: Annotated[
        str | None,
        QueryParameter(
            min_length=1,
            max_length=100,
            pattern=TEXT,
            description="A saved search's id: only its events",
        ),
    ] = None,
    limit: PageLimit = None,  # declared for the reference; the size applied is paging's
) -> Response[EventsResponse]:
    """List the owner's events, oldest first; follow meta.nextCursor (never null).

    An empty page means you are up to date: ask again later with the same cursor.
    """
    size = paging.applied_page_size(request.scope)
    return Response(await events.page(key, since, types, searchId, size))  # type: ignore[arg-type]


HANDLERS = [list_events]
