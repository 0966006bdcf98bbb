"""Radius and bounding-box search, sort=distance with distance_miles, and cursor paging, with
both clients against a live `propdata serve` (a server of the module's own: it loads a few
records at known places; the catalogue's 42 all stand at 42.03, -93.62)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import httpx
import pytest
from propdata.properties.schemas import Coordinates
from tests.factories import record

from propdata_client import AsyncClient, Client, InvalidParameterError, PropertyPage

pytestmark = pytest.mark.slow

if TYPE_CHECKING:
    from conftest import Live

ALL = 42
# Three homes along the meridian -90 in Illinois: 0, 0.69 and 6.91 miles from (41, -90).
PLACES = {"g-0": 41.0, "g-1": 41.01, "g-2": 41.1}


@pytest.fixture(scope="module")
def geo(own_live: Live) -> Live:
    address = {"city": "Rock Island", "state": "IL", "zip_code": "61201", "county": "Rock Island",
               "fips_code": "17161"}  # fmt: skip
    own_live.load([
        record(pid, coordinates=Coordinates(latitude=lat, longitude=-90.0),
               address={**address, "street_address": f"{n} Meridian Rd"})
        for n, (pid, lat) in enumerate(PLACES.items(), 1)
    ])  # fmt: skip
    return own_live


@pytest.fixture(scope="module")
def client(geo: Live) -> Iterator[Client]:
    key = geo.key("enterprise", per_minute=1_000_000)
    with Client(api_key=key, base_url=geo.base_url) as c:
        yield c


def test_a_radius_search_sorted_by_distance(client: Client) -> None:
    page = client.properties.search(latitude=41.0, longitude=-90.0, radius=1, sort="distance")
    assert isinstance(page, PropertyPage) and page.meta.total == 2
    assert [(i.id, i.distance_miles) for i in page.data] == [("g-0", 0.0), ("g-1", 0.69)]
    wider = client.properties.search(latitude=41.0, longitude=-90.0, radius=10,
                                     sort="distance", order="desc")  # fmt: skip
    assert [(i.id, i.distance_miles) for i in wider.data] == [
        ("g-2", 6.91), ("g-1", 0.69), ("g-0", 0.0)]  # fmt: skip
    # with the other filters, and cut down by fields
    cut = client.properties.search(latitude=41.0, longitude=-90.0, radius=10, max_price=10**9,
                                   sort="distance", fields=["distanceMiles"])  # fmt: skip
    assert cut.data == [{"id": "g-0", "distanceMiles": 0.0}, {"id": "g-1", "distanceMiles": 0.69},
                        {"id": "g-2", "distanceMiles": 6.91}]  # fmt: skip
    # the catalogue stands 209 miles away
    assert client.properties.search(latitude=41.0, longitude=-90.0, radius=100).meta.total == 3


def test_a_bounding_box(client: Client) -> None:
    page = client.properties.search(bbox=(-90.05, 40.95, -89.95, 41.05), sort="listPrice")
    assert sorted(i.id for i in page.data) == ["g-0", "g-1"]
    assert all(i.distance_miles is None for i in page.data)  # no radius: absent, read as None
    same = client.properties.search(bbox="-90.05,40.95,-89.95,41.05", sort="listPrice")
    assert [i.id for i in same.data] == [i.id for i in page.data]
    iowa = client.properties.search(bbox=(-94, 42, -93, 43), limit=1)
    assert iowa.meta.total == ALL
    with pytest.raises(ValueError):
        client.properties.search(bbox=(1.0, 2.0, 3.0))


def test_geography_refused_by_the_server(client: Client) -> None:
    cases = [
        ({"latitude": 41.0, "longitude": -90.0}, "radius"),
        ({"latitude": 41.0, "longitude": -90.0, "radius": 101}, "radius"),
        ({"bbox": (-89.0, 40.0, -90.0, 41.0)}, "bbox"),
        (
            {"bbox": (-90.0, 40.0, -89.0, 41.0), "latitude": 41.0, "longitude": -90.0, "radius": 1},
            "bbox",
        ),
        ({"sort": "distance"}, "sort"),
    ]
    for values, parameter in cases:
        with pytest.raises(InvalidParameterError) as caught:
            client.properties.search(**values)  # type: ignore[call-overload]
        assert caught.value.parameter == parameter, values


def test_cursor_pages(client: Client) -> None:
    first = client.properties.search(limit=20, sort="listPrice", order="asc")
    assert first.next_cursor is not None and first.has_more and first.meta.offset == 0
    second = client.properties.search(limit=20, sort="listPrice", order="asc",
                                      cursor=first.next_cursor)  # fmt: skip
    third = client.properties.search(limit=20, sort="listPrice", order="asc",
                                     cursor=second.next_cursor)  # fmt: skip
    assert third.next_cursor is None and not third.has_more
    ids = [i.id for p in (first, second, third) for i in p.data]
    assert len(ids) == len(set(ids)) == ALL + len(PLACES)
    whole = client.properties.search(limit=100, sort="listPrice", order="asc")
    assert ids == [i.id for i in whole.data]
    with pytest.raises(InvalidParameterError) as caught:
        client.properties.search(cursor=first.next_cursor, offset=20, limit=20,
                                 sort="listPrice", order="asc")  # fmt: skip
    assert caught.value.parameter == "offset"
    for bad in ("not-a-cursor", first.next_cursor + "x"):
        with pytest.raises(InvalidParameterError) as caught:
            client.properties.search(cursor=bad, limit=20, sort="listPrice", order="asc")
        assert caught.value.parameter == "cursor"
    with pytest.raises(InvalidParameterError) as caught:  # another search's cursor
        client.properties.search(cursor=first.next_cursor, limit=20, sort="livingArea")
    assert caught.value.parameter == "cursor"


def test_search_all_follows_the_cursors(geo: Live) -> None:
    key = geo.key("enterprise", per_minute=1_000_000)
    sent: list[httpx.Request] = []
    http = httpx.Client(event_hooks={"request": [sent.append]})
    with http, Client(api_key=key, base_url=geo.base_url, http_client=http) as client:
        near = list(client.properties.search_all(latitude=41.0, longitude=-90.0, radius=10,
                                                 sort="distance", page_size=1))  # fmt: skip
        assert [(i.id, i.distance_miles) for i in near] == [
            ("g-0", 0.0), ("g-1", 0.69), ("g-2", 6.91)]  # fmt: skip
        assert len(sent) == 3 and all(r.url.params["cursor"] for r in sent[1:])
        boxed = list(client.properties.search_all(bbox=(-94, 42, -93, 43), page_size=10))
        assert len(boxed) == len({i.id for i in boxed}) == ALL
        # the walk neither repeats nor skips while a load runs between its pages
        sent.clear()
        walk = client.properties.search_all(page_size=10, sort="listPrice")
        head = [next(walk).id for _ in range(10)]
        # a new record that sorts before the walk's position: never in its later pages,
        # whether the server walks the version it began on or (while its search index
        # builds) a plain keyset on the current data
        geo.load([record("g-new", list_price=10**8)])
        rest = [i.id for i in walk]
        assert "g-new" not in head + rest
        assert len(head + rest) == len(set(head + rest)) == ALL + len(PLACES)


async def test_async_radius_and_cursor(geo: Live) -> None:
    key = geo.key("enterprise", per_minute=1_000_000)
    async with AsyncClient(api_key=key, base_url=geo.base_url) as aclient:
        page = await aclient.properties.search(latitude=41.0, longitude=-90.0, radius=1)
        assert sorted(i.id for i in page.data) == ["g-0", "g-1"]
        assert page.next_cursor is None
        ids = [i.id async for i in aclient.properties.search_all(page_size=7, sort="livingArea")]
        assert len(ids) == len(set(ids)) and len(ids) >= ALL + len(PLACES)
