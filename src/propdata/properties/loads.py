"""What the data store keeps of loading itself: the records loads read, and the continuous
feeds expected to load (step 17). All of it written in the store, so every process and host
reads the same."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping

from propdata.kit.db import Database

RESULTS = ("accepted", "rejected")


class LoadsRepository:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def add_counts(self, counts: Mapping[str, int]) -> None:
        """Add a load's records per result (inside the load's transaction)."""
        rows = [(result, n) for result, n in counts.items() if n]
        if rows:
            await self.db.executemany(
                "INSERT INTO ingest_counts (result, records) VALUES (?, ?) ON CONFLICT (result)"
                " DO UPDATE SET records = ingest_counts.records + excluded.records",
                rows,
            )

    async def counts(self) -> dict[str, int]:
        """Records read by every committed load, per result (0 for a result never seen)."""
        found = {result: 0 for result in RESULTS}
        for result, records in await self.db.fetch_all("SELECT result, records FROM ingest_counts"):
            found[str(result)] = int(records)
        return found

    async def name_feed(self, name: str, kind: str) -> None:
        """Name a continuous feed as expected to load (again, from its latest start)."""
        since = dt.datetime.now(dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
        await self.db.execute(
            "INSERT INTO ingest_feeds (name, kind, since) VALUES (?, ?, ?)"
            " ON CONFLICT (name) DO UPDATE SET kind = excluded.kind, since = excluded.since",
            (name, kind, since),
        )

    async def forget_feed(self, name: str) -> None:
        """A feed stopped on purpose: no load is expected of it any more."""
        await self.db.execute("DELETE FROM ingest_feeds WHERE name = ?", (name,))

    async def feeds(self) -> int:
        """How many continuous feeds are expected to load: the followers named here, and
        every replication source (`propdata sources add`)."""
        row = await self.db.fetch_one(
            "SELECT (SELECT COUNT(*) FROM ingest_feeds) + (SELECT COUNT(*) FROM replication_sources)"
        )
        return int(row[0]) if row else 0
