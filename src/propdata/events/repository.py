"""The statements of the event log (the accounts store's `events` table)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from propdata.kit.db import Database


class EventRow(NamedTuple):
    seq: int
    id: str
    owner: str
    type: str
    search_id: str | None
    endpoint_id: str | None
    created_at: str
    body: str


class NewEvent(NamedTuple):
    id: str
    owner: str
    type: str
    search_id: str | None
    endpoint_id: str | None
    created_at: str
    body: str


_COLUMNS = ", ".join(EventRow._fields)


class EventRepository:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def insert_events(self, events: Sequence[NewEvent]) -> list[int]:
        """Append events (inside a transaction) and return their numbers, in order.

        On PostgreSQL the table is locked until the commit first: numbers come from an
        identity, handed out before commits, and a reader that has seen number n must have
        seen every number below it (as the change feed does)."""
        if not events:
            return []
        if self.db.dialect == "postgresql":
            await self.db.execute("LOCK TABLE events IN SHARE ROW EXCLUSIVE MODE")
        numbers: list[int] = []
        for event in events:
            row = await self.db.fetch_one(
                f"INSERT INTO events ({', '.join(NewEvent._fields)})"
                " VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING seq",
                tuple(event),
            )
            assert row is not None
            numbers.append(int(row[0]))
        return numbers

    async def page(
        self,
        owner: str,
        after: int,
        limit: int,
        types: Sequence[str] = (),
        search_id: str | None = None,
    ) -> list[EventRow]:
        """The owner's listed events numbered above `after`, oldest first (no test events)."""
        where = ["owner = ?", "seq > ?", "endpoint_id IS NULL"]
        params: list[object] = [owner, after]
        if types:
            where.append(f"type IN ({', '.join('?' for _ in types)})")
            params.extend(types)
        if search_id is not None:
            where.append("search_id = ?")
            params.append(search_id)
        rows = await self.db.fetch_all(
            f"SELECT {_COLUMNS} FROM events WHERE {' AND '.join(where)} ORDER BY seq LIMIT ?",
            (*params, limit),
        )
        return [EventRow._make(row) for row in rows]

    async def last(self) -> int:
        """The newest event's number (0 before the first), whoever owns it."""
        row = await self.db.fetch_one("SELECT MAX(seq) FROM events")
        return int(row[0]) if row and row[0] is not None else 0

    async def prune(self, before: str) -> int:
        """Remove the events produced before `before` (ISO-8601 time); inside a transaction."""
        return await self.db.execute("DELETE FROM events WHERE created_at < ?", (before,))

    async def listed_after(self, after: int, limit: int) -> list[EventRow]:
        """Every owner's listed events numbered above `after`, oldest first (no test events):
        what the stream's one reader per worker hands out to the open streams."""
        rows = await self.db.fetch_all(
            f"SELECT {_COLUMNS} FROM events WHERE seq > ? AND endpoint_id IS NULL"
            " ORDER BY seq LIMIT ?",
            (after, limit),
        )
        return [EventRow._make(row) for row in rows]
