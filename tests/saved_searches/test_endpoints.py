"""Saved searches over HTTP, on both stores: the contract's rules one by one."""

from __future__ import annotations

import json
from typing import Any

import pytest

from propdata.accounts.keys import CustomLimits, keys_of
from propdata.accounts.repository import AccountRepository
from propdata.accounts.schemas import Account
from tests.conftest import Fresh, Store
from tests.factories import import_records, record
from tests.live import until


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


AMES = {"city": "Ames", "state": "IA"}


async def account_key(store: Store, account: str, plan: str) -> str:
    """A key held by the portal account `account` (made when new)."""
    async with keys_of(store.url) as keys:
        accounts = AccountRepository(keys.db)
        if await accounts.by_id(account) is None:
            await accounts.insert(Account(account, f"{account}@example.com", "x", "active", False,
                                          None, "2026-11-01T00:00:00Z"))  # fmt: skip
        _, secret = await keys.create(plan, None, CustomLimits(), account_id=account)
    return secret


async def test_a_search_is_created_listed_read_changed_and_deleted(fresh: Fresh) -> None:
    client, _, make = await fresh()
    headers = bearer(await make("developer"))
    made = await client.post("/v1/searches", headers=headers, json={
        "name": "Ames homes", "filters": {**AMES, "maxPrice": 10_000_000}})  # fmt: skip
    assert made.status_code == 201, made.text
    search = made.json()["data"]
    assert search["id"].startswith("srch_") and search["name"] == "Ames homes"
    assert search["filters"] == {**AMES, "maxPrice": 10_000_000} and search["propertyIds"] == []
    assert search["createdAt"].endswith("Z")
    everything = await client.get("/v1/properties?city=Ames&state=IA&maxPrice=10000000",
                                  headers=headers)  # fmt: skip
    assert search["matchCount"] == everything.json()["meta"]["total"] > 0

    listed = (await client.get("/v1/searches", headers=headers)).json()
    assert listed["meta"] == {"total": 1, "limit": 25, "offset": 0}
    assert [s["id"] for s in listed["data"]] == [search["id"]]
    one = (await client.get(f"/v1/searches/{search['id']}", headers=headers)).json()["data"]
    assert one == search

    changed = await client.patch(f"/v1/searches/{search['id']}", headers=headers,
                                 json={"name": "Renamed", "propertyIds": ["nope-1"]})  # fmt: skip
    assert changed.status_code == 200, changed.text
    assert changed.json()["data"]["name"] == "Renamed"
    assert changed.json()["data"]["filters"] == search["filters"]
    assert changed.json()["data"]["matchCount"] == 0  # no such record

    gone = await client.delete(f"/v1/searches/{search['id']}", headers=headers)
    assert gone.status_code == 204 and gone.content == b""
    assert (await client.get(f"/v1/searches/{search['id']}", headers=headers)).status_code == 404
    assert (await client.delete(f"/v1/searches/{search['id']}", headers=headers)).status_code == 404


async def test_match_count_of_watched_ids_counts_those_that_pass_the_filters(fresh: Fresh) -> None:
    client, _, make = await fresh()
    headers = bearer(await make())
    page = (await client.get("/v1/properties?limit=3", headers=headers)).json()["data"]
    ids = [item["id"] for item in page]
    body = {"name": "three", "propertyIds": [*ids, ids[0]]}
    made = (await client.post("/v1/searches", headers=headers, json=body)).json()["data"]
    assert made["propertyIds"] == ids and made["matchCount"] == 3
    status = page[0]["status"]
    body2: dict[str, Any] = {"name": "two", "propertyIds": ids, "filters": {"status": status}}
    made = (await client.post("/v1/searches", headers=headers, json=body2)).json()["data"]
    assert made["matchCount"] == sum(item["status"] == status for item in page)


