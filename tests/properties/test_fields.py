"""`fields=`: only the named fields (dotted for nested) plus id, on every property endpoint."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

import msgspec
import pytest

from propdata.api.fields import names
from propdata.properties.schemas import PropertyDetail
from propdata.search.schemas import PropertySearchItem


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


async def get(client: Any, headers: dict[str, str], path: str) -> Any:
    answer = await client.get(path, headers=headers)
    assert answer.status_code == 200, answer.text
    return answer


async def test_a_record_keeps_only_the_named_fields(fresh: Any) -> None:
    client, _, make_key = await fresh(cache_ttl=0)
    headers = bearer(await make_key())
    full = (await get(client, headers, "/v1/properties/t-000")).json()["data"]
    small = await get(client, headers, "/v1/properties/t-000?fields=listPrice,address.zipCode")
    assert small.json()["data"] == {
        "id": "t-000",
        "listPrice": full["listPrice"],
        "address": {"zipCode": full["address"]["zipCode"]},
    }
    # order of the names does not matter: the record's own order, the same bytes and tag
    swapped = await get(client, headers, "/v1/properties/t-000?fields=address.zipCode,listPrice")
    assert swapped.content == small.content and swapped.headers["etag"] == small.headers["etag"]
    # a whole object, a list of objects, a field of every element, a null object
    some = await get(
        client, headers,
        "/v1/properties/t-000?fields=address,priceHistory.price,taxHistory,valueEstimate.value",
    )  # fmt: skip
    data = some.json()["data"]
    assert list(data) == ["id", "address", "priceHistory", "taxHistory", "valueEstimate"]
    assert data["address"] == full["address"] and data["taxHistory"] == full["taxHistory"]
    assert data["priceHistory"] == [{"price": e["price"]} for e in full["priceHistory"]]
    assert data["valueEstimate"] == (
        None if full["valueEstimate"] is None else {"value": full["valueEstimate"]["value"]}
    )
    # `address` and `address.city` together: the whole address
    both = await get(client, headers, "/v1/properties/t-000?fields=address.city,address")
    assert both.json()["data"]["address"] == full["address"]
    just_id = await get(client, headers, "/v1/properties/t-000?fields=id")
    assert just_id.json() == {"data": {"id": "t-000"}}


async def test_the_bytes_shrink(fresh: Any) -> None:
    client, _, make_key = await fresh(cache_ttl=0)
    headers = bearer(await make_key())
    full = await get(client, headers, "/v1/properties/t-000")
    small = await get(client, headers, "/v1/properties/t-000?fields=id,listPrice")
    assert len(small.content) * 3 <= len(full.content)
    assert int(small.headers["content-length"]) == len(small.content)


async def test_search_history_valuation_and_lookup_take_fields(fresh: Any) -> None:
    client, _, make_key = await fresh(cache_ttl=0)
    headers = bearer(await make_key())
    page = await get(client, headers, "/v1/properties?zipCode=50010&limit=3&fields=listPrice")
    body = page.json()
    assert body["meta"]["total"] >= 1 and set(body["meta"]) >= {"total", "limit", "offset"}
    assert all(set(item) == {"id", "listPrice"} for item in body["data"])
    alias = await get(
        client, headers, "/v1/properties/search?zipCode=50010&limit=3&fields=listPrice"
    )
    assert alias.json() == body
    history = await get(client, headers, "/v1/properties/t-000/history?fields=taxHistory.year")
    data = history.json()["data"]
    assert set(data) == {"id", "taxHistory"} and all(set(t) == {"year"} for t in data["taxHistory"])
    valuation = await get(client, headers, "/v1/properties/t-000/valuation?fields=grossYield")
    assert set(valuation.json()["data"]) == {"id", "grossYield"}
    address = (await get(client, headers, "/v1/properties/t-000")).json()["data"]["address"]
    query = urlencode({"streetAddress": address["streetAddress"], "city": address["city"],
                       "state": address["state"], "zipCode": address["zipCode"]})  # fmt: skip
    lookup = await get(client, headers, f"/v1/properties/lookup?{query}&fields=status")
    assert lookup.json()["data"] == {"id": "t-000", "status": "forSale"}


@pytest.mark.parametrize(
    "query",
    [
        "fields=",
        "fields=,",
        "fields=nope",
        "fields=listPrice,nope",
        "fields=address.nope",
        "fields=listPrice.value",  # a scalar has no fields
        "fields=address.",
        "fields=.id",
        "fields=list_price",  # wire names only
        "fields=" + ",".join(["id"] * 101),
        "fields=" + "a" * 2001,
        "fields=id,%20listPrice",  # no spaces: the names as written
        "fields=id&fields=listPrice",
    ],
)
async def test_bad_fields_are_400s_naming_fields(fresh: Any, query: str) -> None:
    client, _, make_key = await fresh(cache_ttl=0)
    headers = bearer(await make_key())
    for path in ("/v1/properties/t-000", "/v1/properties", "/v1/properties/t-000/history"):
        answer = await client.get(f"{path}?{query}", headers=headers)
        assert answer.status_code == 400, (path, query, answer.text)
        error = answer.json()["error"]
        assert error["code"] == "invalid_parameter" and error["parameter"] == "fields"


async def test_the_cache_keys_on_fields(fresh: Any) -> None:
    client, _, make_key = await fresh(cache_ttl=60)
    headers = bearer(await make_key())
    small = await get(client, headers, "/v1/properties/t-000?fields=listPrice")
    full = await get(client, headers, "/v1/properties/t-000")
    assert full.headers["x-cache"] == "MISS" and len(full.content) > len(small.content)
    again = await get(client, headers, "/v1/properties/t-000?fields=listPrice")
    assert again.headers["x-cache"] == "HIT" and again.content == small.content


def test_every_nested_name_is_offered() -> None:
    offered = names(PropertyDetail)
    assert "address.zipCode" in offered and "priceHistory.event" in offered
    assert "coordinates.latitude" in offered and "listPrice" in offered
    assert "list_price" not in offered
    assert names(PropertySearchItem)[0] == "id"
    # every wire name of a full record is selectable, and selecting all gives the record
    wire = msgspec.structs.fields(PropertyDetail)
    assert {f.encode_name for f in wire} <= set(offered)
