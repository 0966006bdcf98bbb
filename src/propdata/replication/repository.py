"""Every statement about replication sources, and the lease one replicator of a source holds."""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import AsyncIterator
from typing import Any, NamedTuple

import msgspec

from propdata.kit.db import Database, PostgresDatabase, SQLiteDatabase
from propdata.kit.flock import try_lock
from propdata.replication.schemas import Auth, Source, SourceConfig, Watermark


class SourceRow(NamedTuple):
    name: str
    url: str
    auth: str
    filter: str | None
    page_size: int
    requests_per_hour: int
    overlap_seconds: int
    created_at: str
    watermark: str | None
    watermark_key: str | None
    committed_at: str | None
    records: int
    rejects: int
    removed: int
    last_pass_at: str | None
    state: str
    error: str | None
    requests: str
    events_url: str | None
    event_sequence: int | None
    events_from: int | None


_COLUMNS = ", ".join(SourceRow._fields)
LEASE_CLASS = 7231018
"""PostgreSQL advisory lock class of a source's lease (with the hash of its name)."""


def _source(row: Any) -> Source:
    r = SourceRow._make(row)
    config = SourceConfig(
        name=r.name, url=r.url, auth=msgspec.json.decode(r.auth, type=Auth), filter=r.filter,
        page_size=r.page_size, requests_per_hour=r.requests_per_hour, overlap=r.overlap_seconds,
        events_url=r.events_url,
    )  # fmt: skip
    sequence = None if r.event_sequence is None else int(r.event_sequence)
    return Source(
        config=config, created_at=r.created_at,
        watermark=Watermark(r.watermark, r.watermark_key, sequence),
        committed_at=r.committed_at, records=int(r.records), rejects=int(r.rejects),
        removed=int(r.removed), last_pass_at=r.last_pass_at, state=r.state, error=r.error,
        requests={str(k): int(v) for k, v in msgspec.json.decode(r.requests).items()},
        events_from=None if r.events_from is None else int(r.events_from),
    )  # fmt: skip


class LeaseHeld(Exception):
    """Another replicator of the source holds its lease."""


