"""The dispatcher on both stores, against a real HTTP server on 127.0.0.1 (an allowed
network): signed deliveries, filters, the retry schedule under a controlled clock, 410,
five failing days, the backlog of a disabled endpoint, rotation, rebinding, redirects."""

from __future__ import annotations

from pathlib import Path

import httpx
import msgspec
import pytest
from prometheus_client import REGISTRY
from standardwebhooks import Webhook, WebhookVerificationError

from propdata.accounts.owners import owner_of
from propdata.errors import Conflict, RateLimitExceeded
from propdata.webhooks.addresses import Gate, Target
from propdata.webhooks.dispatcher import FAILING_FOR, PER_RECEIVER, HostTurn, Sender
from propdata.webhooks.schemas import EndpointChange, NewEndpoint, iso
from tests.webhooks.helpers import LOCAL, Rig, api_key, table_resolver
from tests.webhooks.receiver import Received, receiving

KEY = api_key()
OWNER = owner_of(KEY)


async def _deliveries(rig: Rig, endpoint_id: str) -> list[dict[str, object]]:
    _, rows = await rig.service.deliveries(KEY, endpoint_id, 100, 0)
    return [msgspec.to_builtins(row) for row in rows]


async def _made(rig: Rig, endpoint_id: str) -> list[dict[str, object]]:
    """The attempts made (not the deliveries waiting), newest first."""
    return [d for d in await _deliveries(rig, endpoint_id) if d["status"] != "pending"]


async def test_events_are_posted_signed_once_each(rig: Rig) -> None:
    async with receiving() as receiver:
        row, secret = await rig.service.create(KEY, NewEndpoint(url=receiver.url))
        ids = await rig.events(OWNER, 3)
        await rig.events("key:someone-else", 2)
        assert await rig.dispatcher().run_once() == 3
        assert await rig.dispatcher().run_once() == 0
    assert [r.headers["webhook-id"] for r in receiver.received] == ids
    for got in receiver.received:
        event = Webhook(secret).verify(got.body, got.headers)
        assert event["id"] == got.headers["webhook-id"] and event["sequence"] > 0
        assert got.headers["content-type"] == "application/json"
        assert got.headers["host"] == f"127.0.0.1:{receiver.port}"
        assert got.headers["webhook-timestamp"] == str(int(rig.clock()))
    listed = await _deliveries(rig, row.id)
    assert [d["eventId"] for d in listed] == ids[::-1]  # newest first
    assert {(d["status"], d["attempt"], d["responseStatus"], d["error"]) for d in listed} == {
        ("succeeded", 1, 200, None)
    }


async def test_an_endpoint_gets_the_types_and_searches_it_asked_for(rig: Rig) -> None:
    async with receiving() as receiver:
        await rig.service.create(
            KEY, NewEndpoint(url=receiver.url, event_types=["property.listed", "webhook.test"])
        )
        wanted = await rig.events(OWNER, 2, "property.listed")
        await rig.events(OWNER, 2, "property.priceChanged")
        await rig.dispatcher().run_once()
    assert [r.headers["webhook-id"] for r in receiver.received] == wanted


async def test_failures_are_retried_on_the_schedule_then_given_up(rig: Rig) -> None:
    async with receiving(answer=lambda _: (500, {})) as receiver:
        row, _ = await rig.service.create(KEY, NewEndpoint(url=receiver.url))
        await rig.events(OWNER)
        dispatcher = rig.dispatcher()
        steps = [5, 300, 1800, 7200, 18000, 36000, 50400, 72000, 86400]
        for attempt, step in enumerate(steps, 1):
            assert await dispatcher.run_once() == 1
            waiting, *made = await _deliveries(rig, row.id)
            assert (waiting["status"], waiting["attempt"], waiting["nextAttemptAt"]) == (
                "pending", attempt + 1, iso(rig.clock() + step),
            )  # fmt: skip
            # every attempt made is listed, newest first, each with its own answer
            assert [(d["attempt"], d["status"], d["error"], d["responseStatus"]) for d in made] == [
                (n, "failed", "http_status", 500) for n in range(attempt, 0, -1)
            ]
            rig.clock.advance(step - 1)
            assert await dispatcher.run_once() == 0  # not yet
            rig.clock.advance(1)
        assert await dispatcher.run_once() == 1
        listed = await _deliveries(rig, row.id)
        assert [(d["attempt"], d["status"], d["nextAttemptAt"]) for d in listed] == [
            (n, "failed", None) for n in range(10, 0, -1)
        ]
        rig.clock.advance(10 * 86400)
        assert await dispatcher.run_once() == 0
    assert len(receiver.received) == 10


