"""Radius and box searches, sort=distance and cursor paging, through the API on both stores
and on both paths (the search index, and SQL with the index off)."""

from __future__ import annotations

import base64
import math
import random
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import quote

import pytest
from litestar.testing import AsyncTestClient

from propdata.app import HeadAsGet, create_app
from propdata.ingest import synthetic
from propdata.ingest.loader import load
from propdata.properties.schemas import Coordinates
from propdata.search.snapshot import KEEP_OLDER
from tests.conftest import (
    Store,
    build_store,
    create_key,
    drop_store,
    new_store,
    open_db,
    settings_for,
)
from tests.factories import AS_OF, event, record
from tests.search.test_index import index_ready

EDGES = {  # bbox -93.7,42.0,-93.6,42.1: its four edges and a point just outside
    "edge-w": (42.05, -93.7),
    "edge-e": (42.05, -93.6),
    "edge-s": (42.0, -93.65),
    "edge-n": (42.1, -93.65),
    "edge-corner": (42.1, -93.6),
    "edge-out": (42.05, -93.70000001),
}
BOX = "-93.7,42.0,-93.6,42.1"


def brute_miles(lat0: float, lon0: float, lat: float, lon: float) -> float:
    """The haversine formula written again, with math: the reference the API is held to."""
    p0, p1 = math.radians(lat0), math.radians(lat)
    a = (math.sin((p1 - p0) / 2) ** 2
         + math.cos(p0) * math.cos(p1) * math.sin(math.radians(lon - lon0) / 2) ** 2)  # fmt: skip
    return 2 * 3958.7613 * math.asin(math.sqrt(min(1.0, a)))


@pytest.fixture(scope="module")
async def geo_store(backend: str, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Store]:
    """The catalogue (Grinnell without coordinates), 1,200 synthetic homes, the edge points."""
    made = await new_store(backend, tmp_path_factory.mktemp(f"geo-{backend}"))
    grinnell = {"address": {"city": "Grinnell", "zip_code": "50112"}, "coordinates": None}
    extra = [record(name, coordinates=Coordinates(latitude=lat, longitude=lon))
             for name, (lat, lon) in EDGES.items()]  # fmt: skip
    extra.append(record("g-nowhere", **grinnell))
    await build_store(made)
    db = await open_db(made)
    for origin, items in (("import", extra), ("synthetic", None)):
        source = enumerate(extra, 1) if items else synthetic.generate(1_200, 5, AS_OF)
        report = await load(db, source, origin=origin, as_of=AS_OF)
        assert not report.rejects
    await db.close()
    yield made
    await drop_store(made)


@pytest.fixture(scope="module", params=["index", "sql"])
async def api(
    request: pytest.FixtureRequest, geo_store: Store
) -> AsyncIterator[tuple[AsyncTestClient[Any], dict[str, str]]]:
    """A client on the geo store, answering from the search index or (off) from SQL."""
    indexed = request.param == "index"
    app = HeadAsGet(create_app(settings_for(geo_store, cache_ttl=0, search_index=indexed)))
    key = await create_key(geo_store, "enterprise", per_minute=1_000_000, daily=10_000_000)
    async with AsyncTestClient(app=app) as client:  # type: ignore[arg-type]
        if indexed:
            await index_ready(client)
        yield client, {"Authorization": f"Bearer {key}"}


async def everything(store: Store) -> list[tuple[str, float | None, float | None]]:
    db = await open_db(store)
    try:
        rows = await db.fetch_all("SELECT id, latitude, longitude FROM properties")
    finally:
        await db.close()
    return [(r[0], r[1], r[2]) for r in rows]


async def get(api: tuple[AsyncTestClient[Any], dict[str, str]], query: str) -> Any:
    client, headers = api
    return await client.get(f"/v1/properties?{query}", headers=headers)


async def walk(api: tuple[AsyncTestClient[Any], dict[str, str]], query: str) -> list[Any]:
    """Every item of a search, page after page by cursor."""
    items: list[Any] = []
    body = (await get(api, query)).json()
    while True:
        items += body["data"]
        cursor = body["meta"]["nextCursor"]
        if cursor is None:
            return items
        body = (await get(api, f"{query}&cursor={quote(cursor)}")).json()
        assert "error" not in body, body


