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
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_data import TimedIterator, code_version

from propdata.ingest import synthetic
from propdata.ingest.loader import load
from propdata.kit.db import connect
from propdata.migrations.schema import migrate
from propdata.properties.repository import PropertyRepository


class CpuTimed:
    """Add up the process CPU time spent producing items. Wrapped inside the TimedIterator,
    so its own cost counts as generation, as the bench's figure has it. On a shared machine
    CPU seconds vary less than wall seconds (SQLite runs in this thread)."""

    def __init__(self, items: Any) -> None:
        self.items = items
        self.cpu_seconds = 0.0

    def __iter__(self) -> CpuTimed:
        return self

    def __next__(self) -> Any:
        cpu = time.process_time()
        try:
            return next(self.items)
        finally:
            self.cpu_seconds += time.process_time() - cpu


PG_URL = "postgresql://postgres@127.0.0.1:5432/test"
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
        made = CpuTimed(synthetic.generate(properties, seed, AS_OF))
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
    import_cpu = cpu - made.cpu_seconds
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
    parser.add_argument("--properties", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--postgres", action="store_true", help=f"a fresh schema in {PG_URL}")
    parser.add_argument("--pg-url", default=PG_URL)
    parser.add_argument("--again", action="store_true", help="then load the same records again")
    parser.add_argument("--profile", help="write a cProfile of the run here")
    args = parser.parse_args()

    schema = ""
    with tempfile.TemporaryDirectory(prefix="import-rate-") as folder:
        if args.postgres:
            import asyncpg

            schema = f"import_rate_{uuid.uuid4().hex[:10]}"

            async def create() -> None:
                conn = await asyncpg.connect(args.pg_url)
                await conn.execute(f"CREATE SCHEMA {schema}")
                await conn.close()

            asyncio.run(create())
            sep = "&" if "?" in args.pg_url else "?"
            url = f"{args.pg_url}{sep}search_path={schema}"
        else:
            url = str(Path(folder) / "propdata.db")
        try:
            coro = run(url, args.properties, args.seed, args.again)
            if args.profile:
                profiler = cProfile.Profile()
                results = profiler.runcall(asyncio.run, coro)
                profiler.dump_stats(args.profile)
            else:
                results = asyncio.run(coro)
        finally:
            if schema:

                async def drop() -> None:
                    conn = await asyncpg.connect(args.pg_url)
                    await conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
                    await conn.close()

                asyncio.run(drop())
    store = "postgresql" if args.postgres else "sqlite"
    for result in results:
        print(json.dumps({"store": store, "code": code_version(), **result}))


if __name__ == "__main__":
    main()