async def test_retry_after_of_a_429_is_honoured(rig: Rig) -> None:
    async with receiving(answer=lambda _: (429, {"retry-after": "600"})) as receiver:
        row, _ = await rig.service.create(KEY, NewEndpoint(url=receiver.url))
        await rig.events(OWNER)
        dispatcher = rig.dispatcher()
        await dispatcher.run_once()
        rig.clock.advance(599)
        assert await dispatcher.run_once() == 0
        rig.clock.advance(1)
        assert await dispatcher.run_once() == 1
    delivery, first = await _made(rig, row.id)
    assert delivery["attempt"] == 2 and delivery["responseStatus"] == 429
    assert first["attempt"] == 1 and first["responseStatus"] == 429


async def test_410_disables_the_endpoint_at_once(rig: Rig) -> None:
    async with receiving(answer=lambda _: (410, {})) as receiver:
        row, _ = await rig.service.create(KEY, NewEndpoint(url=receiver.url))
        await rig.events(OWNER, 2)
        await rig.dispatcher(batch=1).run_once()
    endpoint = await rig.service.get(KEY, row.id)
    assert (endpoint.status, endpoint.disabled_reason) == ("disabled", "gone")
    assert len(receiver.received) == 1  # nothing more goes to a disabled endpoint


async def test_five_days_of_failures_disable_the_endpoint_and_mail_the_owner(rig: Rig) -> None:
    async with receiving(answer=lambda _: (503, {})) as receiver:
        row, _ = await rig.service.create(KEY, NewEndpoint(url=receiver.url))
        dispatcher = rig.dispatcher()
        for _day in range(5):
            await rig.events(OWNER)
            await dispatcher.run_once()
            assert (await rig.service.get(KEY, row.id)).status == "enabled"
            rig.clock.advance(FAILING_FOR / 5)
        await rig.events(OWNER)
        await dispatcher.run_once()
    endpoint = await rig.service.get(KEY, row.id)
    assert (endpoint.status, endpoint.disabled_reason) == ("disabled", "failing")
    ((to, subject, text),) = rig.mail.sent
    assert to == "key-key_test1@example.com" and row.id in text and "5 days" in subject
    assert receiver.received


async def test_a_success_resets_the_failing_days(rig: Rig) -> None:
    answers = iter([503, 200, 503])
    async with receiving(answer=lambda _: (next(answers), {})) as receiver:
        row, _ = await rig.service.create(KEY, NewEndpoint(url=receiver.url))
        dispatcher = rig.dispatcher()
        for _ in range(3):
            await rig.events(OWNER)
            await dispatcher.run_once()
            rig.clock.advance(FAILING_FOR * 0.6)
        assert (await rig.service.get(KEY, row.id)).status == "enabled"
        assert len(receiver.received) >= 3


async def test_a_disabled_endpoint_gets_its_backlog_in_order_when_enabled(rig: Rig) -> None:
    async with receiving() as receiver:
        row, _ = await rig.service.create(KEY, NewEndpoint(url=receiver.url))
        await rig.service.change(KEY, row.id, EndpointChange(status="disabled"))
        endpoint = await rig.service.get(KEY, row.id)
        assert (endpoint.status, endpoint.disabled_reason) == ("disabled", "owner")
        ids = await rig.events(OWNER, 5)
        dispatcher = rig.dispatcher(batch=1)
        assert await dispatcher.run_once() == 0
        await rig.service.change(KEY, row.id, EndpointChange(status="enabled"))
        assert await dispatcher.run_once() == 5
    assert [r.headers["webhook-id"] for r in receiver.received] == ids


async def test_a_backlog_past_its_cap_keeps_the_newest(rig: Rig) -> None:
    rig.service.backlog_kept = 3  # 50,000 in service
    async with receiving() as receiver:
        row, _ = await rig.service.create(KEY, NewEndpoint(url=receiver.url))
        await rig.service.change(KEY, row.id, EndpointChange(status="disabled"))
        ids = await rig.events(OWNER, 5)
        await rig.service.change(KEY, row.id, EndpointChange(status="enabled"))
        await rig.dispatcher(batch=1).run_once()
    assert [r.headers["webhook-id"] for r in receiver.received] == ids[2:]


