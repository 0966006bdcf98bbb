"""Search decisions: a query's page from the engine the planner picks, and its cursor."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from pathlib import Path

import msgspec
import numpy as np

from propdata.errors import InvalidParameter
from propdata.kit.db import Database
from propdata.search import cursor as cursors
from propdata.search.engines import SQL_OFFSET_CAP, IndexEngine, SqlEngine
from propdata.search.filters import SORT_COLUMNS
from propdata.search.index import IndexPage
from propdata.search.items import ItemFile, decode, join, search_item
from propdata.search.keeper import DEFAULTS, IndexKeeper, KeeperSettings
from propdata.search.live import LiveItems
from propdata.search.planner import plan
from propdata.search.query import SearchQuery
from propdata.search.repository import SearchRepository
from propdata.search.schemas import EncodedSearchResponse, SearchMeta, SearchResponse

log = logging.getLogger("propdata")

_NONE = np.zeros(0, np.int64)


class SearchService:
    def __init__(
        self,
        db: Database,
        *,
        search_index: bool = True,
        snapshots: Path | None = None,
        tuning: KeeperSettings = DEFAULTS,
    ) -> None:
        """`search_index` False: SQL answers every search. `snapshots`: the host's folder of
        search index snapshots, shared by its workers (see `search.snapshot`); None keeps
        a private index built from the table. `tuning`: the index keeper's numbers."""
        self.repo = SearchRepository(db)
        self.indexes = IndexKeeper(
            self.repo, enabled=search_index, snapshots=snapshots, tuning=tuning
        )
        self.sql = SqlEngine(self.repo, offset_cap=SQL_OFFSET_CAP if search_index else None)
        self._secret: str | None = None

    async def index_status(self) -> str:
        """The index: "ok" when it answers for the current data, "building", or "off"."""
        return await self.indexes.status()

    def warm(self) -> None:
        """Start building the search index (at start-up, so the first searches find it)."""
        self.indexes.warm()

    async def close(self) -> None:
        await self.indexes.close()

    async def search(
        self,
        query: SearchQuery,
        *,
        encoded: bool = False,
        behind: Callable[[], object] | None = None,
    ) -> SearchResponse | EncodedSearchResponse:
        """One page of a search, by offset or by the cursor of the page before it.

        `encoded`: the items may come already encoded, from the current index's snapshot
        (`search.items`): an EncodedSearchResponse, the same bytes on the wire as the
        SearchResponse built from the store's rows (the endpoint asks for it).

        A cursor continues after the last row it names, in the order of the data version it
        was made under (`search.planner`).

        `behind` is called when the page is of a data version older than the store's (the
        index of the newest one was not made in time: `IndexKeeper.find`).
        """
        namespace = await self.repo.cache_namespace()
        version = int(namespace.rpartition(".")[2] or 0)
        filters, sort, order, limit = query.filters, query.sort, query.order, query.limit
        search_id = cursors.digest(filters, sort, order)
        secret = await self._cursor_secret()
        walk: cursors.Cursor | None = None
        if query.cursor is not None:
            walk = cursors.decode(secret, query.cursor)
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
            query = dataclasses.replace(query, offset=walk.delivered)
        offset = query.offset
        for engine in await plan(self.indexes, self.sql, self.repo, namespace, walk):
            stale = isinstance(engine, IndexEngine) and engine.index.version < version
            if behind is not None and walk is None and stale:
                behind()
            if encoded and isinstance(engine, IndexEngine):
                fast = engine.encoded(query, walk)
                if fast is not None:
                    try:
                        return self._encoded(*fast, query, engine.index.version, search_id)
                    except OSError as exc:  # the items went (removed, unreadable): the rows
                        fast[1].ready = False
                        log.warning("search items %s unreadable (%s); items come from the"
                                    " store", fast[1].path, exc)  # fmt: skip
            found = await engine.find(query, walk)
            if found is not None:
                break
        else:  # SQL, last, always answers
            raise AssertionError("no engine answered")
        rows, distances, mark = found.rows, found.distances, found.mark
        if found.version is not None:
            version = found.version
        if mark is None and rows:
            last = rows[-1]
            mark = (None if sort == "distance" else getattr(last, SORT_COLUMNS[sort]),
                    None if distances is None else distances[-1], last.id)  # fmt: skip
        next_cursor = None
        if found.more and mark is not None:
            next_cursor = cursors.encode(secret, cursors.Cursor(
                version=version, search=search_id, delivered=offset + len(rows),
                value=mark[0], distance=mark[1], last_id=mark[2], total=found.total,
            ))  # fmt: skip
        shown: list[float | msgspec.UnsetType] = (
            [msgspec.UNSET] * len(rows) if distances is None else [round(d, 2) for d in distances]
        )
        items = [search_item(r, d) for r, d in zip(rows, shown, strict=True)]
        meta = SearchMeta(total=found.total, limit=limit, offset=offset, next_cursor=next_cursor)
        return SearchResponse(meta=meta, data=items)

    def _encoded(
        self,
        page: IndexPage,
        items: ItemFile | LiveItems,
        query: SearchQuery,
        version: int,
        search_id: str,
    ) -> EncodedSearchResponse:
        """A page of the current index with its encoded items (the snapshot's, and the
        delta's): the same bytes as those built from the store's rows, without reading the
        store (the index is of data version `version`)."""
        assert self._secret is not None
        limit, offset, sort = query.limit, query.offset, query.sort
        chosen = _NONE if page.positions is None else page.positions[:limit]  # None: no rows
        distances = None if page.distances is None else page.distances[:limit]
        parts = items.read(chosen)
        next_cursor = None
        if page.positions is not None and len(page.positions) > limit and parts:
            last = decode(parts[-1])  # the last row's value, as the store gives it
            next_cursor = cursors.encode(self._secret, cursors.Cursor(
                version=version, search=search_id, delivered=offset + len(parts),
                value=None if sort == "distance" else getattr(last, SORT_COLUMNS[sort]),
                distance=None if distances is None else distances[-1], last_id=last.id,
                total=page.total,
            ))  # fmt: skip
        meta = SearchMeta(total=page.total, limit=limit, offset=offset, next_cursor=next_cursor)
        return EncodedSearchResponse(meta=meta, data=msgspec.Raw(join(parts, distances)))

    async def _cursor_secret(self) -> str:
        if self._secret is None:
            self._secret = await self.repo.cursor_secret()
        return self._secret
