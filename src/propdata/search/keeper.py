"""The search index's life cycle: the index of the current data version, built or mapped.

One `IndexKeeper` per worker. It finds the data version's index (the host's snapshot,
mapped; else built in a child process that writes the snapshot for every worker, or from
the table in this worker when there is no snapshot folder), starts again when a load moves
the version, retries a failed build later, and keeps superseded indexes a while for cursor
walks begun on them. Until the index of the current version is there, SQL answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import sys
import time
from collections import OrderedDict
from pathlib import Path

from propdata.kit import memory
from propdata.kit.db import address
from propdata.search.build_snapshot import MOVED, STORE, read_rows
from propdata.search.index import IndexBuilder, SearchIndex
from propdata.search.repository import SearchRepository
from propdata.search.snapshot import BuildLock, Snapshots

INDEX_PAGE = 10_000
"""Rows a page of the index build reads: about 50 ms of SQLite work between requests."""

BUILDER = ("-m", "propdata.search.build_snapshot")
"""What `sys.executable` runs to build a snapshot in a child process (its arguments follow)."""
INDEX_RETRY = 60
"""Seconds before a failed build is tried again (each try reads the whole table)."""
SNAPSHOT_WAIT = 0.2
"""Seconds between looks for the snapshot another worker is building (SQL answers meanwhile)."""
OLDER_KEPT = 3
"""Superseded indexes a worker keeps mapped (from their snapshots, when a cursor walk begun
on one asks for it); a private index built in memory is kept, one at most, when replaced."""
OLDER_SECONDS = 3600.0
"""How long a worker keeps a superseded index (snapshot.KEEP_SECONDS keeps the files)."""

log = logging.getLogger("propdata")


async def _next_turn() -> None:
    await asyncio.sleep(0)  # let requests in between pages


class IndexKeeper:
    def __init__(
        self, repo: SearchRepository, *, enabled: bool = True, snapshots: Path | None = None
    ) -> None:
        """`snapshots`: the host's folder of search index snapshots, shared by its workers
        (see `search.snapshot`); None keeps a private index built from the table.
        `enabled` False: no index at all (SQL answers every search)."""
        self.repo = repo
        self.enabled = enabled
        self._index: SearchIndex | None = None
        self._older: OrderedDict[str, tuple[SearchIndex, float]] = OrderedDict()
        """Superseded indexes by namespace, with when they were superseded (monotonic)."""
        self._building: asyncio.Task[None] | None = None
        self._failed_at = -math.inf
        self._snapshots = Snapshots(snapshots) if snapshots is not None else None
        self.source = ""
        """Where the current index came from: "snapshot", "table" or "" (none yet)."""

    async def status(self) -> str:
        """The index: "ok" when it answers for the current data, "building", or "off"."""
        if not self.enabled:
            return "off"
        current = self.current(await self.repo.cache_namespace())
        return "ok" if current is not None else "building"

    def warm(self) -> None:
        """Start building the search index (at start-up, so the first searches find it)."""
        if self.enabled and self._index is None and self._building is None:
            self._building = asyncio.create_task(self._build())

    async def close(self) -> None:
        """Stop a build under way (its child process is killed with it)."""
        if self._building is not None and not self._building.done():
            self._building.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._building

    def current(self, namespace: str) -> SearchIndex | None:
        """The index when it was built from this data version; else start building it."""
        if not self.enabled:
            return None
        if self._older:
            self._expire()
        index = self._index
        if index is not None and index.namespace == namespace:
            return index
        if index is not None:  # built from an older version: only cursor walks use it now
            self._retire(index)
        self._index = None
        idle = self._building is None or self._building.done()
        if idle and time.monotonic() - self._failed_at > INDEX_RETRY:
            self._building = asyncio.create_task(self._build())
        return None

    def _retire(self, index: SearchIndex) -> None:
        """Keep a superseded index for cursor walks begun on it, unless the host's snapshot
        of it can be mapped again when one asks (then it goes now: its pages would stay in
        this worker's resident memory)."""
        snapshots = self._snapshots
        if snapshots is not None and snapshots.identity(index.namespace) is not None:
            self._older.pop(index.namespace, None)
            return
        self._older[index.namespace] = (index, time.monotonic())
        while len(self._older) > 1:  # a private copy of every column: one at most
            self._older.popitem(last=False)

    def _expire(self) -> None:
        now = time.monotonic()
        for name, (_, since) in list(self._older.items()):
            if now - since > OLDER_SECONDS:
                del self._older[name]

    async def walk_index(self, namespace: str) -> SearchIndex | None:
        """The index of an older data version, for a cursor walk that began on it: kept by
        this worker, or mapped from the host's snapshot; None when it is gone."""
        now = time.monotonic()
        kept = self._older.get(namespace)
        if kept is not None:
            return kept[0]
        snapshots = self._snapshots
        if not self.enabled or snapshots is None or snapshots.identity(namespace) is None:
            return None
        index = await asyncio.to_thread(snapshots.load, namespace)
        if index is not None:
            self._older[namespace] = (index, now)
            while len(self._older) > OLDER_KEPT:
                self._older.popitem(last=False)
        return index

    async def _build(self) -> None:
        try:
            namespace = await self.repo.cache_namespace()
            found = await self._obtain(namespace)
            if found is None:
                return  # a load landed meanwhile: the next search starts again
            self._index, self.source = found
            index = found[0]
            log.info("search index ready from the %s: %d properties, %.0f MB", found[1],
                     index.size, index.nbytes / 1e6)  # fmt: skip
        except asyncio.CancelledError:
            raise
        except Exception:  # searches go on through SQL; a search tries again later
            self._failed_at = time.monotonic()
            log.exception("building the search index failed; trying again in %d s", INDEX_RETRY)

    async def _obtain(self, namespace: str) -> tuple[SearchIndex, str] | None:
        """The index of this data version and where it came from: the host's snapshot when
        there is one; else built from the table for one worker of the host (the one that
        gets the version's lock) by a child process it starts (`search.build_snapshot`),
        which writes the snapshot for all of them; the workers answer from SQL meanwhile.
        None when the data version moves before it is ready."""
        snapshots = self._snapshots
        if snapshots is None:
            built = await self._read_table(namespace)
            return None if built is None else (built, "table")
        unusable: tuple[int, int] | None = None  # a damaged folder, not read again
        while True:
            found = await self._load_snapshot(snapshots, namespace, unusable)
            if isinstance(found, SearchIndex):
                return found, "snapshot"
            unusable = found
            try:
                lock = snapshots.lock(namespace)
                mine = lock.acquire()
            except OSError as exc:  # a folder we cannot write: a private index, as before
                log.warning("search index snapshots unavailable in %s (%s); building this"
                            " worker's own index", snapshots.folder, exc)  # fmt: skip
                built = await self._read_table(namespace)
                return None if built is None else (built, "table")
            if mine:
                try:
                    return await self._build_snapshot(snapshots, namespace, unusable, lock)
                finally:
                    lock.release()
            await asyncio.sleep(SNAPSHOT_WAIT)  # another worker of this host builds it
            if await self.repo.cache_namespace() != namespace:
                return None

    async def _load_snapshot(
        self, snapshots: Snapshots, namespace: str, unusable: tuple[int, int] | None
    ) -> SearchIndex | tuple[int, int] | None:
        """The version's snapshot, mapped (older ones pruned); else the identity of a folder
        that is there but damaged (`unusable` is one already found so, not read again)."""
        identity = snapshots.identity(namespace)
        if identity is None or identity == unusable:
            return identity
        index = await asyncio.to_thread(snapshots.load, namespace)
        if index is None:
            return identity
        await asyncio.to_thread(snapshots.prune, namespace)
        return index

    async def _build_snapshot(
        self,
        snapshots: Snapshots,
        namespace: str,
        unusable: tuple[int, int] | None,
        lock: BuildLock,
    ) -> tuple[SearchIndex, str] | None:
        """Under the version's lock: the snapshot another worker finished meanwhile, or one
        built from the table now in a child process, written, and mapped like every other
        worker maps it. A build that fails leaves this worker its own copy, as before."""
        found = await self._load_snapshot(snapshots, namespace, unusable)
        if isinstance(found, SearchIndex):
            return found, "snapshot"
        store = address(self.repo.db)
        draft = await asyncio.to_thread(snapshots.draft, namespace)
        try:
            written = store is not None and await self._build_apart(store, namespace, draft, lock)
        finally:
            snapshots.discard(draft)  # renamed into place when written: then nothing is left
        if written is None:
            return None
        if not written:  # a full disk, say: this worker keeps its own copy
            built = await self._read_table(namespace)
            return None if built is None else (built, "table")
        index = await asyncio.to_thread(snapshots.load, namespace)
        if index is None:
            raise RuntimeError(f"the snapshot just written to {snapshots.folder} does not load")
        await asyncio.to_thread(snapshots.prune, namespace)
        return index, "table"

    async def _build_apart(
        self, store: str, namespace: str, draft: Path, lock: BuildLock
    ) -> bool | None:
        """Build the snapshot in a child process (`search.build_snapshot`), this worker
        answering searches by SQL meanwhile: True when written, None when the data version
        moved, False when the child failed (logged). Cancelled, the child is killed first."""
        try:
            child = await asyncio.create_subprocess_exec(
                sys.executable, *BUILDER, namespace, str(draft), str(os.getpid()),
                stdin=asyncio.subprocess.DEVNULL, env={**os.environ, STORE: store},
                pass_fds=(lock.fileno(),),
            )  # fmt: skip
        except OSError as exc:
            log.warning("could not start the search index snapshot's build (%s); this worker"
                        " builds its own copy", exc)  # fmt: skip
            return False
        try:
            status = await child.wait()
        except BaseException:  # cancelled (the service closes): the build stops with it
            with contextlib.suppress(ProcessLookupError):
                child.kill()
            await child.wait()
            raise
        if status == MOVED:
            return None
        if status != 0:
            log.warning("the search index snapshot's build failed (process %d, exit status %d);"
                        " this worker builds its own copy", child.pid, status)  # fmt: skip
            return False
        return True

    async def _read_table(self, namespace: str) -> SearchIndex | None:
        """This worker's own index, built from every row of the table (None when a load
        lands meanwhile), its requests served between pages."""
        builder = IndexBuilder(namespace)
        if not await read_rows(self.repo, builder, INDEX_PAGE, _next_turn):
            return None
        index = await asyncio.to_thread(builder.finish)  # numpy's sorts release the GIL
        await self.repo.release_cache()  # the build read every row through it
        memory.trim()
        return index
