"""The two engines that answer a search, behind one interface: the index and SQL.

Both answer the same page of the same query (tests/search compare them on generated
searches and records): the exact total, the rows in order (ties by id, nulls last), each
one's distance for a radius search. The planner (`search.planner`) picks which answers.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
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
        after = None if walk is None else walk.last_id
        return self.index.search(query.filters, query.sort, query.order, query.limit + 1,
                                 query.offset, after, ids=ids)  # fmt: skip


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
        filters, sort, order, limit, offset = (query.filters, query.sort, query.order,
                                               query.limit, query.offset)  # fmt: skip
        distances: list[float] | None = None
        if filters.near is not None:
            total, near = await self.near(filters, sort, order, limit + 1, offset, walk)
            rows, distances = [r for r, _ in near], [d for _, d in near]
        else:
            if walk is None and self.offset_cap is not None and offset > self.offset_cap:
                raise ServiceUnavailable(
                    f"Pages past offset {self.offset_cap:,} are served once the search index"
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
        return Found(total, rows[:limit], None if distances is None else distances[:limit], more)

    async def near(
        self,
        filters: SearchFilters,
        sort: str,
        order: str,
        limit: int,
        offset: int,
        walk: Cursor | None,
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
