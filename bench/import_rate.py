"""Import speed alone: records a second through `ingest.loader.load`, generation excluded.

    .venv/bin/python bench/import_rate.py --properties 100000            # a temp SQLite file
    .venv/bin/python bench/import_rate.py --properties 100000 --postgres  # a throwaway schema
    .venv/bin/python bench/import_rate.py --properties 100000 --profile /tmp/load.prof

The same measure as `make bench` (bench_data.build: the synthetic generator wrapped in a
TimedIterator, its time taken out of the load's), with the closing `optimize()` (full
ANALYZE) timed apart, and a second load of the same records (every one unchanged: the
idempotent path) when `--again` is given.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import datetime as dt
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_data import TimedIterator, code_version, load_options, scratch_store

from propdata.ingest import synthetic
from propdata.ingest.loader import load
from propdata.kit.db import connect
from propdata.migrations.schema import migrate
from propdata.properties.repository import PropertyRepository

AS_OF = dt.date(2026, 11, 21)


async def _one_load(url: str, properties: int, seed: int, label: str) -> dict[str, Any]:
    optimize_s = 0.0
    original = PropertyRepository.optimize

    async def timed_optimize(self: PropertyRepository) -> None:
        nonlocal optimize_s
        start = time.perf_counter()
        await original(self)
        optimize_s += time.perf_counter() - start

    PropertyRepository.optimize = timed_optimize  # type: ignore[method-assign]
    db = await connect(url)
    try:
        await migrate(db)
        made = TimedIterator(synthetic.generate(properties, seed, AS_OF), clock=time.process_time)
        items = TimedIterator(made)
        start, cpu = time.perf_counter(), time.process_time()
        report = await load(db, items, origin="synthetic", as_of=AS_OF, replace_origin=False)
        total, cpu = time.perf_counter() - start, time.process_time() - cpu
    finally:
        PropertyRepository.optimize = original  # type: ignore[method-assign]
        await db.close()
    if report.rejects:
        raise RuntimeError(f"{len(report.rejects)} rejects, first: {report.rejects[0]}")
    import_s = total - items.seconds
    import_cpu = cpu - made.seconds
    return {
        "load": label,
        "properties": properties,
        "inserted": report.inserted,
        "unchanged": report.unchanged,
        "generate_s": round(items.seconds, 2),
        "import_s": round(import_s, 2),
        "optimize_s": round(optimize_s, 2),
        "records_per_s": round(properties / import_s),
        "records_per_s_without_optimize": round(properties / (import_s - optimize_s)),
        "import_cpu_s": round(import_cpu, 2),
        "records_per_cpu_s": round(properties / import_cpu),
    }


async def run(url: str, properties: int, seed: int, again: bool) -> list[dict[str, Any]]:
    results = [await _one_load(url, properties, seed, "first (empty store)")]
    if again:
        results.append(await _one_load(url, properties, seed, "again (all unchanged)"))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    load_options(parser)
    parser.add_argument("--again", action="store_true", help="then load the same records again")
    parser.add_argument("--profile", help="write a cProfile of the run here")
    args = parser.parse_args()

    with scratch_store("import_rate", args.postgres, args.pg_url) as (url, _):
        coro = run(url, args.properties, args.seed, args.again)
        if args.profile:
            profiler = cProfile.Profile()
            results = profiler.runcall(asyncio.run, coro)
            profiler.dump_stats(args.profile)
        else:
            results = asyncio.run(coro)
    store = "postgresql" if args.postgres else "sqlite"
    for result in results:
        print(json.dumps({"store": store, "code": code_version(), **result}))


if __name__ == "__main__":
    main()
