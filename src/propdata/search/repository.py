"""Every SQL statement of property search: pages, counts, the radius path, the index's read."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from propdata.kit import meta
from propdata.kit.db import Database, Row
from propdata.properties.repository import PropertyRepository
from propdata.properties.schemas import Status
from propdata.search.filters import SQL_TESTS, SearchFilters, box, given
from propdata.search.order import Place
from propdata.search.query import SearchQuery


class SearchRow(NamedTuple):
    """What a search item shows of a property."""

    id: str
    status: Status
    list_price: int | None
    street_address: str | None
    city: str
    state: str
    zip_code: str
    bedrooms: int | None
    bathrooms: float | None
    living_area: int | None
    days_on_market: int | None
    last_sale_price: int | None
    last_sale_date: str | None
    last_updated: str


class NearRow(NamedTuple):
    """What the SQL path of a radius search reads of each record in the circle's box."""

    id: str
    value: Any
    """The sort column's value (None for sort=distance)."""
    latitude: float
    longitude: float


_PAGE = f"SELECT {', '.join(SearchRow._fields)}"
_NAMESPACE = f"{meta.selected(meta.STORE_ID)} || '.' || {meta.selected(meta.DATA_VERSION)}"
"""The store's namespace, as `PropertyRepository.cache_namespace` reads it."""
_LAST_CHANGE = "(SELECT COALESCE(MAX(seq), 0) FROM property_changes)"
_MARK = "(SELECT property_id || ' ' || changed_at FROM property_changes WHERE seq = {})"
"""What the feed's entry numbered {} says (`SearchRepository.feed_mark`)."""


class Changes(NamedTuple):
    """What `SearchRepository.changed_rows` read, at once."""

    namespace: str
    last: int
    """The feed's newest number."""
    since: str | None
    """The mark of the entry the read started after (None: there is none)."""
    mark: str | None
    """The mark of the entry numbered `last`."""
    rows: list[tuple[str, Row | None]]