async def test_match_counts_are_counted_once_a_data_version_and_say_which(fresh: Fresh) -> None:
    """Listing counts nothing again while the data stands still; once a load moves the data
    version the counts follow, each exact for the version it states."""
    client, _, make = await fresh()
    headers = bearer(await make())
    page = (await client.get("/v1/properties?city=Ames&state=IA&limit=5", headers=headers)).json()
    ids = [item["id"] for item in page["data"]]
    for body in ({"name": "ames", "filters": AMES},
                 {"name": "ids", "propertyIds": [*ids, "absent-1"], "filters": AMES}):  # fmt: skip
        assert (await client.post("/v1/searches", headers=headers, json=body)).status_code == 201
    counts = fresh.apps[-1].app.state.services.saved_searches.counts  # type: ignore[attr-defined]
    made = counts.counted
    listed = (await client.get("/v1/searches", headers=headers)).json()["data"]
    version = listed[0]["dataVersion"]
    assert {s["name"]: s["matchCount"] for s in listed} == {
        "ames": page["meta"]["total"], "ids": len(ids),
    }  # fmt: skip
    for _ in range(5):
        again = (await client.get("/v1/searches", headers=headers)).json()["data"]
        assert again == listed
    assert counts.counted == made  # nothing counted again
    db = await fresh.db()
    try:
        new = [record(f"new-{n}", address={"street_address": f"{n} Oak St"}) for n in range(2)]
        await import_records(db, new)
    finally:
        await db.close()

    async def counted_again() -> list[dict[str, Any]] | None:
        listed: list[dict[str, Any]] = (await client.get("/v1/searches", headers=headers)).json()[
            "data"
        ]
        for search in listed:  # exact for the version it says, whichever that is
            assert search["dataVersion"] >= version
            if search["dataVersion"] == version:
                assert search["matchCount"] in (page["meta"]["total"], len(ids))
        return listed if all(s["dataVersion"] > version for s in listed) else None

    listed = await until(counted_again, "every search counted for the new version")
    total = (await client.get("/v1/properties?city=Ames&state=IA", headers=headers)).json()
    assert {s["name"]: s["matchCount"] for s in listed} == {
        "ames": total["meta"]["total"], "ids": len(ids),
    }  # fmt: skip
    assert total["meta"]["total"] == page["meta"]["total"] + 2


BAD = [
    ({"filters": AMES}, "name"),
    ({"name": "", "filters": AMES}, "name"),
    ({"name": "x" * 101, "filters": AMES}, "name"),
    ({"name": 5, "filters": AMES}, "name"),
    ({"name": "x"}, "filters"),
    ({"name": "x", "filters": {}, "propertyIds": []}, "filters"),
    ({"name": "x", "filters": "city=Ames"}, "filters"),
    ({"name": "x", "filters": AMES, "colour": "red"}, "colour"),
    ({"name": "x", "filters": {"colour": "red"}}, "filters.colour"),
    ({"name": "x", "filters": {"limit": 5}}, "filters.limit"),
    ({"name": "x", "filters": {"sort": "listPrice"}}, "filters.sort"),
    ({"name": "x", "filters": {"fields": "id"}}, "filters.fields"),
    ({"name": "x", "filters": {"offset": 1}}, "filters.offset"),
    ({"name": "x", "filters": {"minPrice": "100"}}, "filters.minPrice"),
    ({"name": "x", "filters": {"minPrice": 100.5}}, "filters.minPrice"),
    ({"name": "x", "filters": {"minPrice": -1}}, "filters.minPrice"),
    ({"name": "x", "filters": {"minPrice": True}}, "filters.minPrice"),
    ({"name": "x", "filters": {"minPrice": 9, "maxPrice": 1}}, "filters.minPrice"),
    ({"name": "x", "filters": {"status": "sold"}}, "filters.status"),
    ({"name": "x", "filters": {"zipCode": 50010}}, "filters.zipCode"),
    ({"name": "x", "filters": {"zipCode": "5001"}}, "filters.zipCode"),
    ({"name": "x", "filters": {"state": "XX"}}, "filters.state"),
    ({"name": "x", "filters": {"latitude": 42.0, "longitude": -93.6}}, "filters.radius"),
    ({"name": "x", "filters": {"latitude": 42, "longitude": -93, "radius": 0}}, "filters.radius"),
    ({"name": "x", "filters": {"bbox": [1, 2, 3, 4]}}, "filters.bbox"),
    ({"name": "x", "filters": {"bbox": "3,2,1,4"}}, "filters.bbox"),
    ({"name": "x", "filters": {"minBaths": None}}, "filters.minBaths"),
    ({"name": "x", "propertyIds": "p-1"}, "propertyIds"),
    ({"name": "a\x00b", "filters": AMES}, "name"),
    ({"name": "x", "filters": {"city": "Am\x00es"}}, "filters.city"),
    ({"name": "x", "propertyIds": [1]}, "propertyIds"),
    ({"name": "x", "propertyIds": ["has space"]}, "propertyIds"),
    ({"name": "x", "propertyIds": [f"p-{i}" for i in range(1001)]}, "propertyIds"),
]


@pytest.mark.parametrize(("body", "parameter"), BAD, ids=[p for _, p in BAD])
async def test_a_bad_field_is_a_400_naming_it_and_saves_nothing(
    fresh_client: tuple[Any, dict[str, str]], body: dict[str, Any], parameter: str
) -> None:
    client, headers = fresh_client
    answer = await client.post("/v1/searches", headers=headers, json=body)
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert error["code"] == "invalid_parameter" and error["parameter"] == parameter, error
    assert (await client.get("/v1/searches", headers=headers)).json()["meta"]["total"] == 0


