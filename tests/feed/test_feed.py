"""The change feed on both stores: every change once, in store order, enough to sync a copy."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from propdata.feed.service import FeedService
from propdata.ingest import pipeline
from propdata.ingest.loader import load
from propdata.properties.schemas import PropertyDetail
from tests.factories import AS_OF, catalogue, record


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


async def reader(fresh: Any) -> tuple[Any, dict[str, str]]:
    """A client of a fresh app that caches no key, and the headers of a developer key."""
    client, _, make_key = await fresh(cache_ttl=0)
    return client, bearer(await make_key())


async def follow(client: Any, headers: dict[str, str], since: str | None = None,
                 limit: int = 7) -> tuple[list[dict[str, Any]], str]:  # fmt: skip
    """Every change after `since`, page by page; the cursor to continue from."""
    seen: list[dict[str, Any]] = []
    while True:
        query = f"limit={limit}" + (f"&since={since}" if since else "")
        answer = await client.get(f"/v1/properties/changes?{query}", headers=headers)
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert body["meta"]["limit"] == limit and body["meta"]["nextCursor"]
        since = body["meta"]["nextCursor"]
        seen += body["data"]
        if not body["data"]:
            return seen, since


async def sync(client: Any, headers: dict[str, str], copy: dict[str, Any],
               changes: list[dict[str, Any]]) -> None:  # fmt: skip
    """Apply changes as the docs say: fetch each record; a 404 means it is gone."""
    for change in changes:
        answer = await client.get(f"/v1/properties/{change['id']}", headers=headers)
        if answer.status_code == 404:
            copy.pop(change["id"], None)
        else:
            copy[change["id"]] = answer.json()["data"]


async def export(client: Any, headers: dict[str, str]) -> dict[str, Any]:
    ids: list[str] = []
    offset = 0
    while True:
        page = (await client.get(f"/v1/properties?limit=100&offset={offset}&sort=lastUpdated",
                                 headers=headers)).json()  # fmt: skip
        ids += [item["id"] for item in page["data"]]
        offset += 100
        if offset >= page["meta"]["total"]:
            break
    return {
        i: (await client.get(f"/v1/properties/{i}", headers=headers)).json()["data"] for i in ids
    }


async def test_the_feed_starts_with_every_property_created(fresh: Any) -> None:
    client, headers = await reader(fresh)
    changes, _ = await follow(client, headers)
    assert {c["changeType"] for c in changes} == {"created"}
    assert sorted(c["id"] for c in changes) == sorted(r.id for r in catalogue())
    assert all(set(c) == {"id", "changeType", "lastUpdated"} for c in changes)


async def test_following_through_two_loads_equals_the_final_store(fresh: Any) -> None:
    client, _, make_key = await fresh(cache_ttl=60)
    headers = bearer(await make_key())
    first, cursor = await follow(client, headers)
    copy: dict[str, Any] = {}
    await sync(client, headers, copy, first)
    db = await fresh.db()
    await load(db, [(1, record("t-000", list_price=199_000)), (2, record("t-new-1"))],
               origin="import", as_of=AS_OF)  # fmt: skip
    same = [(1, record("t-000", list_price=199_000)), (2, record("t-new-2"))]
    await load(db, same, origin="import", as_of=AS_OF)  # t-000 unchanged this time
    await db.close()
    changes, cursor = await follow(client, headers, cursor, limit=1)
    # in store order: a load writes its new records, then its changed ones
    assert [(c["id"], c["changeType"]) for c in changes] == [
        ("t-new-1", "created"),
        ("t-000", "updated"),
        ("t-new-2", "created"),
    ]
    await sync(client, headers, copy, changes)
    assert copy == await export(client, headers)
    # caught up: the same cursor again is an empty page with the same cursor
    again = (await client.get(f"/v1/properties/changes?since={cursor}", headers=headers)).json()
    assert again["data"] == [] and again["meta"]["nextCursor"] == cursor
    # and a client that starts now from the oldest change gets the same copy
    everything, _ = await follow(client, headers, limit=50)
    fresh_copy: dict[str, Any] = {}
    await sync(client, headers, fresh_copy, everything)
    assert fresh_copy == copy


async def demo_loads(
    fresh: Any, *runs: tuple[PropertyDetail, bool]
) -> tuple[Any, dict[str, str], list[dict[str, Any]]]:
    """A reader's client and headers, and the changes of one demo load per run (a record,
    and whether its load replaces every demo record)."""
    client, headers = await reader(fresh)
    _, cursor = await follow(client, headers)
    db = await fresh.db()
    for item, replace in runs:
        await load(db, [(1, item)], origin="demo", as_of=AS_OF, replace_origin=replace)
    await db.close()
    changes, _ = await follow(client, headers, cursor)
    return client, headers, changes


async def test_a_removed_property_is_a_removal_with_its_id_and_last_updated(fresh: Any) -> None:
    stamp = "2026-11-02T09:30:00Z"
    client, headers, changes = await demo_loads(
        fresh, (record("d-1", last_updated=stamp), False), (record("d-2"), True)
    )
    assert [(c["id"], c["changeType"]) for c in changes] == [
        ("d-1", "created"),
        ("d-1", "removed"),
        ("d-2", "created"),
    ]
    assert changes[1]["lastUpdated"] == stamp
    assert (await client.get("/v1/properties/d-1", headers=headers)).status_code == 404


async def test_a_record_made_again_after_its_removal_is_created(fresh: Any) -> None:
    client, headers, changes = await demo_loads(
        fresh, *[(record(pid), True) for pid in ("d-1", "d-2", "d-1")]
    )
    assert [(c["id"], c["changeType"]) for c in changes] == [
        ("d-1", "created"),
        ("d-1", "removed"),
        ("d-2", "created"),
        ("d-2", "removed"),
        ("d-1", "created"),
    ]
    copy: dict[str, Any] = {}
    await sync(client, headers, copy, changes)
    assert set(copy) == {"d-1"}


async def test_generating_fewer_properties_removes_the_rest(fresh: Any) -> None:
    client, headers = await reader(fresh)
    db = await fresh.db()
    await pipeline.run(db, [pipeline.synthetic_source(12, 3, AS_OF)], AS_OF)
    kept = {row[0] for row in await db.fetch_all(
        "SELECT id FROM properties WHERE origin = 'synthetic'")}  # fmt: skip
    _, cursor = await follow(client, headers)
    await pipeline.run(db, [pipeline.synthetic_source(5, 3, AS_OF)], AS_OF)
    left = {row[0] for row in await db.fetch_all(
        "SELECT id FROM properties WHERE origin = 'synthetic'")}  # fmt: skip
    await db.close()
    assert len(kept) == 12 and len(left) == 5
    changes, _ = await follow(client, headers, cursor, limit=50)
    newest = {c["id"]: c["changeType"] for c in changes}
    assert {i for i, kind in newest.items() if kind == "removed"} == kept - left
    assert {i for i, kind in newest.items() if kind != "removed"} == left


async def test_a_load_that_fails_leaves_no_change(fresh: Any) -> None:
    client, headers = await reader(fresh)
    _, cursor = await follow(client, headers)

    def items() -> Any:
        yield 1, record("t-fail-1")
        raise RuntimeError("the source broke")

    db = await fresh.db()
    with pytest.raises(RuntimeError):
        await load(db, items(), origin="import", as_of=AS_OF)
    await db.close()
    changes, after = await follow(client, headers, cursor)
    assert changes == [] and after == cursor


@pytest.mark.parametrize(
    "since",
    ["x", "Zjk6MTox", "ZjE6LTE6YWJj", "ZjE6MTpub3RoaXNzdG9yZQ", "ZjE6MTIzNDU2Nzg5MDEyMzQ1Njc4OTA6",
     "%00", "a" * 101, "ZjE6MTo"],
)  # fmt: skip
async def test_a_bad_cursor_is_a_400_naming_since(fresh: Any, since: str) -> None:
    client, headers = await reader(fresh)
    answer = await client.get(f"/v1/properties/changes?since={since}", headers=headers)
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert error["code"] == "invalid_parameter" and error["parameter"] == "since"


async def test_the_feed_takes_the_plan_page_sizes(fresh: Any) -> None:
    client, _, make_key = await fresh(cache_ttl=0)
    headers = bearer(await make_key("free"))  # default 10, maximum 25
    page = (await client.get("/v1/properties/changes", headers=headers)).json()
    assert page["meta"]["limit"] == 10 and len(page["data"]) == 10
    page = (await client.get("/v1/properties/changes?limit=1000", headers=headers)).json()
    assert page["meta"]["limit"] == 25
    answer = await client.get("/v1/properties/changes?offset=5", headers=headers)
    assert answer.status_code == 400 and answer.json()["error"]["parameter"] == "offset"


async def test_pruning_keeps_30_days_and_every_property_s_newest_change(fresh: Any) -> None:
    db = await fresh.db()
    await db.execute("UPDATE property_changes SET changed_at = '2026-09-01T00:00:00.000Z'")
    await load(db, [(1, record("t-000", list_price=188_000))], origin="import", as_of=AS_OF)
    before = await db.fetch_all("SELECT property_id, seq FROM property_changes ORDER BY seq")
    feed = FeedService(db)
    today = dt.date(2026, 11, 21)
    assert await feed.prune(today) == 1  # t-000's creation, superseded and 81 days old
    assert await feed.prune(today) is None  # once a day, by one process
    after = await db.fetch_all("SELECT property_id, seq FROM property_changes ORDER BY seq")
    assert len(after) == len(before) - 1
    assert sorted({row[0] for row in after}) == sorted({row[0] for row in before})
    # a change under 30 days old stays even when superseded
    await load(db, [(1, record("t-000", list_price=177_000))], origin="import", as_of=AS_OF)
    assert await feed.prune(today + dt.timedelta(days=1)) == 0
    await db.close()


async def test_pruning_keeps_a_removal_and_a_creation_after_it(fresh: Any) -> None:
    db = await fresh.db()
    for pid in ("d-1", "d-2"):
        await load(db, [(1, record(pid))], origin="demo", as_of=AS_OF, replace_origin=True)
    await db.execute("UPDATE property_changes SET changed_at = '2026-09-01T00:00:00.000Z'")
    await load(db, [(1, record("d-1"))], origin="demo", as_of=AS_OF, replace_origin=True)
    assert await FeedService(db).prune(dt.date(2026, 11, 21)) == 3  # all but the newest
    rows = await db.fetch_all(
        "SELECT property_id, change_type FROM property_changes"
        " WHERE property_id IN ('d-1', 'd-2') ORDER BY seq"
    )
    await db.close()
    # d-2's removal is its newest change, and d-1 is a creation after its removal
    assert [tuple(row) for row in rows] == [("d-2", "removed"), ("d-1", "created")]