async def test_attempts_are_counted_in_the_metrics(rig: Rig) -> None:
    def count(result: str) -> float:
        return REGISTRY.get_sample_value("propdata_webhook_deliveries_total",
                                         {"result": result}) or 0.0  # fmt: skip

    before = count("succeeded"), count("failed")
    answers = iter([200, 500])
    async with receiving(answer=lambda _: (next(answers), {})) as receiver:
        await rig.service.create(KEY, NewEndpoint(url=receiver.url))
        await rig.events(OWNER, 2)
        await rig.dispatcher(batch=1).run_once()
    assert (count("succeeded") - before[0], count("failed") - before[1]) == (1, 1)


async def _rotated(rig: Rig, grace: int, *later: float) -> tuple[str, str, list[Received]]:
    """A new endpoint's secret rotated with `grace` seconds: the old secret, the new one, and
    the deliveries of an event at once and of one more `later` seconds after each."""
    async with receiving() as receiver:
        row, old = await rig.service.create(KEY, NewEndpoint(url=receiver.url))
        new = await rig.service.rotate(KEY, row.id, grace)
        for wait in (0, *later):
            rig.clock.advance(wait)
            await rig.events(OWNER)
            await rig.dispatcher().run_once()
    return old, new, receiver.received


async def test_both_signatures_verify_during_the_grace_then_only_the_new(rig: Rig) -> None:
    old, new, (during, after) = await _rotated(rig, 60, 61)
    assert len(during.headers["webhook-signature"].split(" ")) == 2
    for secret in (old, new):
        Webhook(secret).verify(during.body, during.headers)
    assert len(after.headers["webhook-signature"].split(" ")) == 1
    Webhook(new).verify(after.body, after.headers)
    with pytest.raises(WebhookVerificationError):
        Webhook(old).verify(after.body, after.headers)


async def test_a_rotation_without_grace_signs_with_the_new_secret_alone(rig: Rig) -> None:
    old, new, (got,) = await _rotated(rig, 0)
    Webhook(new).verify(got.body, got.headers)
    with pytest.raises(WebhookVerificationError):
        Webhook(old).verify(got.body, got.headers)


class NoSockets(Sender):
    """A sender that fails the test if anything is sent."""

    async def post(self, target: Target, address: object, body: bytes, headers: object) -> tuple[int, str | None]:  # type: ignore[override]  # fmt: skip
        raise AssertionError(f"a socket was opened to {address}")


async def test_a_name_that_turns_private_after_the_check_is_never_connected_to(
    rig: Rig,
) -> None:
    answers = {"rebind.example": ["93.184.215.14"]}
    rig.gate = Gate(allowed=LOCAL, resolver=table_resolver(answers))
    rig.__post_init__()
    row, _ = await rig.service.create(KEY, NewEndpoint(url="https://rebind.example/hook"))
    answers["rebind.example"] = ["10.0.0.7"]
    await rig.events(OWNER)
    await rig.dispatcher(sender=NoSockets()).run_once()
    waiting, delivery = await _deliveries(rig, row.id)
    assert (delivery["error"], delivery["status"], delivery["responseStatus"]) == (
        "blocked_address", "failed", None,
    )  # fmt: skip
    assert (waiting["status"], waiting["attempt"]) == ("pending", 2)


async def test_redirects_are_not_followed(rig: Rig) -> None:
    async with receiving(answer=lambda _: (302, {"location": "http://127.0.0.1:1/x"})) as receiver:
        row, _ = await rig.service.create(KEY, NewEndpoint(url=receiver.url))
        await rig.events(OWNER)
        await rig.dispatcher().run_once()
    (delivery,) = await _made(rig, row.id)
    assert (delivery["error"], delivery["responseStatus"]) == ("redirect", 302)
    assert len(receiver.received) == 1


async def test_a_refused_connection_is_a_connection_error(rig: Rig) -> None:
    async with receiving() as receiver:
        url = receiver.url
    row, _ = await rig.service.create(KEY, NewEndpoint(url=url))
    await rig.events(OWNER)
    await rig.dispatcher().run_once()
    (delivery,) = await _made(rig, row.id)
    assert delivery["error"] == "connection" and delivery["responseStatus"] is None


async def test_tls_spoken_to_a_plain_server_is_a_tls_error(rig: Rig) -> None:
    async with receiving() as receiver:
        row, _ = await rig.service.create(
            KEY, NewEndpoint(url=receiver.url.replace("http:", "https:"))
        )
        await rig.events(OWNER)
        await rig.dispatcher().run_once()
    (delivery,) = await _made(rig, row.id)
    assert delivery["error"] == "tls"


