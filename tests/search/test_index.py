"""The search index answers exactly what SQL answers: same totals, same rows, same order,
the same distances to the bit, and the same page after a cursor."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from litestar.testing import AsyncTestClient

from propdata.app import HeadAsGet, create_app
from propdata.ingest.loader import load
from propdata.kit.db import Database
from propdata.search import arrays
from propdata.search import index as index_module
from propdata.search.cursor import Cursor
from propdata.search.filters import SORT_COLUMNS, SearchFilters
from propdata.search.index import INDEX_COLUMNS, IndexPage, SearchIndex
from propdata.search.indexer import IndexBuilder
from propdata.search.query import SearchQuery
from propdata.search.repository import SearchRepository
from propdata.search.service import SearchService
from tests.conftest import Store, build_store, create_key, drop_store, new_store, open_db
from tests.factories import AS_OF, record
from tests.live import until

TUNINGS = [
    pytest.param({}, id="defaults"),
    pytest.param({"_SORT_DIRECTLY": 0, "_FIRST_CHUNK": 8, "_LAST_CHUNK": 64}, id="walks"),
    pytest.param({"_SELECTIVE": 1_000_000, "_SORT_DIRECTLY": 10**9}, id="sorts"),
    pytest.param({"_SELECTIVE": 1}, id="masks"),
    pytest.param({"_RESUME_SHARE": 1}, id="resumes"),
]
"""The index's walk numbers (module globals of search.index) a comparison with SQL runs
under: each of its ways to answer is taken."""


@pytest.fixture(params=TUNINGS)
async def tuned_db(
    request: pytest.FixtureRequest, mixed: Store, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Database]:
    """The `mixed` store, open, with one of TUNINGS set for the test."""
    for name, value in request.param.items():
        monkeypatch.setattr(arrays if name in ("_FIRST_CHUNK", "_LAST_CHUNK") else index_module,
                            name, value)  # fmt: skip
    db = await open_db(mixed)
    yield db
    await db.close()


STATUSES = ("forSale", "recentlySold", "forRent", "offMarket", "pending")
TYPES = ("singleFamily", "condo", "townhouse", "multiFamily", "land")


async def index_ready(client: AsyncTestClient[Any]) -> None:
    """Wait until the app's /health says its search index answers."""

    async def ready() -> bool:
        return bool((await client.get("/health")).json()["checks"]["searchIndex"] == "ok")

    await until(ready, "the search index built")


async def built(repo: SearchRepository, page: int = 700) -> SearchIndex:
    builder = IndexBuilder(await repo.cache_namespace())
    while True:
        rows = await repo.index_page(INDEX_COLUMNS, builder.last_id, page)
        builder.add(rows)
        if len(rows) < page:
            return builder.finish()


async def places(db: Database) -> list[tuple[str, str, str, float, float]]:
    """(ZIP code, city key, state, latitude, longitude) of records with coordinates."""
    rows = await db.fetch_all(
        "SELECT zip_code, city_key, state, min(latitude), min(longitude) FROM properties"
        " WHERE latitude IS NOT NULL GROUP BY zip_code, city_key, state"
    )
    return [(r[0], r[1], r[2], r[3], r[4]) for r in rows]


def searches(places: list[tuple[str, str, str, float, float]], count: int) -> Iterator[SearchQuery]:
    """Generated searches; about a third also have a radius (half of those sorted by
    distance) and one in eight a box, both around a stored record's point."""
    rng = random.Random(11)
    for _ in range(count):
        f = SearchFilters()
        zip_code, city, state, lat, lon = rng.choice(places)
        geo = rng.random()
        if geo < 0.35:
            f.near = (lat + rng.uniform(-0.05, 0.05), lon + rng.uniform(-0.05, 0.05),
                      rng.choice((0.5, 2.0, 10.0, 25.0, 100.0, rng.uniform(0.5, 25))))  # fmt: skip
        elif geo < 0.47:
            half = rng.choice((0.02, 0.3, 2.0))
            f.bbox = (lon - half, lat - half, lon + rng.choice((0.0, half)), lat + half)
        place = rng.random()
        if place < 0.25:
            f.zip_code = zip_code if rng.random() < 0.9 else "00000"
        elif place < 0.45:
            f.city = city
            f.state = state if rng.random() < 0.7 else None
        elif place < 0.6:
            f.state = state
        for _ in range(rng.randint(0, 4)):
            name = rng.choice(
                ["status", "type", "minPrice", "maxPrice", "minBeds", "maxBeds", "minBaths",
                 "minSqft", "maxSqft", "minYear", "maxDom"]
            )  # fmt: skip
            if name == "status":
                f.status = rng.choice(STATUSES)
            elif name == "type":
                f.property_type = rng.choice(TYPES)
            elif name == "minPrice":
                f.min_price = rng.choice((0, 150_000, 300_000, 250_000, 1_000))
            elif name == "maxPrice":
                f.max_price = rng.choice((250_000, 600_000, 2_000, 10**15))
            elif name == "minBeds":
                f.min_beds = rng.randint(0, 5)
            elif name == "maxBeds":
                f.max_beds = rng.randint(0, 5)
            elif name == "minBaths":
                f.min_baths = rng.choice((0.0, 1.0, 1.5, 2.25, 3.0))
            elif name == "minSqft":
                f.min_sqft = rng.choice((0, 800, 1_500, 2_400))
            elif name == "maxSqft":
                f.max_sqft = rng.choice((900, 1_800, 3_000))
            elif name == "minYear":
                f.min_year_built = rng.choice((1900, 1960, 2000, 2020))
            else:
                f.max_days_on_market = rng.choice((0, 7, 30, 90, 365))
        sort = rng.choice(tuple(SORT_COLUMNS) + (("distance",) * 4 if f.near else ()))
        order = rng.choice(("asc", "desc"))
        limit = rng.choice((1, 5, 10, 25, 100))
        offset = rng.choice((0, 0, 0, 3, 20, 150, 900, 5_000))
        yield SearchQuery(f, sort, order, limit, offset)


