"""The search index's life cycle: the index of the current data version, kept live.

One `IndexKeeper` per worker. It holds a base index (the host's snapshot, mapped; else built
in a child process that writes the snapshot for every worker, or from the table in this
worker when there is no snapshot folder) and on it the records changed since
(`search.live`). When the data version moves (a request meets it, or a look every `poll`
seconds finds it), it reads the changes from the store (the change feed's entries past its
position and those records, in one statement) and makes the new version's index off the
request path; a request that meets a version not made yet waits for it up to
`refresh_wait` (`KeeperSettings`), then SQL answers. A delta past the fold rule (`live.fold_due`) is folded: a
new snapshot (one build per host), then the delta on it. Superseded versions are kept a
while for cursor walks begun on them. Until a base is there, SQL answers.
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
from dataclasses import dataclass
from pathlib import Path

from propdata.kit import memory
from propdata.kit.db import address
from propdata.kit.loops import task_health
from propdata.search.build_snapshot import STORE, continues, read_rows, same_store
from propdata.search.index import INDEX_COLUMNS, ITEM_COLUMNS, SearchIndex
from propdata.search.live import FOLD_ROWS, FOLD_SHARE, Delta, LiveIndex, fold_due
from propdata.search.repository import SearchRepository
from propdata.search.snapshot import BuildLock, Snapshots


@dataclass(frozen=True)
class KeeperSettings:
    """The keeper's numbers. The server takes them from its settings (PROPDATA_INDEX_*,
    docs/configuration.md); the defaults are those settings' defaults."""

    poll: float = 0.25
    """Seconds between looks at the data version, so that a commit's index is usually made
    before a request asks for it (SQLite: a marker read; PostgreSQL: one query)."""
    refresh_wait: float = 1.0
    """Seconds a search waits for the index of a data version being made before SQL answers."""
    retry: float = 60.0
    """Seconds before a failed build is tried again (each try reads the whole table)."""
    refresh_retry: float = 1.0
    """Seconds before a failed read of the changes is tried again."""
    snapshot_wait: float = 0.2
    """Seconds between looks for the snapshot another worker is building (SQL answers meanwhile)."""
    older_kept: int = 3
    """Superseded versions a worker keeps (their live indexes; or mapped from snapshots made
    exactly of them, when a cursor walk begun on one asks for it)."""
    older_seconds: float = 3600.0
    """How long a worker keeps a superseded index mapped from a snapshot (snapshot.KEEP_SECONDS
    keeps the files)."""
    refresh_cap: int = 50_000
    """Changes read into a delta at most: past that (a large load), a new snapshot is built and
    SQL answers the versions after it until it is ready."""
    page: int = 10_000
    """Rows a page of a worker's own index build reads: about 50 ms of SQLite work between
    requests."""
    fold_rows: int = FOLD_ROWS
    fold_share: float = FOLD_SHARE
    """The fold rule's numbers (`live.fold_due`)."""
    builder: tuple[str, ...] = ("-m", "propdata.search.build_snapshot")
    """What `sys.executable` runs to build a snapshot in a child process (its arguments
    follow); not a setting: tests give it another program."""


DEFAULTS = KeeperSettings()
_COLUMNS = INDEX_COLUMNS + ITEM_COLUMNS

log = logging.getLogger("propdata")


async def _next_turn() -> None:
    await asyncio.sleep(0)  # let requests in between pages


def _version(namespace: str) -> int:
    return int(namespace.rpartition(".")[2] or 0)


def within_reach(feed: int, last: int, cap: int = DEFAULTS.refresh_cap) -> bool:
    """Whether an index made at change-feed position `feed` is brought to position `last` by
    reading the changes between (at most `cap`); past that a new snapshot is built first,
    and SQL answers meanwhile."""
    return last - feed <= cap


