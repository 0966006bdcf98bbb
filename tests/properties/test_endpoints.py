"""GET /v1/properties/{id}, /lookup, /{id}/history."""

from __future__ import annotations

from typing import Any

import pytest

from propdata.properties import lifecycle
from tests.factories import AS_OF, catalogue

DETAIL_FIELDS = {
    "id", "status", "listPrice", "address", "bedroomsTotal", "bathroomsTotal", "livingArea",
    "lotSize", "yearBuilt", "propertyType", "daysOnMarket", "priceHistory", "taxHistory",
    "scores", "coordinates", "lastUpdated", "listingType", "originalListPrice",
    "previousListPrice", "lastPriceChangeDate", "removedDate", "rentEstimate", "valueEstimate",
    "grossYield", "pricePerSquareFoot", "stories", "parcelId", "garageSpaces",
    "basementFinishedArea", "fireplaces", "overallQuality", "overallCondition",
}  # fmt: skip


ASSESSOR_FIELDS = {
    "parcelId", "garageSpaces", "basementFinishedArea", "fireplaces", "overallQuality",
    "overallCondition",
}  # fmt: skip
"""Null on a record whose source has none of them."""

LOOKUP_FIELDS = {
    "id", "status", "listPrice", "address", "bedroomsTotal", "bathroomsTotal", "livingArea",
    "lastUpdated",
}  # fmt: skip


async def test_detail_has_exactly_the_contract_fields(client: Any, auth: dict[str, str]) -> None:
    response = await client.get("/v1/properties/t-000", headers=auth)
    assert response.status_code == 200
    data = response.json()["data"]
    assert set(data) == DETAIL_FIELDS
    assert set(data["address"]) == {
        "streetAddress",
        "city",
        "state",
        "zipCode",
        "county",
        "fipsCode",
    }
    assert data["address"] == {
        "streetAddress": "100 Oak Street", "city": "Ames", "state": "IA", "zipCode": "50010",
        "county": "Story", "fipsCode": "19169",
    }  # fmt: skip
    assert data["scores"] == {"walkability": 55, "transit": 30, "bike": 60}
    assert data["coordinates"] == {"latitude": 42.03, "longitude": -93.62}
    assert data["rentEstimate"] == {
        "value": 1700,
        "low": 1500,
        "high": 1900,
        "asOfDate": "2026-11-21",
    }
    assert data["grossYield"] == round(12 * 1700 / 245_000, 4)
    assert data["pricePerSquareFoot"] == round(data["listPrice"] / data["livingArea"])
    assert data["priceHistory"][0] == {
        "date": "2026-01-01",
        "event": "listedForSale",
        "price": 100000,
        "source": "mls",
    }
    assert data["taxHistory"] == [{"year": 2025, "taxPaid": 3100, "assessedValue": 210000}]
    assert (data["parcelId"], data["garageSpaces"], data["basementFinishedArea"]) == (
        "0907202030",
        2.0,
        600,
    )
    assert (data["fireplaces"], data["overallQuality"], data["overallCondition"]) == (1, 6, 5)
    other = (await client.get("/v1/properties/t-001", headers=auth)).json()["data"]
    assert all(other[name] is None for name in ASSESSOR_FIELDS)
    assert data["originalListPrice"] == 100_000
    assert data["lastUpdated"].endswith("Z")


async def test_detail_derives_listing_fields_from_history(
    client: Any, auth: dict[str, str]
) -> None:
    data = (await client.get("/v1/properties/t-001", headers=auth)).json()["data"]
    assert data["status"] == "recentlySold"
    assert data["listPrice"] == 110_000  # last asking price of the listing that sold
    assert data["originalListPrice"] == 110_000
    assert data["daysOnMarket"] == 75  # 2026-08-01 -> 2026-10-15
    assert data["pricePerSquareFoot"] == round(105_000 / data["livingArea"])
    off = (await client.get("/v1/properties/t-003", headers=auth)).json()["data"]
    assert off["status"] == "offMarket" and off["listPrice"] is None
    assert off["removedDate"] == "2025-03-01" and off["listingType"] is None


async def test_unknown_property_is_404(client: Any, auth: dict[str, str]) -> None:
    for path in (
        "/v1/properties/nope",
        "/v1/properties/nope/history",
        "/v1/properties/nope/valuation",
    ):
        response = await client.get(path, headers=auth)
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "not_found"


