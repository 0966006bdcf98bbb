"""What one search costs the search index itself, in process (one thread, no HTTP, no rows
read): the search mix, the radius mix, page 100,000 by offset and page 10,000 by cursor,
over a store make bench built.

    .venv/bin/python bench/geo_cursor.py bench/.data/sqlite-p1000000-s7-2026-11-21/propdata.db

It maps the store's index snapshot when there is one for its data version (what a server
does), else builds the index from the table. The figures are the index's share of a
request; bench/run.py measures whole requests.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import bench_data  # noqa: E402  (bench/ is not a package)
import bench_mix  # noqa: E402

from propdata.kit.db import connect  # noqa: E402
from propdata.search.index import INDEX_COLUMNS, SearchIndex  # noqa: E402
from propdata.search.indexer import IndexBuilder  # noqa: E402
from propdata.search.query import SearchQuery, parse  # noqa: E402
from propdata.search.repository import SearchRepository  # noqa: E402
from propdata.search.snapshot import Snapshots  # noqa: E402


async def _index(url: str) -> SearchIndex:
    db = await connect(url)
    try:
        repo = SearchRepository(db)
        namespace = await repo.cache_namespace()
        found = Snapshots(Path(url).parent / "propdata-index").load(namespace)
        if found is not None:
            return found
        builder = IndexBuilder(namespace)
        while True:
            rows = await repo.index_page(INDEX_COLUMNS, builder.last_id, 10_000)
            builder.add(rows)
            if len(rows) < 10_000:
                return builder.finish()
    finally:
        await db.close()


def query(params: dict[str, Any]) -> SearchQuery:
    """The query of a search of the mixes (API parameter names)."""
    return parse(params, int(params.get("limit", 25)))


def timed(
    index: SearchIndex,
    name: str,
    searches: Sequence[bench_mix.Search],
    after: Callable[[bench_mix.Search], tuple[str, int] | None] = lambda _: None,
) -> str:
    """`after`: the last id of the page before and the search's total, as its cursor
    carries them."""
    times = []
    for search in searches:
        q = query(search.params)
        mark, total = after(search) or (None, None)
        started = time.perf_counter()
        index.search(q.probe(offset=0 if mark else None), mark, total=total)
        times.append((time.perf_counter() - started) * 1000)
    times.sort()

    def at(q: float) -> float:
        return times[min(len(times) - 1, int(q * len(times)))]

    return (f"| {name} | {len(times):,} | {statistics.mean(times):.2f} | {at(0.5):.2f} |"
            f" {at(0.99):.2f} | {times[-1]:.2f} |")  # fmt: skip


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("db", help="the SQLite store (make bench builds them in bench/.data)")
    p.add_argument("--searches", type=int, default=2_000)
    p.add_argument("--seed", type=int, default=7)
    args = p.parse_args()
    index = asyncio.run(_index(args.db))
    sample = bench_data.sample(args.db, 10, 2_000, args.seed)
    deep = bench_mix.deep_cursor_searches(40, args.seed + 3)
    lasts: dict[str, tuple[str, int]] = {}
    for search, offset in deep:  # the last id of page 9,999: where page 10,000 starts
        q = dataclasses.replace(query(search.params), offset=offset)
        page = index.search(q)
        if page is not None and len(page.ids) == q.limit:
            lasts[search.path] = page.ids[-1], page.total
    print(f"{index.size:,} properties, {len(lasts)} searches with a page 10,000\n")
    print("| search (index only) | searches | mean ms | p50 ms | p99 ms | max ms |")
    print("|---|---|---|---|---|---|")
    print(timed(index, "search mix", bench_mix.search_mix(sample.rows, args.searches, args.seed)))
    print(
        timed(index, "radius mix", bench_mix.radius_mix(sample.rows, args.searches, args.seed + 2))
    )
    print(timed(index, "offset 100,000", bench_mix.offset_mix(400, args.seed + 1)))
    walked = [s for s, _ in deep if s.path in lasts] * 10
    print(timed(index, "cursor page 10,000", walked, lambda s: lasts[s.path]))


if __name__ == "__main__":
    main()
