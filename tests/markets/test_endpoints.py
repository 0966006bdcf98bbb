"""GET /v1/markets/{zipCode}, /history and /search over the statistics the builder stored."""

from __future__ import annotations

from typing import Any

import pytest

SNAPSHOT_FIELDS = {
    "date", "medianListPrice", "medianSoldPrice", "activeListings", "newListings30d",
    "soldLast30d", "medianDaysOnMarket", "averagePricePerSqft", "inventoryMonths",
    "listToSoldRatio",
}  # fmt: skip
HISTORY_FIELDS = {
    "month", "medianListPrice", "medianSoldPrice", "activeListings", "soldCount",
    "medianDaysOnMarket", "averagePricePerSqft",
}  # fmt: skip


async def test_snapshot_shape(client: Any, auth: dict[str, str]) -> None:
    response = await client.get("/v1/markets/50010", headers=auth)
    assert response.status_code == 200, response.text
    data = response.json()["data"]
    assert set(data) == {"zipCode", "city", "state", "snapshot"}
    assert (data["zipCode"], data["city"], data["state"]) == ("50010", "Ames", "IA")
    snapshot = data["snapshot"]
    assert set(snapshot) == SNAPSHOT_FIELDS
    assert snapshot["date"] == "2026-11-21"
    # the catalogue's Ames ZIP holds forSale listings (every fourth record)
    assert snapshot["activeListings"] > 0 and isinstance(snapshot["medianListPrice"], int)


async def test_history_is_newest_first_and_capped(client: Any, auth: dict[str, str]) -> None:
    body = (await client.get("/v1/markets/50010/history", headers=auth)).json()
    data = body["data"]
    assert set(data) == {"zipCode", "city", "state", "history"}
    months = [entry["month"] for entry in data["history"]]
    assert len(months) == 12  # default
    assert months == sorted(months, reverse=True) and months[0] == "2026-11"
    assert all(set(entry) == HISTORY_FIELDS for entry in data["history"])
    three = (await client.get("/v1/markets/50010/history?months=3", headers=auth)).json()
    assert [e["month"] for e in three["data"]["history"]] == months[:3]
    sixty = (await client.get("/v1/markets/50010/history?months=60", headers=auth)).json()
    assert len(sixty["data"]["history"]) <= 60


async def test_zip_without_data_is_404(client: Any, auth: dict[str, str]) -> None:
    for path in ("/v1/markets/99999", "/v1/markets/99999/history"):
        response = await client.get(path, headers=auth)
        assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"


async def test_market_id_is_the_zip_code(client: Any, auth: dict[str, str]) -> None:
    a = (await client.get("/v1/markets/10001", headers=auth)).json()
    b = (await client.get("/v1/markets/search?zipCode=10001", headers=auth)).json()
    assert b["data"] == [a["data"]]


@pytest.mark.parametrize(
    ("query", "zips"),
    [
        ("", ["10001", "10002", "50010", "50112"]),
        ("state=ia", ["50010", "50112"]),
        ("city=new%20york", ["10001", "10002"]),
        ("zipCode=5", ["50010", "50112"]),
        ("zipCode=500", ["50010"]),
        ("zipCode=10002", ["10002"]),
        ("city=Grinnell&state=IA", ["50112"]),
        ("city=Grinnell&state=NY", []),
    ],
)
async def test_search_filters(
    client: Any, auth: dict[str, str], query: str, zips: list[str]
) -> None:
    body = (await client.get(f"/v1/markets/search?{query}", headers=auth)).json()
    assert [m["zipCode"] for m in body["data"]] == zips
    assert body["meta"]["total"] == len(zips)
    for market in body["data"]:
        assert set(market) == {"zipCode", "city", "state", "snapshot"}
        assert set(market["snapshot"]) == SNAPSHOT_FIELDS


async def test_search_pages_by_plan(client: Any, make_key: Any) -> None:
    headers = {"Authorization": f"Bearer {await make_key('free')}"}
    body = (await client.get("/v1/markets/search", headers=headers)).json()
    assert body["meta"] == {"total": 4, "limit": 10, "offset": 0}
    body = (await client.get("/v1/markets/search?limit=2&offset=2", headers=headers)).json()
    assert [m["zipCode"] for m in body["data"]] == ["50010", "50112"]
    assert (await client.get("/v1/markets/search?limit=500", headers=headers)).json()["meta"][
        "limit"
    ] == 25
    assert (await client.get("/v1/markets/search?offset=9", headers=headers)).json()["data"] == []


HISTORY, SEARCH = "/v1/markets/50010/history?", "/v1/markets/search?"


@pytest.mark.parametrize(
    ("path", "parameter"),
    [
        (HISTORY + "months=0", "months"),
        (HISTORY + "months=61", "months"),
        (HISTORY + "months=x", "months"),
        (HISTORY + "weeks=2", "weeks"),
        ("/v1/markets/5001", "zipCode"),  # ZIP codes are five digits
        ("/v1/markets/500100", "zipCode"),
        ("/v1/markets/abcde", "zipCode"),
        ("/v1/markets/5001/history", "zipCode"),
        (SEARCH + "zipCode=123456", "zipCode"),
        (SEARCH + "zipCode=1a", "zipCode"),
        (SEARCH + "state=XX", "state"),
        (SEARCH + "limit=0", "limit"),
        (SEARCH + "offset=-1", "offset"),
        (SEARCH + "status=forSale", "status"),
    ],
)
async def test_bad_parameters_are_a_400_naming_the_parameter(
    client: Any, auth: dict[str, str], path: str, parameter: str
) -> None:
    response = await client.get(path, headers=auth)
    assert response.status_code == 400
    assert response.json()["error"]["parameter"] == parameter