@dataclass(frozen=True, slots=True)
class HostIndex:
    """What the workers of a server on this host make the current data's index from."""

    namespace: str
    """The store's current data (`store_id.data_version`)."""
    base: str | None
    """The namespace of the snapshot they start from; None: none to start from, so one is
    built from the table first (SQL answers meanwhile)."""
    behind: int
    """Changes since that snapshot, which each worker reads onto it."""


async def host_index(repo: SearchRepository, snapshots: Snapshots) -> HostIndex:
    """The base a server's workers take for the store's current data, by the rules they
    follow (`IndexKeeper._obtain` and `_catch_up`): the host's newest snapshot of the store
    up to this data version (`Snapshots.newest`), made from this store (`continues`), with
    the changes since it within reach (`within_reach`). `propdata data status` says this;
    a running worker's `/health` says whether it has made it (`IndexKeeper.status`)."""
    namespace, last = await repo.feed_position()
    name = snapshots.newest(namespace)
    made = None if name is None else snapshots.position(name)
    if name is None or made is None:
        return HostIndex(namespace, None, 0)
    feed, mark = made
    if not within_reach(feed, last) or not await continues(repo, namespace, name, feed, mark):
        return HostIndex(namespace, None, last - feed)
    return HostIndex(namespace, name, last - feed)