class SourceRepository:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def add(self, config: SourceConfig, created_at: str) -> bool:
        """Store a new source; False when one of that name exists."""
        count = await self.db.execute(
            "INSERT INTO replication_sources (name, url, auth, filter, page_size,"
            " requests_per_hour, overlap_seconds, created_at, events_url)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (name) DO NOTHING",
            (config.name, config.url, msgspec.json.encode(config.auth).decode(), config.filter,
             config.page_size, config.requests_per_hour, config.overlap, created_at,
             config.events_url),
        )  # fmt: skip
        return count == 1

    async def get(self, name: str) -> Source | None:
        row = await self.db.fetch_one(
            f"SELECT {_COLUMNS} FROM replication_sources WHERE name = ?", (name,)
        )
        return None if row is None else _source(row)

    async def all(self) -> list[Source]:
        rows = await self.db.fetch_all(f"SELECT {_COLUMNS} FROM replication_sources ORDER BY name")
        return [_source(row) for row in rows]

    async def remove(self, name: str) -> bool:
        return await self.db.execute("DELETE FROM replication_sources WHERE name = ?", (name,)) == 1

    async def record_ids(self, prefix: str, after: str | None, limit: int) -> list[str]:
        """Ids of records whose id starts with `prefix`, in order, after `after`."""
        rows = await self.db.fetch_all(
            "SELECT id FROM properties WHERE id >= ? AND id < ? AND id > ? ORDER BY id LIMIT ?",
            (prefix, prefix[:-1] + chr(ord(prefix[-1]) + 1), after or "", limit),
        )
        return [str(row[0]) for row in rows]

    async def advance(
        self, name: str, watermark: Watermark, records: int, rejects: int, removed: int, at: str
    ) -> None:
        """Move the watermark and add to the totals: inside the transaction of the records."""
        await self.db.execute(
            "UPDATE replication_sources SET watermark = ?, watermark_key = ?, event_sequence = ?,"
            " committed_at = ?, records = records + ?, rejects = rejects + ?,"
            " removed = removed + ? WHERE name = ?",
            (
                watermark.timestamp,
                watermark.key,
                watermark.sequence,
                at,
                records,
                rejects,
                removed,
                name,
            ),
        )

    async def note_events_from(self, name: str, sequence: int) -> None:
        """Note the log's newest event before an event source's catch-up pass."""
        await self.db.execute(
            "UPDATE replication_sources SET events_from = ? WHERE name = ?", (sequence, name)
        )

    async def follow_events(self, name: str) -> None:
        """The catch-up pass is over: the source follows the events after the noted one."""
        await self.db.execute(
            "UPDATE replication_sources SET event_sequence = events_from, events_from = NULL"
            " WHERE name = ? AND events_from IS NOT NULL",
            (name,),
        )

    async def set_events(self, name: str, events_url: str | None) -> None:
        """Follow the events at `events_url` from a catch-up pass, or (None) timestamps
        from the timestamp watermark."""
        await self.db.execute(
            "UPDATE replication_sources SET events_url = ?, event_sequence = NULL,"
            " events_from = NULL WHERE name = ?",
            (events_url, name),
        )

    async def set_manners(
        self, name: str, page_size: int, requests_per_hour: int, overlap: int
    ) -> None:
        await self.db.execute(
            "UPDATE replication_sources SET page_size = ?, requests_per_hour = ?,"
            " overlap_seconds = ? WHERE name = ?",
            (page_size, requests_per_hour, overlap, name),
        )

    async def set_state(
        self,
        name: str,
        state: str,
        error: str | None,
        last_pass_at: str | None = None,
        caught_up: bool = False,
    ) -> None:
        """The source's state; `last_pass_at` when a pass ended. A pass that reached the
        end of the feed also moves `committed_at`: the store then holds all the feed had
        then, so the lag counts from there, not from the last record's commit."""
        await self.db.execute(
            "UPDATE replication_sources SET state = ?, error = ?,"
            " last_pass_at = COALESCE(?, last_pass_at),"
            " committed_at = CASE WHEN ? THEN ? ELSE committed_at END WHERE name = ?",
            (state, error, last_pass_at, caught_up, last_pass_at, name),
        )  # fmt: skip

    async def add_requests(self, name: str, counts: dict[str, int]) -> None:
        """Add requests made, by status, to the source's counts (read by `/metrics`)."""
        async with self.db.transaction():
            row = await self.db.fetch_one(
                "SELECT requests FROM replication_sources WHERE name = ?", (name,)
            )
            if row is None:
                return
            held: dict[str, int] = msgspec.json.decode(row[0])
            for status, n in counts.items():
                held[status] = held.get(status, 0) + n
            await self.db.execute(
                "UPDATE replication_sources SET requests = ? WHERE name = ?",
                (msgspec.json.encode(held).decode(), name),
            )

    @contextlib.asynccontextmanager
    async def lease(self, name: str) -> AsyncIterator[None]:
        """Hold the source's lease for the block; LeaseHeld when another replicator has it.

        PostgreSQL: a session advisory lock on a connection of its own, so every host's
        replicators see it, keyed by the store's schema and the source's name (advisory locks
        are the whole database's: two stores in one database each have their `mls`).
        SQLite: an exclusive lock on a file beside the store."""
        if isinstance(self.db, PostgresDatabase):
            import asyncpg

            conn = await asyncpg.connect(self.db.url)
            try:
                schema = await conn.fetchval("SELECT current_schema()")
                named = f"{schema}\0{name}".encode()
                key = int.from_bytes(hashlib.blake2b(named, digest_size=4).digest()) - (1 << 31)
                if not await conn.fetchval("SELECT pg_try_advisory_lock($1, $2)", LEASE_CLASS, key):
                    raise LeaseHeld(name)
                yield
            finally:
                await conn.close()  # the session's lock goes with it
            return
        path = (
            f"{self.db.path}.replicate-{name}.lock" if isinstance(self.db, SQLiteDatabase) else None
        )
        if path is None or path.startswith(":memory:"):
            yield
            return
        fd = try_lock(path)
        if fd is None:
            raise LeaseHeld(name)
        try:
            yield
        finally:
            os.close(fd)