async def test_radius_answers_equal_a_brute_force_haversine(
    api: tuple[AsyncTestClient[Any], dict[str, str]], geo_store: Store
) -> None:
    rows = await everything(geo_store)
    placed = [r for r in rows if r[1] is not None]
    rng = random.Random(7)
    for _ in range(25):
        _, lat, lon = rng.choice(placed)
        assert lat is not None and lon is not None
        radius = rng.choice((0.5, 3.0, 25.0, 100.0, round(rng.uniform(0.5, 25), 3)))
        expected = sorted(
            ((brute_miles(lat, lon, la, lo), pid) for pid, la, lo in placed
             if brute_miles(lat, lon, la, lo) <= radius),  # type: ignore[arg-type]
        )  # fmt: skip
        query = f"latitude={lat}&longitude={lon}&radius={radius}&sort=distance&limit=1000"
        body = (await get(api, query)).json()
        assert body["meta"]["total"] == len(expected)
        assert [item["id"] for item in body["data"]] == [pid for _, pid in expected]
        for item, (miles, _) in zip(body["data"], expected, strict=True):
            assert abs(item["distanceMiles"] - miles) <= 0.005 + 1e-9
            assert item["distanceMiles"] == round(item["distanceMiles"], 2)


async def test_records_without_coordinates_never_match(
    api: tuple[AsyncTestClient[Any], dict[str, str]], geo_store: Store
) -> None:
    placed = {pid for pid, lat, _ in await everything(geo_store) if lat is not None}
    far = (await get(api, "latitude=41.74&longitude=-92.72&radius=100&limit=1000")).json()
    assert "g-nowhere" not in {item["id"] for item in far["data"]}
    world = [i["id"] for i in await walk(api, "bbox=-180,-90,180,90&limit=1000")]
    assert set(world) == placed and "g-nowhere" not in world
    plain = (await get(api, "zipCode=50112&sort=listPrice&limit=1000")).json()["data"]
    assert "g-nowhere" in {i["id"] for i in plain}
    assert all("distanceMiles" not in i for i in plain)  # on a radius search's items only


async def test_box_edges_are_included(api: tuple[AsyncTestClient[Any], dict[str, str]]) -> None:
    body = (await get(api, f"bbox={BOX}&limit=1000")).json()
    found = {item["id"] for item in body["data"]} & set(EDGES)
    assert found == set(EDGES) - {"edge-out"}
    assert body["meta"]["total"] == len(body["data"])
    assert all("distanceMiles" not in item for item in body["data"])


async def test_radius_combines_with_filters_and_sorts(
    api: tuple[AsyncTestClient[Any], dict[str, str]],
) -> None:
    center = "latitude=42.05&longitude=-93.65&radius=30"
    every = (await get(api, f"{center}&limit=1000")).json()["data"]
    for_sale = (await get(api, f"{center}&status=forSale&limit=1000")).json()["data"]
    assert for_sale and all(item["status"] == "forSale" for item in for_sale)
    assert {i["id"] for i in for_sale} == {i["id"] for i in every if i["status"] == "forSale"}
    nearest = (await get(api, f"{center}&sort=distance&limit=1000")).json()["data"]
    keys = [(i["distanceMiles"], i["id"]) for i in nearest]
    assert [k[0] for k in keys] == sorted(k[0] for k in keys)  # nearest first by default
    farthest = (await get(api, f"{center}&sort=distance&order=desc&limit=1000")).json()["data"]
    assert [i["id"] for i in farthest] == [i["id"] for i in nearest][::-1]
    by_price = (await get(api, f"{center}&sort=listPrice&order=asc&limit=1000")).json()["data"]
    assert {i["id"] for i in by_price} == {i["id"] for i in every}


