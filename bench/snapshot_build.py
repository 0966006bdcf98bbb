"""One search index snapshot build, as a server's first worker does it, and its memory.

    .venv/bin/python bench/snapshot_build.py --store <copy>/propdata.db
    PYTHONPATH=<another tree>/src .venv/bin/python bench/snapshot_build.py --store <copy>/propdata.db

Builds the snapshot of the store's current data version into a new folder beside it
(`<name>-probe-index`, removed after) through `IndexKeeper._obtain`, in this process
with a worker's allocator settings, then prints the wall time, this process's peak (VmHWM)
and remaining anonymous memory (RssAnon), and the peak of the child process that built it
(none when the code measured builds in-process).
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import shutil
import time
from pathlib import Path

from propdata.kit import memory
from propdata.kit.db import connect
from propdata.search.service import SearchService


def status(name: str) -> float:
    """A /proc/self/status figure, MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{name}:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def build(store: Path) -> None:
    memory.map_large_allocations()  # as `app.build_services` does for a worker
    folder = store.with_name(store.stem + "-probe-index")
    shutil.rmtree(folder, ignore_errors=True)
    db = await connect(str(store))
    try:
        service = SearchService(db, snapshots=folder)
        started = time.perf_counter()
        found = await service.indexes._obtain(await service.repo.cache_namespace())
        seconds = time.perf_counter() - started
        assert found is not None, "the data version moved during the build"
        child = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        print(f"from the {found[1]} in {seconds:.1f} s; this process: peak {status('VmHWM'):.0f}"
              f" MB, anonymous now {status('RssAnon'):.0f} MB; a child's peak {child:.0f} MB")  # fmt: skip
    finally:
        await db.close()
        shutil.rmtree(folder, ignore_errors=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--store", type=Path, required=True, help="a SQLite store (a copy)")
    asyncio.run(build(p.parse_args().store))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
