"""The two engines that answer a search, behind one interface: the index and SQL.

Both answer the same page of the same query (tests/search compare them on generated
searches and records): the exact total, the rows in order (ties by id, nulls last), each
one's distance for a radius search. The planner (`search.planner`) picks which answers.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from propdata.errors import ServiceUnavailable
from propdata.kit.geodesy import miles
from propdata.search.cursor import Cursor
from propdata.search.filters import SORT_COLUMNS, SearchFilters
from propdata.search.index import IndexPage
from propdata.search.items import ItemFile
from propdata.search.live import LiveIndex, LiveItems
from propdata.search.order import Place
from propdata.search.query import SearchQuery
from propdata.search.repository import NearRow, SearchRepository, SearchRow

TOTALS_KEPT = 20_000
"""Exact totals the SQL engine keeps (see `SqlEngine`)."""
SQL_OFFSET_CAP = 10_000
"""While the search index builds, SQL answers searches, and a deep offset there costs a
walk over that many rows (seconds at a million): deeper pages wait for the index."""

Mark = tuple[Any, float | None, str]
"""Where a walk stands after a page: the last row's sort value, distance and id."""


@dataclass(slots=True)
class Found:
    """One page an engine found: `query.limit` rows at most, in order."""

    total: int
    rows: list[SearchRow]
    distances: list[float] | None
    """Each row's exact distance in miles (a radius search), else None."""
    more: bool
    """Whether rows follow this page."""
    mark: Mark | None = None
    """Where the walk stands, when it is not the last row's (an older version's order)."""
    version: int | None = None
    """The data version whose order the page follows, when not the current one."""


class Engine(Protocol):
    async def find(self, query: SearchQuery, walk: Cursor | None) -> Found | None:
        """One page of `query` (past `walk`'s last row, when given); None when this engine
        cannot answer it now (the planner's next one does)."""
        ...


class IndexEngine:
    """The search index of one data version (`search.live`); rows read by id from the store
    unless the index has them encoded."""

    def __init__(self, index: LiveIndex, repo: SearchRepository, namespace: str) -> None:
        self.index = index
        self.repo = repo
        self.namespace = namespace
        """The store's data version as the request read it."""
        self.current = index.version >= int(namespace.rpartition(".")[2] or 0)
        """Whether the index is of that version or a newer one (a commit the request had not
        seen yet); an older index serves cursor walks only."""

    def encoded(
        self, query: SearchQuery, walk: Cursor | None
    ) -> tuple[IndexPage, ItemFile | LiveItems] | None:
        """The page as the rows' positions with the index's encoded items (`search.items`):
        None when the index has no usable items or is not the current version's, or when
        the walk's last row is not among its matches."""
        items = self.index.items if self.current else None
        if items is None or not items.ready:
            return None
        page = self._search(query, walk, ids=False)
        return None if page is None else (page, items)

    async def find(self, query: SearchQuery, walk: Cursor | None) -> Found | None:
        """None when the walk's last row is not among the matches, or a load landed while
        the rows were read (the store itself then answers)."""
        page = self._search(query, walk, ids=True)
        if page is None:
            return None
        limit = query.limit
        ids = page.ids[:limit]
        found = await self.repo.search_rows(ids)
        more = len(page.ids) > limit
        if not self.current:  # the walk's version, today's records
            assert walk is not None
            rows, distances, mark = _older_page(page, found, limit, query.sort, walk)
            return Found(page.total, rows, distances, more, mark, walk.version)
        if len(found) == len(ids) and await self.repo.cache_namespace() == self.index.namespace:
            distances = None if page.distances is None else page.distances[:limit]
            return Found(page.total, found, distances, more, version=self.index.version)
        return None

    def _search(self, query: SearchQuery, walk: Cursor | None, ids: bool) -> IndexPage | None:
        """The page past `walk`'s last row, resumed there when the walk is of this index's
        version (its total is this index's: `SearchIndex.search`)."""
        if walk is None:
            return self.index.search(query.probe(), ids=ids)
        total = walk.total if walk.version == self.index.version else None
        return self.index.search(query.probe(), walk.last_id, ids=ids, total=total)