@pytest.mark.parametrize(
    ("query", "parameter"),
    [
        ("latitude=42&longitude=-93", "radius"),
        ("latitude=42&radius=5", "longitude"),
        ("longitude=-93&radius=5", "latitude"),
        ("radius=5", "latitude"),
        ("latitude=91&longitude=-93&radius=5", "latitude"),
        ("latitude=-90.5&longitude=-93&radius=5", "latitude"),
        ("latitude=42&longitude=-180.01&radius=5", "longitude"),
        ("latitude=42&longitude=181&radius=5", "longitude"),
        ("latitude=42&longitude=-93&radius=0", "radius"),
        ("latitude=42&longitude=-93&radius=101", "radius"),
        ("latitude=42&longitude=-93&radius=-1", "radius"),
        ("latitude=42&longitude=-93&radius=nan", "radius"),
        ("latitude=42&longitude=-93&radius=1e400", "radius"),
        ("latitude=42&longitude=-93&radius=5&bbox=-94,41,-93,42", "bbox"),
        ("bbox=-94,41,-93", "bbox"),
        ("bbox=-94,41,-93,42,1", "bbox"),
        ("bbox=a,b,c,d", "bbox"),
        ("bbox=-94,41,-93,nan", "bbox"),
        ("bbox=-94,41,,42", "bbox"),
        ("bbox=-93,41,-94,42", "bbox"),
        ("bbox=-94,42,-93,41", "bbox"),
        ("bbox=-94,41,-94,42", "bbox"),
        ("bbox=-181,41,-93,42", "bbox"),
        ("bbox=-94,-91,-93,42", "bbox"),
        ("bbox=", "bbox"),
        ("sort=distance", "sort"),
        ("sort=distance&bbox=-94,41,-93,42", "sort"),
        ("sort=nearest", "sort"),
        ("cursor=x&offset=0", "offset"),
        ("cursor=", "cursor"),
        ("cursor=abc", "cursor"),
        ("cursor=abc.def", "cursor"),
        ("cursor=" + "A" * 1001, "cursor"),
    ],
)
async def test_bad_geo_and_cursor_parameters_are_400(
    api: tuple[AsyncTestClient[Any], dict[str, str]], query: str, parameter: str
) -> None:
    response = await get(api, query)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "invalid_parameter"
    assert error["parameter"] == parameter


@pytest.mark.parametrize(
    "query",
    [
        "sort=lastUpdated",
        "sort=listPrice&order=asc",
        "sort=daysOnMarket&order=desc&state=IA",
        "sort=livingArea&order=asc&status=forSale",
        "latitude=42.05&longitude=-93.65&radius=60&sort=distance",
        "latitude=42.05&longitude=-93.65&radius=60&sort=distance&order=desc",
        "latitude=41.2&longitude=-76.1&radius=100&sort=listPrice&order=desc",
        f"bbox={BOX}&sort=daysOnMarket",
    ],
)
async def test_a_cursor_walk_equals_the_offset_walk(
    api: tuple[AsyncTestClient[Any], dict[str, str]], query: str
) -> None:
    size = 7
    by_cursor = [i["id"] for i in await walk(api, f"{query}&limit={size}")]
    first = (await get(api, f"{query}&limit={size}")).json()
    total = first["meta"]["total"]
    by_offset: list[str] = []
    for offset in range(0, total, size):
        page = (await get(api, f"{query}&limit={size}&offset={offset}")).json()
        by_offset += [i["id"] for i in page["data"]]
    assert by_cursor == by_offset and len(by_cursor) == total
    assert len(set(by_cursor)) == total
    if total > size:  # each page's meta.offset counts the rows before it
        second = await get(api, f"{query}&limit={size}&cursor={first['meta']['nextCursor']}")
        assert second.json()["meta"]["offset"] == size