async def test_test_and_replay_deliver_the_same_event_ids_again(rig: Rig) -> None:
    from propdata.events import cursor

    async with receiving() as receiver:
        row, _ = await rig.service.create(KEY, NewEndpoint(url=receiver.url))
        await rig.service.test(KEY, row.id)
        ids = await rig.events(OWNER, 3)
        await rig.dispatcher().run_once()
        assert await rig.service.replay(KEY, row.id, cursor.encode(0)) == 3
        await rig.dispatcher().run_once()
    got = [r.headers["webhook-id"] for r in receiver.received]
    assert got[1:] == ids + ids
    test_event = msgspec.json.decode(receiver.received[0].body)
    assert test_event["type"] == "webhook.test" and test_event["data"]["endpointId"] == row.id


def test_the_sender_connects_to_the_checked_address_with_the_names_host_and_sni() -> None:
    seen: list[httpx.Request] = []

    class Recorder(httpx.AsyncBaseTransport):
        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            seen.append(request)
            return httpx.Response(204, stream=httpx.ByteStream(b""))

    import asyncio
    import ipaddress

    from propdata.webhooks.addresses import parse

    sender = Sender(transport=lambda _: Recorder())
    target = parse("https://hooks.example.com:8443/in?x=1")
    status, _ = asyncio.run(sender.post(target, ipaddress.ip_address("93.184.215.14"), b"{}", {}))
    (request,) = seen
    assert status == 204
    assert str(request.url) == "https://93.184.215.14:8443/in?x=1"
    assert request.headers["host"] == "hooks.example.com:8443"
    assert request.extensions["sni_hostname"] == "hooks.example.com"


async def test_a_receiver_gets_at_most_per_receiver_connections_each_used_again() -> None:
    import asyncio
    import ipaddress

    from propdata.webhooks.addresses import parse

    made: list[int] = []
    at_once = most = 0

    class Slow(httpx.AsyncBaseTransport):
        def __init__(self) -> None:
            made.append(1)

        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            nonlocal at_once, most
            at_once += 1
            most = max(most, at_once)
            await asyncio.sleep(0.01)
            at_once -= 1
            return httpx.Response(204, stream=httpx.ByteStream(b""))

    sender = Sender(transport=lambda _: Slow())
    target, address = parse("https://hooks.example.com/in"), ipaddress.ip_address("93.184.215.14")
    for _ in range(5):  # one at a time: one connection, used again
        assert (await sender.post(target, address, b"{}", {}))[0] == 204
    assert len(made) == 1
    answers = await asyncio.gather(*(sender.post(target, address, b"{}", {}) for _ in range(50)))
    assert {status for status, _ in answers} == {204}
    assert len(made) == most == PER_RECEIVER  # the rest waited their turn
    other = parse("https://other.example.com/in")
    await sender.post(other, address, b"{}", {})  # another name: connections of its own
    assert len(made) == PER_RECEIVER + 1
    await sender.close()


def test_one_process_of_a_host_holds_the_sqlite_dispatchers_turn(tmp_path: Path) -> None:
    first, second = HostTurn(tmp_path / "a.lock"), HostTurn(tmp_path / "a.lock")
    assert first.take() and first.take()  # taking it again keeps it
    assert not second.take()
    first.release()
    assert second.take()
    second.release()


async def test_a_failed_attempt_is_logged_without_the_url_s_path_or_query(
    rig: Rig, caplog: pytest.LogCaptureFixture
) -> None:
    async with receiving(answer=lambda _: (503, {})) as receiver:
        row, _ = await rig.service.create(
            KEY, NewEndpoint(url=receiver.url + "/s3cret-path?token=s3cret-query")
        )
        (event_id,) = await rig.events(OWNER)
        with caplog.at_level("WARNING", logger="propdata.webhooks"):
            await rig.dispatcher().run_once()
    (logged,) = [r for r in caplog.records if r.name == "propdata.webhooks"]
    said = logged.getMessage()
    for part in (row.id, event_id, "error=http_status", "status=503", "host=127.0.0.1"):
        assert part in said, said
    assert "s3cret" not in said and "/hook" not in said
    assert (logged.endpoint_id, logged.event_id, logged.error, logged.host) == (  # type: ignore[attr-defined]
        row.id, event_id, "http_status", "127.0.0.1",
    )  # fmt: skip


