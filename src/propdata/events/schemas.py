"""Wire shapes of the event log."""

from __future__ import annotations

from typing import Any

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