class SqlEngine:
    """The store's own answer (`SearchRepository`): always there, slower at depth.

    Exact totals are kept by (store id, data version, filters): only a load changes the
    data and every load bumps the version, so a kept total is never stale, and paging
    through one search counts once."""

    def __init__(self, repo: SearchRepository, *, offset_cap: int | None = SQL_OFFSET_CAP) -> None:
        """`offset_cap`: the deepest offset answered without a cursor (None: any)."""
        self.repo = repo
        self.offset_cap = offset_cap
        self._totals: OrderedDict[tuple[str, str], int] = OrderedDict()

    async def find(self, query: SearchQuery, walk: Cursor | None) -> Found:
        distances: list[float] | None = None
        if query.filters.near is not None:
            total, near = await self.near(query.probe(), walk)
            rows, distances = [r for r, _ in near], [d for _, d in near]
        else:
            if walk is None and self.offset_cap is not None and query.offset > self.offset_cap:
                raise ServiceUnavailable(
                    f"Pages past offset {self.offset_cap:,} are served once the search index"
                    " is ready (it is being built: seconds after a start or a data load);"
                    " a cursor reaches any depth meanwhile.",
                    headers={"Retry-After": "5"},
                )
            after = None if walk is None else (walk.value, walk.last_id)
            rows = await self.repo.search_page(query.probe(offset=0 if walk else None), after)
            total = await self._total(query.filters, walk)
        limit = query.limit
        more = len(rows) > limit
        return Found(total, rows[:limit], None if distances is None else distances[:limit], more)

    async def near(
        self, query: SearchQuery, walk: Cursor | None
    ) -> tuple[int, list[tuple[SearchRow, float]]]:
        """A radius search without the index: the records in the circle's box from SQL, their
        exact distances (the index's own function), then the order and the page in Python."""
        filters, order = query.filters, query.ordering
        assert filters.near is not None
        by_distance = order.column is None
        found = await self.repo.near_rows(filters, order.column)
        latitude, longitude, radius = filters.near
        far = miles(latitude, longitude, np.array([r.latitude for r in found], np.float64),
                    np.array([r.longitude for r in found], np.float64)).tolist()  # fmt: skip
        inside = [(r, d) for r, d in zip(found, far, strict=True) if d <= radius]

        def place(entry: tuple[NearRow, float]) -> Place:
            return (entry[1] if by_distance else entry[0].value, entry[0].id)

        key = order.key()
        ordered = sorted(inside, key=lambda entry: key(place(entry)))
        offset = query.offset
        if walk is not None:
            mark = (walk.distance if by_distance else walk.value, walk.last_id)
            ordered = [e for e in ordered if order.past(place(e), mark)]
            offset = 0
        page = ordered[offset : offset + query.limit]
        rows = {r.id: r for r in await self.repo.search_rows([e[0].id for e in page])}
        return len(inside), [(rows[e[0].id], e[1]) for e in page if e[0].id in rows]

    async def _total(self, filters: SearchFilters, walk: Cursor | None) -> int:
        """The exact total of `filters` in the current data: the walk's, when it is of the
        current version, else kept or counted."""
        namespace = await self.repo.cache_namespace()
        version = int(namespace.rpartition(".")[2] or 0)
        if walk is not None and walk.total is not None and walk.version == version:
            return walk.total
        key = (namespace, repr(filters))
        total = self._totals.get(key)
        if total is None:
            total = self._totals[key] = await self.repo.count_matches(filters)
            if len(self._totals) > TOTALS_KEPT:
                self._totals.popitem(last=False)
        else:
            self._totals.move_to_end(key)
        return total


def _older_page(
    page: IndexPage, found: list[SearchRow], limit: int, sort: str, walk: Cursor
) -> tuple[list[SearchRow], list[float] | None, Mark | None]:
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
        value = getattr(now, SORT_COLUMNS[sort]) if now is not None else walk.value
    return (
        found,
        distances,
        (value, None if page.distances is None else page.distances[at], ids[at]),
    )
