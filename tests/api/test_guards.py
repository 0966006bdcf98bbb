"""Hostile parameters get a 400 naming them, on both stores.

Without the guard, `minPrice=1e3` and `offset=1e1` would be read leniently as numbers, and a
NUL byte in a path or query value would reach PostgreSQL, which answers a 500.
"""

from __future__ import annotations

import gc
from typing import Any

import pytest
from litestar.testing import AsyncTestClient

from propdata.app import HeadAsGet, create_app
from tests.conftest import Store, settings_for

NOT_PLAIN_INTEGERS = ["1e3", "10.0", "+5", "1_0", " 5", "5 ", "\u0665", "0x10", "", "--5", "5-"]


@pytest.mark.parametrize("value", NOT_PLAIN_INTEGERS)
@pytest.mark.parametrize("name", ["minPrice", "offset", "maxDaysOnMarket", "limit"])
async def test_integers_are_plain_digits(
    client: Any, auth: dict[str, str], name: str, value: str
) -> None:
    response = await client.get("/v1/properties", params={name: value}, headers=auth)
    assert response.status_code == 400, (name, value, response.text)
    error = response.json()["error"]
    assert error["code"] == "invalid_parameter" and error["parameter"] == name


async def test_plain_integers_still_work(client: Any, auth: dict[str, str]) -> None:
    for query in ("minPrice=0", "minPrice=250000", "offset=0", "limit=7", "minBeds=3"):
        response = await client.get(f"/v1/properties?{query}", headers=auth)
        assert response.status_code == 200, (query, response.text)
    response = await client.get("/v1/markets/50010/history?months=6", headers=auth)
    assert response.status_code == 200 and len(response.json()["data"]["history"]) <= 6
    response = await client.get("/v1/markets/50010/history?months=1e1", headers=auth)
    assert response.status_code == 400 and response.json()["error"]["parameter"] == "months"


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1.", ".5", "1,5", "1_0", "\u0661.5"])
async def test_numbers_are_written_as_json_writes_them(
    client: Any, auth: dict[str, str], value: str
) -> None:
    response = await client.get("/v1/properties", params={"minBaths": value}, headers=auth)
    assert response.status_code == 400, (value, response.text)
    assert response.json()["error"]["parameter"] == "minBaths"
    for good in ("1.5", "2", "2.5e0"):
        ok = await client.get("/v1/properties", params={"minBaths": good}, headers=auth)
        assert ok.status_code == 200, good


@pytest.mark.parametrize(
    ("path", "parameter"),
    [
        ("/v1/properties/x%00", "id"),
        ("/v1/properties/t-000%0A", "id"),
        ("/v1/properties/x%00/history", "id"),
        ("/v1/properties/x%1B/valuation", "id"),
        ("/v1/markets/5001%00", "zipCode"),
        ("/v1/properties?city=Am%00es", "city"),
        ("/v1/properties?zipCode=50010%0A", "zipCode"),
        ("/v1/properties/lookup?streetAddress=1%00Main&city=Ames&state=IA", "streetAddress"),
        ("/v1/properties/lookup?streetAddress=1+Main&city=Am%00es&state=IA", "city"),
        ("/v1/markets/search?city=%C2%85Ames", "city"),
    ],
)
async def test_control_characters_are_refused_on_every_store(
    client: Any, auth: dict[str, str], path: str, parameter: str
) -> None:
    response = await client.get(path, headers=auth)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "invalid_parameter" and error["parameter"] == parameter
    assert "Traceback" not in response.text


async def test_a_control_character_in_a_parameter_name_is_refused(
    client: Any, auth: dict[str, str]
) -> None:
    response = await client.get("/v1/properties?ci%00ty=Ames", headers=auth)
    assert response.status_code == 400
    assert "\x00" not in response.json()["error"]["message"]


async def test_no_plan_is_served_a_page_above_its_maximum_from_the_cache(fresh: Any) -> None:
    """The cache key and the endpoint read `limit` the same way (one lenient reader would let
    a spelling the other refuses share a cached page)."""
    client, _, make_key = await fresh(cache_ttl=60)
    big = {"Authorization": f"Bearer {await make_key('enterprise')}"}
    free = {"Authorization": f"Bearer {await make_key('free')}"}
    for spelling in ("1e3", "25.0", "1000.0", "+1000"):
        url = f"/v1/properties?limit={spelling}"
        assert (await client.get(url, headers=big)).status_code == 400, spelling
        answer = await client.get(url, headers=free)
        assert answer.status_code == 400 and answer.headers["x-cache"] == "MISS", spelling
    # A page really cached for the Enterprise key at its size is never the Free key's.
    first = await client.get("/v1/properties?limit=1000", headers=big)
    assert first.status_code == 200 and first.json()["meta"]["limit"] == 1000
    again = await client.get("/v1/properties?limit=1000", headers=free)
    assert again.json()["meta"]["limit"] == 25 and len(again.json()["data"]) <= 25
    # ... and unparsable limits never share an entry with it, or with anything.
    for bad in ("AAA", "true", "0", "-1"):
        answer = await client.get(f"/v1/properties?limit={bad}", headers=big)
        assert answer.status_code == 400 and answer.headers["x-cache"] == "MISS", bad


