"""The statements of the event log (the accounts store's `events` table)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import msgspec

from propdata.kit import meta
from propdata.kit.db import Database, in_lists


class LoggedEvent(NamedTuple):
    """One row of the event log (`events`)."""

    seq: int
    """The row's number in the whole log (the order events were produced, every owner's)."""
    sequence: int | None
    """The event's place among its owner's listed events (None: a `webhook.test` event)."""
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


class Numbered(NamedTuple):
    """What `insert_events` gave an event: its row's number and its owner's sequence."""

    seq: int
    sequence: int | None


_COLUMNS = ", ".join(LoggedEvent._fields)


def numbered(body: str, sequence: int) -> str:
    """An event's JSON with `sequence` set (its place kept, else added last)."""
    event = msgspec.json.decode(body)
    event["sequence"] = sequence
    return msgspec.json.encode(event).decode()


class EventRepository:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def insert_events(self, events: Sequence[NewEvent]) -> list[Numbered]:
        """Append events (inside a transaction); each listed one takes the next `sequence`
        of its owner (a `webhook.test` event none: 0 in its JSON). Returns what each got.

        On PostgreSQL the table is locked until the commit first: row numbers come from an
        identity, handed out before commits, and a reader that has seen row n must have seen
        every row below it (as the change feed does); the lock also makes each owner's next
        sequence this transaction's alone (SQLite's write lock does both there)."""
        if not events:
            return []
        if self.db.dialect == "postgresql":
            await self.db.execute("LOCK TABLE events IN SHARE ROW EXCLUSIVE MODE")
            rows = await self.db.fetch_all(
                "SELECT nextval(pg_get_serial_sequence('events', 'seq'))"
                " FROM generate_series(1, ?)",
                (len(events),),
            )
            numbers = sorted(int(row[0]) for row in rows)
        else:  # one writer: the numbers after the highest held are free
            row = await self.db.fetch_one("SELECT COALESCE(MAX(seq), 0) FROM events")
            first = int(row[0]) + 1 if row else 1
            numbers = list(range(first, first + len(events)))
        last = await self._last_sequences(
            sorted({e.owner for e in events if e.endpoint_id is None})
        )
        sequences: list[int | None] = []
        for event in events:
            if event.endpoint_id is None:
                last[event.owner] = last.get(event.owner, 0) + 1
                sequences.append(last[event.owner])
            else:
                sequences.append(None)
        await self.db.executemany(
            "INSERT INTO event_sequences (owner, sequence) VALUES (?, ?)"
            " ON CONFLICT (owner) DO UPDATE SET sequence = excluded.sequence",
            sorted(last.items()),
        )
        await self.db.executemany(
            f"INSERT INTO events (seq, sequence, {', '.join(NewEvent._fields)})"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (seq, sequence, *event[:-1], numbered(event.body, sequence or 0))
                for seq, sequence, event in zip(numbers, sequences, events, strict=True)
            ],
        )
        return [Numbered(*pair) for pair in zip(numbers, sequences, strict=True)]

    async def _last_sequences(self, owners: Sequence[str]) -> dict[str, int]:
        found: dict[str, int] = {}
        for part, marks in in_lists(owners):
            rows = await self.db.fetch_all(
                f"SELECT owner, sequence FROM event_sequences WHERE owner IN ({marks})", part
            )
            found.update((str(owner), int(n)) for owner, n in rows)
        return found

    async def page(
        self,
        owner: str,
        after: int,
        limit: int,
        types: Sequence[str] = (),
        search_id: str | None = None,
    ) -> list[LoggedEvent]:
        """The owner's listed events past sequence `after`, oldest first (no test events)."""
        where = ["owner = ?", "sequence > ?"]
        params: list[object] = [owner, after]
        if types:
            where.append(f"type IN ({', '.join('?' for _ in types)})")
            params.extend(types)
        if search_id is not None:
            where.append("search_id = ?")
            params.append(search_id)
        rows = await self.db.fetch_all(
            f"SELECT {_COLUMNS} FROM events WHERE {' AND '.join(where)} ORDER BY sequence LIMIT ?",
            (*params, limit),
        )
        return [LoggedEvent._make(row) for row in rows]

    async def logged_after(self, owner: str, seq: int, limit: int) -> list[LoggedEvent]:
        """The owner's listed events past row `seq` of the log, in order (the dispatcher's
        fan-out follows the log by its rows)."""
        rows = await self.db.fetch_all(
            f"SELECT {_COLUMNS} FROM events WHERE owner = ? AND seq > ?"
            " AND endpoint_id IS NULL ORDER BY seq LIMIT ?",
            (owner, seq, limit),
        )
        return [LoggedEvent._make(row) for row in rows]

    async def last(self) -> int:
        """The newest row's number (0 before the first), whoever owns it."""
        row = await self.db.fetch_one("SELECT MAX(seq) FROM events")
        return int(row[0]) if row and row[0] is not None else 0

    async def last_sequence(self, owner: str) -> int:
        """The owner's last `sequence` given (0 before its first event)."""
        row = await self.db.fetch_one(
            "SELECT sequence FROM event_sequences WHERE owner = ?", (owner,)
        )
        return int(row[0]) if row else 0

    async def after(self, owner: str, place: tuple[int, bool]) -> int:
        """The owner's sequence a cursor resumes after (`cursor.Place`: a sequence, or a row
        of the log)."""
        number, row = place
        return await self.sequence_at(owner, number) if row else number

    async def sequence_at(self, owner: str, row: int) -> int:
        """The owner's last `sequence` at or before row `row` of the log (what a cursor of
        the log's rows stands for; 0 when the owner has no kept event there)."""
        found = await self.db.fetch_one(
            "SELECT MAX(sequence) FROM events WHERE owner = ? AND seq <= ?"
            " AND sequence IS NOT NULL",
            (owner, row),
        )
        return int(found[0]) if found and found[0] is not None else 0

    async def prune(self, before: str) -> int:
        """Remove the events produced before `before` (ISO-8601 time); inside a transaction."""
        # The newest is kept: SQLite numbers the next row after the highest one held.
        return await self.db.execute(
            "DELETE FROM events WHERE created_at < ? AND seq < (SELECT MAX(seq) FROM events)",
            (before,),
        )

    async def listed_after(self, after: int, limit: int) -> list[LoggedEvent]:
        """Every owner's listed events past row `after`, in order (no test events): what the
        stream's one reader per worker hands out to the open streams."""
        rows = await self.db.fetch_all(
            f"SELECT {_COLUMNS} FROM events WHERE seq > ? AND endpoint_id IS NULL"
            " ORDER BY seq LIMIT ?",
            (after, limit),
        )
        return [LoggedEvent._make(row) for row in rows]


