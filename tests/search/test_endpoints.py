"""GET /v1/properties and /v1/properties/search: filters, sorts, pages, fields, errors."""

from __future__ import annotations

from typing import Any

import pytest

from propdata.ingest.loader import to_row
from tests.factories import AS_OF, catalogue

SEARCH_FIELDS = {
    "id", "status", "listPrice", "address", "bedroomsTotal", "bathroomsTotal", "livingArea",
    "daysOnMarket", "lastSalePrice", "lastSaleDate", "lastUpdated",
}  # fmt: skip
"""An item's fields; a radius search's items add `distanceMiles`."""


def _rows() -> list[dict[str, Any]]:
    """The catalogue as the store holds it (derived fields included): the test oracle."""
    out = []
    for rec in catalogue():
        row = to_row(rec, "import", "x", AS_OF)
        out.append(
            {
                "id": rec.id, "status": rec.status, "listPrice": row[3], "zipCode": rec.address.zip_code,
                "city": rec.address.city, "state": rec.address.state, "propertyType": rec.property_type,
                "beds": rec.bedrooms_total, "baths": rec.bathrooms_total, "sqft": rec.living_area,
                "year": rec.year_built, "dom": row[18], "lastUpdated": rec.last_updated,
            }
        )  # fmt: skip
    return out


ROWS = _rows()


async def _all_ids(client: Any, auth: dict[str, str], query: str) -> tuple[list[str], int]:
    response = await client.get(f"/v1/properties?{query}&limit=1000", headers=auth)
    assert response.status_code == 200, response.text
    body = response.json()
    return [item["id"] for item in body["data"]], body["meta"]["total"]


@pytest.mark.parametrize(
    ("query", "keep"),
    [
        ("zipCode=50010", lambda r: r["zipCode"] == "50010"),
        ("city=grinnell", lambda r: r["city"] == "Grinnell"),
        ("city=New%20York", lambda r: r["city"] == "New York"),
        ("state=ny", lambda r: r["state"] == "NY"),
        ("status=forRent", lambda r: r["status"] == "forRent"),
        ("propertyType=condo", lambda r: r["propertyType"] == "condo"),
        ("minPrice=200000", lambda r: r["listPrice"] is not None and r["listPrice"] >= 200_000),
        ("maxPrice=200000", lambda r: r["listPrice"] is not None and r["listPrice"] <= 200_000),
        ("minBeds=3", lambda r: r["beds"] is not None and r["beds"] >= 3),
        ("maxBeds=2", lambda r: r["beds"] is not None and r["beds"] <= 2),
        ("minBaths=1.5", lambda r: r["baths"] is not None and r["baths"] >= 1.5),
        ("minSqft=1500", lambda r: r["sqft"] is not None and r["sqft"] >= 1500),
        ("maxSqft=1000", lambda r: r["sqft"] is not None and r["sqft"] <= 1000),
        ("minYearBuilt=1980", lambda r: r["year"] is not None and r["year"] >= 1980),
        ("maxDaysOnMarket=100", lambda r: r["dom"] is not None and r["dom"] <= 100),
        ("state=IA&status=forSale&minPrice=150000&maxPrice=400000",
         lambda r: r["state"] == "IA" and r["status"] == "forSale" and r["listPrice"] is not None
         and 150_000 <= r["listPrice"] <= 400_000),
        ("zipCode=50010&propertyType=singleFamily&minBeds=1",
         lambda r: r["zipCode"] == "50010" and r["propertyType"] == "singleFamily" and (r["beds"] or 0) >= 1),
    ],
)  # fmt: skip
async def test_every_filter_and_combination(
    client: Any, auth: dict[str, str], query: str, keep: Any
) -> None:
    ids, total = await _all_ids(client, auth, query)
    expected = {r["id"] for r in ROWS if keep(r)}
    assert expected, f"the catalogue should exercise {query}"
    assert set(ids) == expected
    assert total == len(expected)


def _sorted(field: str, order: str) -> list[str]:
    present = [r for r in ROWS if r[field] is not None]
    missing = [r for r in ROWS if r[field] is None]
    reverse = order == "desc"
    present.sort(key=lambda r: (r[field], r["id"]), reverse=reverse)
    missing.sort(key=lambda r: r["id"], reverse=reverse)
    return [r["id"] for r in present + missing]


@pytest.mark.parametrize("sort", ["listPrice", "daysOnMarket", "livingArea", "lastUpdated"])
@pytest.mark.parametrize("order", ["asc", "desc"])
async def test_sorts_put_nulls_last_and_break_ties_by_id(
    client: Any, auth: dict[str, str], sort: str, order: str
) -> None:
    field = {
        "listPrice": "listPrice",
        "daysOnMarket": "dom",
        "livingArea": "sqft",
        "lastUpdated": "lastUpdated",
    }[sort]
    ids, _ = await _all_ids(client, auth, f"sort={sort}&order={order}")
    assert ids == _sorted(field, order)