def _tamper(cursor: str) -> list[str]:
    body, tag = cursor.split(".")
    raw = bytearray(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    raw[len(raw) // 2] ^= 1
    flipped = base64.urlsafe_b64encode(bytes(raw)).decode().rstrip("=")
    return [f"{flipped}.{tag}", cursor[:-3], cursor[: len(cursor) // 2], body, f"{body}.{body}",
            cursor + "A", cursor.replace(".", ".A")]  # fmt: skip


async def test_tampered_truncated_and_foreign_cursors_are_400(
    api: tuple[AsyncTestClient[Any], dict[str, str]],
) -> None:
    query = "sort=listPrice&order=asc&limit=5"
    cursor = (await get(api, query)).json()["meta"]["nextCursor"]
    assert cursor
    assert (await get(api, f"{query}&cursor={quote(cursor)}")).status_code == 200
    assert (
        await get(api, f"sort=listPrice&order=asc&limit=9&cursor={quote(cursor)}")
    ).status_code == 200
    for bad in _tamper(cursor):
        response = await get(api, f"{query}&cursor={quote(bad)}")
        assert response.status_code == 400, bad
        assert response.json()["error"]["parameter"] == "cursor"
    for other in ("sort=listPrice&order=desc", "sort=lastUpdated&order=asc",
                  "sort=listPrice&order=asc&state=IA", "sort=listPrice&order=asc&bbox=" + BOX):  # fmt: skip
        response = await get(api, f"{other}&limit=5&cursor={quote(cursor)}")
        assert response.status_code == 400, other
        assert response.json()["error"]["parameter"] == "cursor"
        assert "another search" in response.json()["error"]["message"]
    near = "latitude=42.05&longitude=-93.65&radius=60&sort=distance&limit=5"
    cursor = (await get(api, near)).json()["meta"]["nextCursor"]
    moved = near.replace("radius=60", "radius=61")
    assert (await get(api, f"{moved}&cursor={quote(cursor)}")).status_code == 400


async def test_the_same_page_has_the_same_cursor(
    api: tuple[AsyncTestClient[Any], dict[str, str]],
) -> None:
    """No nonce: the cache and the ETag of a page do not change while the data does not."""
    one = (await get(api, "sort=listPrice&limit=3")).json()["meta"]["nextCursor"]
    two = (await get(api, "sort=listPrice&limit=3")).json()["meta"]["nextCursor"]
    assert one == two and one is not None


async def test_a_cursor_from_another_store_is_400(
    api: tuple[AsyncTestClient[Any], dict[str, str]], client: Any, auth: dict[str, str]
) -> None:
    """Each store signs with its own secret."""
    cursor = (await client.get("/v1/properties?limit=2", headers=auth)).json()["meta"]["nextCursor"]
    response = await get(api, f"limit=2&cursor={quote(cursor)}")
    assert response.status_code == 400
    assert response.json()["error"]["parameter"] == "cursor"


def _home(n: int, price: int, day: str) -> Any:
    """A forSale home of the walk tests in ZIP code 50014, about a mile apart each."""
    return record(
        f"w-{n:03d}", list_price=None, last_updated=f"{day}T00:00:00Z",
        address={"zip_code": "50014", "street_address": f"{n} Elm St"},
        coordinates=Coordinates(latitude=42.0 + n * 0.01, longitude=-93.65),
        price_history=[event(day, "priceChange", price), event("2026-01-05", "listedForSale", 1)],
    )  # fmt: skip


async def _reprice(store: Store, prices: dict[int, int], day: str) -> None:
    db = await open_db(store)
    homes = [_home(n, price, day) for n, price in prices.items()]
    report = await load(db, enumerate(homes, 1), origin="import", as_of=AS_OF)
    assert not report.rejects, report.rejects
    await db.close()


@pytest.fixture
async def walk_store(fresh_store: Store) -> Store:
    """A store of its own with 40 homes in 50014 to walk (w-000 at 100,000, each next one
    1,000 more)."""
    await _reprice(fresh_store, {n: 100_000 + 1_000 * n for n in range(40)}, "2026-02-01")
    return fresh_store


WALKS = [
    "zipCode=50014&sort=listPrice&order=asc",
    "zipCode=50014&sort=lastUpdated&order=desc",
    "latitude=42.0&longitude=-93.65&radius=40&zipCode=50014&sort=distance&order=desc",
]


@pytest.mark.parametrize("query", WALKS)
@pytest.mark.slow
async def test_a_cursor_walk_outlives_loads_without_overlap_or_skip(
    walk_store: Store, query: str
) -> None:
    """A load between pages moves records across the page boundary (prices, dates); the
    walk still lists each record of the version it began on exactly once, in that order."""
    made = walk_store
    key = await create_key(made, "enterprise")
    app = HeadAsGet(create_app(settings_for(made, cache_ttl=0)))
    async with AsyncTestClient(app=app) as client:  # type: ignore[arg-type]
        api = (client, {"Authorization": f"Bearer {key}"})
        await index_ready(client)
        expected = [i["id"] for i in await walk(api, f"{query}&limit=40")]
        assert len(expected) == 40
        body = (await get(api, f"{query}&limit=6")).json()
        seen = [i["id"] for i in body["data"]]
        for turn in range(KEEP_OLDER):  # the versions a walk may outlive
            # The next homes in the walk's order jump behind the page already seen, the
            # seen ones jump ahead: a keyset on today's data would skip and repeat them.
            ahead = [int(i[2:]) for i in expected[len(seen) : len(seen) + 3]]
            behind = [int(i[2:]) for i in seen[-3:]]
            await _reprice(made, {**{n: 500 + n + turn for n in ahead},
                                  **{n: 900_000 + n + turn for n in behind}},
                           f"2026-03-{turn + 10}")  # fmt: skip
            if turn % 2:
                await index_ready(client)  # half the pages after the new index is in use
            cursor = body["meta"]["nextCursor"]
            body = (await get(api, f"{query}&limit=6&cursor={quote(cursor)}")).json()
            assert "error" not in body, body
            assert body["meta"]["total"] == 40  # the total of the walk's version
            seen += [i["id"] for i in body["data"]]
        while body["meta"]["nextCursor"]:
            cursor = body["meta"]["nextCursor"]
            body = (await get(api, f"{query}&limit=6&cursor={quote(cursor)}")).json()
            seen += [i["id"] for i in body["data"]]
        assert seen == expected
        # A new walk follows today's data: the prices moved it.
        assert [i["id"] for i in await walk(api, f"{query}&limit=40")] != expected or (
            "distance" in query
        )


async def test_a_walk_whose_version_is_gone_goes_on_by_keyset(walk_store: Store) -> None:
    """Index off (or the version pruned): the walk continues after the last row's values
    on today's data; records whose sort value did not move are seen exactly once."""
    made = walk_store
    key = await create_key(made, "enterprise")
    app = HeadAsGet(create_app(settings_for(made, cache_ttl=0, search_index=False)))
    query = "zipCode=50014&sort=listPrice&order=asc&limit=6"
    async with AsyncTestClient(app=app) as client:  # type: ignore[arg-type]
        api = (client, {"Authorization": f"Bearer {key}"})
        body = (await get(api, query)).json()
        seen = [i["id"] for i in body["data"]]
        moved: set[str] = set()
        for turn in range(3):
            n = 20 + turn
            moved.add(f"w-{n:03d}")
            await _reprice(made, {n: 1 + turn}, f"2026-03-{turn + 10}")
            body = (await get(api, f"{query}&cursor={quote(body['meta']['nextCursor'])}")).json()
            seen += [i["id"] for i in body["data"]]
        while body["meta"]["nextCursor"]:
            body = (await get(api, f"{query}&cursor={quote(body['meta']['nextCursor'])}")).json()
            seen += [i["id"] for i in body["data"]]
        still = [f"w-{n:03d}" for n in range(40) if f"w-{n:03d}" not in moved]
        assert [i for i in seen if i in still] == still


async def test_a_private_index_keeps_the_walk_s_version_over_one_load(walk_store: Store) -> None:
    """Without snapshots (each worker builds its own index) the index a load replaced is
    kept for the walks begun on it (one version)."""
    from propdata.search.filters import SearchFilters
    from propdata.search.query import SearchQuery
    from propdata.search.service import SearchService

    made = walk_store
    db = await open_db(made)
    try:
        service = SearchService(db, snapshots=None)
        service.warm()
        assert await service.indexes.refreshed()
        query = (SearchFilters(zip_code="50014"), "listPrice", "asc", 10, 0)
        first = await service.search(SearchQuery(*query))
        expected = [f"w-{n:03d}" for n in range(40)]
        assert [i.id for i in first.data] == expected[:10]
        await _reprice(made, {10: 1, 11: 2, 3: 999_999}, "2026-03-01")  # across the boundary
        second = await service.search(SearchQuery(*query, cursor=first.meta.next_cursor))
        assert [i.id for i in second.data] == expected[10:20]
        assert second.data[0].list_price == 1  # today's record, in the walk's place
        await service.close()
    finally:
        await db.close()


async def test_fields_select_distance_and_keep_the_cursor(
    api: tuple[AsyncTestClient[Any], dict[str, str]],
) -> None:
    """`fields` is a projection, not part of the search: a walk may change it page to page."""
    near = "latitude=42.05&longitude=-93.65&radius=60&sort=distance&limit=3"
    body = (await get(api, f"{near}&fields=distanceMiles")).json()
    assert all(set(item) == {"id", "distanceMiles"} for item in body["data"])
    cursor = body["meta"]["nextCursor"]
    assert cursor
    whole = (await get(api, f"{near}&cursor={quote(cursor)}")).json()
    thin = (await get(api, f"{near}&fields=listPrice&cursor={quote(cursor)}")).json()
    assert [i["id"] for i in thin["data"]] == [i["id"] for i in whole["data"]]
    assert thin["meta"] == whole["meta"]
