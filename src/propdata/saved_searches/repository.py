"""The statements of saved searches: their rows (accounts store) and the records they
watch (data store)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from propdata.kit import meta
from propdata.kit.db import Database, in_lists
from propdata.properties.repository import PropertyRow


class SavedSearchRow(NamedTuple):
    """One row of `saved_searches` (`filters` and `property_ids` as JSON)."""

    id: str
    owner: str
    name: str
    filters: str
    property_ids: str
    created_at: str


class RawSavedSearchRow(NamedTuple):
    """A `SavedSearchRow` whose JSON columns are their bytes, as stored (nothing decoded)."""

    id: str
    owner: str
    name: str
    filters: bytes
    property_ids: bytes
    created_at: str


_SEARCH_COLUMNS = ", ".join(SavedSearchRow._fields)


class SavedSearchRepository:
    """The statements of saved searches (accounts store)."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def insert(self, row: SavedSearchRow) -> None:
        await self.db.execute(
            f"INSERT INTO saved_searches ({_SEARCH_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)",
            tuple(row),
        )

    async def update(self, row: SavedSearchRow) -> None:
        await self.db.execute(
            "UPDATE saved_searches SET name = ?, filters = ?, property_ids = ?"
            " WHERE id = ? AND owner = ?",
            (row.name, row.filters, row.property_ids, row.id, row.owner),
        )

    async def delete(self, owner: str, search_id: str) -> bool:
        done = await self.db.execute(
            "DELETE FROM saved_searches WHERE id = ? AND owner = ?", (search_id, owner)
        )
        return done > 0

    async def get(self, owner: str, search_id: str) -> SavedSearchRow | None:
        row = await self.db.fetch_one(
            f"SELECT {_SEARCH_COLUMNS} FROM saved_searches WHERE id = ? AND owner = ?",
            (search_id, owner),
        )
        return SavedSearchRow._make(row) if row else None

    async def page(self, owner: str, limit: int, offset: int) -> list[SavedSearchRow]:
        """The owner's searches, oldest first; read off the event loop (a page of 1,000
        searches of 1,000 ids each is megabytes)."""
        rows = await self.db.fetch_all(
            f"SELECT {_SEARCH_COLUMNS} FROM saved_searches WHERE owner = ?"
            " ORDER BY created_at, id LIMIT ? OFFSET ?",
            (owner, limit, offset),
            slow=True,
        )
        return [SavedSearchRow._make(row) for row in rows]

    async def raw_page(self, owner: str, limit: int, offset: int) -> list[RawSavedSearchRow]:
        """`page` with the JSON columns as their stored bytes (a page answered as it is
        stored, never decoded and encoded again)."""
        as_bytes = (
            "convert_to({0}, 'UTF8')" if self.db.dialect == "postgresql" else "CAST({0} AS BLOB)"
        )
        columns = [as_bytes.format(c) if c in ("filters", "property_ids") else c
                   for c in SavedSearchRow._fields]  # fmt: skip
        rows = await self.db.fetch_all(
            f"SELECT {', '.join(columns)} FROM saved_searches WHERE owner = ?"
            " ORDER BY created_at, id LIMIT ? OFFSET ?",
            (owner, limit, offset),
            slow=True,
        )
        return [
            RawSavedSearchRow(row[0], row[1], row[2], bytes(row[3]), bytes(row[4]), row[5])
            for row in rows
        ]

    async def count(self, owner: str | None = None) -> int:
        """The owner's searches (every owner's, when None)."""
        if owner is None:
            row = await self.db.fetch_one("SELECT count(*) FROM saved_searches")
        else:
            row = await self.db.fetch_one(
                "SELECT count(*) FROM saved_searches WHERE owner = ?", (owner,)
            )
        return int(row[0]) if row else 0

    async def all(self) -> list[SavedSearchRow]:
        """Every owner's searches (the producer evaluates them all at once)."""
        rows = await self.db.fetch_all(
            f"SELECT {_SEARCH_COLUMNS} FROM saved_searches ORDER BY owner, created_at, id"
        )
        return [SavedSearchRow._make(row) for row in rows]


class WatchedRecords:
    """The data store's side of saved searches: the records watched, the data version their
    match counts are exact for, and whether the triggers write change images (a saved
    search exists)."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def set_watching(self, watching: bool) -> None:
        """Have the triggers write change images (a saved search exists) or not. Its own
        transaction: the write lock is waited for on the event loop, a load's included."""
        async with self.db.transaction():
            await meta.put(self.db, meta.EVENTS_WATCHING, watching)

    async def watching(self) -> bool:
        return await meta.get(self.db, meta.EVENTS_WATCHING)

    async def rows(self, ids: Sequence[str]) -> list[tuple[Any, ...]]:
        """The stored rows of these properties (those that exist), in `PropertyRow`'s order,
        read off the event loop (a thread of its own on SQLite)."""
        found: list[tuple[Any, ...]] = []
        for part, marks in in_lists(ids):
            found += await self.db.fetch_all(
                f"SELECT {_PROPERTY_COLUMNS} FROM properties WHERE id IN ({marks})",
                part,
                slow=True,
            )
        return found

    async def data_version(self) -> int:
        """The data store's version: it moves with every commit that changes the records."""
        return await meta.get(self.db, meta.DATA_VERSION)


_PROPERTY_COLUMNS = ", ".join(PropertyRow._fields)
