"""Saved searches' match counts: each counted once per data version (and per change of the
search), never on a request's way, and each said with the data version it is exact for.

A listing answers at once with the counts held, and those of an older data version are
counted again on a task of its own, one search at a time: a listing of 500 searches costs
what reading them costs, however many records each watches. A search with no count yet (just
made or changed, or new to this worker) is counted before its answer. Counting watched ids
reads their rows and matches them on a thread; counting by filters asks the search (its
index: a few milliseconds, on the event loop between two requests, never during one).

    counts = MatchCounts(WatchedRecords(data), search)
    found = await counts.of(rows)      # {search id: Counted(version, count)}
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import zlib
from collections.abc import Sequence
from typing import Any, NamedTuple

from propdata.kit.db import StoreUnavailable
from propdata.properties.repository import PropertyRow
from propdata.saved_searches import filters
from propdata.saved_searches.repository import RawSavedSearchRow, SavedSearchRow, WatchedRecords
from propdata.search.match import matches
from propdata.search.query import SearchQuery
from propdata.search.schemas import SearchResponse
from propdata.search.service import SearchService

log = logging.getLogger("propdata")

TRIES = 3
"""Counts of one search at most before one is made while the data version stands still."""
AT_ONCE = 4
"""Searches counted at once for an answer that waits for them."""


class Counted(NamedTuple):
    """A search's match count (`total`), exact for data version `version`."""

    version: int
    total: int


class _Held(NamedTuple):
    made_of: int
    """A checksum of the search's filters and ids as stored: a change of either makes it
    another count."""
    counted: Counted


Stored = SavedSearchRow | RawSavedSearchRow


def _made_of(row: Stored) -> int:
    """The row's checksum (zlib lets other threads run while it sums a long column)."""
    filters, ids = row.filters, row.property_ids
    text = filters.encode() if isinstance(filters, str) else filters
    watched = ids.encode() if isinstance(ids, str) else ids
    return zlib.crc32(watched, zlib.crc32(text)) ^ len(watched) << 32


class MatchCounts:
    """This worker's match counts of the saved searches it has been asked about."""

    def __init__(self, images: WatchedRecords, search: SearchService) -> None:
        self.images = images
        self.search = search
        self._held: dict[str, _Held] = {}
        self._due: dict[str, Stored] = {}
        self._task: asyncio.Task[None] | None = None
        self.counted = 0
        """Counts made (the tests count them)."""

    async def of(self, rows: Sequence[Stored]) -> dict[str, Counted]:
        """Each search's count: the one held (those of an older data version are counted
        again in the background), else one counted now."""
        version = await self.images.data_version()
        found: dict[str, Counted] = {}
        missing: list[Stored] = []
        made_of = await asyncio.to_thread(lambda: [_made_of(row) for row in rows])
        for row, checksum in zip(rows, made_of, strict=True):
            held = self._held.get(row.id)
            if held is None or held.made_of != checksum:
                missing.append(row)
                continue
            found[row.id] = held.counted
            if held.counted.version < version:
                self._due[row.id] = row
        turns = asyncio.Semaphore(AT_ONCE)

        async def count(row: Stored) -> None:
            async with turns:
                found[row.id] = await self._count(row)

        await asyncio.gather(*(count(row) for row in missing))
        if self._due and (self._task is None or self._task.done()):
            self._task = asyncio.create_task(self._catch_up())
        return found

    def forget(self, search_id: str) -> None:
        self._held.pop(search_id, None)
        self._due.pop(search_id, None)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _catch_up(self) -> None:
        """Count again, one at a time, the searches whose count is of an older version."""
        while self._due:
            search_id, row = next(iter(self._due.items()))
            try:
                await self._count(row)
            except StoreUnavailable as exc:
                log.warning("match counts not brought up to date (%s)", exc)
                return  # the next listing asks again
            except Exception:
                log.exception("match count of saved search %s failed", search_id)
            self._due.pop(search_id, None)
            await asyncio.sleep(0)  # a request between two counts

    async def _count(self, row: Stored) -> Counted:
        """Count, until a count is made while the data version stands still (else the last
        one, of the version read after it: one commit off at most)."""
        query = filters.query_of(json.loads(row.filters))
        ids: list[str] = json.loads(row.property_ids)
        for _ in range(TRIES):
            before = await self.images.data_version()
            count = await (self._of_ids(query, ids) if ids else self._of_filters(query))
            after = await self.images.data_version()
            if before == after:
                break
        self.counted += 1
        counted = Counted(after, count)
        self._held[row.id] = _Held(_made_of(row), counted)
        return counted

    async def _of_ids(self, query: SearchQuery, ids: list[str]) -> int:
        rows = await self.images.rows(ids)
        return await asyncio.to_thread(_matching, query, rows) if rows else 0

    async def _of_filters(self, query: SearchQuery) -> int:
        page = await self.search.search(dataclasses.replace(query, limit=1))
        assert isinstance(page, SearchResponse)
        return page.meta.total


def _matching(query: SearchQuery, rows: list[Any]) -> int:
    """How many of the stored rows match (on a thread: the records are made here too)."""
    records = [dict(zip(PropertyRow._fields, row, strict=True)) for row in rows]
    return int(matches(query, records).sum())
