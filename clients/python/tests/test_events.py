"""Saved searches, the event log, the stream and webhooks through the SDK against a live
`propdata serve` (its own store, so loads do not disturb the session's catalogue; loopback
allowed for webhook deliveries, so a receiver in this process gets them)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

import pytest
from tests.conftest import build_store, new_store
from tests.factories import record
from tests.live import run_apart, running_server

from conftest import Live
from propdata_client import (
    Client,
    Event,
    NotFoundError,
    PlanLimitError,
    StreamedEvent,
    verify_webhook,
)
from stubserver import Receiver

pytestmark = pytest.mark.slow

T = TypeVar("T")
PATIENCE = 20.0  # seconds a test waits for an event or a delivery before it fails


def eventually(probe: Callable[[], T | None], what: str) -> T:
    """The first non-None answer of `probe`, asked every 0.2 s for PATIENCE seconds."""
    deadline = time.monotonic() + PATIENCE
    while True:
        found = probe()
        if found is not None:
            return found
        assert time.monotonic() < deadline, f"no {what} within {PATIENCE} s"
        time.sleep(0.2)


@pytest.fixture(scope="module")
def events_live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    folder = tmp_path_factory.mktemp("sdk-events-store")
    store = run_apart(new_store("embedded", folder))
    run_apart(build_store(store))
    env = {**store.env(), "PROPDATA_CACHE_TTL": "0",
           "PROPDATA_WEBHOOK_ALLOWED_NETWORKS": "127.0.0.0/8"}  # fmt: skip
    with running_server(env) as base_url:
        yield Live(base_url, store)


@pytest.fixture(scope="module")
def events_key(events_live: Live) -> str:
    return events_live.key("enterprise", per_minute=1_000_000)


@pytest.fixture(scope="module")
def client(events_live: Live, events_key: str) -> Iterator[Client]:
    with Client(api_key=events_key, base_url=events_live.base_url) as c:
        yield c


def test_saved_searches_round_trip(client: Client, events_live: Live) -> None:
    made = client.searches.create("Ames", filters={"zip_code": "50010", "max_price": 10_000_000})
    assert made.id.startswith("srch_") and made.match_count > 0
    assert made.filters == {"zipCode": "50010", "maxPrice": 10_000_000}
    assert made.id in {s.id for s in client.searches.list_all()}
    assert client.searches.get(made.id).name == "Ames"
    renamed = client.searches.update(made.id, name="Ames, renamed", property_ids=["t-010"])
    assert renamed.name == "Ames, renamed" and renamed.property_ids == ["t-010"]
    assert renamed.match_count <= made.match_count
    other = events_live.key("enterprise")
    with (
        Client(api_key=other, base_url=events_live.base_url) as stranger,
        pytest.raises(NotFoundError),
    ):
        stranger.searches.get(made.id)  # another owner's id is a 404
    client.searches.delete(made.id)
    with pytest.raises(NotFoundError):
        client.searches.get(made.id)


def test_the_free_plan_keeps_three_searches(events_live: Live) -> None:
    with Client(api_key=events_live.key("free"), base_url=events_live.base_url) as free:
        for n in range(3):
            free.searches.create(f"s{n}", filters={"zip_code": "50010"})
        with pytest.raises(PlanLimitError) as caught:
            free.searches.create("one too many", filters={"zip_code": "50010"})
        assert caught.value.status == 403 and caught.value.code == "plan_limit_reached"


def test_a_load_makes_events_in_the_log_and_the_stream(
    client: Client, events_live: Live, events_key: str
) -> None:
    search = client.searches.create("t-010 only", property_ids=["t-010"])
    start = client.events.list(search_id=search.id).next_cursor
    streamed: list[StreamedEvent] = []

    def follow() -> None:
        with Client(api_key=events_key, base_url=events_live.base_url) as reader:
            for item in reader.events.stream(start, search_id=search.id):
                streamed.append(item)
                if item.event.type == "property.priceChanged":
                    return

    thread = threading.Thread(target=follow, daemon=True)
    thread.start()
    events_live.load([record("t-010", list_price=123_457)])

    def priced() -> list[Event] | None:
        found = [e for p in client.events.follow(start, search_id=search.id) for e in p.data]
        return found if any(e.type == "property.priceChanged" for e in found) else None

    logged = eventually(priced, "property.priceChanged in the log")
    change = next(e for e in logged if e.type == "property.priceChanged")
    assert change.search_id == search.id and "listPrice" in change.data["changes"]
    assert change.data["property"]["listPrice"] == 123_457
    thread.join(PATIENCE)
    assert streamed and streamed[-1].event.id == change.id
    client.searches.delete(search.id)


def test_a_webhook_delivers_signed_events_to_a_receiver(client: Client, receiver: Receiver) -> None:
    hook = client.webhooks.create(receiver.url, description="sdk test")
    assert hook.status == "enabled" and hook.secret.startswith("whsec_")
    client.webhooks.test(hook.id)
    headers, body = eventually(lambda: next(iter(receiver.of_type("webhook.test")), None),
                               "webhook.test delivery")  # fmt: skip
    event = verify_webhook(body, headers, hook.secret)
    assert event.type == "webhook.test" and headers["webhook-id"] == event.id
    deliveries = eventually(
        lambda: (
            [d for d in client.webhooks.deliveries(hook.id).data if d.status == "succeeded"] or None
        ),
        "a succeeded delivery",
    )
    assert deliveries[0].response_status == 204
    client.webhooks.resend(hook.id, deliveries[0].event_id)  # the same event, once more
    again = eventually(lambda: receiver.of_type("webhook.test")[1:] or None, "a resend")
    assert again[0][0]["webhook-id"] == event.id
    new = client.webhooks.rotate_secret(hook.id, grace_seconds=600)
    client.webhooks.test(hook.id)
    headers, body = eventually(
        lambda: (
            receiver.of_type("webhook.test")[2]
            if len(receiver.of_type("webhook.test")) > 2
            else None
        ),
        "a third webhook.test delivery",
    )
    assert len(headers["webhook-signature"].split()) == 2
    assert verify_webhook(body, headers, new).id == verify_webhook(body, headers, hook.secret).id
    off = client.webhooks.update(hook.id, status="disabled")
    assert off.status == "disabled" and off.disabled_reason == "owner"
    assert client.webhooks.update(hook.id, status="enabled").status == "enabled"
    assert client.webhooks.replay(hook.id, client.events.list().next_cursor) == 0
    client.webhooks.delete(hook.id)
    with pytest.raises(NotFoundError):
        client.webhooks.get(hook.id)
