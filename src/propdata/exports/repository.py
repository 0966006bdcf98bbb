"""Every SQL statement of exports: a snapshot's reads, and the periodic exporter's lease."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import NamedTuple

from propdata.kit.db import Database, ReadSnapshot, Row
from propdata.markets.repository import HistoryRow, SnapshotRow
from propdata.properties.repository import COLUMNS

PROPERTY_COLUMNS = (*COLUMNS, "price_history", "tax_history")
"""A property row (`PropertyRow`'s columns) followed by its two packed histories."""
BATCH = 10_000
"""Rows a read of a stream (and a row group of a Parquet file)."""


class Position(NamedTuple):
    """Where the snapshot stands: its data version, the store's id and the change feed's
    newest number, read in one statement."""

    data_version: int
    store_id: str
    feed_seq: int


class SnapshotRepository:
    """The reads of one export, all inside one read snapshot (`Database.read_snapshot`)."""

    def __init__(self, snapshot: ReadSnapshot) -> None:
        self.snapshot = snapshot

    async def position(self) -> Position:
        rows = await self.snapshot.fetch_all(
            "SELECT (SELECT value FROM meta WHERE key = 'data_version'),"
            " (SELECT value FROM meta WHERE key = 'store_id'),"
            " (SELECT COALESCE(MAX(seq), 0) FROM property_changes)"
        )
        version, store, seq = rows[0]
        return Position(int(version or 0), str(store or ""), int(seq))

    async def states(self) -> list[tuple[str, int]]:
        """(state, records) of every state the store holds, in order."""
        rows = await self.snapshot.fetch_all(
            "SELECT state, count(*) FROM properties GROUP BY state ORDER BY state"
        )
        return [(str(r[0]), int(r[1])) for r in rows]

    async def server_process(self) -> int | None:
        """The process id of the server process that runs this snapshot's statements
        (PostgreSQL's backend); None when they run in this process (SQLite)."""
        if self.snapshot.dialect != "postgresql":
            return None
        rows = await self.snapshot.fetch_all("SELECT pg_backend_pid()")
        return int(rows[0][0])

    def properties(self, state: str) -> AsyncIterator[list[Row]]:
        """A state's records (PROPERTY_COLUMNS), BATCH at a time, in the state index's order."""
        chosen = ", ".join(f"p.{c}" for c in COLUMNS)
        return self.snapshot.stream(
            f"SELECT {chosen}, h.price_history, h.tax_history FROM properties p"
            " LEFT JOIN property_histories h ON h.property_id = p.id WHERE p.state = ?",
            (state,),
            BATCH,
        )

    def markets(self) -> AsyncIterator[list[Row]]:
        """Every ZIP code's snapshot row (`SnapshotRow`), in ZIP order."""
        return self.snapshot.stream(
            f"SELECT {', '.join(SnapshotRow._fields)} FROM market_snapshots ORDER BY zip_code",
            (),
            BATCH,
        )

    def market_history(self) -> AsyncIterator[list[Row]]:
        """Every month of every ZIP code: the ZIP code then `HistoryRow`, by ZIP and month."""
        return self.snapshot.stream(
            f"SELECT zip_code, {', '.join(HistoryRow._fields)} FROM market_history"
            " ORDER BY zip_code, month",
            (),
            BATCH,
        )


class LeaseRepository:
    """The periodic exporter's turn, one holder across every host: a row of `meta` holding
    until when it is taken (an ISO time), moved forward only by a conditional update."""

    KEY = "export_lease"

    def __init__(self, db: Database) -> None:
        self.db = db

    async def take(self, now: str, until: str) -> bool:
        """Take the lease until `until` if it is free at `now` (inside a write transaction)."""
        if await self.db.execute(
            "UPDATE meta SET value = ? WHERE key = ? AND value <= ?", (until, self.KEY, now)
        ):
            return True
        return bool(
            await self.db.execute(
                "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING",
                (self.KEY, until),
            )
        )

    async def renew(self, held: str, until: str) -> bool:
        """Move the lease from `held` (what its holder last set) to `until`; False when it
        holds something else, so another process took it (inside a write transaction)."""
        return bool(
            await self.db.execute(
                "UPDATE meta SET value = ? WHERE key = ? AND value = ?", (until, self.KEY, held)
            )
        )

    async def hold_until(self, until: str) -> None:
        """Set when the lease (held by the caller) comes free again."""
        await self.db.execute("UPDATE meta SET value = ? WHERE key = ?", (until, self.KEY))

    async def until(self) -> str | None:
        row = await self.db.fetch_one("SELECT value FROM meta WHERE key = ?", (self.KEY,))
        return None if row is None else str(row[0])
