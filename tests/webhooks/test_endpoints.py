"""/v1/webhooks on both stores: create, list, get, change, delete, rotate, test, deliveries
and replay; every bad input a 400 naming its field; plan limits; another owner's id a 404."""

from __future__ import annotations

import base64
import json
import time
from typing import Any

import pytest
from standardwebhooks import Webhook

from propdata.accounts.keys import keys_of
from propdata.accounts.owners import owner_of
from propdata.config import accounts_url
from propdata.events import cursor
from propdata.events.repository import EventRepository, NewEvent
from propdata.kit.db import connect
from tests.conftest import Fresh, KeyMaker, Store
from tests.live import until
from tests.webhooks.dns_server import dns_server
from tests.webhooks.receiver import receiving

PUBLIC = "https://93.184.215.14/hook"


@pytest.fixture(autouse=True)
async def saved_searches(store: Store) -> None:
    """The saved searches' table as the events package makes it (id and owner are what the
    endpoints read), in case this store's steps do not include it."""
    accounts = await connect(accounts_url(store.url))
    try:
        await accounts.execute(
            "CREATE TABLE IF NOT EXISTS saved_searches (id TEXT PRIMARY KEY, owner TEXT NOT NULL,"
            " name TEXT NOT NULL, filters TEXT NOT NULL, property_ids TEXT NOT NULL,"
            " created_at TEXT NOT NULL)"
        )
    finally:
        await accounts.close()


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


async def _make(client: Any, secret: str, **body: Any) -> dict[str, Any]:
    body.setdefault("url", PUBLIC)
    response = await client.post("/v1/webhooks", json=body,
                                 headers=bearer(secret))  # fmt: skip
    assert response.status_code == 201, response.text
    made: dict[str, Any] = response.json()["data"]
    return made


async def test_an_endpoint_is_made_listed_changed_and_deleted(
    client: Any, make_key: KeyMaker
) -> None:
    secret = await make_key("developer")
    made = await _make(client, secret, eventTypes=["property.listed"], description="crm")
    assert made["id"].startswith("wh_") and made["url"] == PUBLIC
    assert made["secret"].startswith("whsec_")
    assert len(base64.b64decode(made["secret"].removeprefix("whsec_"))) == 32
    assert (made["eventTypes"], made["searchIds"], made["description"]) == (
        ["property.listed"], None, "crm",
    )  # fmt: skip
    assert (made["status"], made["disabledReason"]) == ("enabled", None)
    one = (await client.get(f"/v1/webhooks/{made['id']}", headers=bearer(secret))).json()["data"]
    assert "secret" not in one and one == {k: v for k, v in made.items() if k != "secret"}
    listed = (await client.get("/v1/webhooks", headers=bearer(secret))).json()
    assert listed["meta"]["total"] == 1 and listed["data"] == [one]

    changed = await client.patch(
        f"/v1/webhooks/{made['id']}", headers=bearer(secret),
        json={"eventTypes": None, "description": None, "status": "disabled"},
    )  # fmt: skip
    assert changed.status_code == 200, changed.text
    data = changed.json()["data"]
    assert (data["eventTypes"], data["description"], data["status"], data["disabledReason"]) == (
        None, None, "disabled", "owner",
    )  # fmt: skip
    again = await client.patch(f"/v1/webhooks/{made['id']}", headers=bearer(secret),
                               json={"status": "enabled"})  # fmt: skip
    assert again.json()["data"]["disabledReason"] is None

    rotated = await client.post(f"/v1/webhooks/{made['id']}/rotate-secret", headers=bearer(secret),
                                json={"graceSeconds": 0})  # fmt: skip
    assert rotated.status_code == 200 and rotated.json()["data"]["secret"] != made["secret"]
    default = await client.post(f"/v1/webhooks/{made['id']}/rotate-secret", headers=bearer(secret))
    assert default.status_code == 200, default.text

    deleted = await client.delete(f"/v1/webhooks/{made['id']}", headers=bearer(secret))
    assert deleted.status_code == 204 and deleted.content == b""
    gone = await client.get(f"/v1/webhooks/{made['id']}", headers=bearer(secret))
    assert gone.status_code == 404 and gone.json()["error"]["code"] == "not_found"