async def sql_page(
    db: Database, query: SearchQuery, after: tuple[Any, float | None, str] | None = None
) -> tuple[int, list[str], list[float] | None, Any]:
    """What the SQL path answers: (total, ids, exact distances, the last row's sort value);
    `after` is a cursor's (value, distance, id), which the query's offset does not count."""
    service = SearchService(db, search_index=False)
    repo = service.repo
    walk = None if after is None else Cursor(0, "", 0, after[0], after[1], after[2])
    if query.filters.near is not None:
        total, found = await service.sql.near(query, walk)
        rows = [row for row, _ in found]
        distances: list[float] | None = [d for _, d in found]
    else:
        key = None if after is None else (after[0], after[2])
        rows = await repo.search_page(dataclasses.replace(query, offset=0) if after else query, key)
        total, distances = await repo.count_matches(query.filters), None
    field = {"distance": "id", **SORT_COLUMNS, "livingArea": "living_area",
             "listPrice": "list_price", "daysOnMarket": "days_on_market"}[query.sort]  # fmt: skip
    last = getattr(rows[-1], field) if rows else None
    return total, [r.id for r in rows], distances, last


async def compare(index: SearchIndex, db: Database, query: SearchQuery) -> bool:
    """Index and SQL agree on this page and, by cursor, on the page after it, also when the
    cursor's total lets that page resume past its row; True when the page has rows."""
    page = index.search(query)
    assert page is not None
    total, ids, distances, last = await sql_page(db, query)
    first = dataclasses.replace(query, offset=0)
    assert page.total == total, query
    assert page.ids == ids, query
    assert page.distances == distances, query  # the same float64s, bit for bit
    if ids:
        mark = (last, None if distances is None else distances[-1], ids[-1])
        after = index.search(first, ids[-1])
        assert after is not None, query
        by_offset = index.search(dataclasses.replace(query, offset=query.offset + query.limit))
        assert by_offset is not None and after.ids == by_offset.ids, query
        resumed = index.search(first, ids[-1], total=total)
        assert resumed == after, query  # the same total, ids, distances and sort values
        _, sql_ids, sql_distances, _ = await sql_page(db, first, mark)
        assert after.ids == sql_ids and after.distances == sql_distances, query
    return bool(ids)


async def compared(index: SearchIndex, db: Database) -> list[SearchQuery]:
    """`compare` over 250 generated searches: those that found rows."""
    return [q for q in searches(await places(db), 250) if await compare(index, db, q)]


async def test_index_answers_what_sql_answers(tuned_db: Database) -> None:
    repo = SearchRepository(tuned_db)
    index = await built(repo)
    assert index.size == await repo.store.count()
    found = await compared(index, tuned_db)
    assert len(found) > 100  # the searches find something, so the comparison means something
    assert sum(q.filters.near is not None or q.filters.bbox is not None for q in found) > 30


