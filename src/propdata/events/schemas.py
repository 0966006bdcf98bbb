"""Wire shapes of the event log."""

from __future__ import annotations

from typing import Any, Literal, get_args

import msgspec

from propdata.api.schemas import Base


class Event(Base):
    """One event: what happened (`type`), when, its place in the owner's log (`sequence`
    grows with every event of the owner) and what it is about (`data`, by type)."""

    id: str
    type: str
    timestamp: str
    sequence: int
    data: dict[str, Any]


class EventsMeta(Base):
    """`meta` of an event page: the page size applied and where the next page starts (never
    null: after the last event listed, or where the log stands when none is)."""

    limit: int
    next_cursor: str


class EventsResponse(Base):
    meta: EventsMeta
    data: list[Event]


EventType = Literal[
    "search.entered",
    "search.exited",
    "property.listed",
    "property.priceChanged",
    "property.statusChanged",
    "property.estimateChanged",
    "property.updated",
    "market.updated",
    "webhook.test",
]
EVENT_TYPES: tuple[str, ...] = get_args(EventType)
"""Every event type (contract.md "Events"), in the order the contract lists them."""
LISTED_TYPES = tuple(t for t in EVENT_TYPES if t != "webhook.test")
"""The types the log and the stream carry (`webhook.test` goes to its endpoint alone)."""


class RawEventsResponse(Base):
    """An `EventsResponse` whose events are their stored JSON (the same bytes on the wire)."""

    meta: EventsMeta
    data: msgspec.Raw
