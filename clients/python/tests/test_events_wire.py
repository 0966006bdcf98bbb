"""The events surface of the SDK (saved searches, webhooks, the event log and its stream)
against a scripted local server: the requests it makes, byte for byte, and how it reads
the answers, a cut stream, a 503 and a 429. tests/test_events.py runs the same surface
against a live `propdata serve`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

import pytest

from propdata_client import (
    AsyncClient,
    AuthenticationError,
    Client,
    CreatedWebhook,
    InvalidParameterError,
    PlanLimitError,
    PropdataError,
    SavedSearch,
    ServiceUnavailableError,
)
from stubserver import Answer, Stub, event, sse, stub_server

KEY = "pmd_live_stub"
SEARCH = {
    "id": "srch_a",
    "name": "Ames under 400k",
    "filters": {"zipCode": "50010", "maxPrice": 400000},
    "propertyIds": [],
    "createdAt": "2026-11-25T12:00:00.000Z",
    "matchCount": 7,
    "dataVersion": 3,
}
WEBHOOK = {
    "id": "wh_a",
    "url": "https://hooks.example.com/propdata",
    "eventTypes": ["property.priceChanged"],
    "searchIds": None,
    "description": "prices",
    "status": "enabled",
    "disabledReason": None,
    "createdAt": "2026-11-25T12:00:00.000Z",
}
SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


def error(status: int, code: str, **more: object) -> dict[str, object]:
    return {"error": {"code": code, "message": f"stub {code}", "status": status,
                      "requestId": "stub", **more}}  # fmt: skip


class Waits:
    """The `sleep` hook: records each wait instead of sleeping."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)

    async def asleep(self, seconds: float) -> None:
        self.waits.append(seconds)


@pytest.fixture
def stub() -> Iterator[Stub]:
    with stub_server() as s:
        yield s


@pytest.fixture
def waits() -> Waits:
    return Waits()


@pytest.fixture
def client(stub: Stub, waits: Waits) -> Iterator[Client]:
    with Client(api_key=KEY, base_url=stub.base_url, sleep=waits, timeout=5) as c:
        yield c


# -- saved searches -----------------------------------------------------------------------


def test_create_a_search_sends_the_filters_by_their_wire_names(stub: Stub, client: Client) -> None:
    stub.json("POST", "/v1/searches", {"data": SEARCH}, 201)
    found = client.searches.create(
        "Ames under 400k",
        filters={"zip_code": "50010", "max_price": 400000, "bbox": (-93.7, 41.9, -93.5, 42.1),
                 "minBeds": 3, "city": None},
        property_ids=("t-001", "t-002"),
    )  # fmt: skip
    assert isinstance(found, SavedSearch)
    assert found.match_count == 7 and found.filters == {"zipCode": "50010", "maxPrice": 400000}
    assert found.data_version == 3
    assert found.created_at == dt.datetime(2026, 11, 25, 12, tzinfo=dt.timezone.utc)
    (sent,) = stub.seen("POST", "/v1/searches")
    assert sent.headers["content-type"] == "application/json"
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    assert sent.json() == {
        "name": "Ames under 400k",
        "filters": {"zipCode": "50010", "maxPrice": 400000, "bbox": "-93.7,41.9,-93.5,42.1",
                    "minBeds": 3},
        "propertyIds": ["t-001", "t-002"],
    }  # fmt: skip


def test_paging_sort_and_fields_are_not_filters(client: Client) -> None:
    for name in ("limit", "sort", "fields", "cursor", "nonsense"):
        with pytest.raises(TypeError, match=name):
            client.searches.create("x", filters={name: 1})


def test_list_get_update_delete_a_search(stub: Stub, client: Client) -> None:
    stub.json("GET", "/v1/searches", {"meta": {"total": 1, "limit": 25, "offset": 0},
                                      "data": [SEARCH]})  # fmt: skip
    stub.json("GET", "/v1/searches/srch_a", {"data": SEARCH})
    stub.json("PATCH", "/v1/searches/srch_a", {"data": {**SEARCH, "name": "renamed"}})
    stub.on("DELETE", "/v1/searches/srch_a", Answer(204))
    page = client.searches.list(limit=25)
    assert page.meta.total == 1 and page.data[0].id == "srch_a"
    assert [s.id for s in client.searches.list_all()] == ["srch_a"]
    assert client.searches.get("srch_a").name == "Ames under 400k"
    assert client.searches.update("srch_a", name="renamed").name == "renamed"
    assert client.searches.delete("srch_a") is None
    assert stub.seen("GET", "/v1/searches")[0].query == {"limit": "25"}
    assert stub.seen("PATCH", "/v1/searches/srch_a")[0].json() == {"name": "renamed"}


