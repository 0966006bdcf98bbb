"""What a small load costs on a big store: incremental (the stored models, the touched ZIP
codes) against a full rebuild, end to end from a JSON Lines file.

    .venv/bin/python bench/live_loads.py --properties 100000            # 1, 1,000, 10,000
    .venv/bin/python bench/live_loads.py --properties 100000 --sizes 1 --postgres

A store of `--properties` synthetic records is built once (`pipeline.run`, seed 7). Then,
for each size, a copy of it (SQLite; on PostgreSQL the same schema, the records removed
again after each run) imports that many new records (synthetic, seed 8, their own ids)
from a JSON Lines file through `pipeline.run(file_source)`, twice: finished incrementally,
and finished by a full rebuild (the refit rule forced). One JSON line per run: wall
seconds in all and per phase (load, estimates, markets).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import sys
import time
from pathlib import Path
from typing import Any

import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_data
from bench_data import code_version

from propdata.ingest import pipeline, synthetic
from propdata.kit.db import Database, connect
from propdata.migrations.schema import migrate

PG_URL = bench_data.PG_URL
AS_OF = dt.date(2026, 11, 21)


def write_file(path: Path, size: int) -> None:
    """`size` new synthetic records (seed 8, ids new-...) as JSON Lines."""
    encoder = msgspec.json.Encoder()
    with path.open("wb") as out:
        for n, record in synthetic.generate(size, 8, AS_OF):
            out.write(encoder.encode(msgspec.structs.replace(record, id=f"new-{n:07d}")) + b"\n")


async def one(db: Database, path: Path, mode: str) -> dict[str, Any]:
    original = pipeline.refit_reason
    if mode == "full":

        async def forced(*args: Any) -> str:
            return "forced by the benchmark"

        pipeline.refit_reason = forced  # type: ignore[assignment]
    try:
        start = time.perf_counter()
        outcome = await pipeline.run(db, [pipeline.file_source(path, AS_OF)], AS_OF)
        total = time.perf_counter() - start
    finally:
        pipeline.refit_reason = original  # type: ignore[assignment]
    assert outcome.reports[0].inserted > 0 and (outcome.refit is None) == (mode == "live")
    return {
        "finished": mode,
        "seconds": round(total, 3),
        **{f"{k}_s": round(v, 3) for k, v in outcome.seconds.items()},
        "zip_codes": outcome.markets,
    }


async def build(url: str, properties: int) -> float:
    db = await connect(url)
    try:
        await migrate(db)
        start = time.perf_counter()
        await pipeline.run(db, [pipeline.synthetic_source(properties, 7, AS_OF)], AS_OF)
        return time.perf_counter() - start
    finally:
        await db.close()


async def undo(url: str) -> None:
    """Remove the imported records and restore the state a fresh full rebuild leaves."""
    db = await connect(url)
    try:
        await pipeline.run(db, [pipeline.Source("undo", "import", [], 0, replace=True)], AS_OF)
    finally:
        await db.close()


async def measure(url: str, path: Path, mode: str) -> dict[str, Any]:
    db = await connect(url)
    try:
        return await one(db, path, mode)
    finally:
        await db.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--properties", type=int, default=100_000)
    parser.add_argument("--sizes", default="1,1000,10000")
    parser.add_argument("--postgres", action="store_true", help=f"a fresh schema in {PG_URL}")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    store = "postgresql" if args.postgres else "sqlite"
    with bench_data.scratch_store("live_loads", args.postgres, PG_URL, "base.db") as (base, root):
        built = asyncio.run(build(base, args.properties))
        print(json.dumps({"store": store, "properties": args.properties,
                          "build_s": round(built, 1), "code": code_version()}))  # fmt: skip
        for size in sizes:
            path = root / f"new-{size}.jsonl"
            write_file(path, size)
            for mode in ("live", "full"):
                if args.postgres:
                    url = base
                else:
                    url = str(bench_data.copy_store(Path(base), root / "copy.db"))
                result = asyncio.run(measure(url, path, mode))
                print(json.dumps({"store": store, "properties": args.properties,
                                  "records": size, **result}))  # fmt: skip
                if args.postgres:
                    asyncio.run(undo(url))


if __name__ == "__main__":
    main()