async def test_test_queues_a_delivery_and_replay_counts_the_kept_events(
    client: Any, make_key: KeyMaker
) -> None:
    secret = await make_key()
    made = await _make(client, secret)
    tested = await client.post(f"/v1/webhooks/{made['id']}/test", headers=bearer(secret))
    assert tested.status_code == 202, tested.text
    deliveries = await client.get(f"/v1/webhooks/{made['id']}/deliveries", headers=bearer(secret))
    assert deliveries.status_code == 200, deliveries.text
    body = deliveries.json()
    assert body["meta"]["total"] == 1
    (delivery,) = body["data"]
    assert delivery["type"] == "webhook.test" and delivery["eventId"].startswith("evt_")
    assert set(delivery) == {"eventId", "type", "attempt", "status", "responseStatus", "error",
                             "durationMs", "attemptedAt", "nextAttemptAt"}  # fmt: skip
    replayed = await client.post(f"/v1/webhooks/{made['id']}/replay", headers=bearer(secret),
                                 json={"since": cursor.encode(0)})  # fmt: skip
    assert replayed.status_code == 202 and replayed.json() == {"data": {"queued": 0}}
    bad = await client.post(f"/v1/webhooks/{made['id']}/replay", headers=bearer(secret),
                            json={"since": "nope"})  # fmt: skip
    assert bad.status_code == 400 and bad.json()["error"]["parameter"] == "since"


@pytest.mark.parametrize(
    ("body", "parameter"),
    [
        ({"url": 5}, "url"),
        ({}, "url"),
        ({"url": PUBLIC, "colour": "red"}, "colour"),
        ({"url": PUBLIC, "eventTypes": ["property.sold"]}, "eventTypes"),
        ({"url": PUBLIC, "eventTypes": [3]}, "eventTypes"),
        ({"url": PUBLIC, "eventTypes": "property.listed"}, "eventTypes"),
        ({"url": PUBLIC, "searchIds": ["srch_not_mine"]}, "searchIds"),
        ({"url": PUBLIC, "description": "x" * 501}, "description"),
        ({"url": "http://93.184.215.14/hook"}, "url"),
        ({"url": "https://10.0.0.1/hook"}, "url"),
        ({"url": "https://169.254.169.254/latest/meta-data/"}, "url"),
        ({"url": "https://[::ffff:10.0.0.1]/hook"}, "url"),
        ({"url": "https://localhost/hook"}, "url"),
        ({"url": "https://93.184.215.14:22/"}, "url"),
        ({"url": "https://me:pw@93.184.215.14/"}, "url"),
        ({"url": "ftp://93.184.215.14/"}, "url"),
    ],
)  # fmt: skip
async def test_bad_bodies_are_400_naming_the_field(
    client: Any, make_key: KeyMaker, body: dict[str, Any], parameter: str
) -> None:
    secret = await make_key()
    response = await client.post("/v1/webhooks", json=body, headers=bearer(secret))
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert (error["code"], error["parameter"]) == ("invalid_parameter", parameter), error
    listed = await client.get("/v1/webhooks", headers=bearer(secret))
    assert listed.json()["meta"]["total"] == 0  # nothing made


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:8080/hook", "https://10.0.0.1/hook", "https://localhost/hook",
            "https://93.184.215.14:22/", "http://93.184.215.14/hook"],
)  # fmt: skip
async def test_a_refused_address_names_the_setting_that_allows_it(
    client: Any, make_key: KeyMaker, url: str
) -> None:
    """A person running the service on their own machine learns how to admit a local receiver;
    what a name resolves to is not told (it may be an internal address)."""
    secret = await make_key()
    response = await client.post("/v1/webhooks", json={"url": url}, headers=bearer(secret))
    error = response.json()["error"]
    assert response.status_code == 400 and error["parameter"] == "url", error
    assert "PROPDATA_WEBHOOK_ALLOWED_NETWORKS" in error["message"], error
    if "localhost" in url:
        assert "localhost resolves to a loopback address" in error["message"], error
        assert "127.0.0.1" not in error["message"] and "::1" not in error["message"], error