async def test_history(client: Any, auth: dict[str, str]) -> None:
    data = (await client.get("/v1/properties/t-001/history", headers=auth)).json()["data"]
    assert set(data) == {"id", "priceHistory", "taxHistory"}
    assert [e["event"] for e in data["priceHistory"]] == ["sold", "pendingSale", "listedForSale"]
    dates = [e["date"] for e in data["priceHistory"]]
    assert dates == sorted(dates, reverse=True)


async def test_lookup_matches_after_usps_normalisation(client: Any, auth: dict[str, str]) -> None:
    for street in ("100 Oak Street", "100 OAK ST", "100 oak st.", " 100  Oak   Str "):
        response = await client.get(
            "/v1/properties/lookup",
            params={"streetAddress": street, "city": "ames", "state": "ia"},
            headers=auth,
        )
        if street.strip().endswith("Str"):
            assert response.status_code == 200  # STR is a USPS abbreviation of STREET
        assert response.status_code == 200, (street, response.text)
        data = response.json()["data"]
        assert data["id"] == "t-000" and set(data) == LOOKUP_FIELDS


async def test_lookup_with_zip_code(client: Any, auth: dict[str, str]) -> None:
    params = {"streetAddress": "101 Oak St", "city": "Grinnell", "state": "IA", "zipCode": "50112"}
    assert (await client.get("/v1/properties/lookup", params=params, headers=auth)).json()["data"][
        "id"
    ] == "t-001"
    params["zipCode"] = "50010"
    response = await client.get("/v1/properties/lookup", params=params, headers=auth)
    assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"


async def test_lookup_by_parcel_number(client: Any, auth: dict[str, str]) -> None:
    for parcel in ("0907202030", " 0907202030 "):
        response = await client.get(
            "/v1/properties/lookup", params={"parcelId": parcel}, headers=auth
        )
        assert response.status_code == 200, response.text
        data = response.json()["data"]
        assert data["id"] == "t-000" and set(data) == LOOKUP_FIELDS
    response = await client.get("/v1/properties/lookup?parcelId=0907202031", headers=auth)
    assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"
    response = await client.get("/v1/properties/lookup?parcelId=1-0042-0007", headers=auth)
    assert response.status_code == 409
    error = response.json()["error"]
    assert error["code"] == "ambiguous_address" and "10001, 10002" in error["message"]
    assert [c["id"] for c in error["candidates"]] == ["t-040", "t-041"]


async def test_lookup_without_match_is_404(client: Any, auth: dict[str, str]) -> None:
    params = {"streetAddress": "1 Nowhere Rd", "city": "Ames", "state": "IA"}
    response = await client.get("/v1/properties/lookup", params=params, headers=auth)
    assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"


@pytest.mark.parametrize(
    ("params", "parameter"),
    [
        ({"city": "Ames", "state": "IA"}, "streetAddress"),
        ({"streetAddress": "1 Main St", "state": "IA"}, "city"),
        ({"streetAddress": "1 Main St", "city": "Ames"}, "state"),
        (
            {"streetAddress": "1 Main St", "city": "Ames", "state": "IA", "zipCode": "123"},
            "zipCode",
        ),
        ({"streetAddress": " ", "city": "Ames", "state": "IA"}, "streetAddress"),
        ({"parcelId": "0907202030", "city": "Ames"}, "parcelId"),
        ({"parcelId": "0907202030", "address": "1 Main St, Ames, IA 50010"}, "parcelId"),
        ({"parcelId": " "}, "parcelId"),
        ({"parcelId": ""}, "parcelId"),
        ({"parcelId": "x" * 65}, "parcelId"),
        ({"parcelId": ["1", "2"]}, "parcelId"),
    ],
)
async def test_lookup_bad_parameters(
    client: Any, auth: dict[str, str], params: dict[str, str], parameter: str
) -> None:
    response = await client.get("/v1/properties/lookup", params=params, headers=auth)
    assert response.status_code == 400
    assert response.json()["error"]["parameter"] == parameter


async def test_lifecycle_agrees_with_the_catalogue() -> None:
    for rec in catalogue():
        lifecycle.check_history(rec.price_history, rec.status, AS_OF)
