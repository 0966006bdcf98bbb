"""Build one data version's search index snapshot in a process of its own.

    python -m propdata.search.build_snapshot NAMESPACE DRAFT PARENT_PID
    (the store's address in the environment: PROPDATA_DATABASE_URL)

Why: the worker that built a snapshot in its own process (the whole `properties` table read
through its repository, the index's arrays and every row's search item) kept the build's
heap for as long as it lived, because glibc's `malloc_trim` does not give it back: at
1,000,000 properties 122 MB anonymous against 83 MB for a worker that mapped the snapshot
(Pss 173 against 133 MB). And for the 10-15 s of the build its event loop turned a Python
loop over a million rows between requests. Built here, all of it goes when this process
exits; the worker maps the snapshot as every other worker does.

How (`IndexKeeper._build_apart` starts it):

- The worker that holds the version's lock (`Snapshots.lock`) makes the draft folder
  (`Snapshots.draft`) and starts this module with `asyncio.create_subprocess_exec`: a new
  interpreter, not a fork (the worker has threads and open connections). It passes the
  lock's file on (`pass_fds`), so this process holds the same flock: if the worker dies, no
  other worker builds the version again until this one has gone too.
- The store's address comes in the environment, never in argv, which `ps` shows to every
  user (a PostgreSQL URL may hold a password). The store is opened as the commands open it
  (`kit.db.connect`: the SQLite file, with the commands' 16 MB page cache; the PostgreSQL
  URL, with its search_path), not migrated (the worker did that).
- When the host holds a snapshot of the store within `FOLD_CAP` changes of now (a fold:
  the workers' delta grew past `live.fold_due`), the new one is that snapshot with the
  records changed since read onto it as a worker reads them (`live.Delta`) and merged into
  one index (`fold.fold`): its arrays sorted again, its search items copied, none encoded
  again (`fold_newest`; at 1,000,000 properties and 20,000 changes about 4.5 s of CPU
  against 11 s for a read of the table, docs/measurements.md "Live data").
- Else the table is read in pages (`read_rows`, the read of a worker's own build too),
  every row's search item written to DRAFT/items.bin. Either way `Snapshots.write` renames
  the draft into place: killed at any point, this process leaves no folder that looks
  complete.
- The snapshot is of the store as it is when the read starts (its namespace and the change
  feed's newest number, read together: `SearchIndex.feed`). Loads may commit while the pages are
  read: a row may then be newer than that, which the change feed says (`search.live` takes
  every change numbered above the snapshot's from the store), and the snapshot is marked
  not `exact` (no cursor walk of its version follows it alone).
- Exit status: 0, written; anything else, failed (its traceback on stderr, which is the
  worker's): the worker logs it and builds its own copy from the table, as when it could
  not write a snapshot itself.
- Between pages it checks that the worker is still its parent; when not (the worker died),
  it removes its draft and stops (`ORPHANED`). Once the last page is read (the sorts and
  the write take seconds) it finishes: what it writes then is a sound snapshot.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import BinaryIO

from propdata.config import ENV, load_settings
from propdata.kit import logs
from propdata.kit.db import connect
from propdata.search.fold import fold
from propdata.search.index import INDEX_COLUMNS, ITEM_COLUMNS, SearchIndex
from propdata.search.indexer import IndexBuilder
from propdata.search.live import Delta
from propdata.search.repository import SearchRepository
from propdata.search.snapshot import ITEMS, Snapshots

ORPHANED = 4
"""Exit status: the worker that started the build went; nothing was written."""
STORE = ENV["database_url"]
"""The environment variable the store's address comes in (read with the other settings)."""
PAGE = 10_000
"""Rows a page of the table's read (the parent is checked between pages)."""
FOLD_CAP = 100_000
"""Changes read onto the host's newest snapshot at most (`fold_newest`); past that, the
table is read."""

log = logging.getLogger("propdata")


