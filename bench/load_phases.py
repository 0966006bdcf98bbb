"""Where `propdata data generate --properties N` spends its time, phase by phase.

    .venv/bin/python bench/load_phases.py --properties 1000000             # a temp SQLite file
    .venv/bin/python bench/load_phases.py --properties 1000000 --postgres  # a throwaway schema

Runs what `propdata data generate` runs (`ingest.pipeline` with the synthetic source, as
`bench_data.build` does), then what the first worker of a server does after a load: build
the search index from the table and write its snapshot. Prints one JSON line of seconds:
`generate` (inside the generator), `load` (the load phase without generation; of it
`indexes` (rebuilding the deferred indexes), `commit`, `optimize` (ANALYZE)), `estimates`,
`markets`, `index` (the search index snapshot), `total` (wall clock of all of it, start-up
of the process excluded) and `load_records_per_s` (make bench's row 5a: `load` alone), and
`cpu`: this process's CPU seconds of the load (with generation where it runs in this
process), the two rebuilds and all of it (a shared machine moves CPU seconds less than wall
seconds).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import datetime as dt
import json
import resource
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_data import TimedIterator, code_version, load_options, scratch_store

from propdata.ingest import loader, pipeline
from propdata.kit import db as kitdb
from propdata.kit.db import connect
from propdata.migrations.schema import migrate
from propdata.properties.repository import PropertyRepository
from propdata.search.service import SearchService

AS_OF = dt.date(2026, 11, 21)


class Clock:
    """Seconds spent inside patched functions, by name: wall, and this process's CPU."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.cpu: dict[str, float] = {}

    def wrap(self, owner: Any, method: str, name: str) -> Callable[[], None]:
        original = getattr(owner, method)
        clock = self

        async def timed(*args: Any, **kwargs: Any) -> Any:
            start, cpu = time.perf_counter(), time.process_time()
            try:
                return await original(*args, **kwargs)
            finally:
                clock.seconds[name] = clock.seconds.get(name, 0.0) + time.perf_counter() - start
                clock.cpu[name] = clock.cpu.get(name, 0.0) + time.process_time() - cpu

        setattr(owner, method, timed)
        return lambda: setattr(owner, method, original)


def _time_commit(clock: Clock) -> Callable[[], None]:
    """Time the COMMIT of outermost transactions (SQLite: the statement) while a load runs."""
    original = kitdb.SQLiteDatabase.transaction

    @contextlib.asynccontextmanager
    async def timed(self: kitdb.SQLiteDatabase) -> AsyncIterator[None]:
        outer = self._depth == 0
        inner = original(self)
        await inner.__aenter__()
        try:
            yield
        except BaseException as exc:
            if not await inner.__aexit__(type(exc), exc, exc.__traceback__):
                raise
            return
        start = time.perf_counter()
        await inner.__aexit__(None, None, None)
        if outer:
            clock.seconds["commit"] = clock.seconds.get("commit", 0.0) + time.perf_counter() - start

    setattr(kitdb.SQLiteDatabase, "transaction", timed)  # noqa: B010
    return lambda: setattr(kitdb.SQLiteDatabase, "transaction", original)


async def _index_ready(service: SearchService) -> None:
    """Until the search index of the current data answers (what a first worker waits for)."""
    service.warm()
    while await service.index_status() != "ok":  # noqa: ASYNC110 (polled, as /health is)
        await asyncio.sleep(0.05)


async def run(url: str, properties: int, seed: int, index_dir: Path) -> dict[str, Any]:
    clock = Clock()
    db = await connect(url)
    try:
        await migrate(db)
        source = pipeline.synthetic_source(properties, seed, AS_OF)
        items = TimedIterator(iter(source.items))
        undo = [
            clock.wrap(PropertyRepository, "restore_indexes", "indexes"),
            clock.wrap(PropertyRepository, "optimize", "optimize"),
            clock.wrap(pipeline, "rebuild_valuations", "estimates"),
            clock.wrap(pipeline, "rebuild_markets", "markets"),
        ]
        start, cpu = time.perf_counter(), time.process_time()
        original_load = loader.load

        async def timed_load(*args: Any, **kwargs: Any) -> Any:
            stop = _time_commit(clock)
            cpu = time.process_time()
            try:
                return await original_load(*args, **kwargs)
            finally:
                clock.cpu["load"] = time.process_time() - cpu
                stop()

        setattr(pipeline, "load", timed_load)  # noqa: B010
        try:
            outcome = await pipeline.run(db, [dataclasses.replace(source, items=items)], AS_OF)
        finally:
            setattr(pipeline, "load", original_load)  # noqa: B010
            for u in undo:
                u()
        if outcome.reports[0].rejects:
            raise RuntimeError(f"{len(outcome.reports[0].rejects)} rejects")
        index_start = time.perf_counter()
        service = SearchService(db, snapshots=index_dir)
        await _index_ready(service)
        await service.close()
        end, cpu = time.perf_counter(), time.process_time() - cpu
    finally:
        await db.close()
    load_s = outcome.seconds["load"] - items.seconds
    return {
        "store": "postgresql" if url.startswith("postgresql") else "sqlite",
        "code": code_version(),
        "properties": properties,
        "generate": round(items.seconds, 1),
        "load": round(load_s, 1),
        "indexes": round(clock.seconds.get("indexes", 0.0), 1),
        "commit": round(clock.seconds.get("commit", 0.0), 1),
        "optimize": round(clock.seconds.get("optimize", 0.0), 1),
        "estimates": round(outcome.seconds.get("estimates", 0.0), 1),
        "markets": round(outcome.seconds.get("markets", 0.0), 1),
        "index": round(end - index_start, 1),
        "total": round(end - start, 1),
        "load_records_per_s": round(properties / load_s),
        "cpu": {k: round(v, 1) for k, v in clock.cpu.items()} | {"total": round(cpu, 1)},
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    load_options(parser)
    args = parser.parse_args()
    with scratch_store("load_phases", args.postgres, args.pg_url) as (url, folder):
        result = asyncio.run(run(url, args.properties, args.seed, folder / "index"))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