class ImageRow(NamedTuple):
    seq: int
    key: str
    """The property id, or the ZIP code of a market snapshot."""
    before: str | None
    after: str | None


IMAGE_TABLES = {"properties": ("property_images", "property_id"),
                "markets": ("market_images", "zip_code")}  # fmt: skip
"""The image tables (data store) by what they hold, with their key column."""


class ImageRepository:
    """The data store's side of events: the change images the triggers write."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def store_id(self) -> str:
        return await meta.get(self.db, meta.STORE_ID)

    async def pending(self) -> bool:
        """Whether any change image is held (the producer's work, or what it left)."""
        for table, _ in IMAGE_TABLES.values():
            if await self.db.fetch_one(f"SELECT 1 FROM {table} LIMIT 1"):
                return True
        return False

    async def images(self, kind: str, after: int, limit: int) -> list[ImageRow]:
        """Images of `kind` ("properties" or "markets") numbered above `after`, in order."""
        table, key = IMAGE_TABLES[kind]
        rows = await self.db.fetch_all(
            f"SELECT seq, {key}, before, after FROM {table} WHERE seq > ? ORDER BY seq LIMIT ?",
            (after, limit),
        )
        return [ImageRow._make(row) for row in rows]

    async def forget(self, kind: str, upto: int) -> None:
        """Delete the images of `kind` numbered `upto` and below (turned into events)."""
        table, _ = IMAGE_TABLES[kind]
        async with self.db.transaction():
            await self.db.execute(f"DELETE FROM {table} WHERE seq <= ?", (upto,))


class ProducerRepository:
    """The accounts store's side of producing: the daily counts of each owner's events, and
    what was dropped past a cap (how far the images were read: `kit.meta`)."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def lock(self) -> None:
        """One producer at a time (inside its transaction): PostgreSQL's advisory lock,
        held to the commit; SQLite's write transaction already is one."""
        if self.db.dialect == "postgresql":
            await self.db.execute("SELECT pg_advisory_xact_lock(7231009)")

    async def produced_since(self, minute: int) -> dict[str, int]:
        """Events produced per owner from unix minute `minute` on."""
        rows = await self.db.fetch_all(
            "SELECT owner, SUM(produced) FROM event_counts WHERE minute >= ? GROUP BY owner",
            (minute,),
        )
        return {str(owner): int(n) for owner, n in rows}

    async def count_produced(self, minute: int, produced: dict[str, int]) -> None:
        await self.db.executemany(
            "INSERT INTO event_counts (owner, minute, produced) VALUES (?, ?, ?)"
            " ON CONFLICT (owner, minute) DO UPDATE"
            " SET produced = event_counts.produced + excluded.produced",
            [(owner, minute, n) for owner, n in produced.items() if n],
        )

    async def dropped(self) -> dict[str, int]:
        rows = await self.db.fetch_all("SELECT owner, dropped FROM event_drops WHERE dropped > 0")
        return {str(owner): int(n) for owner, n in rows}

    async def set_dropped(self, dropped: dict[str, int]) -> None:
        await self.db.executemany(
            "INSERT INTO event_drops (owner, dropped) VALUES (?, ?)"
            " ON CONFLICT (owner) DO UPDATE SET dropped = excluded.dropped",
            list(dropped.items()),
        )

    async def prune_counts(self, before_minute: int) -> None:
        await self.db.execute("DELETE FROM event_counts WHERE minute < ?", (before_minute,))