@pytest.fixture
async def fresh_client(fresh: Fresh) -> tuple[Any, dict[str, str]]:
    client, _, make = await fresh()
    return client, bearer(await make())


async def test_bodies_must_be_json_objects_of_at_most_64_kb(
    fresh_client: tuple[Any, dict[str, str]],
) -> None:
    client, headers = fresh_client
    plain = await client.post("/v1/searches", headers={**headers, "Content-Type": "text/plain"},
                              content=json.dumps({"name": "x", "filters": AMES}))  # fmt: skip
    assert plain.status_code == 400 and plain.json()["error"]["parameter"] == "Content-Type"
    for content in (b"{", b"[1]", b""):
        bad = await client.post("/v1/searches", content=content,
                                headers={**headers, "Content-Type": "application/json"})  # fmt: skip
        assert bad.status_code == 400 and bad.json()["error"]["parameter"] == "body", content
    surrogate = b'{"name": "x", "filters": {"city": "\\ud800"}}'  # no text: no JSON either
    bad = await client.post("/v1/searches", content=surrogate,
                            headers={**headers, "Content-Type": "application/json"})  # fmt: skip
    assert bad.status_code == 400 and bad.json()["error"]["parameter"] == "body"
    big = {"name": "x", "filters": AMES, "pad": "x" * 70_000}
    huge = await client.post("/v1/searches", headers=headers, json=big)
    assert huge.status_code == 413 and huge.json()["error"]["code"] == "payload_too_large"


async def test_patch_checks_each_field_and_needs_one(
    fresh_client: tuple[Any, dict[str, str]],
) -> None:
    client, headers = fresh_client
    body = {"name": "x", "filters": AMES}
    made = (await client.post("/v1/searches", headers=headers, json=body)).json()["data"]
    path = f"/v1/searches/{made['id']}"
    for bad, parameter in (({}, "body"), ({"filters": {"maxBeds": "3"}}, "filters.maxBeds"),
                           ({"filters": {}}, "filters"), ({"id": "srch_x"}, "id")):  # fmt: skip
        answer = await client.patch(path, headers=headers, json=bad)
        assert answer.status_code == 400 and answer.json()["error"]["parameter"] == parameter
    assert (await client.get(path, headers=headers)).json()["data"] == made


async def test_another_owners_search_is_a_404(fresh: Fresh) -> None:
    client, _, make = await fresh()
    mine, theirs = bearer(await make()), bearer(await make())
    made = (await client.post("/v1/searches", headers=mine,
                              json={"name": "x", "filters": AMES})).json()["data"]  # fmt: skip
    path = f"/v1/searches/{made['id']}"
    assert (await client.get(path, headers=theirs)).status_code == 404
    assert (await client.patch(path, headers=theirs, json={"name": "y"})).status_code == 404
    assert (await client.delete(path, headers=theirs)).status_code == 404
    assert (await client.get("/v1/searches", headers=theirs)).json()["meta"]["total"] == 0
    assert (await client.get(path, headers=mine)).json()["data"]["name"] == "x"


async def test_every_active_key_of_an_account_shares_its_searches(fresh: Fresh) -> None:
    client, _, _ = await fresh()
    one = bearer(await account_key(fresh.store, "acct-a", "free"))
    two = bearer(await account_key(fresh.store, "acct-a", "free"))
    made = (await client.post("/v1/searches", headers=one,
                              json={"name": "x", "filters": AMES})).json()["data"]  # fmt: skip
    assert (await client.get(f"/v1/searches/{made['id']}", headers=two)).status_code == 200


async def test_past_the_plan_limit_is_a_403_naming_the_plan_that_raises_it(fresh: Fresh) -> None:
    client, _, make = await fresh()
    headers = bearer(await make("free"))
    for n in range(3):
        made = await client.post("/v1/searches", headers=headers,
                                 json={"name": f"s{n}", "filters": AMES})  # fmt: skip
        assert made.status_code == 201
    refused = await client.post("/v1/searches", headers=headers,
                                json={"name": "s3", "filters": AMES})  # fmt: skip
    assert refused.status_code == 403
    error = refused.json()["error"]
    assert error["code"] == "plan_limit_reached"
    assert "3 saved searches" in error["message"] and "Developer" in error["message"]
    assert (await client.get("/v1/searches", headers=headers)).json()["meta"]["total"] == 3


