"""Wire shapes of webhook endpoints and deliveries, and the rows they are kept as."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Literal, NamedTuple

import msgspec

from propdata.api.schemas import Base, PageMeta
from propdata.events.schemas import EVENT_TYPES, EventType

EndpointStatus = Literal["enabled", "disabled"]
DisabledReason = Literal["gone", "failing", "owner"]
DeliveryState = Literal["pending", "succeeded", "failed"]
DeliveryError = Literal[
    "timeout", "connection", "tls", "redirect", "http_status", "blocked_address", "owner"
]
"""Why an attempt failed: no answer in time, no connection (the name not resolved within 2 s
included), TLS, a redirect, a status that is no 2xx, an address deliveries may not reach;
`owner`: the delivery was cancelled, its account disabled or its key revoked."""


MAX_GRACE = 604_800
"""Seconds a rotated secret may go on signing beside the new one (a week)."""
DEFAULT_GRACE = 86_400


class _Body(msgspec.Struct, rename="camel", kw_only=True, forbid_unknown_fields=True):
    """A request body: camelCase names, an unknown field is a 400 naming it."""


Url = Annotated[str, msgspec.Meta(min_length=1, max_length=2048, description="https:// URL")]
Types = Annotated[
    list[EventType],
    msgspec.Meta(max_length=len(EVENT_TYPES), description="Event types to deliver"),
]
SearchIds = Annotated[
    list[Annotated[str, msgspec.Meta(max_length=100)]],
    msgspec.Meta(max_length=10_000, description="Saved search ids whose events to deliver"),
]
Description = Annotated[str, msgspec.Meta(max_length=500)]


class NewEndpoint(_Body):
    """POST /v1/webhooks: where to deliver, and which events (absent lists: all)."""

    url: Url
    event_types: Types | None = None
    search_ids: SearchIds | None = None
    description: Description | None = None


class EndpointChange(_Body):
    """PATCH /v1/webhooks/{id}: any of these; absent fields stay as they are."""

    url: Url | msgspec.UnsetType = msgspec.UNSET
    event_types: Types | msgspec.UnsetType | None = msgspec.UNSET
    search_ids: SearchIds | msgspec.UnsetType | None = msgspec.UNSET
    description: Description | msgspec.UnsetType | None = msgspec.UNSET
    status: EndpointStatus | msgspec.UnsetType = msgspec.UNSET


class Rotation(_Body):
    """POST /v1/webhooks/{id}/rotate-secret: how long the old secret goes on signing."""

    # A number with no fraction (JSON Schema's integer: 60.0 is one), 0 to a week.
    grace_seconds: Annotated[float, msgspec.Meta(ge=0, le=MAX_GRACE, multiple_of=1)] = DEFAULT_GRACE


class Replay(_Body):
    """POST /v1/webhooks/{id}/replay: deliver again every kept event after this cursor."""

    since: Annotated[str, msgspec.Meta(min_length=1, max_length=200)]


EndpointIdText = Annotated[str, msgspec.Meta(examples=["wh_4x9QmT2s8Lr5Vb0cN7aYk3Ze"])]


class Endpoint(Base):
    """A webhook endpoint: where the owner's events are POSTed, and which of them."""

    id: EndpointIdText
    url: str
    event_types: list[EventType] | None
    search_ids: list[str] | None
    description: str | None
    status: EndpointStatus
    disabled_reason: DisabledReason | None
    created_at: str


class NewEndpointAnswer(Endpoint):
    """An endpoint just made, with its signing secret (shown this once)."""

    secret: str


class EndpointResponse(Base):
    data: Endpoint


class NewEndpointResponse(Base):
    data: NewEndpointAnswer


class EndpointsResponse(Base):
    meta: PageMeta
    data: list[Endpoint]


class Secret(Base):
    secret: str


class SecretResponse(Base):
    data: Secret


class Queued(Base):
    queued: int


class QueuedResponse(Base):
    data: Queued


class Delivery(Base):
    """One attempt at delivering an event to an endpoint (`succeeded` or `failed`, with that
    attempt's answer), or a delivery waiting for its next attempt (`pending`, when it is due)."""

    event_id: str
    type: EventType
    attempt: Annotated[
        int, msgspec.Meta(description="The attempt's number (pending: the one it waits for)")
    ]
    status: DeliveryState
    response_status: int | None
    error: DeliveryError | None
    duration_ms: int | None
    attempted_at: str | None
    next_attempt_at: str | None


class DeliveriesResponse(Base):
    meta: PageMeta
    data: list[Delivery]


class EndpointRow(NamedTuple):
    id: str
    owner: str
    url: str
    event_types: str | None
    search_ids: str | None
    description: str | None
    status: str
    disabled_reason: str | None
    secret: str
    old_secret: str | None
    old_secret_until: float | None
    cursor_seq: int
    created_at: str
    failing_since: float | None


class DeliveryRow(NamedTuple):
    """A row of an endpoint's deliveries list: an attempt made, or a delivery waiting."""

    event_id: str
    type: str
    attempt: int
    status: str
    response_status: int | None
    error: str | None
    duration_ms: int | None
    attempted_at: str | None
    next_attempt_at: float | None


class Due(NamedTuple):
    """A claimed delivery with what its attempt needs: the endpoint's URL and secrets, the
    event's JSON (None when the event is no longer kept)."""

    id: int
    attempt: int
    event_id: str
    made_at: float
    endpoint_id: str
    owner: str
    url: str
    secret: str
    old_secret: str | None
    old_secret_until: float | None
    body: str | None
    event_seq: int
    event_at: str | None
    """When the event was produced (ISO-8601)."""
    type: str


class Outcome(NamedTuple):
    """What one attempt came to, as it is written back (the delivery's state, and the
    attempt's row)."""

    delivery_id: int
    endpoint_id: str
    state: str
    attempt: int
    next_attempt_at: float | None
    response_status: int | None
    error: str | None
    duration_ms: int
    attempted_at: str
    gone: bool
    at: float
    """Unix seconds of the attempt."""


MAX_PENDING = 10_000
"""Deliveries one endpoint may have waiting; past it the endpoint's events wait in the log
(its cursor stays) until some are attempted."""


def iso(at: float) -> str:
    """Unix seconds as the API's ISO-8601 UTC time with milliseconds."""
    return dt.datetime.fromtimestamp(at, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def passes(endpoint: EndpointRow, event_type: str, search_id: str | None) -> bool:
    """Whether an event passes an endpoint's filters (absent lists pass everything)."""
    if endpoint.event_types is not None and event_type not in msgspec.json.decode(
        endpoint.event_types
    ):
        return False
    if endpoint.search_ids is not None:
        return search_id in msgspec.json.decode(endpoint.search_ids)
    return True