async def test_one_replay_of_an_endpoint_at_a_time_and_ten_an_owner_a_day(rig: Rig) -> None:
    from propdata.events import cursor

    async with receiving() as receiver:
        row, _ = await rig.service.create(KEY, NewEndpoint(url=receiver.url))
        await rig.events(OWNER, 3)
        dispatcher = rig.dispatcher()
        await dispatcher.run_once()
        start = rig.clock()
        assert await rig.service.replay(KEY, row.id, cursor.encode(0)) == 3
        with pytest.raises(Conflict) as busy:  # its deliveries still wait
            await rig.service.replay(KEY, row.id, cursor.encode(0))
        assert busy.value.status == 409 and busy.value.code == "conflict"
        assert await dispatcher.run_once() == 3  # the replay is delivered: room again
        for _ in range(9):
            rig.clock.advance(60)
            assert await rig.service.replay(KEY, row.id, cursor.encode(2)) == 1
            assert await dispatcher.run_once() == 1
        with pytest.raises(RateLimitExceeded) as daily:
            await rig.service.replay(KEY, row.id, cursor.encode(0))
        wait = int(daily.value.headers["Retry-After"])
        assert wait == int(start + 86_400 - rig.clock())  # when the first leaves the day
        rig.clock.advance(wait)
        assert await rig.service.replay(KEY, row.id, cursor.encode(0)) == 3
    assert len(receiver.received) == 3 + 3 + 9


async def test_an_event_waiting_for_an_endpoint_is_never_queued_twice(rig: Rig) -> None:
    from propdata.events import cursor

    async with receiving() as receiver:
        url = receiver.url  # closed: every attempt fails, deliveries wait
    row, _ = await rig.service.create(KEY, NewEndpoint(url=url))
    ids = await rig.events(OWNER, 4)
    dispatcher = rig.dispatcher()
    await dispatcher.fan_out()
    assert await rig.service.replay(KEY, row.id, cursor.encode(0)) == 0  # all 4 wait already
    await rig.service.resend(KEY, row.id, ids[0])
    waiting = [d for d in await _deliveries(rig, row.id) if d["status"] == "pending"]
    assert sorted(d["eventId"] for d in waiting) == sorted(ids)


async def test_an_endpoint_holds_at_most_10000_waiting_deliveries(rig: Rig) -> None:
    from propdata.webhooks.schemas import MAX_PENDING

    async with receiving() as receiver:
        url = receiver.url
    row, _ = await rig.service.create(KEY, NewEndpoint(url=url))
    await rig.events(OWNER, MAX_PENDING + 50)
    dispatcher = rig.dispatcher()
    await dispatcher.fan_out()
    await dispatcher.fan_out()
    total, _ = await rig.service.deliveries(KEY, row.id, 1, 0)
    assert total == MAX_PENDING  # the 50 newest wait in the log, not as deliveries
    with pytest.raises(Conflict):
        await rig.service.test(KEY, row.id)


async def test_a_revoked_key_s_waiting_deliveries_are_cancelled_and_never_sent(rig: Rig) -> None:
    from propdata.accounts.keys import CustomLimits, KeyService

    keys = KeyService(rig.db)
    gone, _ = await keys.create("developer", None, CustomLimits())
    stays, _ = await keys.create("developer", None, CustomLimits())
    async with receiving(answer=lambda _: (500, {})) as receiver:
        hooks = {}
        for key in (gone, stays):
            hooks[key.id], _ = await rig.service.create(key, NewEndpoint(url=receiver.url))
            await rig.events(owner_of(key), 2)
        dispatcher = rig.dispatcher()
        await dispatcher.run_once()  # each fails once, and waits
        await keys.revoke(gone.id)
        await rig.events(owner_of(gone), 1)  # produced before the revocation, say
        rig.clock.advance(60)
        assert await dispatcher.run_once() == 2  # the other owner's alone
    assert len(receiver.received) == 4 + 2
    _, listed = await rig.service.deliveries(gone, hooks[gone.id].id, 100, 0)
    assert {(d.status, d.error) for d in listed if d.attempt == 2} == {("failed", "owner")}
    assert not [d for d in listed if d.status == "pending"]
    _, theirs = await rig.service.deliveries(stays, hooks[stays.id].id, 100, 0)
    assert [d.status for d in theirs if d.attempt == 3] == ["pending", "pending"]