def test_a_plan_limit_is_its_own_error(stub: Stub, client: Client) -> None:
    stub.json("POST", "/v1/searches", error(403, "plan_limit_reached"), 403)
    with pytest.raises(PlanLimitError) as caught:
        client.searches.create("x", filters={"zip_code": "50010"})
    assert caught.value.status == 403 and caught.value.code == "plan_limit_reached"


def test_a_bad_filter_names_its_dotted_parameter(stub: Stub, client: Client) -> None:
    stub.json("POST", "/v1/searches", error(400, "invalid_parameter",
                                            parameter="filters.minPrice"), 400)  # fmt: skip
    with pytest.raises(InvalidParameterError) as caught:
        client.searches.create("x", filters={"min_price": -1})
    assert caught.value.parameter == "filters.minPrice"


# -- retries of writes --------------------------------------------------------------------


def test_a_post_is_retried_after_a_503_but_not_after_a_lost_connection(
    stub: Stub, client: Client, waits: Waits
) -> None:
    stub.on("POST", "/v1/searches", Answer(503, error(503, "service_unavailable"),
                                           {"Retry-After": "2"}),
            Answer(201, {"data": SEARCH}))  # fmt: skip
    assert client.searches.create("x", filters={"zip_code": "50010"}).id == "srch_a"
    assert len(waits.waits) == 1 and 2 <= waits.waits[0] < 3
    with Client(api_key=KEY, base_url="http://127.0.0.1:9", sleep=waits) as gone:
        before = len(waits.waits)
        with pytest.raises(PropdataError) as caught:
            gone.searches.create("x", filters={"zip_code": "50010"})
        assert caught.value.code == "connection_error" and len(waits.waits) == before
        with pytest.raises(PropdataError):
            gone.searches.delete("srch_a")  # idempotent: retried with backoff
        assert len(waits.waits) == before + 2


# -- webhooks -----------------------------------------------------------------------------


def test_webhooks_every_operation(stub: Stub, client: Client) -> None:
    stub.json("POST", "/v1/webhooks", {"data": {**WEBHOOK, "secret": SECRET}}, 201)
    stub.json("GET", "/v1/webhooks", {"meta": {"total": 1, "limit": 25, "offset": 0},
                                      "data": [WEBHOOK]})  # fmt: skip
    stub.json("GET", "/v1/webhooks/wh_a", {"data": WEBHOOK})
    stub.json("PATCH", "/v1/webhooks/wh_a", {"data": {**WEBHOOK, "status": "disabled",
                                                      "disabledReason": "owner"}})  # fmt: skip
    stub.json("POST", "/v1/webhooks/wh_a/rotate-secret", {"data": {"secret": "whsec_bmV3"}})
    stub.on("POST", "/v1/webhooks/wh_a/test", Answer(202))
    stub.json("POST", "/v1/webhooks/wh_a/deliveries/evt_1/resend", {"data": {"queued": 1}}, 202)
    stub.json("POST", "/v1/webhooks/wh_a/replay", {"data": {"queued": 12}}, 202)
    delivery = {"eventId": "evt_1", "type": "webhook.test", "attempt": 2, "status": "failed",
                "responseStatus": 500, "error": "http_status", "durationMs": 31,
                "attemptedAt": "2026-11-25T12:00:05.000Z", "nextAttemptAt": None}  # fmt: skip
    stub.json("GET", "/v1/webhooks/wh_a/deliveries",
              {"meta": {"total": 1, "limit": 25, "offset": 0}, "data": [delivery]})  # fmt: skip
    stub.on("DELETE", "/v1/webhooks/wh_a", Answer(204))

    made = client.webhooks.create("https://hooks.example.com/propdata",
                                  event_types=["property.priceChanged"], description="prices")  # fmt: skip
    assert isinstance(made, CreatedWebhook) and made.secret == SECRET
    assert stub.seen("POST", "/v1/webhooks")[0].json() == {
        "url": "https://hooks.example.com/propdata",
        "eventTypes": ["property.priceChanged"],
        "description": "prices",
    }
    assert client.webhooks.list().data[0].search_ids is None
    assert [w.id for w in client.webhooks.list_all(page_size=10)] == ["wh_a"]
    assert client.webhooks.get("wh_a").event_types == ["property.priceChanged"]
    off = client.webhooks.update("wh_a", status="disabled")
    assert off.status == "disabled" and off.disabled_reason == "owner"
    assert stub.seen("PATCH", "/v1/webhooks/wh_a")[0].json() == {"status": "disabled"}
    assert client.webhooks.rotate_secret("wh_a", grace_seconds=0) == "whsec_bmV3"
    assert stub.seen("POST", "/v1/webhooks/wh_a/rotate-secret")[0].json() == {"graceSeconds": 0}
    assert client.webhooks.test("wh_a") is None
    assert client.webhooks.replay("wh_a", "c_10") == 12
    assert stub.seen("POST", "/v1/webhooks/wh_a/replay")[0].json() == {"since": "c_10"}
    (d,) = client.webhooks.deliveries("wh_a").data
    assert (d.status, d.error, d.response_status, d.next_attempt_at) == (
        "failed",
        "http_status",
        500,
        None,
    )
    assert [x.event_id for x in client.webhooks.deliveries_all("wh_a")] == ["evt_1"]
    assert client.webhooks.resend("wh_a", "evt_1") is None
    assert stub.seen("POST", "/v1/webhooks/wh_a/deliveries/evt_1/resend")
    client.webhooks.delete("wh_a")
    assert stub.seen("DELETE", "/v1/webhooks/wh_a")
    with pytest.raises(ValueError, match="since"):
        client.webhooks.replay("wh_a", "")