class SearchRepository:
    def __init__(self, db: Database) -> None:
        self.db = db
        self.store = PropertyRepository(db)
        """The store's identity and data version (`cache_namespace`) come from there."""

    async def cache_namespace(self) -> str:
        """The store's identity and data version (`PropertyRepository.cache_namespace`)."""
        return await self.store.cache_namespace()

    async def cursor_secret(self) -> str:
        """The key that signs this store's search cursors (seeded by `migrate`)."""
        secret = await meta.get(self.db, meta.CURSOR_SECRET)
        assert secret, "migrate seeds the cursor secret"
        return secret

    async def search_page(self, query: SearchQuery, after: Place | None = None) -> list[SearchRow]:
        """One page of the query's matches, in its order (`search.order`).

        `NULLS LAST` (SQLite 3.30+, PostgreSQL) lets both stores read the order from the
        (column, id) index in either direction; `column IS NULL, ...` made SQLite sort in a
        temporary B-tree. The search index answers instead whenever it is built.

        `after`: the place (sort value, id) of the last row of the previous page (a cursor):
        the page starts past it, read from the same index as the first page (a row-value
        range, then the nulls), so a deep page costs what the first one costs; the query's
        offset is then not read.
        """
        where, params = _where(query.filters)
        order, limit = query.ordering, query.limit
        order_by = order.sql()
        if after is None:
            rows = await self.db.fetch_all(
                f"{_PAGE} FROM properties{where} ORDER BY {order_by} LIMIT ? OFFSET ?",
                [*params, limit, query.offset],
                slow=True,  # a national sort or a deep offset takes seconds at a million rows
            )
            return [SearchRow._make(row) for row in rows]
        value, last_id = after
        glue = " AND " if where else " WHERE "
        rows = []
        if value is not None:
            rows = await self.db.fetch_all(
                f"{_PAGE} FROM properties{where}{glue}{order.sql_past(value)}"
                f" ORDER BY {order_by} LIMIT ?",
                [*params, value, last_id, limit],
                slow=True,
            )
        if len(rows) < limit and order.nullable:  # then the nulls, by id
            nulls = order.sql_past(None) if value is None else order.sql_nulls()
            rows += await self.db.fetch_all(
                f"{_PAGE} FROM properties{where}{glue}{nulls}"
                f" ORDER BY {order_by} LIMIT ?",  # not just id: PostgreSQL then sorts them
                [*params, *([last_id] if value is None else []), limit - len(rows)],
                slow=True,
            )
        return [SearchRow._make(row) for row in rows]

    async def near_rows(self, filters: SearchFilters, column: str | None) -> list[NearRow]:
        """Every record in the box around `filters.near` that passes the other filters,
        with its coordinates and the value of the sort's column (None: distance)."""
        where, params = _where(filters)
        rows = await self.db.fetch_all(
            f"SELECT id, {column or 'NULL'}, latitude, longitude FROM properties{where}",
            params,
            slow=True,
        )
        return [NearRow._make(row) for row in rows]

    async def search_rows(self, ids: Sequence[str]) -> list[SearchRow]:
        """Search items of these ids, in the order given (ids no longer stored are left out)."""
        if not ids:
            return []
        rows = await self.db.fetch_all(
            f"{_PAGE} FROM properties WHERE id IN ({', '.join('?' for _ in ids)})", list(ids)
        )
        by_id = {row[0]: SearchRow._make(row) for row in rows}
        return [by_id[i] for i in ids if i in by_id]

    async def index_page(self, columns: Sequence[str], after: str | None, limit: int) -> list[Row]:
        """One page of the search index's columns, in id order, after the id `after`."""
        select = f"SELECT {', '.join(columns)} FROM properties"
        if after is None:
            return await self.db.fetch_all(f"{select} ORDER BY id LIMIT ?", (limit,), slow=True)
        return await self.db.fetch_all(
            f"{select} WHERE id > ? ORDER BY id LIMIT ?", (after, limit), slow=True
        )

    async def feed_position(self) -> tuple[str, int]:
        """The store's namespace (`cache_namespace`) and the change feed's newest number, read
        together (one statement: one snapshot of the store on either dialect)."""
        row = await self.db.fetch_one(f"SELECT {_NAMESPACE}, {_LAST_CHANGE}")
        assert row is not None
        return str(row[0]), int(row[1])

    async def feed_mark(self, seq: int) -> str | None:
        """What the change feed's entry numbered `seq` says (its property and time), None
        when there is none: the same mark later means the feed is the one it was (a store
        restored from a backup, or another one in its place, has other entries)."""
        row = await self.db.fetch_one(f"SELECT {_MARK.format('?')}", (seq,))
        return None if row is None or row[0] is None else str(row[0])

    async def changed_rows(self, columns: Sequence[str], after: int, upto: int) -> Changes:
        """The properties changed by the feed's entries numbered above `after` and up to
        `upto`, each with its current row of `columns` (None: removed), with the store's
        namespace, the feed's newest number and the marks (`feed_mark`) of the entries at
        `after` and at that number, all of one read (one statement: one snapshot of the
        store), so the rows are those of that namespace when the newest number is at most
        `upto`, and the feed the one followed when the mark at `after` is the one kept."""
        chosen = ", ".join(f"p.{c}" for c in columns)
        rows = await self.db.fetch_all(
            f"SELECT m.ns, m.last, m.since, {_MARK.format('m.last')}, c.property_id, p.id,"
            f" {chosen} FROM (SELECT {_NAMESPACE} AS ns, {_LAST_CHANGE} AS last,"
            f" {_MARK.format('?')} AS since) m"
            " LEFT JOIN (SELECT DISTINCT property_id FROM property_changes"
            "  WHERE seq > ? AND seq <= ?) c ON 1 = 1"
            " LEFT JOIN properties p ON p.id = c.property_id",
            (after, after, upto),
            slow=True,
        )
        first = rows[0]
        changed = [(row[4], None if row[5] is None else tuple(row[6:]))
                   for row in rows if row[4] is not None]  # fmt: skip
        return Changes(str(first[0]), int(first[1]), first[2], first[3], changed)

    async def release_cache(self) -> None:
        """Free SQLite's page cache of this connection (after reading the whole table once)."""
        if self.db.dialect == "sqlite":
            await self.db.execute("PRAGMA shrink_memory")

    async def count_matches(self, filters: SearchFilters) -> int:
        """The exact number of matches."""
        where, params = _where(filters)
        row = await self.db.fetch_one(f"SELECT count(*) FROM properties{where}", params, slow=True)
        return int(row[0]) if row else 0


def _where(f: SearchFilters) -> tuple[str, list[Any]]:
    """The WHERE clause of `f` and its parameters, made from `filters.FILTERS`."""
    clauses: list[str] = []
    params: list[Any] = []
    for test, value in given(f):
        clauses.append(f"{test.column} {SQL_TESTS[test.test]} ?")
        params.append(value)
    area = box(f)
    if area is not None:  # a range of the (latitude, longitude) index, then longitude in it
        west, south, east, north = area
        clauses += ["latitude >= ?", "latitude <= ?", "longitude >= ?", "longitude <= ?"]
        params += [south, north, west, east]
    return (" WHERE " + " AND ".join(clauses) if clauses else ""), params
