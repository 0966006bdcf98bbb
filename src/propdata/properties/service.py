"""Property decisions: what each endpoint answers, built from repository rows."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import math
import os
import sys
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from propdata.errors import AmbiguousAddress, InvalidParameter, NotFound, ServiceUnavailable
from propdata.kit import memory
from propdata.kit.addresses import city_key, street_key
from propdata.kit.db import Database, StoreUnavailable, address, optimistic
from propdata.kit.geodesy import miles
from propdata.properties import cursor as cursors
from propdata.properties import lifecycle
from propdata.properties.build_snapshot import MOVED, STORE, read_rows
from propdata.properties.index import IndexBuilder, IndexPage, SearchIndex
from propdata.properties.items import ItemFile, decode, join, search_item
from propdata.properties.repository import (
    AgingRow,
    EventRow,
    NearRow,
    PropertyRepository,
    PropertyRow,
    SearchFilters,
    SearchRow,
    TaxRow,
)
from propdata.properties.schemas import (
    Address,
    Coordinates,
    EncodedSearchResponse,
    Estimate,
    PriceEvent,
    PropertyDetail,
    PropertyHistory,
    PropertyLookupItem,
    Scores,
    SearchMeta,
    SearchResponse,
    ShortAddress,
    TaxRecord,
)
from propdata.properties.snapshot import BuildLock, Snapshots

TOTALS_KEPT = 20_000
INDEX_PAGE = 10_000
"""Rows a page of the index build reads: about 50 ms of SQLite work between requests."""

BUILDER = ("-m", "propdata.properties.build_snapshot")
"""What `sys.executable` runs to build a snapshot in a child process (its arguments follow)."""
INDEX_RETRY = 60
"""Seconds before a failed build is tried again (each try reads the whole table)."""
SNAPSHOT_WAIT = 0.2
"""Seconds between looks for the snapshot another worker is building (SQL answers meanwhile)."""
AGE_EVERY = 600.0
"""Seconds between a server's checks whether the day has turned (see `keep_aged`)."""
OLDER_KEPT = 3
"""Superseded indexes a worker keeps mapped (from their snapshots, when a cursor walk begun
on one asks for it); a private index built in memory is kept, one at most, when replaced."""
OLDER_SECONDS = 3600.0
"""How long a worker keeps a superseded index (snapshot.KEEP_SECONDS keeps the files)."""
SQL_OFFSET_CAP = 10_000
"""While the search index builds, SQL answers searches, and a deep offset there costs a
walk over that many rows (seconds at a million): deeper pages wait for the index."""

log = logging.getLogger("propdata")


async def _next_turn() -> None:
    await asyncio.sleep(0)  # let requests in between pages