# -- the event log ------------------------------------------------------------------------


def test_events_list_sends_its_parameters(stub: Stub, client: Client) -> None:
    stub.json("GET", "/v1/events", {"meta": {"limit": 2, "nextCursor": "c_2"},
                                    "data": [event(1), event(2, "search.entered")]})  # fmt: skip
    page = client.events.list("c_0", types=["property.priceChanged", "search.entered"],
                              search_id="srch_a", limit=2)  # fmt: skip
    assert page.next_cursor == "c_2" and [e.sequence for e in page.data] == [1, 2]
    assert page.data[0].search_id == "srch_a" and page.data[1].type == "search.entered"
    assert page.data[0].data["changes"] == ["listPrice"]
    assert stub.requests[0].query == {"since": "c_0", "limit": "2", "searchId": "srch_a",
                                      "types": "property.priceChanged,search.entered"}  # fmt: skip


def test_follow_passes_each_next_cursor_until_caught_up(stub: Stub, client: Client) -> None:
    stub.on("GET", "/v1/events",
            Answer(200, {"meta": {"limit": 2, "nextCursor": "c_2"}, "data": [event(1), event(2)]}),
            Answer(200, {"meta": {"limit": 2, "nextCursor": "c_3"}, "data": [event(3)]}),
            Answer(200, {"meta": {"limit": 2, "nextCursor": "c_3"}, "data": []}))  # fmt: skip
    pages = list(client.events.follow(types="search.entered", page_size=2))
    assert [[e.sequence for e in p.data] for p in pages] == [[1, 2], [3]]
    sent = [r.query for r in stub.requests]
    assert sent == [
        {"types": "search.entered", "limit": "2"},
        {"since": "c_2", "types": "search.entered", "limit": "2"},
        {"since": "c_3", "types": "search.entered", "limit": "2"},
    ]


# -- the stream ---------------------------------------------------------------------------


def test_the_stream_resumes_with_last_event_id_after_a_cut(
    stub: Stub, client: Client, waits: Waits
) -> None:
    stub.on("GET", "/v1/events/stream",
            Answer(chunks=[b": hello\n\nretry: 250\n\n", sse("c_1", event(1)),
                           sse("c_2", event(2))[:30]]),  # cut inside the second event
            Answer(chunks=[sse("c_2", event(2)), b":\n\n", sse("c_3", event(3))]))  # fmt: skip
    got = []
    for item in client.events.stream():
        got.append((item.cursor, item.event.sequence))
        if len(got) == 3:
            break
    assert got == [("c_1", 1), ("c_2", 2), ("c_3", 3)]
    first, second = stub.seen("GET", "/v1/events/stream")
    assert "last-event-id" not in first.headers
    assert second.headers["last-event-id"] == "c_1"
    assert first.headers["accept"] == "text/event-stream"
    assert len(waits.waits) == 1 and 0.25 <= waits.waits[0] < 0.75  # the server's retry:


def test_the_stream_starts_after_since_and_filters_on_the_client(
    stub: Stub, client: Client
) -> None:
    stub.on("GET", "/v1/events/stream",
            Answer(chunks=[sse("c_1", event(1, "search.entered")), sse("c_2", event(2)),
                           sse("c_3", event(3, search_id="srch_b")), sse("c_4", event(4))]))  # fmt: skip
    wanted = client.events.stream("c_0", types=["property.priceChanged"], search_id="srch_a",
                                  max_reconnects=0)  # fmt: skip
    assert [item.cursor for item in wanted] == ["c_2", "c_4"]
    assert stub.requests[0].headers["last-event-id"] == "c_0"


def test_the_stream_waits_out_a_503_and_raises_a_401(
    stub: Stub, client: Client, waits: Waits
) -> None:
    stub.on("GET", "/v1/events/stream",
            Answer(503, error(503, "service_unavailable"), {"Retry-After": "3"}),
            Answer(chunks=[sse("c_1", event(1))]),
            Answer(401, error(401, "revoked_api_key")))  # fmt: skip
    stream = client.events.stream()
    assert next(iter(stream)).cursor == "c_1"
    with pytest.raises(AuthenticationError):
        next(iter(stream))
    assert 3 <= waits.waits[0] < 4
    assert stub.requests[2].headers["last-event-id"] == "c_1"


def test_a_stream_that_cannot_connect_gives_up_after_max_reconnects(waits: Waits) -> None:
    with (
        Client(api_key=KEY, base_url="http://127.0.0.1:9", sleep=waits) as c,
        pytest.raises(PropdataError) as caught,
    ):
        list(c.events.stream(max_reconnects=3))
    assert caught.value.code == "connection_error" and len(waits.waits) == 3
    assert waits.waits == sorted(waits.waits)  # a growing backoff


def test_a_streamed_event_that_is_not_json_is_an_invalid_response(
    stub: Stub, client: Client
) -> None:
    stub.on("GET", "/v1/events/stream", Answer(chunks=[b"id: c_1\ndata: {nope\n\n"]))
    with pytest.raises(PropdataError) as caught:
        list(client.events.stream(max_reconnects=0))
    assert caught.value.code == "invalid_response"


async def test_async_events(stub: Stub, waits: Waits) -> None:
    stub.json("POST", "/v1/searches", {"data": SEARCH}, 201)
    stub.json("POST", "/v1/webhooks/wh_a/replay", {"data": {"queued": 3}}, 202)
    stub.on("GET", "/v1/events/stream",
            Answer(chunks=[sse("c_1", event(1))]), Answer(chunks=[sse("c_2", event(2))]))  # fmt: skip
    async with AsyncClient(api_key=KEY, base_url=stub.base_url, sleep=waits.asleep) as c:
        assert (await c.searches.create("x", filters={"zipCode": "50010"})).match_count == 7
        assert await c.webhooks.replay("wh_a", "c_0") == 3
        got = []
        async for item in c.events.stream():
            got.append(item.cursor)
            if len(got) == 2:
                break
    assert got == ["c_1", "c_2"]
    assert stub.seen("GET", "/v1/events/stream")[1].headers["last-event-id"] == "c_1"


def test_the_parser_reads_the_sse_format() -> None:
    from propdata_client._core import SseParser

    parser = SseParser()
    lines = ["id: 1", "event: a", "data: x", "data:y", ": comment", "", "", "id", "data: z", ""]
    messages = [m for m in map(parser.feed, lines) if m is not None]
    assert [(m.id, m.event, m.data) for m in messages] == [("1", "a", "x\ny"), ("", "message", "z")]


def test_service_unavailable_on_every_retry_raises(stub: Stub, waits: Waits) -> None:
    stub.on("GET", "/v1/events", Answer(503, error(503, "service_unavailable")))
    with (
        Client(api_key=KEY, base_url=stub.base_url, sleep=waits, max_retries=1) as c,
        pytest.raises(ServiceUnavailableError),
    ):
        c.events.list()
    assert len(stub.requests) == 2