class IndexKeeper:
    name = "searchIndex"
    """Its name among the worker's loops (`kit.loops`)."""

    def __init__(
        self,
        repo: SearchRepository,
        *,
        enabled: bool = True,
        snapshots: Path | None = None,
        tuning: KeeperSettings = DEFAULTS,
    ) -> None:
        """`snapshots`: the host's folder of search index snapshots, shared by its workers
        (see `search.snapshot`); None keeps a private index built from the table.
        `enabled` False: no index at all (SQL answers every search)."""
        self.repo = repo
        self.enabled = enabled
        self.tuning = tuning
        self.fold_rows = tuning.fold_rows
        self.fold_share = tuning.fold_share
        """The fold rule's numbers (`live.fold_due`), from `tuning`."""
        self._views: OrderedDict[str, LiveIndex] = OrderedDict()
        """The indexes of the newest data versions, by namespace, the newest last."""
        self._delta: Delta | None = None
        self._next: tuple[SearchIndex, str] | None = None
        """A folded base (and where it came from) the next refresh switches to."""
        self._older: OrderedDict[str, tuple[LiveIndex, float]] = OrderedDict()
        """Older versions mapped from their snapshots for cursor walks, with when (monotonic)."""
        self._building: asyncio.Task[None] | None = None
        """The refresh under way (the first one builds or maps the base)."""
        self._folding: asyncio.Task[None] | None = None
        self._poller: asyncio.Task[None] | None = None
        self._failed_at = -math.inf
        """When making a version last failed (monotonic)."""
        self._fold_failed_at = -math.inf
        self._failure: str | None = None
        """Why making the last version failed; None once one is made."""
        self._snapshots = Snapshots(snapshots) if snapshots is not None else None
        self.source = ""
        """Where the current base came from: "snapshot", "table" or "" (none yet)."""

    @property
    def _index(self) -> SearchIndex | None:
        """The base of the newest version's index."""
        newest = self._newest()
        return None if newest is None else newest.base

    async def status(self) -> str:
        """The index: "ok" when it answers for the current data, "building", or "off"."""
        if not self.enabled:
            return "off"
        current = self.current(await self.repo.cache_namespace())
        return "ok" if current is not None else "building"

    def warm(self) -> None:
        """Start building the search index (at start-up, so the first searches find it), and
        looking at the data version every `tuning.poll` seconds."""
        if not self.enabled:
            return
        if not self._views:
            self._start()
        if self._poller is None:
            self._poller = asyncio.create_task(self._poll())

    async def close(self) -> None:
        """Stop what is under way (a child process building a snapshot is killed with it)."""
        for task in (self._poller, self._building, self._folding):
            if task is not None and not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        self._poller = None

    async def refreshed(self) -> bool:
        """Wait until the refresh under way (the first one builds or maps the base) has ended,
        made or failed; False when none was under way."""
        task = self._building
        if task is None:
            return False
        await asyncio.wait({task})
        return True

    def working_on(self) -> asyncio.AbstractEventLoop | None:
        """The event loop its background work (the look at the data version, a refresh, a
        fold) runs on, while any is under way; None when none is. `close` it on that loop."""
        for task in (self._poller, self._building, self._folding):
            if task is not None and not task.done():
                return task.get_loop()
        return None

    async def start(self) -> None:
        """`warm`, as a loop of the worker (`kit.loops.Loop`)."""
        self.warm()

    async def stop(self) -> None:
        await self.close()

    def health(self) -> str:
        """The look at the data version: "ok" while it runs and the last version was made,
        "failing: ..." while making one fails (SQL answers), "stopped" (or disabled)."""
        return task_health(self._poller, self._failure)

    def current(self, namespace: str) -> LiveIndex | None:
        """The index of this data version (or of a newer one already made: a commit this
        request did not see yet); else None, and its making starts."""
        if not self.enabled:
            return None
        if self._older:
            self._expire()
        view = self._views.get(namespace)
        if view is not None:
            return view
        newest = self._newest()
        if (
            newest is not None
            and same_store(newest.namespace, namespace)
            and newest.version > _version(namespace)
        ):
            return newest
        self._start()
        return None

    async def find(self, namespace: str) -> LiveIndex | None:
        """`current`, waiting up to `tuning.refresh_wait` for a version being made on a base this
        worker holds (the first build is not waited for: SQL answers meanwhile). When that
        version is later than that, the newest version made: an answer a commit or two
        behind now, where SQL over a large store would answer seconds later (its caller
        keeps it out of the response cache)."""
        view = self.current(namespace)
        task = self._building
        if view is None and self._delta is not None and task is not None and not task.done():
            await asyncio.wait(
                {task}, timeout=self.tuning.refresh_wait
            )  # its failure is its own (logged)
            view = self.current(namespace)
            newest = self._newest()
            if view is None and not task.done() and newest is not None:
                view = newest if same_store(newest.namespace, namespace) else None
        return view

    def _newest(self) -> LiveIndex | None:
        return next(reversed(self._views.values()), None)

    def _start(self) -> None:
        idle = self._building is None or self._building.done()
        wait = self.tuning.retry if self._delta is None else self.tuning.refresh_retry
        if idle and time.monotonic() - self._failed_at > wait:
            self._building = asyncio.create_task(self._refresh())

    async def _poll(self) -> None:
        while True:
            await asyncio.sleep(self.tuning.poll)
            try:
                namespace = await self.repo.cache_namespace()
            except Exception:  # the store is away: requests say so; look again later
                continue
            self.current(namespace)

    def _expire(self) -> None:
        now = time.monotonic()
        for name, (_, since) in list(self._older.items()):
            if now - since > self.tuning.older_seconds:
                del self._older[name]

    async def walk_index(self, namespace: str) -> LiveIndex | None:
        """The index of an older data version, for a cursor walk that began on it: kept by
        this worker, or mapped from the host's snapshot made exactly of it; None when gone."""
        view = self._views.get(namespace)
        if view is not None:
            return view
        now = time.monotonic()
        kept = self._older.get(namespace)
        if kept is not None:
            return kept[0]
        snapshots = self._snapshots
        if not self.enabled or snapshots is None or snapshots.identity(namespace) is None:
            return None
        index = await asyncio.to_thread(snapshots.load, namespace)
        if index is None or not index.exact:
            return None
        found = LiveIndex.plain(index)
        self._older[namespace] = (found, now)
        while len(self._older) > self.tuning.older_kept:
            self._older.popitem(last=False)
        return found

    # -- making versions ----------------------------------------------------------------

    async def _refresh(self) -> None:
        """Make the index of the store's newest data version: the base first when there is
        none, the folded one when it is ready, then the changes since."""
        try:
            while True:
                if self._delta is None:
                    found = await self._obtain(await self.repo.cache_namespace())
                    self._switch(*found)
                if self._next is not None:
                    self._switch(*self._next)
                    self._next = None
                if not await self._catch_up():  # another store in its place: start again
                    log.warning("the store is not the one the search index was made from (a"
                                " restore?); making it again")  # fmt: skip
                    self._delta, self._next = None, None
                    self._views.clear()
                    self._older.clear()
                    continue
                if self._next is None:
                    self._failure = None
                    return
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # searches go on through SQL; a search tries again later
            wait = self.tuning.retry if self._delta is None else self.tuning.refresh_retry
            self._failed_at = time.monotonic()
            self._failure = type(exc).__name__
            log.exception("making the search index failed; trying again in %s s", wait)

    def _switch(self, base: SearchIndex, source: str) -> None:
        self._delta = Delta(base)
        self.source = source
        log.info("search index ready from the %s: %d properties, %.0f MB", source, base.size,
                 base.nbytes / 1e6)  # fmt: skip

    async def _catch_up(self) -> bool:
        """The changes since the delta's position, into the next version's index; a fold
        when the delta is due one or the changes are too many to read. False when the
        store is not the one the delta follows (restored, replaced): nothing was made."""
        delta = self._delta
        assert delta is not None
        upto = delta.feed + self.tuning.refresh_cap
        read = await self.repo.changed_rows(_COLUMNS, delta.feed, upto)  # one read: all of it
        namespace = read.namespace
        if not same_store(namespace, delta.base.namespace):
            return False
        if delta.feed and (delta.mark is None or read.since != delta.mark):
            return False
        made = self._views.get(namespace)
        if read.last == delta.feed and made is not None and made.base is delta.base:
            return True
        if not within_reach(
            delta.feed, read.last, self.tuning.refresh_cap
        ):  # a large load: a new snapshot, SQL meanwhile
            self._fold()
            return True
        view = await asyncio.to_thread(delta.apply, read.namespace, read.last, read.rows)
        delta.mark = read.mark
        self._views[namespace] = view
        self._views.move_to_end(namespace)
        while len(self._views) > self.tuning.older_kept + 1:
            self._views.popitem(last=False)
        if fold_due(len(delta.changed), delta.base.size, self.fold_rows, self.fold_share):
            self._fold()
        return True

    def _fold(self) -> None:
        idle = self._folding is None or self._folding.done()
        if idle and time.monotonic() - self._fold_failed_at > self.tuning.retry:
            self._folding = asyncio.create_task(self._build_next())

    async def _build_next(self) -> None:
        """A base newer than the current one (the host's newest snapshot, or one built now),
        for the next refresh to switch to."""
        assert self._delta is not None
        try:
            newer_than = _version(self._delta.base.namespace)
            found = await self._obtain(await self.repo.cache_namespace(), newer_than)
        except asyncio.CancelledError:
            raise
        except Exception:
            self._fold_failed_at = time.monotonic()
            log.exception(
                "folding the search index failed; trying again in %d s", self.tuning.retry
            )
            return
        self._next = found
        self._start()

    # -- bases ---------------------------------------------------------------------------

    async def _obtain(self, namespace: str, newer_than: int = -1) -> tuple[SearchIndex, str]:
        """A base and where it came from: the host's newest snapshot of the store (of a
        version above `newer_than`) when there is one; else built from the table for one
        worker of the host (the one that gets the host's build lock) by a child process it
        starts (`search.build_snapshot`), which writes the snapshot for all of them; the
        workers answer from what they have (or SQL) meanwhile."""
        snapshots = self._snapshots
        if snapshots is None:
            return await self._read_table(), "table"
        unusable: tuple[int, int] | None = None  # a damaged folder, not read again
        while True:
            found = await self._load_snapshot(snapshots, namespace, unusable, newer_than)
            if isinstance(found, SearchIndex):
                return found, "snapshot"
            unusable = found
            try:
                host, lock = snapshots.host_lock(namespace), snapshots.lock(namespace)
                mine = host.acquire()
                if mine and not lock.acquire():
                    host.release()
                    mine = False
            except OSError as exc:  # a folder we cannot write: a private index, as before
                log.warning("search index snapshots unavailable in %s (%s); building this"
                            " worker's own index", snapshots.folder, exc)  # fmt: skip
                return await self._read_table(), "table"
            if mine:
                try:
                    return await self._build_snapshot(snapshots, namespace, unusable,
                                                      newer_than, (host, lock))  # fmt: skip
                finally:
                    lock.release()
                    host.release()
            await asyncio.sleep(self.tuning.snapshot_wait)  # another worker of this host builds it
            namespace = await self.repo.cache_namespace()

    async def _load_snapshot(
        self,
        snapshots: Snapshots,
        namespace: str,
        unusable: tuple[int, int] | None,
        newer_than: int,
    ) -> SearchIndex | tuple[int, int] | None:
        """The newest snapshot up to this version (above `newer_than`), mapped (older ones
        pruned); else the identity of a folder that is there but damaged (`unusable` is one
        already found so, not read again)."""
        name = snapshots.newest(namespace)
        if name is None or _version(name) <= newer_than:
            return None
        identity = snapshots.identity(name)
        if identity is None or identity == unusable:
            return identity
        index = await asyncio.to_thread(snapshots.load, name)
        if index is None:
            return identity
        if not await continues(self.repo, namespace, index.namespace, index.feed, index.mark):
            return identity  # of the store this one replaced (a restore): built again
        await asyncio.to_thread(snapshots.prune, name)
        return index

    async def _build_snapshot(
        self,
        snapshots: Snapshots,
        namespace: str,
        unusable: tuple[int, int] | None,
        newer_than: int,
        locks: tuple[BuildLock, BuildLock],
    ) -> tuple[SearchIndex, str]:
        """Under the build locks: the snapshot another worker finished meanwhile, or one
        built from the table now in a child process, written, and mapped like every other
        worker maps it. A build that fails leaves this worker its own copy, as before."""
        found = await self._load_snapshot(snapshots, namespace, unusable, newer_than)
        if isinstance(found, SearchIndex):
            return found, "snapshot"
        store = address(self.repo.db)
        draft = await asyncio.to_thread(snapshots.draft, namespace)
        try:
            written = store is not None and await self._build_apart(store, namespace, draft, locks)
        finally:
            snapshots.discard(draft)  # renamed into place when written: then nothing is left
        if not written:  # a full disk, say: this worker keeps its own copy
            return await self._read_table(), "table"
        name = snapshots.newest(await self.repo.cache_namespace())
        index = None if name is None else await asyncio.to_thread(snapshots.load, name)
        if index is None or _version(index.namespace) <= newer_than:
            raise RuntimeError(f"the snapshot just written to {snapshots.folder} does not load")
        await asyncio.to_thread(snapshots.prune, index.namespace)
        return index, "table"

    async def _build_apart(
        self, store: str, namespace: str, draft: Path, locks: tuple[BuildLock, BuildLock]
    ) -> bool:
        """Build the snapshot in a child process (`search.build_snapshot`), this worker
        answering searches meanwhile: True when written, False when the child failed
        (logged). Cancelled, the child is killed first."""
        try:
            child = await asyncio.create_subprocess_exec(
                sys.executable, *self.tuning.builder, namespace, str(draft), str(os.getpid()),
                stdin=asyncio.subprocess.DEVNULL, env={**os.environ, STORE: store},
                pass_fds=tuple(lock.fileno() for lock in locks),
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
        if status != 0:
            log.warning("the search index snapshot's build failed (process %d, exit status %d);"
                        " this worker builds its own copy", child.pid, status)  # fmt: skip
            return False
        return True

    async def _read_table(self) -> SearchIndex:
        """This worker's own index, built from every row of the table, its requests served
        between pages."""
        index = await read_rows(self.repo, None, self.tuning.page, _next_turn)
        await self.repo.release_cache()  # the build read every row through it
        memory.trim()
        return index