async def test_a_walk_resumed_past_each_cursor_is_the_walk_by_offset(
    mixed: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each page after a cursor resumes past its row with the total the cursor carries
    (`_RESUME_SHARE` at 1: an index this small resumes too), and is the page by offset, its
    total, rows and order, on each store."""
    monkeypatch.setattr(index_module, "_RESUME_SHARE", 1)
    db = await open_db(mixed)
    service = SearchService(db)
    try:
        service.warm()
        assert service.indexes._building is not None
        await service.indexes._building
        assert await service.index_status() == "ok"
        for filters, sort, order in (
            (SearchFilters(min_beds=2), "listPrice", "desc"),
            (SearchFilters(status="offMarket"), "daysOnMarket", "asc"),  # nulls: the tail
            (SearchFilters(min_year_built=1940), "livingArea", "desc"),
            (SearchFilters(), "lastUpdated", "asc"),
        ):
            cursor, offset, pages = None, 0, 0
            while pages < 8:
                walked = await service.search(SearchQuery(filters, sort, order, 53, 0, cursor))
                paged = await service.search(SearchQuery(filters, sort, order, 53, offset))
                assert walked.meta.offset == paged.meta.offset == offset
                assert walked.meta.total == paged.meta.total > 53 * 8
                assert walked.data == paged.data, (filters, sort, order, offset)
                cursor, offset, pages = walked.meta.next_cursor, offset + 53, pages + 1
                assert cursor is not None
    finally:
        await service.close()
        await db.close()


def test_narrow_float_columns_compare_exactly() -> None:
    """Sizes are kept as float32 when exact; a bound between two float32 values still
    compares as SQL compares the integer."""
    builder = IndexBuilder("s.1")
    big = 2**24 + 2  # float32 holds every even number here, not the odd ones
    rows = [
        (f"p{n}", "50010", "ames", "IA", "forSale", "condo", 1.0, 1, 1.0, area, 2000, 1, "t", None, None)
        for n, area in enumerate((big - 2, big, big + 2, None))
    ]  # fmt: skip
    builder.add(rows)
    index = builder.finish()
    assert index.nums["living_area"].dtype == np.float32
    assert index.search(
        SearchQuery(SearchFilters(min_sqft=big - 1), "livingArea", "asc", 10, 0)
    ) == (IndexPage(2, ["p1", "p2"], None, [big, big + 2]))
    assert index.search(
        SearchQuery(SearchFilters(max_sqft=big + 1), "livingArea", "desc", 10, 0)
    ) == (IndexPage(2, ["p1", "p0"], None, [big, big - 2]))
    # Bounds beyond a float32 column's range compare as SQL compares them.
    assert (
        index.search(SearchQuery(SearchFilters(max_beds=10**40), "livingArea", "asc", 10, 0)).total
        == 4
    )
    assert (
        index.search(SearchQuery(SearchFilters(min_beds=10**40), "livingArea", "asc", 10, 0)).total
        == 0
    )
    assert (
        index.search(
            SearchQuery(SearchFilters(min_beds=-(10**40)), "livingArea", "asc", 10, 0)
        ).total
        == 4
    )
    assert (
        index.search(SearchQuery(SearchFilters(min_baths=0.9999), "livingArea", "asc", 10, 0)).total
        == 4
    )
    assert (
        index.search(SearchQuery(SearchFilters(min_baths=1.0001), "livingArea", "asc", 10, 0)).total
        == 0
    )
    # A price that float32 cannot hold keeps the column in float64.
    builder = IndexBuilder("s.1")
    builder.add([("p0", "z", "c", "IA", "forSale", None, 2**53 - 1, None, None, None, None,
                  None, "t", None, None)])  # fmt: skip
    assert builder.finish().nums["list_price"].dtype == np.float64


async def test_search_uses_the_index_once_built_and_follows_a_load(
    backend: str, tmp_path: Path
) -> None:
    """The API answers from the index for its data version; a load reaches it as a delta on
    the same base (no rebuild), and the first search after the load already sees it."""
    made = await new_store(backend, tmp_path)
    await build_store(made)
    try:
        from tests.conftest import settings_for

        secret = await create_key(made, "enterprise")
        app = create_app(settings_for(made, cache_ttl=0))
        headers = {"Authorization": f"Bearer {secret}"}
        async with AsyncTestClient(app=HeadAsGet(app)) as client:  # type: ignore[arg-type]
            services = app.state.services
            await index_ready(client)  # started at start-up
            first = await client.get("/v1/properties?state=IA&sort=listPrice", headers=headers)
            assert first.status_code == 200
            base = services.search.indexes._index

            db = await open_db(made)
            extra = record("zz-new", list_price=1, address=record("x").address)
            report = await load(db, iter([(1, extra)]), origin="import", as_of=AS_OF)
            assert not report.rejects
            await db.close()

            after = await client.get(
                "/v1/properties?state=IA&sort=listPrice&order=asc&limit=1", headers=headers
            )
            assert after.json()["data"][0]["id"] == "zz-new"
            live = services.search.indexes._newest()  # the app's store is another loop's
            assert live is not None and live.size == 43 and live.delta.size == 1
            assert services.search.indexes._index is base and base is not None
            assert base.size == 42  # the same base, not built again
            assert (await client.get("/health")).json()["checks"]["searchIndex"] == "ok"
    finally:
        await drop_store(made)


async def test_a_failing_build_is_retried_later_and_searches_go_on(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A build that fails is not started again by every search (each try reads the whole
    table), and searches keep answering from SQL meanwhile."""
    from propdata.search.keeper import KeeperSettings
    from propdata.search.service import SearchService

    tries: list[int] = []

    def broken(self: IndexBuilder, rows: Any) -> None:
        tries.append(len(rows))
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(IndexBuilder, "add", broken)
    db = await open_db(store)
    try:
        properties = SearchService(db)
        query = (SearchFilters(state="IA"), "listPrice", "asc", 5, 0)
        expected = await properties.search(SearchQuery(*query))  # starts the first build
        assert await properties.indexes.refreshed()
        for _ in range(3):
            assert await properties.search(SearchQuery(*query)) == expected
        assert len(tries) == 1 and await properties.index_status() == "building"
        properties.indexes.tuning = KeeperSettings(retry=0)  # as PROPDATA_INDEX_RETRY=0 would
        await properties.search(SearchQuery(*query))
        assert await properties.indexes.refreshed()
        assert len(tries) == 2
    finally:
        await db.close()


async def test_deep_pages_wait_for_the_index_while_it_builds(store: Store) -> None:
    """While the index builds, SQL answers; an offset past SQL_OFFSET_CAP walks
    that many rows (seconds at a million), so such pages get a 503 with Retry-After until
    the index is ready. With the index turned off by the operator, SQL answers them all."""
    from propdata.errors import ServiceUnavailable
    from propdata.search.engines import SQL_OFFSET_CAP
    from propdata.search.service import SearchService

    deep = (SearchFilters(), "lastUpdated", "desc", 5, SQL_OFFSET_CAP + 1)
    db = await open_db(store)
    try:
        building = SearchService(db)
        with pytest.raises(ServiceUnavailable) as refused:
            await building.search(SearchQuery(*deep))  # the first search starts the build
        assert refused.value.headers["Retry-After"] == "5"
        shallow = await building.search(
            SearchQuery(SearchFilters(), "lastUpdated", "desc", 5, SQL_OFFSET_CAP)
        )
        assert shallow.meta.offset == SQL_OFFSET_CAP  # up to the cap, SQL answers
        assert await building.indexes.refreshed()
        assert (await building.search(SearchQuery(*deep))).data == []  # past the end: an empty page
        await building.close()
        off = SearchService(db, search_index=False)
        assert (await off.search(SearchQuery(*deep))).meta.total == 42
    finally:
        await db.close()


def test_a_point_s_cell_is_the_same_in_numpy_and_in_plain_floats() -> None:
    """A box's corners are placed in plain floats, the rows in numpy: one grid for both."""
    rng = random.Random(2)
    points = [(rng.uniform(-90, 90), rng.uniform(-180, 180)) for _ in range(20_000)]
    points += [(k * arrays.GEO_CELL - 90, k * arrays.GEO_CELL - 180) for k in range(721)]
    points += [(-90.0, -180.0), (90.0, 180.0), (89.9999999, 179.9999999)]
    cells = arrays.geo_cells(np.array([p[0] for p in points]), np.array([p[1] for p in points]))
    columns = int(360 / arrays.GEO_CELL)
    for (lat, lon), cell in zip(points, cells.tolist(), strict=True):
        assert arrays.cell(lat, lon) == (cell // columns, cell % columns), (lat, lon)


@settings(max_examples=200, deadline=None)
@given(
    stored=st.sets(st.text(alphabet="ab-9z", min_size=1, max_size=6), max_size=40),
    wanted=st.lists(st.text(alphabet="ab-9z", min_size=1, max_size=8), max_size=30),
)
def test_insertions_place_many_ids_as_insertion_places_each(
    stored: set[str], wanted: list[str]
) -> None:
    """Ids of every length, prefixes of each other, present and absent, before the first and
    after the last: the batch answer is the one-by-one answer."""
    builder = IndexBuilder("s.1")
    rows = [(i, *[None] * (len(INDEX_COLUMNS) - 4), "2026-01-01", None, None)
            for i in sorted(stored, key=str.encode)]  # fmt: skip
    builder.add(rows)
    index = builder.finish()
    places, present = index.insertions(wanted)
    assert [(int(p), bool(q)) for p, q in zip(places, present, strict=True)] == [
        index.insertion(w) for w in wanted
    ]
