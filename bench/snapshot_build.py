"""One search index snapshot build, as a server's first worker does it, and its memory;
with `--changes`, then the next one after that many records changed (a worker's fold).

    .venv/bin/python bench/snapshot_build.py --store <copy>/propdata.db [--changes 20000]
    PYTHONPATH=<another tree>/src .venv/bin/python bench/snapshot_build.py --store <copy>/propdata.db

Builds the snapshot of the store's current data version into a new folder beside it
(`<name>-probe-index`, removed after) through `IndexKeeper._obtain`, in this process
with a worker's allocator settings, then prints the wall time, the CPU time of the child
process that built it, this process's peak (VmHWM) and remaining anonymous memory (RssAnon),
and the child's peak (none when the code measured builds in-process). With `--changes N`:
N random records' list prices raised by 1 in one commit (the store is changed: give a
copy), and the next snapshot obtained as a worker folding its delta asks for it.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import resource
import shutil
import time
from pathlib import Path

from propdata.kit import memory
from propdata.kit.db import Database, connect
from propdata.properties.repository import PropertyRepository
from propdata.search.service import SearchService


def status(name: str) -> float:
    """A /proc/self/status figure, MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{name}:"):
            return int(line.split()[1]) / 1024
    return 0.0


def children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


async def change(db: Database, count: int) -> None:
    """`count` random records' list prices raised by 1, in one commit."""
    ids = [row[0] for row in await db.fetch_all("SELECT id FROM properties")]
    chosen = [(i,) for i in random.Random(7).sample(ids, count)]
    async with db.transaction():
        await db.executemany(
            "UPDATE properties SET list_price = coalesce(list_price, 0) + 1 WHERE id = ?", chosen
        )
        await PropertyRepository(db).bump_data_version()


async def build(store: Path, changes: int) -> None:
    memory.map_large_allocations()  # as `app.build_services` does for a worker
    folder = store.with_name(store.stem + "-probe-index")
    shutil.rmtree(folder, ignore_errors=True)
    db = await connect(str(store))
    try:
        service = SearchService(db, snapshots=folder)
        newer_than = -1
        for step in range(2 if changes else 1):
            if step:
                await change(db, changes)
            cpu, started = children_cpu(), time.perf_counter()
            found = await service.indexes._obtain(await service.repo.cache_namespace(), newer_than)
            seconds = time.perf_counter() - started
            assert found is not None, "the data version moved during the build"
            newer_than = int(found[0].namespace.rpartition(".")[2])
            child = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
            print(f"{'after ' + format(changes, ',') + ' changes' if step else 'first'}: from"
                  f" the {found[1]} in {seconds:.1f} s, the child's CPU {children_cpu() - cpu:.1f}"
                  f" s; this process: peak {status('VmHWM'):.0f} MB, anonymous now"
                  f" {status('RssAnon'):.0f} MB; a child's peak {child:.0f} MB")  # fmt: skip
    finally:
        await db.close()
        shutil.rmtree(folder, ignore_errors=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--store", type=Path, required=True, help="a SQLite store (a copy)")
    p.add_argument("--changes", type=int, default=0, help="then change this many, build again")
    args = p.parse_args()
    asyncio.run(build(args.store, args.changes))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