async def test_bodies_are_json_of_at_most_64_kb_as_for_saved_searches(
    client: Any, make_key: KeyMaker
) -> None:
    """The webhook writes read their bodies as the saved-search writes do (`api.body`)."""
    secret = await make_key()
    body = json.dumps({"url": PUBLIC}).encode()
    for kind in ("text/plain", "application/x-www-form-urlencoded", ""):
        sent = await client.post("/v1/webhooks", content=body,
                                 headers={**bearer(secret), "Content-Type": kind})  # fmt: skip
        assert sent.status_code == 400, kind
        assert sent.json()["error"]["parameter"] == "Content-Type", kind
    huge = await client.post("/v1/webhooks", headers=bearer(secret),
                             json={"url": PUBLIC, "description": "x" * 70_000})  # fmt: skip
    assert huge.status_code == 413, huge.text
    assert huge.json()["error"] == {**huge.json()["error"], "code": "payload_too_large",
                                    "message": "A request body may hold at most 64 KB."}  # fmt: skip
    listed = await client.get("/v1/webhooks", headers=bearer(secret))
    assert listed.json()["meta"]["total"] == 0  # nothing made
    made = await _make(client, secret)
    rotated = await client.post(f"/v1/webhooks/{made['id']}/rotate-secret", headers=bearer(secret))
    assert rotated.status_code == 200, rotated.text  # a body one may leave out needs no type


async def test_bad_changes_are_400_naming_the_field(client: Any, make_key: KeyMaker) -> None:
    secret = await make_key()
    made = await _make(client, secret)
    for body, parameter in (
        ({"status": "paused"}, "status"), ({"secret": "x"}, "secret"),
        ({"url": "https://192.168.0.1/"}, "url"), ({"eventTypes": ["nope"]}, "eventTypes"),
    ):  # fmt: skip
        response = await client.patch(f"/v1/webhooks/{made['id']}", json=body,
                                      headers=bearer(secret))  # fmt: skip
        assert response.status_code == 400, response.text
        assert response.json()["error"]["parameter"] == parameter
    for grace in (-1, 604_801, "1"):
        response = await client.post(f"/v1/webhooks/{made['id']}/rotate-secret",
                                     json={"graceSeconds": grace}, headers=bearer(secret))  # fmt: skip
        assert response.status_code == 400 and response.json()["error"]["parameter"] == (
            "graceSeconds"
        )
    unchanged = await client.get(f"/v1/webhooks/{made['id']}", headers=bearer(secret))
    assert unchanged.json()["data"]["url"] == PUBLIC


async def test_search_ids_must_be_the_owners(client: Any, make_key: KeyMaker, store: Store) -> None:
    secret = await make_key()
    me = (await client.get("/v1/auth/status", headers=bearer(secret))).json()["data"]["keyId"]
    accounts = await connect(accounts_url(store.url))
    try:
        async with accounts.transaction():
            await accounts.execute(
                "INSERT INTO saved_searches VALUES (?, ?, 'n', '{}', '[]', '2026-11-25')",
                (f"srch_{me}", f"key:{me}"),
            )
    finally:
        await accounts.close()
    made = await _make(client, secret, searchIds=[f"srch_{me}"])
    assert made["searchIds"] == [f"srch_{me}"]
    other = await make_key()
    refused = await client.post("/v1/webhooks", headers=bearer(other),
                                json={"url": PUBLIC, "searchIds": [f"srch_{me}"]})  # fmt: skip
    assert refused.status_code == 400 and refused.json()["error"]["parameter"] == "searchIds"


async def test_the_plan_limits_endpoints(client: Any, make_key: KeyMaker) -> None:
    secret = await make_key("free")
    await _make(client, secret)
    refused = await client.post("/v1/webhooks", json={"url": PUBLIC}, headers=bearer(secret))
    assert refused.status_code == 403, refused.text
    error = refused.json()["error"]
    assert error["code"] == "plan_limit_reached"
    assert "Free" in error["message"] and "Developer" in error["message"]