async def test_default_sort_is_last_updated_desc(client: Any, auth: dict[str, str]) -> None:
    ids, total = await _all_ids(client, auth, "")
    assert ids == _sorted("lastUpdated", "desc")
    assert total == len(ROWS)


@pytest.mark.parametrize("sort", ["listPrice", "lastUpdated", "livingArea"])
async def test_pages_never_overlap_or_skip(client: Any, auth: dict[str, str], sort: str) -> None:
    seen: list[str] = []
    for offset in range(0, 45, 7):
        body = (
            await client.get(
                f"/v1/properties?sort={sort}&order=asc&limit=7&offset={offset}", headers=auth
            )
        ).json()
        cursor = body["meta"].pop("nextCursor")
        assert body["meta"] == {"total": len(ROWS), "limit": 7, "offset": offset}
        assert (cursor is None) == (offset + 7 >= len(ROWS))  # null on the last page only
        seen.extend(item["id"] for item in body["data"])
    assert len(seen) == len(set(seen)) == len(ROWS)


async def test_search_items_have_exactly_their_fields(client: Any, auth: dict[str, str]) -> None:
    for path in ("/v1/properties?limit=3", "/v1/properties/search?limit=3"):
        body = (await client.get(path, headers=auth)).json()
        assert set(body) == {"meta", "data"}
        for item in body["data"]:
            assert set(item) == SEARCH_FIELDS
            assert set(item["address"]) == {"streetAddress", "city", "state", "zipCode"}
    sold = (
        await client.get("/v1/properties/search?status=recentlySold&limit=1", headers=auth)
    ).json()["data"][0]
    assert sold["lastSalePrice"] is not None and sold["lastSaleDate"] == "2026-10-15"


async def test_search_alias_answers_the_same(client: Any, auth: dict[str, str]) -> None:
    a = (await client.get("/v1/properties?state=IA&sort=listPrice&limit=9", headers=auth)).json()
    b = (
        await client.get("/v1/properties/search?state=IA&sort=listPrice&limit=9", headers=auth)
    ).json()
    assert a == b


async def test_offset_past_the_end_is_an_empty_page(client: Any, auth: dict[str, str]) -> None:
    body = (await client.get("/v1/properties?offset=1000", headers=auth)).json()
    assert body["data"] == [] and body["meta"]["total"] == len(ROWS)


async def test_state_is_case_insensitive_and_upper_case_out(
    client: Any, auth: dict[str, str]
) -> None:
    body = (await client.get("/v1/properties?state=iA&limit=5", headers=auth)).json()
    assert body["data"] and all(item["address"]["state"] == "IA" for item in body["data"])


@pytest.mark.parametrize(
    ("query", "parameter"),
    [
        ("zipCode=5001", "zipCode"), ("zipCode=abcde", "zipCode"), ("state=Iowa", "state"),
        ("state=ZZ", "state"), ("status=sold", "status"), ("propertyType=castle", "propertyType"),
        ("minPrice=-1", "minPrice"), ("minPrice=abc", "minPrice"), ("minBaths=nan", "minBaths"),
        ("minBaths=inf", "minBaths"), ("limit=0", "limit"), ("limit=-5", "limit"),
        ("offset=-1", "offset"), ("sort=price", "sort"), ("order=up", "order"),
        ("minPrice=5&maxPrice=1", "minPrice"), ("minBeds=4&maxBeds=2", "minBeds"),
        ("minSqft=900&maxSqft=100", "minSqft"), ("colour=red", "colour"), ("limit=5&limit=6", "limit"),
        ("minPrice=99999999999999999999999", "minPrice"), ("city=", "city"), ("city=%20%20", "city"),
    ],
)  # fmt: skip
async def test_bad_parameters_are_400_naming_the_parameter(
    client: Any, auth: dict[str, str], query: str, parameter: str
) -> None:
    response = await client.get(f"/v1/properties?{query}", headers=auth)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "invalid_parameter"
    assert error["parameter"] == parameter
    assert error["status"] == 400 and error["requestId"] == response.headers["x-request-id"]


async def test_page_size_defaults_and_clamps_by_plan(client: Any, make_key: Any) -> None:
    for plan, default, maximum in [
        ("free", 10, 25),
        ("developer", 25, 100),
        ("pro", 50, 250),
        ("enterprise", 100, 1000),
    ]:
        headers = {"Authorization": f"Bearer {await make_key(plan)}"}
        body = (await client.get("/v1/properties", headers=headers)).json()
        assert body["meta"]["limit"] == default
        assert len(body["data"]) == min(default, len(ROWS))
        body = (await client.get(f"/v1/properties?limit={maximum + 1}", headers=headers)).json()
        assert body["meta"]["limit"] == maximum


async def test_pattern_errors_say_what_the_parameter_takes(
    client: Any, auth: dict[str, str]
) -> None:
    for query, hint in (
        ("state=Iowa", "two-letter US state code"),
        ("zipCode=123", "five-digit ZIP"),
    ):
        error = (await client.get(f"/v1/properties?{query}", headers=auth)).json()["error"]
        assert (
            hint in error["message"]
            and "^(" not in error["message"]
            and "regex" not in error["message"]
        )
