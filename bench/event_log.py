"""What a page of the event log costs: pages of one owner's events by cursor, deep in a log
of 1,000,000 of theirs among other owners' (target: p99 <= 10 ms a page).

    .venv/bin/python bench/event_log.py                               # SQLite, in var/bench
    .venv/bin/python bench/event_log.py --url postgresql://postgres@127.0.0.1/test
    .venv/bin/python bench/event_log.py --events 200000 --pages 500

The log is filled once (`--events` of one owner, a quarter as many of 50 others,
interleaved), then `--pages` pages of `--limit` events are read through
`EventRepository.page` from random cursors, as GET /v1/events reads them.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time
from dataclasses import dataclass
from pathlib import Path

from propdata.events.repository import EventRepository
from propdata.kit.db import Database, connect
from propdata.migrations.schema import migrate_accounts

OWNER = "acct:bench"
BODY = (
    '{"id":"evt_%s","type":"property.updated","timestamp":"2026-11-25T00:00:00.000Z",'
    '"sequence":%d,"data":{"searchId":"srch_bench","searchName":"bench","property":'
    '{"id":"p-%d","status":"forSale","listPrice":250000},"previous":{"bedroomsTotal":3},'
    '"changes":["bedroomsTotal"]}}'
)


async def fill(db: Database, events: int) -> None:
    """The owner's `events` and a quarter as many of other owners, interleaved, numbered."""
    held = await db.fetch_one("SELECT count(*) FROM events WHERE owner = ?", (OWNER,))
    if held and held[0] >= events:
        return
    top = await db.fetch_one("SELECT coalesce(max(seq), 0) FROM events")
    total = events + events // 4
    columns = ["seq", "sequence", "id", "owner", "type", "search_id", "endpoint_id",
               "created_at", "body"]  # fmt: skip
    # 50,000 rows a transaction, made as they go (the whole log at once is about a gigabyte),
    # from where an interrupted fill stopped.
    for start in range(int(top[0]) if top else 0, total, 50_000):
        rows = []
        for n in range(start, min(total, start + 50_000)):
            seq = n + 1
            # Each owner's own numbering: the owner's rows among the first n + 1.
            if n % 5 == 4:
                owner, sequence = f"acct:other-{n % 50}", n // 50 + 1
            else:
                owner, sequence = OWNER, n + 1 - (n + 1) // 5
            rows.append((seq, sequence, f"evt_{seq:026d}", owner, "property.updated",
                         "srch_bench", None, "2026-11-25T00:00:00.000Z",
                         BODY % (seq, sequence, n)))  # fmt: skip
        async with db.transaction():
            await db.copy_into("events", columns, rows)


@dataclass
class LogFigures:
    """What one run measured: the fill's seconds, then each page's seconds, sorted."""

    events: int
    limit: int
    dialect: str
    fill_s: float
    times: list[float]

    def ms(self, q: float) -> float:
        """The `q` quantile (0.5, 0.99) of a page's time, ms."""
        return self.times[min(len(self.times) - 1, int(len(self.times) * q))] * 1000


async def measure(url: str, events: int, pages: int, limit: int = 100) -> LogFigures:
    """Fill the log at `url` (kept when it already holds `events` of the owner) and time
    `pages` pages of `limit` from random cursors."""
    db = await connect(url)
    try:
        await migrate_accounts(db)
        started = time.perf_counter()
        await fill(db, events)
        fill_s = time.perf_counter() - started
        repo = EventRepository(db)
        row = await db.fetch_one(
            "SELECT coalesce(max(sequence), 0) FROM events WHERE owner = ?", (OWNER,)
        )
        last = int(row[0]) if row else 0
        rng = random.Random(1)
        times = []
        for _ in range(pages):
            after = rng.randrange(0, last)
            begun = time.perf_counter()
            page = await repo.page(OWNER, after, limit)
            times.append(time.perf_counter() - begun)
            assert len(page) == limit or (page and page[-1].sequence == last), (after, last)
        return LogFigures(events, limit, db.dialect, fill_s, sorted(times))
    finally:
        await db.close()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default=str(Path("var/bench/events.db")))
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--pages", type=int, default=2_000)
    parser.add_argument("--limit", type=int, default=100)
    args = parser.parse_args()
    found = await measure(args.url, args.events, args.pages, args.limit)
    print(f"log filled in {found.fill_s:.1f} s")
    print(f"{args.pages:,} pages of {args.limit} of {args.events:,} events ({found.dialect}):"
          f" p50 {found.ms(0.5):.2f} ms, p99 {found.ms(0.99):.2f} ms")  # fmt: skip


if __name__ == "__main__":
    asyncio.run(main())