async def read_rows(
    repo: SearchRepository,
    items: BinaryIO | None,
    page: int,
    between: Callable[[], Awaitable[None]],
) -> SearchIndex:
    """The index of every row of the table (with their search items into `items`, when
    given), read in id order, `page` rows a read, awaiting `between` between reads: of the
    namespace and feed position read first (`SearchIndex.feed`), `exact` when the data
    version did not move meanwhile. Its sorts run on a thread (numpy's release the GIL)."""
    namespace, feed = await repo.feed_position()
    builder = IndexBuilder(namespace, items)
    columns = INDEX_COLUMNS if items is None else INDEX_COLUMNS + ITEM_COLUMNS
    while True:
        rows = await repo.index_page(columns, builder.last_id, page)
        builder.add(rows)
        if len(rows) < page:
            break
        await between()
    exact = await repo.cache_namespace() == namespace
    index = await asyncio.to_thread(builder.finish)
    index.feed, index.mark, index.exact = feed, await repo.feed_mark(feed), exact
    return index


def same_store(namespace: str, other: str) -> bool:
    """Whether two namespaces (`store_id.data_version`) are of the same store."""
    return namespace.rpartition(".")[0] == other.rpartition(".")[0]


async def continues(
    repo: SearchRepository, namespace: str, made_from: str, feed: int, mark: str | None
) -> bool:
    """Whether the store is the one an index of `made_from` at feed position `feed` came
    from: the same store id, and the feed's entry there unchanged (not a restore)."""
    if not same_store(namespace, made_from):
        return False
    return feed == 0 or (mark is not None and await repo.feed_mark(feed) == mark)


async def fold_newest(
    repo: SearchRepository, snapshots: Snapshots, items: BinaryIO | None
) -> SearchIndex | None:
    """The index of the store's current data made from the host's newest snapshot of it
    and the records changed since (read in one statement, as a worker reads them onto
    it: `live.Delta`), folded into one (`fold.fold`), its search items written to `items`;
    None when there is no snapshot of this store to start from, or more than `FOLD_CAP`
    changes since it. The index is of the version that read is of, and exact."""
    cap = FOLD_CAP
    namespace = await repo.cache_namespace()
    name = snapshots.newest(namespace)
    base = None if name is None else await asyncio.to_thread(snapshots.load, name)
    if base is None or not await continues(repo, namespace, base.namespace, base.feed, base.mark):
        return None
    read = await repo.changed_rows(INDEX_COLUMNS + ITEM_COLUMNS, base.feed, base.feed + cap)
    if not same_store(read.namespace, base.namespace) or read.last > base.feed + cap:
        return None
    if base.feed and read.since != base.mark:  # the store was replaced meanwhile
        return None
    view = Delta(base).apply(read.namespace, read.last, read.rows)
    return await asyncio.to_thread(fold, view, read.mark, items)


class _Orphaned(Exception):
    """The worker that started this build is no longer its parent."""


async def build(store: str, namespace: str, draft: Path, parent: int) -> int:
    """Write a snapshot of the store at `store` through `draft` (`namespace`: the worker's
    when it started this; the snapshot is of the namespace the read starts at): the exit
    status (0 or `ORPHANED`); an error raises. The draft goes unless written."""
    started = time.perf_counter()
    snapshots = Snapshots(draft.parent)

    async def between() -> None:
        if os.getppid() != parent:
            raise _Orphaned

    db = await connect(store)
    written = False
    try:
        repo = SearchRepository(db)
        with (draft / ITEMS).open("wb") as items:
            try:
                index = await fold_newest(repo, snapshots, items)
            except Exception:  # the table gives the same snapshot, slower
                log.exception("folding the newest search index snapshot failed; reading the"
                              " table instead")  # fmt: skip
                index = None
                items.seek(0)
                items.truncate()
            folded = index is not None
            if index is None:
                index = await read_rows(repo, items, PAGE, between)
        snapshots.write(index, draft)
        written = True
    except _Orphaned:
        log.warning("the worker that started the search index snapshot's build went; stopped")
        return ORPHANED
    finally:
        await db.close()
        if not written:
            snapshots.discard(draft)
    log.info("search index snapshot %s written (%s): %d properties in %.1f s",
             snapshots.path(index.namespace), "folded" if folded else "from the table",
             index.size, time.perf_counter() - started)  # fmt: skip
    return 0


def main(argv: list[str]) -> int:
    """NAMESPACE DRAFT PARENT_PID: the exit status (see the module's docstring)."""
    namespace, draft, parent = argv
    settings = load_settings()  # the worker's environment, with the store's address in it
    logs.configure(settings.log_level, settings.log_format)  # the server's format
    try:
        return asyncio.run(build(settings.database_url, namespace, Path(draft), int(parent)))
    except KeyboardInterrupt:  # Ctrl-C reaches the whole process group; the worker stops too
        return 130


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