async def test_an_operator_s_own_limits_on_an_enterprise_key_hold_and_say_who_raises_them(
    fresh: Fresh,
) -> None:
    client, _, _ = await fresh()
    async with keys_of(fresh.store.url) as keys:
        _, secret = await keys.create(
            "enterprise", None, CustomLimits(saved_searches=1, webhook_endpoints=1)
        )
    headers = bearer(secret)
    made = await client.post("/v1/searches", headers=headers, json={"name": "a", "filters": AMES})
    assert made.status_code == 201
    refused = await client.post("/v1/searches", headers=headers,
                                json={"name": "b", "filters": AMES})  # fmt: skip
    assert refused.status_code == 403
    assert refused.json()["error"]["message"] == (
        "The Enterprise plan holds at most 1 saved search; an operator may raise an Enterprise"
        " account's limit."
    )
    hook = {"url": "https://93.184.215.14/hook"}  # a public address: no name to resolve
    assert (await client.post("/v1/webhooks", headers=headers, json=hook)).status_code == 201
    refused = await client.post("/v1/webhooks", headers=headers, json=hook)
    assert refused.status_code == 403 and "at most 1 webhook endpoint;" in refused.text


async def test_an_account_has_the_limits_of_its_highest_active_plan(fresh: Fresh) -> None:
    client, _, _ = await fresh()
    free = bearer(await account_key(fresh.store, "acct-b", "free"))
    await account_key(fresh.store, "acct-b", "developer")
    for n in range(4):  # past Free's 3: the account's Developer key raises it
        made = await client.post("/v1/searches", headers=free,
                                 json={"name": f"s{n}", "filters": AMES})  # fmt: skip
        assert made.status_code == 201, made.text


async def test_managing_searches_is_not_counted_but_limited_to_60_a_minute(fresh: Fresh) -> None:
    client, clock, make = await fresh()
    headers = bearer(await make("free"))  # 10 a minute, 100 a day
    for _ in range(60):
        assert (await client.get("/v1/searches", headers=headers)).status_code == 200
    refused = await client.get("/v1/searches", headers=headers)
    assert refused.status_code == 429
    assert refused.json()["error"]["code"] == "rate_limit_exceeded"
    assert int(refused.headers["Retry-After"]) >= 1
    status = (await client.get("/v1/auth/status", headers=headers)).json()["data"]
    assert status["usage"]["minute"]["used"] == 0 and status["usage"]["day"]["used"] == 0
    clock.advance(61)
    assert (await client.get("/v1/searches", headers=headers)).status_code == 200


async def test_the_60_management_requests_a_minute_are_the_account_s_webhooks_included(
    fresh: Fresh,
) -> None:
    """Every key of an account spends the account's 60 (a second key gives no more room), and
    managing webhooks counts as managing searches does; a key without an account has its own."""
    client, clock, make = await fresh()
    first = bearer(await account_key(fresh.store, "acct_shared", "developer"))
    second = bearer(await account_key(fresh.store, "acct_shared", "pro"))
    alone = bearer(await make("developer"))
    for n in range(60):
        path = "/v1/searches" if n % 2 else "/v1/webhooks"
        answer = await client.get(path, headers=first if n < 30 else second)
        assert answer.status_code == 200, (n, answer.text)
    for headers, path in ((first, "/v1/webhooks"), (second, "/v1/searches")):
        refused = await client.get(path, headers=headers)
        assert refused.status_code == 429, refused.text
        assert refused.json()["error"]["code"] == "rate_limit_exceeded"
        assert "60 requests a minute" in refused.json()["error"]["message"]
        assert int(refused.headers["Retry-After"]) >= 1
    assert (await client.get("/v1/webhooks", headers=alone)).status_code == 200
    clock.advance(61)
    assert (await client.get("/v1/webhooks", headers=second)).status_code == 200


async def test_other_methods_are_a_405_naming_those_a_path_takes(
    fresh_client: tuple[Any, dict[str, str]],
) -> None:
    client, headers = fresh_client
    answer = await client.put("/v1/searches", headers=headers, json={})
    assert answer.status_code == 405
    assert answer.headers["Allow"] == "GET, HEAD, POST"
    post = await client.post("/v1/properties", headers=headers, json={})
    assert post.status_code == 405 and post.headers["Allow"] == "GET, HEAD"


async def test_saved_searches_are_never_served_from_the_response_cache(fresh: Fresh) -> None:
    client, _, make = await fresh(cache_ttl=60)
    headers = bearer(await make())
    for n in range(2):
        listed = await client.get("/v1/searches", headers=headers)
        assert listed.headers["X-Cache"] == "MISS" and listed.json()["meta"]["total"] == n
        await client.post("/v1/searches", headers=headers, json={"name": f"s{n}", "filters": AMES})
