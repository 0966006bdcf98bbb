"""The statements of the change feed (the `property_changes` table)."""

from __future__ import annotations

from typing import NamedTuple

from propdata.kit import meta
from propdata.kit.db import Database


class ChangeRow(NamedTuple):
    seq: int
    property_id: str
    change_type: str
    last_updated: str


class FeedRepository:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def page(self, after: int, limit: int) -> list[ChangeRow]:
        """The `limit` changes numbered above `after`, in order (a primary key range)."""
        rows = await self.db.fetch_all(
            f"SELECT {', '.join(ChangeRow._fields)} FROM property_changes"
            " WHERE seq > ? ORDER BY seq LIMIT ?",
            (after, limit),
        )
        return [ChangeRow._make(row) for row in rows]

    async def last(self) -> int:
        """The number of the newest change (0 before the first)."""
        row = await self.db.fetch_one("SELECT MAX(seq) FROM property_changes")
        return int(row[0]) if row and row[0] is not None else 0

    async def store_id(self) -> str:
        return await meta.get(self.db, meta.STORE_ID)

    async def take_pruning_turn(self, today: str) -> bool:
        """Claim today's pruning (inside a write transaction): True for the one caller that
        moves `feed_pruned_as_of` forward, False when another already has."""
        return await meta.advance(self.db, meta.FEED_PRUNED_AS_OF, today)

    async def prune(self, before: str) -> int:
        """Remove the changes made before `before` (an ISO date) that a later change of the
        same property supersedes; inside a transaction. A property's newest change always
        stays (a removal too, until the property is created again), so a client that starts
        from the oldest change still sees every property, and one that follows an old cursor
        still learns of every removal."""
        return await self.db.execute(
            "DELETE FROM property_changes WHERE changed_at < ? AND seq NOT IN"
            " (SELECT MAX(seq) FROM property_changes GROUP BY property_id)",
            (before,),
        )