@pytest.mark.slow
async def test_the_guard_never_takes_one_apps_handler_for_anothers(store: Store, key: str) -> None:
    """The guard keys each handler's query names by the function it wraps, never by
    id(handler): a closed app's handler frees its address, another app's handler may get
    it, and a search would then be refused as taking no parameters (keyed by id, this loop
    failed at its 14th app)."""
    auth = {"Authorization": f"Bearer {key}"}
    wrong = []
    for n in range(40):
        app = HeadAsGet(create_app(settings_for(store, cache_ttl=0)))
        async with AsyncTestClient(app=app) as client:  # type: ignore[arg-type]
            for path in ("/v1/auth/status", "/v1/markets/50010/history?months=2",
                         "/v1/properties?city=Ames&limit=2",
                         "/v1/markets/search?state=IA&limit=2"):  # fmt: skip
                answer = await client.get(path, headers=auth)
                if answer.status_code != 200:
                    wrong.append((n, path, answer.status_code, answer.text[:150]))
        del app, client
        gc.collect()
    assert not wrong, wrong[:3]


async def test_an_encoded_slash_is_no_path_to_another_resource(
    client: Any, auth: dict[str, str]
) -> None:
    """The server decodes %2F before routing: t-001%2Fhistory must not reach t-001's history."""
    for path in ("/v1/properties/t-001%2Fhistory", "/v1/properties/t-001%2fvaluation"):
        response = await client.get(path, headers=auth)
        assert response.status_code == 404, path
        assert response.json()["error"]["code"] == "not_found"
    assert (await client.get("/v1/properties/t-001/history", headers=auth)).status_code == 200


async def test_parameters_are_checked_before_the_cache(fresh: Any) -> None:
    """A cached answer never changes whether a request is a 400."""
    client, _, make_key = await fresh(cache_ttl=60)
    auth = {"Authorization": f"Bearer {await make_key('developer')}"}
    for cached, bad, parameter in (
        ("/v1/properties?limit=30", "/v1/properties?limit=30&limit=1", "limit"),
        ("/v1/properties?limit=30", "/v1/properties?limit=1&limit=30", "limit"),
        ("/v1/properties?limit=1", "/v1/properties?limit=1&colour=red", "colour"),
        ("/v1/properties?city=Ames", "/v1/properties?city=Ames&city=Ames", "city"),
        ("/v1/markets/50010/history?months=2", "/v1/markets/50010/history?months=2&months=2",
         "months"),
    ):  # fmt: skip
        assert (await client.get(cached, headers=auth)).status_code == 200
        assert (await client.get(cached, headers=auth)).headers["x-cache"] == "HIT"
        for _ in range(2):
            answer = await client.get(bad, headers=auth)
            assert answer.status_code == 400, (bad, answer.text)
            assert answer.json()["error"]["parameter"] == parameter


async def test_leading_zeros_are_plain_decimal_digits(fresh: Any) -> None:
    """`030` is 30: the same answer, and the same cache entry, as `30`."""
    client, _, make_key = await fresh(cache_ttl=60)
    auth = {"Authorization": f"Bearer {await make_key('developer')}"}
    plain = await client.get("/v1/properties?limit=30&minBeds=2&offset=5", headers=auth)
    assert plain.status_code == 200 and plain.json()["meta"]["limit"] == 30
    for spelling in ("limit=030&minBeds=02&offset=005", "limit=0030&minBeds=002&offset=05"):
        zeros = await client.get(f"/v1/properties?{spelling}", headers=auth)
        assert zeros.status_code == 200, (spelling, zeros.text)
        assert zeros.json() == plain.json() and zeros.headers["x-cache"] == "HIT"
    months = await client.get("/v1/markets/50010/history?months=06", headers=auth)
    assert months.status_code == 200 and len(months.json()["data"]["history"]) <= 6
    for zero in ("limit=000", "limit=00"):
        answer = await client.get(f"/v1/properties?{zero}", headers=auth)
        assert answer.status_code == 400 and answer.json()["error"]["parameter"] == "limit"
