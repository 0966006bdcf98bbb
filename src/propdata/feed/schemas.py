"""Wire shapes of the change feed."""

from __future__ import annotations

from typing import Literal

from propdata.api.schemas import Base

ChangeType = Literal["created", "updated", "removed"]


class PropertyChange(Base):
    """One change: the property, whether it was new, changed or removed, and its lastUpdated
    after the change (before it, for a removal)."""

    id: str
    change_type: ChangeType
    last_updated: str


class ChangesMeta(Base):
    """`meta` of a feed page: the page size applied and where the next page starts (never
    null: on the last page it is where the changes still to come will start)."""

    limit: int
    next_cursor: str


class ChangesResponse(Base):
    meta: ChangesMeta
    data: list[PropertyChange]
