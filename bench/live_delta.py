"""What a commit costs a worker's search index: `Delta.apply` as the delta grows to a fold.

    .venv/bin/python bench/live_delta.py bench/.data/sqlite-p1000000-s7-2026-11-21/propdata.db
    .venv/bin/python bench/live_delta.py STORE --batch 200 --upto 20000

Builds the index of STORE from its table (as a worker without a snapshot does), then applies
commits of `--batch` records (rows of the store itself, read at random, so each supersedes a
base row) until the delta holds `--upto` records (search.live's fold point at a million
properties is 20,000), timing each `apply`. Prints the time at every tenth of the way: what a
search that meets a new data version waits at most (`IndexKeeper.find`), and what the
worker's thread holds the GIL for between searches. Nothing is written to STORE.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from propdata.kit.db import connect
from propdata.search.index import INDEX_COLUMNS, ITEM_COLUMNS
from propdata.search.keeper import IndexKeeper
from propdata.search.live import Delta
from propdata.search.repository import SearchRepository

COLUMNS = INDEX_COLUMNS + ITEM_COLUMNS


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", help="a SQLite store (path)")
    parser.add_argument("--batch", type=int, default=200, help="records a commit")
    parser.add_argument("--upto", type=int, default=20_000, help="records in the delta at the end")
    args = parser.parse_args()
    db = await connect(args.store)
    try:
        started = time.perf_counter()
        base = await IndexKeeper(SearchRepository(db), snapshots=None)._read_table()
        print(f"index of {base.size:,} properties built in {time.perf_counter() - started:.1f} s")
        rows = await db.fetch_all(
            f"SELECT id, {', '.join(COLUMNS)} FROM properties ORDER BY random() LIMIT ?",
            (args.upto,),
        )
    finally:
        await db.close()
    changed = [(row[0], tuple(row[1:])) for row in rows]
    delta = Delta(base)
    commits = -(-len(changed) // args.batch)
    times: list[float] = []
    print(f"| delta records after the commit | apply ms (commit of {args.batch}) |")
    print("|---:|---:|")
    for n in range(commits):
        batch = changed[n * args.batch : (n + 1) * args.batch]
        tick = time.perf_counter()
        delta.apply(base.namespace, base.feed + n + 1, batch)
        times.append((time.perf_counter() - tick) * 1000)
        if n % max(1, commits // 10) == 0 or n == commits - 1:
            print(f"| {len(delta.ids):,} | {times[-1]:.1f} |")
    print(
        f"median {statistics.median(times):.1f} ms, max {max(times):.1f} ms over {commits} commits"
    )


if __name__ == "__main__":
    asyncio.run(main())
