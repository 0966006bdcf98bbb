"""GET /v1/properties/lookup as people type addresses: ZIP alone, one line, units, city spellings."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from litestar.testing import AsyncTestClient

from propdata.app import HeadAsGet, create_app
from propdata.errors import CandidateAddress
from propdata.properties.schemas import PropertyDetail, ShortAddress
from tests.conftest import Store, build_store, create_key, drop_store, new_store, settings_for
from tests.factories import record

LOOKUP = "/v1/properties/lookup"


def _at(pid: str, street: str, city: str, state: str, zip_code: str) -> PropertyDetail:
    return record(
        pid,
        address={"street_address": street, "city": city, "state": state, "zip_code": zip_code,
                 "county": None, "fips_code": None},
    )  # fmt: skip


def _records() -> list[PropertyDetail]:
    return [
        _at("u-001", "200 Elm St Apt 1", "Ames", "IA", "50010"),
        _at("u-002", "200 Elm St Apt 2", "Ames", "IA", "50010"),
        _at("u-003", "200 Elm St Apt 3", "Ames", "IA", "50010"),
        _at("p-001", "300 Pine St", "Ames", "IA", "50010"),
        _at("p-002", "12 Grand Ave", "St. Louis", "MO", "63101"),
        _at("p-003", "14 Central Ave", "Fort Dodge", "IA", "50501"),
        _at("p-004", "16 First St", "Mount Vernon", "IA", "52314"),
        _at("p-005", "18 Market St", "Saint Paul", "MN", "55101"),
        _at("z-001", "5 Broadway", "New York", "NY", "10001"),
        _at("z-002", "5 Broadway", "New York", "NY", "10002"),
    ]


@pytest.fixture(scope="module")
async def api(
    backend: str, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[tuple[AsyncTestClient[Any], dict[str, str]]]:
    store: Store = await new_store(backend, tmp_path_factory.mktemp(f"lookup-{backend}"))
    await build_store(store, _records())
    secret = await create_key(store, "enterprise", per_minute=1_000_000, daily=10_000_000)
    app = HeadAsGet(create_app(settings_for(store, cache_ttl=0)))
    async with AsyncTestClient(app=app) as client:  # type: ignore[arg-type]
        yield client, {"Authorization": f"Bearer {secret}"}
    await drop_store(store)


async def _lookup(api: tuple[AsyncTestClient[Any], dict[str, str]], **params: str) -> Any:
    client, auth = api
    return await client.get(LOOKUP, params=params, headers=auth)


async def _found(api: tuple[AsyncTestClient[Any], dict[str, str]], **params: str) -> str:
    response = await _lookup(api, **params)
    assert response.status_code == 200, (params, response.text)
    return str(response.json()["data"]["id"])


async def test_street_and_zip_without_city(api: Any) -> None:
    assert await _found(api, streetAddress="300 Pine St", zipCode="50010") == "p-001"


async def test_zip_plus_four_is_read_as_its_five_digits(api: Any) -> None:
    assert await _found(api, streetAddress="300 Pine St", zipCode="50010-1234") == "p-001"
    response = await _lookup(api, streetAddress="300 Pine St", zipCode="50010-12")
    assert response.status_code == 400 and response.json()["error"]["parameter"] == "zipCode"


async def test_city_and_state_that_disagree_with_the_zip_code_find_nothing(api: Any) -> None:
    response = await _lookup(
        api, streetAddress="300 Pine St", city="Boone", state="IA", zipCode="50010"
    )
    assert response.status_code == 404
    assert await _found(
        api, streetAddress="300 Pine St", city="ames", state="ia", zipCode="50010"
    ) == "p-001"  # fmt: skip


@pytest.mark.parametrize(
    ("params", "parameter"),
    [
        ({"streetAddress": "300 Pine St"}, "city"),
        ({"streetAddress": "300 Pine St", "city": "Ames"}, "state"),
        ({"streetAddress": "300 Pine St", "state": "IA"}, "city"),
        ({"city": "Ames", "zipCode": "50010"}, "streetAddress"),
    ],
)
async def test_a_place_is_required(api: Any, params: dict[str, str], parameter: str) -> None:
    response = await _lookup(api, **params)
    assert response.status_code == 400
    assert response.json()["error"]["parameter"] == parameter


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("300 Pine St, Ames, IA 50010", "p-001"),
        ("300 Pine Street, Ames, IA", "p-001"),
        ("300 Pine St 50010", "p-001"),
        ("200 Elm St Apt 2, Ames, IA 50010", "u-002"),
        ("200 Elm Street #2, Ames, IA 50010-4321", "u-002"),
        ("300 Pine St, Ames, IA 50010-1234", "p-001"),
        ("300 Pine St, Ames, IA 50010,", "p-001"),
        ("300  Pine St,  Ames,  IA  50010", "p-001"),
        ("12 Grand Ave, Saint Louis, MO 63101", "p-002"),
    ],
)
async def test_one_line_address(api: Any, line: str, expected: str) -> None:
    assert await _found(api, address=line) == expected


@pytest.mark.parametrize(
    "line",
    ["garbage", "Ames, IA 50010", "300 Pine St", "300 Pine St, Ames, ZZ 50010"],
)
async def test_one_line_address_that_cannot_be_used_is_400(api: Any, line: str) -> None:
    response = await _lookup(api, address=line)
    assert response.status_code == 400, response.text
    assert response.json()["error"]["parameter"] == "address"


@pytest.mark.parametrize(
    "beside",
    [{"streetAddress": "300 Pine St"}, {"zipCode": "50010"}, {"city": "Ames", "state": "IA"}],
)
async def test_one_line_address_beside_the_fields_is_400(api: Any, beside: dict[str, str]) -> None:
    response = await _lookup(api, address="300 Pine St, Ames, IA 50010", **beside)
    assert response.status_code == 400
    assert response.json()["error"]["parameter"] == "address"


async def test_surrounding_spaces_are_ignored(api: Any) -> None:
    assert await _found(
        api, streetAddress="  300 Pine St ", city=" Ames  ", state=" IA ", zipCode=" 50010 "
    ) == "p-001"  # fmt: skip
    assert await _found(api, address="  300 Pine St, Ames, IA 50010  ") == "p-001"


@pytest.mark.parametrize(
    ("city", "state", "expected"),
    [
        ("St. Louis", "MO", "p-002"),
        ("St Louis", "MO", "p-002"),
        ("Saint Louis", "MO", "p-002"),
        ("saint-louis", "mo", "p-002"),
        ("Ft. Dodge", "IA", "p-003"),
        ("Ft Dodge", "IA", "p-003"),
        ("FORT DODGE", "IA", "p-003"),
        ("Mt. Vernon", "IA", "p-004"),
        ("Mt Vernon", "IA", "p-004"),
        ("St. Paul", "MN", "p-005"),
    ],
)
async def test_city_spellings_meet(api: Any, city: str, state: str, expected: str) -> None:
    street = {"p-002": "12 Grand Ave", "p-003": "14 Central Ave", "p-004": "16 First St",
              "p-005": "18 Market St"}[expected]  # fmt: skip
    assert await _found(api, streetAddress=street, city=city, state=state) == expected


@pytest.mark.parametrize(
    ("city", "state", "expected"),
    [
        ("Saint Louis", "MO", ["p-002"]),
        (" St. Louis ", "MO", ["p-002"]),
        ("Ft Dodge", "IA", ["p-003"]),
        ("mt. vernon", "IA", ["p-004"]),
        ("St Paul", "MN", ["p-005"]),
    ],
)
async def test_search_city_filter_normalises_the_city(
    api: Any, city: str, state: str, expected: list[str]
) -> None:
    client, auth = api
    response = await client.get(
        "/v1/properties/search", params={"city": city, "state": state}, headers=auth
    )
    assert response.status_code == 200, response.text
    assert [item["id"] for item in response.json()["data"]] == expected


def _candidates(response: Any) -> list[dict[str, Any]]:
    return list(response.json()["error"]["candidates"])


async def test_a_unit_the_store_does_not_hold_names_the_units_it_does(api: Any) -> None:
    response = await _lookup(api, streetAddress="200 Elm St Apt 9", city="Ames", state="IA")
    assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"
    candidates = _candidates(response)
    assert [c["id"] for c in candidates] == ["u-001", "u-002", "u-003"]
    assert candidates[0]["address"] == {
        "streetAddress": "200 Elm St Apt 1", "city": "Ames", "state": "IA", "zipCode": "50010",
    }  # fmt: skip


async def test_a_missing_unit_names_the_units(api: Any) -> None:
    response = await _lookup(api, streetAddress="200 Elm Street", zipCode="50010")
    assert response.status_code == 404
    assert [c["id"] for c in _candidates(response)] == ["u-001", "u-002", "u-003"]
    response = await _lookup(api, address="200 Elm St, Ames, IA")
    assert [c["id"] for c in _candidates(response)] == ["u-001", "u-002", "u-003"]


async def test_several_zip_codes_is_409_with_candidates(api: Any) -> None:
    response = await _lookup(api, streetAddress="5 Broadway", city="New York", state="NY")
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "ambiguous_address"
    candidates = _candidates(response)
    assert [(c["id"], c["address"]["zipCode"]) for c in candidates] == [
        ("z-001", "10001"),
        ("z-002", "10002"),
    ]


async def test_no_candidates_member_when_there_are_none(api: Any) -> None:
    response = await _lookup(api, streetAddress="1 Nowhere Rd", city="Ames", state="IA")
    assert response.status_code == 404
    assert "candidates" not in response.json()["error"]
    response = await _lookup(api, streetAddress="200 Elm St Apt 1", city="Boone", state="IA")
    assert response.status_code == 404
    assert "candidates" not in response.json()["error"]


def test_a_candidate_address_is_the_short_address() -> None:
    assert CandidateAddress.__struct_fields__ == ShortAddress.__struct_fields__
    assert CandidateAddress.__struct_encode_fields__ == ShortAddress.__struct_encode_fields__