async def test_another_owners_endpoint_is_404_to_every_operation(
    client: Any, make_key: KeyMaker
) -> None:
    mine, theirs = await make_key(), await make_key()
    made = await _make(client, mine)
    path = f"/v1/webhooks/{made['id']}"
    for method, suffix, body in (
        ("GET", "", None), ("PATCH", "", {"description": "x"}), ("DELETE", "", None),
        ("POST", "/rotate-secret", {}), ("POST", "/test", None), ("GET", "/deliveries", None),
        ("POST", "/replay", {"since": cursor.encode(0)}),
    ):  # fmt: skip
        response = await client.request(method, path + suffix, json=body, headers=bearer(theirs))
        assert response.status_code == 404, (method, suffix, response.text)
    assert (await client.get(path, headers=bearer(mine))).status_code == 200
    listed = await client.get("/v1/webhooks", headers=bearer(theirs))
    assert listed.json()["data"] == []


async def test_managing_webhooks_is_not_counted(client: Any, make_key: KeyMaker) -> None:
    secret = await make_key("free")
    for _ in range(3):
        await client.get("/v1/webhooks", headers=bearer(secret))
    status = (await client.get("/v1/auth/status", headers=bearer(secret))).json()["data"]
    assert status["usage"]["minute"]["used"] == 0


async def test_the_servers_dispatcher_delivers_a_test_event(fresh: Fresh) -> None:
    """The app's own dispatcher (started with it) signs and POSTs `webhook.test` to a real
    receiver in an allowed network."""
    client, clock, make = await fresh(cache_ttl=0, webhook_allowed_networks="127.0.0.1/32")
    clock.now = time.time()  # signatures are verified against the real time
    secret = await make()
    async with receiving() as receiver:
        made = await _make(client, secret, url=receiver.url)
        assert (await client.post(f"/v1/webhooks/{made['id']}/test",
                                  headers=bearer(secret))).status_code == 202  # fmt: skip
        await until(lambda: receiver.received, "the test event received")
        (got,) = receiver.received
        event = Webhook(made["secret"]).verify(got.body, got.headers)
        assert event["type"] == "webhook.test" and event["data"]["endpointId"] == made["id"]
        (delivery,) = await _listed(client, secret, made["id"],
                                    lambda rows: rows and rows[0]["status"] != "pending")  # fmt: skip
        assert (delivery["status"], delivery["attempt"], delivery["responseStatus"]) == (
            "succeeded", 1, 200,
        )  # fmt: skip


async def _listed(client: Any, secret: str, hook: str, done: Any) -> list[dict[str, Any]]:
    """The endpoint's deliveries list once `done(rows)` holds (attempts are made in the
    background)."""

    async def listed() -> list[dict[str, Any]] | None:
        answer = await client.get(f"/v1/webhooks/{hook}/deliveries", headers=bearer(secret))
        assert answer.status_code == 200, answer.text
        rows: list[dict[str, Any]] = answer.json()["data"]
        return rows if done(rows) else None

    return await until(listed, f"the deliveries of {hook} as awaited")