class PropertyService:
    def __init__(
        self, db: Database, *, search_index: bool = True, snapshots: Path | None = None
    ) -> None:
        """`snapshots`: the host's folder of search index snapshots, shared by its workers
        (see `properties.snapshot`); None keeps a private index built from the table."""
        self.repo = PropertyRepository(db)
        # Exact totals by (store id, data version, filters): only a load changes the data and
        # every load bumps the version, so a kept total is never stale. Paging through one
        # search counts once. (Used while the search index is off or being built.)
        self._totals: OrderedDict[tuple[str, str], int] = OrderedDict()
        self._use_index = search_index
        self._index: SearchIndex | None = None
        self._older: OrderedDict[str, tuple[SearchIndex, float]] = OrderedDict()
        """Superseded indexes by namespace, with when they were superseded (monotonic)."""
        self._building: asyncio.Task[None] | None = None
        self._failed_at = -math.inf
        self._snapshots = Snapshots(snapshots) if snapshots is not None else None
        self._secret: str | None = None
        self.index_source = ""
        """Where the current index came from: "snapshot", "table" or "" (none yet)."""

    # -- the search index ----------------------------------------------------------------

    async def index_status(self) -> str:
        """The index: "ok" when it answers for the current data, "building", or "off"."""
        if not self._use_index:
            return "off"
        current = self._current_index(await self.repo.cache_namespace())
        return "ok" if current is not None else "building"

    def warm(self) -> None:
        """Start building the search index (at start-up, so the first searches find it)."""
        if self._use_index and self._index is None and self._building is None:
            self._building = asyncio.create_task(self._build())

    async def close(self) -> None:
        if self._building is not None and not self._building.done():
            self._building.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._building

    def _current_index(self, namespace: str) -> SearchIndex | None:
        """The index when it was built from this data version; else start building it."""
        if not self._use_index:
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

    async def _walk_index(self, namespace: str) -> SearchIndex | None:
        """The index of an older data version, for a cursor walk that began on it: kept by
        this worker, or mapped from the host's snapshot; None when it is gone."""
        now = time.monotonic()
        kept = self._older.get(namespace)
        if kept is not None:
            return kept[0]
        snapshots = self._snapshots
        if not self._use_index or snapshots is None or snapshots.identity(namespace) is None:
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
            self._index, self.index_source = found
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
        gets the version's lock) by a child process it starts (`properties.build_snapshot`),
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
        """Build the snapshot in a child process (`properties.build_snapshot`), this worker
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

    # -- time passing ----------------------------------------------------------------------

    async def age(self, today: dt.date) -> Aged | None:
        """Bring the store to `today`, once a day for every worker and host: the days on
        market of every open listing, and the 180-day rule (recentlySold -> offMarket).

        Computed off the event loop from a read of the listed properties, written in one
        transaction that also claims the day (so only one process does it) and bumps the
        data version (so cached answers and search indexes follow). None when the store
        was already aged to `today`.
        """

        async def compute() -> Aged:
            rows = await self.repo.listed()
            return await asyncio.to_thread(_aged, rows, today)

        async def write(aged: Aged) -> Aged | None:
            if not await self.repo.take_aging_turn(today.isoformat()):
                return None
            if aged.days or aged.expired:
                await self.repo.set_days_on_market(aged.days)
                await self.repo.expire_sales(aged.expired)
                await self.repo.bump_data_version()
            return aged

        if await self.repo.aged_as_of() >= today.isoformat():
            return None
        return await optimistic(self.repo.db, self.repo.data_version, compute, write)

    async def keep_aged(self, today: Callable[[], dt.date], every: float = AGE_EVERY) -> None:
        """Age the store now, then check again every `every` seconds (a server's task)."""
        while True:
            try:
                aged = await self.age(today())
                if aged is not None:
                    log.info("aged the store to %s: %d listings' days on market, %d sales"
                             " past 180 days", today(), len(aged.days), len(aged.expired))  # fmt: skip
            except StoreUnavailable as exc:
                log.warning("ageing the store waits for it: %s", exc)
            await asyncio.sleep(every)

    async def data_version(self) -> int:
        return await self.repo.data_version()

    async def rebuild_pending(self) -> bool:
        """Whether a load's estimates and market statistics are still to be rebuilt."""
        return await self.repo.rebuild_pending() is not None

    async def cache_namespace(self) -> str:
        return await self.repo.cache_namespace()

    async def detail(self, property_id: str) -> PropertyDetail:
        found = await self.repo.detail(property_id)
        if found is None:
            raise NotFound(f"No property with id '{property_id}'.")
        return _detail(*found)

    async def history(self, property_id: str) -> PropertyHistory:
        found = await self.repo.histories(property_id)
        if found is None:
            raise NotFound(f"No property with id '{property_id}'.")
        return PropertyHistory(
            id=property_id, price_history=_events(found[0]), tax_history=_taxes(found[1])
        )

    async def lookup(
        self, street: str, city: str, state: str, zip_code: str | None
    ) -> PropertyLookupItem:
        """The one property at a USPS-normalised address; 409 when ZIP codes disagree."""
        rows = await self.repo.find_by_address(street_key(street), city_key(city), state, zip_code)
        if not rows:
            raise NotFound("No property matches that address exactly.")
        zips = sorted({row.zip_code for row in rows})
        if len(zips) > 1:
            raise AmbiguousAddress(
                f"The address matches properties in several ZIP codes: {', '.join(zips)};"
                " add zipCode to choose one."
            )
        if len(rows) > 1:
            raise AmbiguousAddress(
                f"The address matches {len(rows)} properties in ZIP code {zips[0]}"
                f" ({', '.join(row.id for row in rows[:10])}); add the unit to the street address."
            )
        r = rows[0]
        return PropertyLookupItem(
            id=r.id, status=r.status, list_price=r.list_price, address=ShortAddress(
                street_address=r.street_address, city=r.city, state=r.state, zip_code=r.zip_code),
            bedrooms_total=r.bedrooms, bathrooms_total=r.bathrooms, living_area=r.living_area,
            last_updated=r.last_updated,
        )  # fmt: skip

    async def search(
        self,
        filters: SearchFilters,
        sort: str,
        order: str,
        limit: int,
        offset: int,
        cursor: str | None = None,
        *,
        encoded: bool = False,
    ) -> SearchResponse | EncodedSearchResponse:
        """One page of a search, by offset or by the cursor of the page before it.

        `encoded`: the items may come already encoded, from the current index's snapshot
        (`properties.items`): an EncodedSearchResponse, the same bytes on the wire as the
        SearchResponse built from the store's rows (the endpoint asks for it).

        A cursor continues after the last row it names, in the order of the data version it
        was made under: the current index's or SQL's while that version is current, after a
        load the index of that version while a worker keeps it or its snapshot is there,
        else by keyset on the current data (docs/api.md, "Cursor paging").
        """
        namespace = await self.repo.cache_namespace()
        version = int(namespace.rpartition(".")[2] or 0)
        search_id = cursors.digest(filters, sort, order)
        secret = await self._cursor_secret()
        walk: cursors.Cursor | None = None
        if cursor is not None:
            walk = cursors.decode(secret, cursor)
            if walk is None:
                raise InvalidParameter(
                    "cursor", "'cursor' is not a cursor this service gave, or it was altered."
                )
            if walk.search != search_id:
                raise InvalidParameter(
                    "cursor",
                    "'cursor' belongs to another search: send it with the filters, sort and"
                    " order of the search whose page gave it.",
                )
            offset = walk.delivered
        index = self._current_index(namespace)
        rows: list[SearchRow] | None = None
        distances: list[float] | None = None
        total, more, mark = 0, False, None
        if walk is not None and walk.version != version:  # a load landed during the walk
            index = await self._walk_index(f"{namespace.rpartition('.')[0]}.{walk.version}")
        if index is not None:
            stored = index.items if encoded and index.namespace == namespace else None
            if stored is not None and not stored.ready:
                stored = None
            after_id = None if walk is None else walk.last_id
            page = index.search(filters, sort, order, limit + 1, offset, after_id,
                                ids=stored is None)  # fmt: skip
            if page is not None and stored is not None:
                try:
                    return self._encoded(page, stored, sort, limit, offset, version, search_id)
                except OSError as exc:  # the items went (removed, unreadable): the store's rows
                    stored.ready = False
                    log.warning("search items %s unreadable (%s); items come from the store",
                                stored.path, exc)  # fmt: skip
                    page = index.search(filters, sort, order, limit + 1, offset, after_id)
            if page is not None:
                ids = page.ids[:limit]
                found = await self.repo.search_rows(ids)
                if index.namespace != namespace:  # the walk's version, today's records
                    assert walk is not None
                    rows, distances, mark = _older_page(page, found, limit, sort, walk)
                    total, more, version = page.total, len(page.ids) > limit, walk.version
                elif len(found) == len(ids) and await self.repo.cache_namespace() == namespace:
                    rows, total, more = found, page.total, len(page.ids) > limit
                    distances = None if page.distances is None else page.distances[:limit]
                # else a load landed while we read: answer from the store itself
        if rows is None:
            if filters.near is not None:
                total, near = await self._near(filters, sort, order, limit + 1, offset, walk)
                rows, distances = [r for r, _ in near], [d for _, d in near]
            else:
                if walk is None and self._use_index and offset > SQL_OFFSET_CAP:
                    raise ServiceUnavailable(
                        f"Pages past offset {SQL_OFFSET_CAP:,} are served once the search index"
                        " is ready (it is being built: seconds after a start or a data load);"
                        " a cursor reaches any depth meanwhile.",
                        headers={"Retry-After": "5"},
                    )
                after = None if walk is None else (walk.value, walk.last_id)
                rows = await self.repo.search_page(
                    filters, sort, order, limit + 1, 0 if walk else offset, after
                )
                total = await self._total(filters)
            more = len(rows) > limit
            rows = rows[:limit]
            distances = None if distances is None else distances[:limit]
        if mark is None and rows:
            last = rows[-1]
            mark = (None if sort == "distance" else getattr(last, _ROW_FIELD[sort]),
                    None if distances is None else distances[-1], last.id)  # fmt: skip
        next_cursor = None
        if more and mark is not None:
            next_cursor = cursors.encode(secret, cursors.Cursor(
                version=version, search=search_id, delivered=offset + len(rows),
                value=mark[0], distance=mark[1], last_id=mark[2],
            ))  # fmt: skip
        shown = [None] * len(rows) if distances is None else [round(d, 2) for d in distances]
        items = [search_item(r, d) for r, d in zip(rows, shown, strict=True)]
        meta = SearchMeta(total=total, limit=limit, offset=offset, next_cursor=next_cursor)
        return SearchResponse(meta=meta, data=items)

    def _encoded(
        self,
        page: IndexPage,
        items: ItemFile,
        sort: str,
        limit: int,
        offset: int,
        version: int,
        search_id: str,
    ) -> EncodedSearchResponse:
        """A page of the current index with its items from the index's snapshot: the same
        bytes as those built from the store's rows, without reading the store (the snapshot
        is of this data version)."""
        assert self._secret is not None
        chosen = _NONE if page.positions is None else page.positions[:limit]  # None: no rows
        distances = None if page.distances is None else page.distances[:limit]
        parts = items.read(chosen)
        next_cursor = None
        if page.positions is not None and len(page.positions) > limit and parts:
            last = decode(parts[-1])  # the last row's value, as the store gives it
            next_cursor = cursors.encode(self._secret, cursors.Cursor(
                version=version, search=search_id, delivered=offset + len(parts),
                value=None if sort == "distance" else getattr(last, _ROW_FIELD[sort]),
                distance=None if distances is None else distances[-1], last_id=last.id,
            ))  # fmt: skip
        meta = SearchMeta(total=page.total, limit=limit, offset=offset, next_cursor=next_cursor)
        return EncodedSearchResponse(meta=meta, data=msgspec.Raw(join(parts, distances)))

    async def _cursor_secret(self) -> str:
        if self._secret is None:
            self._secret = await self.repo.cursor_secret()
        return self._secret

    async def _near(
        self,
        filters: SearchFilters,
        sort: str,
        order: str,
        limit: int,
        offset: int,
        walk: cursors.Cursor | None,
    ) -> tuple[int, list[tuple[SearchRow, float]]]:
        """A radius search without the index: the records in the circle's box from SQL, their
        exact distances (the index's own function), then the order and the page in Python."""
        assert filters.near is not None
        by_distance = sort == "distance"
        found = await self.repo.near_rows(filters, None if by_distance else sort)
        latitude, longitude, radius = filters.near
        far = miles(latitude, longitude, np.array([r.latitude for r in found], np.float64),
                    np.array([r.longitude for r in found], np.float64)).tolist()  # fmt: skip
        inside = [(r, d) for r, d in zip(found, far, strict=True) if d <= radius]
        descending = order == "desc"
        ordered = sorted(inside, key=_near_key(by_distance), reverse=descending)
        if not by_distance:  # nulls last in both orders
            ordered = [e for e in ordered if e[0].value is not None] + [
                e for e in ordered if e[0].value is None
            ]
        if walk is not None:
            mark = (walk.distance if by_distance else walk.value, walk.last_id)
            ordered = [e for e in ordered if _past(e, by_distance, mark, descending)]
            offset = 0
        page = ordered[offset : offset + limit]
        rows = {r.id: r for r in await self.repo.search_rows([e[0].id for e in page])}
        return len(inside), [(rows[e[0].id], e[1]) for e in page if e[0].id in rows]

    async def _total(self, filters: SearchFilters) -> int:
        key = (await self.repo.cache_namespace(), repr(filters))
        total = self._totals.get(key)
        if total is None:
            total = self._totals[key] = await self.repo.count_matches(filters)
            if len(self._totals) > TOTALS_KEPT:
                self._totals.popitem(last=False)
        else:
            self._totals.move_to_end(key)
        return total


_NONE = np.zeros(0, np.int64)
_ROW_FIELD = {"listPrice": "list_price", "daysOnMarket": "days_on_market",
              "livingArea": "living_area", "lastUpdated": "last_updated"}  # fmt: skip
"""The SearchRow field of each sort (a cursor carries the last row's value)."""


def _older_page(
    page: IndexPage, found: list[SearchRow], limit: int, sort: str, walk: cursors.Cursor
) -> tuple[list[SearchRow], list[float] | None, tuple[Any, float | None, str] | None]:
    """A page in an older version's order of today's records (`found`: those still stored),
    their distances, and where the walk stands: after the page's last id in that order,
    with that version's sort value (lastUpdated, which the index keeps as a rank only:
    today's, or the previous cursor's when the record is gone)."""
    ids = page.ids[:limit]
    kept = {r.id: r for r in found}
    distances = None
    if page.distances is not None:
        distances = [d for i, d in zip(ids, page.distances, strict=False) if i in kept]
    if not ids:
        return found, distances, None
    at = len(ids) - 1
    if page.values is not None:
        value = page.values[at]
    elif sort == "distance":
        value = None
    else:
        now = kept.get(ids[at])
        value = getattr(now, _ROW_FIELD[sort]) if now is not None else walk.value
    return (
        found,
        distances,
        (value, None if page.distances is None else page.distances[at], ids[at]),
    )


def _near_key(by_distance: bool) -> Callable[[tuple[NearRow, float]], tuple[Any, ...]]:
    """The ascending order of a radius search: (distance or value, id); a null value sorts
    by id among the nulls (moved last by the caller)."""
    if by_distance:
        return lambda e: (e[1], e[0].id)
    return lambda e: (e[0].value is None, 0 if e[0].value is None else e[0].value, e[0].id)


def _past(
    entry: tuple[NearRow, float], by_distance: bool, mark: tuple[Any, str], descending: bool
) -> bool:
    """Whether `entry` comes after the cursor's (value or distance, id) in the order."""
    row, distance = entry
    value = distance if by_distance else row.value
    mark_value, mark_id = mark
    if (value is None) != (mark_value is None):
        return value is None  # nulls come after every value, in both orders
    here: tuple[Any, ...] = (row.id,) if value is None else (value, row.id)
    there: tuple[Any, ...] = (mark_id,) if value is None else (mark_value, mark_id)
    return here < there if descending else here > there


@dataclass(frozen=True, slots=True)
class Aged:
    """What a day's ageing changes: (days, id) and (last_updated, id) rows."""

    days: list[tuple[int, str]]
    expired: list[tuple[str, str]]


def _aged(rows: list[AgingRow], today: dt.date) -> Aged:
    """The days on market of open listings as of `today`, and the sales past 180 days.

    A listing whose history has no listing event keeps the days it was loaded with.
    """
    days: list[tuple[int, str]] = []
    expired: list[tuple[str, str]] = []
    for row in rows:
        if row.status == "recentlySold":
            if lifecycle.expire(row.status, row.last_sale_date, today) == "offMarket":
                sale = dt.date.fromisoformat(str(row.last_sale_date))
                gone = sale + dt.timedelta(days=lifecycle.SOLD_EXPIRY_DAYS + 1)
                expired.append((f"{gone.isoformat()}T00:00:00Z", row.id))
        elif row.listing_date is not None:
            current = max(0, (today - dt.date.fromisoformat(row.listing_date)).days)
            if current != row.days_on_market:
                days.append((current, row.id))
    return Aged(days, expired)


def _events(rows: list[EventRow]) -> list[PriceEvent]:
    return [PriceEvent(date=r.date, event=r.event, price=r.price, source=r.source) for r in rows]


def _taxes(rows: list[TaxRow]) -> list[TaxRecord]:
    return [
        TaxRecord(year=r.year, tax_paid=r.tax_paid, assessed_value=r.assessed_value) for r in rows
    ]


def estimate(value: int | None, low: Any, high: Any, as_of: Any) -> Estimate | None:
    """A stored estimate's wire shape; None when the rebuild left it null."""
    if value is None:
        return None
    return Estimate(value=value, low=low, high=high, as_of_date=as_of)


def gross_yield(rent: Estimate | None, value: Estimate | None) -> float | None:
    """12 x monthly rent / value, a fraction (contract.md), to four places."""
    if rent is None or value is None or not value.value:
        return None
    return round(12 * rent.value / value.value, 4)


def _detail(r: PropertyRow, events: list[EventRow], taxes: list[TaxRow]) -> PropertyDetail:
    rent = estimate(r.rent_value, r.rent_low, r.rent_high, r.rent_as_of)
    value = estimate(r.value_value, r.value_low, r.value_high, r.value_as_of)
    basis = r.list_price if r.status == "forSale" else r.last_sale_price
    area = r.living_area
    ppsf = round(basis / area) if basis is not None and area else None
    walk, transit, bike = r.walk_score, r.transit_score, r.bike_score
    has_scores = walk is not None or transit is not None or bike is not None
    lat, lon = r.latitude, r.longitude
    return PropertyDetail(
        id=r.id, status=r.status, list_price=r.list_price,
        address=Address(street_address=r.street_address, city=r.city, state=r.state,
                        zip_code=r.zip_code, county=r.county, fips_code=r.fips_code),
        bedrooms_total=r.bedrooms, bathrooms_total=r.bathrooms, living_area=area,
        lot_size=r.lot_size, year_built=r.year_built, property_type=r.property_type,
        days_on_market=r.days_on_market, price_history=_events(events),
        tax_history=_taxes(taxes),
        scores=Scores(walkability=walk, transit=transit, bike=bike) if has_scores else None,
        coordinates=Coordinates(latitude=lat, longitude=lon) if lat is not None and lon is not None else None,
        last_updated=r.last_updated, listing_type=r.listing_type,
        original_list_price=r.original_list_price, previous_list_price=r.previous_list_price,
        last_price_change_date=r.last_price_change_date, removed_date=r.removed_date,
        rent_estimate=rent, value_estimate=value, gross_yield=gross_yield(rent, value),
        price_per_square_foot=ppsf, stories=r.stories,
    )  # fmt: skip
