"""Every method of `Client` and `AsyncClient` against a live `propdata serve`."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING

import httpx
import pytest

from propdata_client import (
    AsyncClient,
    AuthenticationError,
    Client,
    InvalidParameterError,
    Market,
    NotFoundError,
    Property,
    PropertySummary,
)

pytestmark = pytest.mark.slow

if TYPE_CHECKING:
    from conftest import Live

IA = 27  # records of the test catalogue in Iowa (ZIP codes 50010 and 50112)
ALL = 42


@pytest.fixture
def client(live: Live, key: str) -> Iterator[Client]:
    with Client(api_key=key, base_url=live.base_url) as c:
        yield c


@pytest.fixture
async def aclient(live: Live, key: str) -> AsyncIterator[AsyncClient]:
    async with AsyncClient(api_key=key, base_url=live.base_url) as c:
        yield c


def check_t001(record: Property) -> None:
    assert record.id == "t-001"
    assert record.status == "recentlySold"
    assert record.address.street_address == "101 Oak Street"
    assert record.address.zip_code == "50112" and record.address.county == "Poweshiek"
    assert record.address.fips_code == "19157"
    assert record.price_history[0].event == "sold"
    assert record.price_history[0].date == dt.date(2026, 10, 15)
    assert record.price_history[0].source == "publicRecord"
    assert record.tax_history[0].year == 2025
    assert record.last_updated == dt.datetime(2026, 2, 2, 1, 0, tzinfo=dt.timezone.utc)
    assert record.value_estimate is not None and record.value_estimate.value == 245_000
    assert record.scores is not None and record.coordinates is not None
    assert record.to_dict()["address"]["zipCode"] == "50112"  # type: ignore[index]


# -- Client -------------------------------------------------------------------------------


def test_properties_get(client: Client) -> None:
    check_t001(client.properties.get("t-001"))


def test_properties_lookup_normalises_the_address(client: Client) -> None:
    found = client.properties.lookup("101 OAK ST.", "grinnell", "ia")
    assert found.id == "t-001" and found.address.city == "Grinnell"
    assert client.properties.lookup("5 Broadway", "New York", "NY", zip_code="10002").id == "t-041"


def test_properties_lookup_by_parcel_number_and_the_assessors_fields(client: Client) -> None:
    assert client.properties.lookup(parcel_id="0907202030").id == "t-000"
    home = client.properties.get("t-000")
    assert (home.parcel_id, home.garage_spaces, home.basement_finished_area) == (
        "0907202030",
        2.0,
        600,
    )
    assert (home.fireplaces, home.overall_quality, home.overall_condition) == (1, 6, 5)
    other = client.properties.get("t-001")
    assert other.parcel_id is None and other.overall_quality is None


def test_properties_search_one_page(client: Client) -> None:
    page = client.properties.search(state="IA", limit=5, sort="listPrice", order="asc")
    assert page.meta.total == IA and page.meta.limit == 5 and page.meta.offset == 0
    assert len(page.data) == 5 and page.next_offset == 5 and page.has_more
    prices = [item.list_price for item in page.data]
    assert all(isinstance(p, int) for p in prices) and prices == sorted(prices)  # type: ignore[type-var]
    last = client.properties.search(state="IA", limit=5, offset=25)
    assert len(last.data) == 2 and last.next_offset is None and not last.has_more


def test_search_all_walks_every_page(live: Live, key: str) -> None:
    sent: list[httpx.Request] = []
    http = httpx.Client(event_hooks={"request": [sent.append]})
    with http, Client(api_key=key, base_url=live.base_url, http_client=http) as client:
        items = list(client.properties.search_all(page_size=4, sort="listPrice"))
        assert len(items) == ALL and all(isinstance(i, PropertySummary) for i in items)
        assert len({i.id for i in items}) == ALL
        assert len(sent) == 11  # ceil(42 / 4) pages, no more
        # the first page at offset 0, then each page's meta.nextCursor, never an offset
        assert sent[0].url.params["offset"] == "0" and "cursor" not in sent[0].url.params
        assert all("offset" not in r.url.params for r in sent[1:])
        assert len({r.url.params["cursor"] for r in sent[1:]}) == 10
        one_page = client.properties.search(limit=100, sort="listPrice")
        assert [i.id for i in items] == [i.id for i in one_page.data]
        assert [i.id for i in client.properties.search_all(zip_code="10002")] == ["t-041"]
        assert list(client.properties.search_all(min_price=10**9)) == []


def test_properties_history(client: Client) -> None:
    history = client.properties.history("t-001")
    assert history.id == "t-001"
    assert [e.event for e in history.price_history] == ["sold", "pendingSale", "listedForSale"]
    assert history.price_history[1].price is None
    assert history.tax_history[0].tax_paid == 3_100


def test_properties_valuation(client: Client) -> None:
    valuation = client.properties.valuation("t-001")
    assert valuation.id == "t-001"
    assert valuation.value_estimate is not None and valuation.rent_estimate is not None
    assert valuation.value_estimate.as_of_date == dt.date(2026, 11, 21)
    assert valuation.gross_yield == pytest.approx(12 * 1_700 / 245_000, abs=1e-4)
    assert isinstance(valuation.comparables, list)


def test_markets_get(client: Client) -> None:
    market = client.markets.get("50010")
    assert (market.zip_code, market.city, market.state) == ("50010", "Ames", "IA")
    assert market.snapshot.date == dt.date(2026, 11, 21)
    assert market.snapshot.active_listings >= 1
    assert isinstance(market.snapshot.new_listings_30d, int)


def test_markets_history(client: Client) -> None:
    history = client.markets.history("10001", months=3)
    assert history.zip_code == "10001" and 1 <= len(history.history) <= 3
    months = [entry.month for entry in history.history]
    assert months == sorted(months, reverse=True) and months[0] == "2026-11"
    assert len(client.markets.history("10001").history) >= len(history.history)


def test_markets_search(client: Client) -> None:
    page = client.markets.search(state="IA")
    assert [m.zip_code for m in page.data] == ["50010", "50112"] and page.meta.total == 2
    assert [m.zip_code for m in client.markets.search(zip_code="100").data] == ["10001", "10002"]
    every = list(client.markets.search_all(page_size=1))
    assert [m.zip_code for m in every] == ["10001", "10002", "50010", "50112"]
    assert all(isinstance(m, Market) for m in every)


def test_auth_status_and_last_rate_limit(client: Client) -> None:
    assert client.last_rate_limit is None
    status = client.auth.status()
    assert status.plan == "enterprise" and status.status == "active"
    assert status.key_id.startswith("key_")
    assert status.limits.per_minute == 1_000_000 and status.limits.daily is None
    assert status.usage.day is None and status.usage.minute.remaining >= 0
    client.properties.get("t-002")
    limits = client.last_rate_limit
    assert limits is not None and limits.limit == 1_000_000
    assert limits.remaining is not None and 0 < limits.remaining < 1_000_000
    assert limits.reset is not None and limits.reset >= int(dt.datetime.now().timestamp()) - 5
    assert limits.quota_limit is None and limits.retry_after is None  # no daily quota


def test_key_and_url_from_the_environment(
    live: Live, key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PROPDATA_API_KEY", key)
    monkeypatch.setenv("PROPDATA_BASE_URL", live.base_url + "/")
    with Client() as client:
        assert client.base_url == live.base_url
        assert client.properties.get("t-003").id == "t-003"


def test_no_key_is_refused_before_any_request(live: Live) -> None:
    with pytest.raises(AuthenticationError) as caught:
        Client(base_url=live.base_url)
    assert caught.value.code == "missing_api_key" and caught.value.status is None
    assert "PROPDATA_API_KEY" in str(caught.value)


def test_the_key_is_never_in_the_client_repr(live: Live, key: str) -> None:
    with Client(api_key=key, base_url=live.base_url) as client:
        assert key not in repr(client) and key not in repr(vars(client))


def test_path_parameters_are_encoded(client: Client) -> None:
    """An id is one path segment, whatever it holds: never another path or a query."""
    sent: list[httpx.Request] = []
    client._http.event_hooks["request"] = [sent.append]
    for odd in ("..", ".", "t-001?x=1", "%2e%2e", "t-001#x"):
        with pytest.raises((NotFoundError, InvalidParameterError)):
            client.properties.get(odd)
        assert sent[-1].url.raw_path.count(b"/") == 3 and sent[-1].url.query == b""
    for bad in ("", "t-001/history", "../auth/status"):
        with pytest.raises(ValueError):
            client.properties.get(bad)


# -- AsyncClient --------------------------------------------------------------------------


async def test_async_properties(aclient: AsyncClient) -> None:
    check_t001(await aclient.properties.get("t-001"))
    assert (await aclient.properties.lookup("101 Oak Street", "Grinnell", "IA")).id == "t-001"
    page = await aclient.properties.search(zip_code="50010", limit=3)
    assert page.meta.total == 14 and len(page.data) == 3
    history = await aclient.properties.history("t-001")
    assert history.price_history[0].event == "sold"
    valuation = await aclient.properties.valuation("t-001")
    assert valuation.value_estimate is not None


async def test_async_for_walks_every_page(aclient: AsyncClient) -> None:
    ids = [item.id async for item in aclient.properties.search_all(page_size=5)]
    assert len(ids) == ALL and len(set(ids)) == ALL
    iowa = [item.id async for item in aclient.properties.search_all(state="IA", page_size=10)]
    assert len(iowa) == IA
    zips = [m.zip_code async for m in aclient.markets.search_all(state="NY", page_size=1)]
    assert zips == ["10001", "10002"]


async def test_async_markets_and_auth(aclient: AsyncClient) -> None:
    assert (await aclient.markets.get("50112")).city == "Grinnell"
    history = await aclient.markets.history("50112", months=2)
    assert 1 <= len(history.history) <= 2
    page = await aclient.markets.search(city="new york")
    assert page.meta.total == 2
    status = await aclient.auth.status()
    assert status.plan == "enterprise"
    assert aclient.last_rate_limit is not None and aclient.last_rate_limit.limit == 1_000_000


async def test_async_key_from_the_environment(
    live: Live, key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PROPDATA_API_KEY", key)
    monkeypatch.setenv("PROPDATA_BASE_URL", live.base_url)
    async with AsyncClient() as client:
        assert (await client.properties.get("t-004")).id == "t-004"