async def test_every_attempt_is_listed_and_any_event_sent_can_be_sent_again(fresh: Fresh) -> None:
    """A receiver that answers 500, then 200: the list holds the failed attempt 1 beside
    attempt 2, each with its own answer; resend sends the same event (same webhook-id) once
    more, `webhook.test` included."""
    client, clock, make = await fresh(cache_ttl=0, webhook_allowed_networks="127.0.0.1/32")
    clock.now = time.time()
    secret = await make()
    answers = iter([500])
    async with receiving(answer=lambda _: (next(answers, 200), {})) as receiver:
        hook = (await _make(client, secret, url=receiver.url))["id"]
        assert (await client.post(f"/v1/webhooks/{hook}/test",
                                  headers=bearer(secret))).status_code == 202  # fmt: skip
        waiting, failed = await _listed(client, secret, hook, lambda rows: len(rows) == 2)
        assert (waiting["status"], waiting["attempt"], waiting["attemptedAt"]) == (
            "pending", 2, None,
        )  # fmt: skip
        assert waiting["nextAttemptAt"] > failed["attemptedAt"]
        assert (failed["status"], failed["attempt"], failed["responseStatus"], failed["error"]) == (
            "failed", 1, 500, "http_status",
        )  # fmt: skip
        assert failed["durationMs"] >= 0 and failed["nextAttemptAt"] is None
        clock.advance(10)  # past the first retry's 5 s (±20 %)
        second, first = await _listed(
            client,
            secret,
            hook,
            lambda rows: [r["status"] for r in rows] == ["succeeded", "failed"],
        )
        assert (second["attempt"], second["responseStatus"], second["error"]) == (2, 200, None)
        assert first == failed  # attempt 1 keeps its own answer
        event_id = first["eventId"]
        clock.advance(1)
        resent = await client.post(f"/v1/webhooks/{hook}/deliveries/{event_id}/resend",
                                   headers=bearer(secret))  # fmt: skip
        assert resent.status_code == 202 and resent.json() == {"data": {"queued": 1}}
        rows = await _listed(client, secret, hook, lambda rows: len(rows) == 3
                             and rows[0]["status"] == "succeeded")  # fmt: skip
        assert [(r["eventId"], r["attempt"], r["status"]) for r in rows] == [
            (event_id, 1, "succeeded"), (event_id, 2, "succeeded"), (event_id, 1, "failed"),
        ]  # fmt: skip
    assert [r.headers["webhook-id"] for r in receiver.received] == [event_id] * 3
    assert json.loads(receiver.received[-1].body)["type"] == "webhook.test"
    for path, headers in (
        (f"/v1/webhooks/{hook}/deliveries/evt_never/resend", bearer(secret)),
        (f"/v1/webhooks/{hook}/deliveries/{event_id}/resend", bearer(await make())),
    ):
        missing = await client.post(path, headers=headers)
        assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"


async def test_one_owner_s_dead_name_never_delays_another_owner_s_webhooks(fresh: Fresh) -> None:
    """Owner A's endpoint is on a name whose server stops answering, with a backlog of
    deliveries; owner B's endpoint is made at once and B's first delivery comes within 5 s
    (names resolve in 2 s at most, a few of one owner's at a time)."""
    async with (
        receiving() as receiver,
        dns_server({"a.test": ["127.0.0.1"], "b.test": ["127.0.0.1"]}) as names,
    ):
        client, clock, make = await fresh(
            cache_ttl=0, webhook_allowed_networks="127.0.0.1/32",
            webhook_nameservers=f"127.0.0.1:{names.port}",
        )  # fmt: skip
        clock.now = time.time()
        a, b = await make(), await make()
        await _make(client, a, url=f"http://a.test:{receiver.port}/hook")
        names.silent.add("a.test")  # from now on a.test never answers
        accounts = await connect(accounts_url(fresh.store.url))
        try:
            await _produce(accounts, await _owner(fresh.store, a), 60)
            started = time.monotonic()
            await _make(client, b, url=f"http://b.test:{receiver.port}/hook")
            assert time.monotonic() - started < 1.0  # not held up by A's lookups
            (wanted,) = await _produce(accounts, await _owner(fresh.store, b), 1)
            await until(lambda: any(r.headers["webhook-id"] == wanted for r in receiver.received),
                        "B's delivery, not held up behind A's name", 5)  # fmt: skip
        finally:
            await accounts.close()
    assert names.asked.count("a.test") >= 2  # A's deliveries were attempted meanwhile


async def _owner(store: Store, secret: str) -> str:
    async with keys_of(store.url) as keys:
        return owner_of(await keys.authenticate(f"Bearer {secret}"))


async def _produce(accounts: Any, owner: str, count: int) -> list[str]:
    """`count` events of the owner, as the producer writes them; their ids."""
    made = [
        NewEvent(f"evt_{owner[-6:]}{n:020d}", owner, "property.listed", "srch_x", None,
                 "2026-11-28T00:00:00.000Z", json.dumps({"id": f"evt_{owner[-6:]}{n:020d}"}))
        for n in range(count)
    ]  # fmt: skip
    async with accounts.transaction():
        await EventRepository(accounts).insert_events(made)
    return [e.id for e in made]
