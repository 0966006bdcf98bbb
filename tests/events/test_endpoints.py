"""The event log over HTTP, on both stores: the contract's rules one by one."""

from __future__ import annotations

from typing import Any

import pytest

from propdata.events import cursor
from tests.conftest import Fresh
from tests.factories import import_records, record
from tests.live import until


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


AMES = {"city": "Ames", "state": "IA"}


@pytest.fixture
async def fresh_client(fresh: Fresh) -> tuple[Any, dict[str, str]]:
    return await fresh.keyed()


async def _three_new_in_ames(fresh: Fresh) -> None:
    """Three records new to the store (Ames addresses), loaded by an import."""
    db = await fresh.db()
    try:
        await import_records(
            db, [record(f"new-{n}", address={"street_address": f"{n} Elm St"}) for n in range(3)]
        )
    finally:
        await db.close()


async def test_the_event_log_counts_as_one_lookup_and_is_never_cached(fresh: Fresh) -> None:
    client, headers = await fresh.keyed("developer", cache_ttl=60)
    for n in range(2):
        answer = await client.get("/v1/events", headers=headers)
        assert answer.status_code == 200 and answer.headers["X-Cache"] == "MISS"
        assert answer.json()["data"] == [] and answer.json()["meta"]["nextCursor"]
        status = (await client.get("/v1/auth/status", headers=headers)).json()["data"]
        assert status["usage"]["minute"]["used"] == n + 1


async def test_the_event_log_refuses_unknown_types_and_cursors(
    fresh_client: tuple[Any, dict[str, str]],
) -> None:
    client, headers = fresh_client
    for query, parameter in (("types=search.entered,property.sold", "types"),
                             ("since=bm90LWEtY3Vyc29y", "since"), ("limit=0", "limit")):  # fmt: skip
        answer = await client.get(f"/v1/events?{query}", headers=headers)
        assert answer.status_code == 400 and answer.json()["error"]["parameter"] == parameter


async def test_a_load_becomes_events_the_log_pages_by_cursor(fresh: Fresh) -> None:
    """A server worker produces by itself: a saved search, a load, then the log's pages."""
    client, _, make = await fresh()
    headers = bearer(await make())
    other = bearer(await make())
    body = {"name": "new in Ames", "filters": {"city": "Ames", "state": "IA"}}
    search = (await client.post("/v1/searches", headers=headers, json=body)).json()["data"]
    await client.post(
        "/v1/searches", headers=other, json={"name": "NY", "filters": {"state": "NY"}}
    )
    await _three_new_in_ames(fresh)

    async def six() -> list[dict[str, Any]] | None:
        seen: list[dict[str, Any]] = (
            await client.get("/v1/events?limit=100", headers=headers)
        ).json()["data"]
        return seen if len(seen) >= 6 else None  # entered and listed, three times

    seen = await until(six, "six events")
    assert all(e["data"]["searchId"] == search["id"] for e in seen)
    assert (await client.get("/v1/events", headers=other)).json()["data"] == []

    pages: list[dict[str, Any]] = []
    since = ""
    while True:
        page = (await client.get(f"/v1/events?limit=4{since}", headers=headers)).json()
        assert page["meta"]["limit"] == 4 and page["meta"]["nextCursor"]
        since = f"&since={page['meta']['nextCursor']}"
        pages += page["data"]
        if not page["data"]:
            break
    assert pages == seen
    assert [e["sequence"] for e in pages] == sorted(e["sequence"] for e in pages)
    listed = (await client.get("/v1/events?types=property.listed", headers=headers)).json()
    assert {e["type"] for e in listed["data"]} == {"property.listed"} and len(listed["data"]) == 3
    none = (await client.get("/v1/events?searchId=srch_other", headers=headers)).json()
    assert none["data"] == [] and none["meta"]["nextCursor"]


async def test_each_owner_s_events_are_numbered_1_2_3_whatever_others_have(fresh: Fresh) -> None:
    """`sequence` and the cursors count the owner's own events alone: no gap where another
    owner's events came between, nothing of their volume."""
    client, _, make = await fresh()
    owners = [bearer(await make()), bearer(await make())]
    for n, headers in enumerate(owners):
        body = {"name": f"Ames {n}", "filters": AMES}
        assert (await client.post("/v1/searches", headers=headers, json=body)).status_code == 201
    await _three_new_in_ames(fresh)
    for headers in owners:

        async def six_of(headers: dict[str, str] = headers) -> dict[str, Any] | None:
            page: dict[str, Any] = (
                await client.get("/v1/events?limit=100", headers=headers)
            ).json()
            return page if len(page["data"]) >= 6 else None  # entered and listed, three times

        page = await until(six_of, "the owner's six events")
        held = len(page["data"])
        assert [e["sequence"] for e in page["data"]] == list(range(1, held + 1))
        assert page["meta"]["nextCursor"] == cursor.encode(held)
        later = await client.get(f"/v1/events?since={cursor.encode(4)}", headers=headers)
        assert [e["sequence"] for e in later.json()["data"]][:2] == [5, 6]
