"""On the wire: `fields`, conditional requests (ETag / 304) and the change feed,
with both clients against a live `propdata serve`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from tests.factories import record

from propdata_client import (
    AsyncClient,
    ChangesPage,
    Client,
    InvalidParameterError,
    NotFoundError,
    Page,
    PropdataError,
    PropertyChange,
)

pytestmark = pytest.mark.slow

if TYPE_CHECKING:
    from conftest import Live

ALL = 42


@pytest.fixture
def client(live: Live, key: str) -> Iterator[Client]:
    with Client(api_key=key, base_url=live.base_url) as c:
        yield c


class Recorder:
    """The requests a client sent and the statuses and ETags that came back."""

    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []
        self.responses: list[httpx.Response] = []

    def hooks(self) -> dict[str, list[Any]]:
        return {"request": [self.requests.append], "response": [self.responses.append]}

    @property
    def statuses(self) -> list[int]:
        return [r.status_code for r in self.responses]


# -- fields -------------------------------------------------------------------------------


def test_fields_on_every_property_read(client: Client) -> None:
    home = client.properties.get("t-001", fields=["listPrice", "address.zipCode"])
    assert home == {"id": "t-001", "listPrice": 110_000, "address": {"zipCode": "50112"}}
    assert client.properties.get("t-001", fields="address.city,status") == {
        "id": "t-001", "status": "recentlySold", "address": {"city": "Grinnell"},
    }  # fmt: skip
    history = client.properties.history("t-001", fields=["priceHistory.event"])
    assert history == {"id": "t-001", "priceHistory": [
        {"event": "sold"}, {"event": "pendingSale"}, {"event": "listedForSale"}]}  # fmt: skip
    valuation = client.properties.valuation("t-001", fields=["valueEstimate.value"])
    assert valuation == {"id": "t-001", "valueEstimate": {"value": 245_000}}
    match = client.properties.lookup("101 Oak Street", "Grinnell", "IA", fields=["id"])
    assert match == {"id": "t-001"}


def test_fields_on_search_and_search_all(client: Client) -> None:
    page = client.properties.search(state="IA", limit=5, sort="listPrice", fields=["listPrice"])
    assert isinstance(page, Page) and page.meta.total == 27 and page.next_offset == 5
    assert all(set(item) == {"id", "listPrice"} for item in page.data)
    items = list(client.properties.search_all(page_size=10, fields=["address.state"]))
    assert len(items) == ALL and {i["address"]["state"] for i in items} == {"IA", "NY"}
    assert all(set(i) == {"id", "address"} for i in items)


def test_fields_without_fields_is_the_model(client: Client) -> None:
    full = client.properties.get("t-001")
    assert full.id == "t-001" and full.address.county == "Poweshiek"


def test_an_unknown_field_is_a_400_naming_fields(client: Client) -> None:
    for bad in (["price"], ["list_price"], [], ["listPrice", ""]):
        with pytest.raises(InvalidParameterError) as caught:
            client.properties.get("t-001", fields=bad)
        assert caught.value.parameter == "fields"
    with pytest.raises(TypeError):
        client.properties.get("t-001", fields=[1])  # type: ignore[list-item]


async def test_async_fields(live: Live, key: str) -> None:
    async with AsyncClient(api_key=key, base_url=live.base_url) as aclient:
        home = await aclient.properties.get("t-001", fields=["listPrice"])
        assert home == {"id": "t-001", "listPrice": 110_000}
        page = await aclient.properties.search(zip_code="50010", limit=2, fields=["status"])
        assert page.meta.total == 14 and all(set(i) == {"id", "status"} for i in page.data)
        ids = [i["id"] async for i in aclient.properties.search_all(page_size=20, fields=["id"])]
        assert len(ids) == ALL


# -- conditional requests -----------------------------------------------------------------


def test_a_repeated_read_is_a_304_answered_from_memory(live: Live, key: str) -> None:
    seen = Recorder()
    http = httpx.Client(event_hooks=seen.hooks())
    with http, Client(api_key=key, base_url=live.base_url, http_client=http) as client:
        first = client.properties.get("t-002")
        tag = client.last_etag
        assert tag is not None and tag.startswith('"') and not client.last_not_modified
        assert "If-None-Match" not in seen.requests[0].headers
        again = client.properties.get("t-002")
        assert seen.requests[1].headers["If-None-Match"] == tag
        assert seen.statuses == [200, 304] and seen.responses[1].headers["ETag"] == tag
        assert again == first and client.last_not_modified and client.last_etag == tag
        assert client.last_rate_limit is not None  # a 304 carries the rate headers too
        # every metered read: a search page, a cut-down record, a market, the feed
        for read in (
            lambda: client.properties.search(zip_code="50010", limit=3),
            lambda: client.properties.get("t-002", fields=["listPrice"]),
            lambda: client.markets.get("50010"),
            lambda: client.properties.changes(limit=5),
        ):
            assert read() == read() and client.last_not_modified
        assert seen.statuses[2:] == [200, 304] * 4
        # other parameters are another answer: no If-None-Match
        client.properties.search(zip_code="50010", limit=4)
        assert "If-None-Match" not in seen.requests[-1].headers and seen.statuses[-1] == 200
        # auth status carries no ETag and is never conditional
        client.auth.status()
        client.auth.status()
        assert "If-None-Match" not in seen.requests[-1].headers and client.last_etag is None


def test_the_etag_cache_can_be_turned_off_and_is_bounded(live: Live, key: str) -> None:
    seen = Recorder()
    http = httpx.Client(event_hooks=seen.hooks())
    with http, Client(api_key=key, base_url=live.base_url, http_client=http, etag_cache=0) as c:
        c.properties.get("t-003")
        c.properties.get("t-003")
        assert seen.statuses == [200, 200] and c.last_etag is not None
        assert all("If-None-Match" not in r.headers for r in seen.requests)
    with Client(api_key=key, base_url=live.base_url, etag_cache=2) as small:
        for pid in ("t-003", "t-004", "t-005", "t-005"):
            small.properties.get(pid)
        assert small.last_not_modified and len(small._etags) == 2
        small.properties.get("t-003")  # forgotten: the oldest went first
        assert not small.last_not_modified
    with pytest.raises(ValueError):
        Client(api_key=key, base_url=live.base_url, etag_cache=-1)


def test_a_changed_record_comes_back_whole_with_a_new_etag(own_live: Live) -> None:
    key = own_live.key("enterprise", per_minute=1_000_000)
    with Client(api_key=key, base_url=own_live.base_url) as client:
        before = client.properties.get("t-010")
        tag = client.last_etag
        client.properties.get("t-010")
        assert client.last_not_modified
        own_live.load([record("t-010", list_price=123_456)])
        after = client.properties.get("t-010")
        assert not client.last_not_modified and client.last_etag != tag
        assert after.list_price == 123_456 != before.list_price


async def test_async_conditional_reads(live: Live, key: str) -> None:
    seen = Recorder()

    async def on_request(request: httpx.Request) -> None:
        seen.requests.append(request)

    async def on_response(response: httpx.Response) -> None:
        seen.responses.append(response)

    http = httpx.AsyncClient(event_hooks={"request": [on_request], "response": [on_response]})
    async with http, AsyncClient(api_key=key, base_url=live.base_url, http_client=http) as c:
        first = await c.properties.valuation("t-001")
        assert await c.properties.valuation("t-001") == first and c.last_not_modified
        assert seen.statuses == [200, 304]
        assert seen.requests[1].headers["If-None-Match"] == c.last_etag


# -- the change feed ----------------------------------------------------------------------


def test_the_feed_starts_with_every_record_created(client: Client) -> None:
    page = client.properties.changes(limit=5)
    assert isinstance(page, ChangesPage) and page.meta.limit == 5 and len(page.data) == 5
    assert all(isinstance(c, PropertyChange) and c.change_type == "created" for c in page.data)
    assert page.data[0].last_updated.tzinfo is not None
    pages = list(client.properties.follow_changes(page_size=10))
    assert all(len(p.data) == 10 for p in pages[:-1]) and 1 <= len(pages[-1].data) <= 10
    changes = [c for p in pages for c in p.data]
    # the load's records first, then (at the server's start) the day's ageing of listings
    assert {c.change_type for c in changes[:ALL]} == {"created"}
    assert {c.change_type for c in changes[ALL:]} <= {"updated"}
    assert sorted(c.id for c in changes[:ALL]) == sorted(
        i.id for i in client.properties.search_all(page_size=100)
    )
    # caught up: the last cursor gives an empty page with the same cursor, and nothing more
    last = pages[-1].meta.next_cursor
    assert list(client.properties.follow_changes(last)) == []
    empty = client.properties.changes(since=last)
    assert empty.data == [] and empty.next_cursor == last


def test_the_feed_rejects_a_bad_cursor(client: Client) -> None:
    with pytest.raises(InvalidParameterError) as caught:
        client.properties.changes(since="not-a-cursor")
    assert caught.value.parameter == "since"


def test_following_the_feed_after_a_load(own_live: Live) -> None:
    key = own_live.key("enterprise", per_minute=1_000_000)
    with Client(api_key=key, base_url=own_live.base_url) as client:
        pages = list(client.properties.follow_changes(page_size=25))
        cursor = pages[-1].meta.next_cursor
        assert len({c.id for p in pages for c in p.data}) == ALL
        own_live.load([record("t-sdk-1"), record("t-011", list_price=111_111)])
        own_live.load([record("d-sdk-1")], origin="demo")
        own_live.load([record("d-sdk-2")], origin="demo", replace_origin=True)  # d-sdk-1 goes
        after = list(client.properties.follow_changes(cursor, page_size=2))
        changes = [(c.id, c.change_type) for p in after for c in p.data]
        assert changes == [
            ("t-sdk-1", "created"),
            ("t-011", "updated"),
            ("d-sdk-1", "created"),
            ("d-sdk-1", "removed"),
            ("d-sdk-2", "created"),
        ]
        assert [len(p.data) for p in after] == [2, 2, 1]
        assert client.properties.get("t-011").list_price == 111_111
        with pytest.raises(NotFoundError):
            client.properties.get("d-sdk-1")
        assert list(client.properties.follow_changes(after[-1].next_cursor)) == []


async def test_async_follow_changes(live: Live, key: str) -> None:
    async with AsyncClient(api_key=key, base_url=live.base_url) as aclient:
        first = await aclient.properties.changes(limit=3)
        assert len(first.data) == 3
        rest = [p async for p in aclient.properties.follow_changes(first.next_cursor)]
        ids = {c.id for page in [first, *rest] for c in page.data}
        assert len(ids) == ALL and rest[-1].data


def test_an_answer_that_does_not_decode_is_not_remembered() -> None:
    """A 200 whose body is not the documented shape (a proxy cut it, say) is never served
    again from memory for a 304: the next request goes without If-None-Match."""
    sent: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(200, headers={"ETag": '"cut"'}, content=b'{"data": {"id": 1')

    http = httpx.Client(transport=httpx.MockTransport(answer))
    with http, Client(api_key="pmd_live_x", base_url="http://sdk.test", http_client=http) as c:
        for _ in range(2):
            with pytest.raises(PropdataError) as caught:
                c.properties.get("t-001")
            assert caught.value.code == "invalid_response"
    assert len(sent) == 2 and all("If-None-Match" not in r.headers for r in sent)
