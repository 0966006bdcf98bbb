"""The OData client's own rules, with small fake servers (httpx.MockTransport) for what a
real one will not do: the manners, the query it builds, a nextLink to another host, $skip."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from propdata.replication.client import FeedClient, FeedError, Pacer
from propdata.replication.schemas import SourceConfig, Watermark


def test_the_pacer_keeps_the_hourly_allowance_and_two_a_second() -> None:
    now = [0.0]
    pacer = Pacer(3_600, lambda: now[0])
    assert pacer.wait() == 0.0
    pacer.sent()
    assert pacer.wait() == 1.0
    now[0] = 0.25
    assert pacer.wait() == 0.75
    assert Pacer(360_000).interval == 0.5  # never more than 2 a second


def records(keys: list[str], minute: int = 0) -> list[dict[str, object]]:
    return [{"ListingKey": k, "ModificationTimestamp": f"2024-05-01T00:{minute:02d}:00Z"}
            for k in keys]  # fmt: skip


async def collect(client: FeedClient, watermark: Watermark) -> list[tuple[str, list[str]]]:
    pages = []
    async with client:
        async for page in client.pages(watermark):
            pages.append((page.mode, [str(r["ListingKey"]) for r in page.records]))
    return pages


async def test_requests_carry_top_prefer_and_the_filter_in_parentheses() -> None:
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"value": records(["A"] if len(seen) == 1 else [])})

    config = SourceConfig(name="mls", url="https://feed.example/odata/Property", page_size=1,
                          filter="OriginatingSystemName eq 'x' or City eq 'Ames'", overlap=300)  # fmt: skip
    sleeps: list[float] = []

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    client = FeedClient(config, {}, httpx.MockTransport(answer), sleep=sleep)
    pages = await collect(client, Watermark("2024-05-01T01:00:00Z", "Z"))
    assert pages == [("first", ["A"]), ("keyset", [])]
    first = parse_qs(urlsplit(str(seen[0].url)).query)
    assert first["$filter"] == ["ModificationTimestamp ge 2024-05-01T00:55:00Z and"
                                " (OriginatingSystemName eq 'x' or City eq 'Ames')"]  # fmt: skip
    assert first["$orderby"] == ["ModificationTimestamp,ListingKey"] and first["$top"] == ["1"]
    assert seen[0].headers["Prefer"] == "odata.maxpagesize=1"
    second = parse_qs(urlsplit(str(seen[1].url)).query)
    assert second["$filter"] == [
        "(ModificationTimestamp gt 2024-05-01T00:00:00Z or (ModificationTimestamp eq"
        " 2024-05-01T00:00:00Z and ListingKey gt 'A')) and (OriginatingSystemName eq 'x' or"
        " City eq 'Ames')"
    ]
    assert len(sleeps) == 1 and 0.4 < sleeps[0] <= 0.5  # 7,200 an hour: one each half second


async def test_a_server_without_keyset_filters_is_paged_by_skip() -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        query = parse_qs(urlsplit(str(request.url)).query)
        if " gt " in query.get("$filter", [""])[0]:
            return httpx.Response(400, json={"error": {"message": "not supported"}})
        skip = int(query.get("$skip", ["0"])[0])
        return httpx.Response(
            200, json={"value": records(["A", "B", "C", "D", "E"])[skip : skip + 2]}
        )

    config = SourceConfig(name="mls", url="http://127.0.0.1:9/Property", page_size=2,
                          requests_per_hour=360_000)  # fmt: skip

    async def sleep(seconds: float) -> None:
        pass

    pages = await collect(FeedClient(config, {}, httpx.MockTransport(answer), sleep=sleep),
                          Watermark())  # fmt: skip
    assert pages == [("first", ["A", "B"]), ("skip", ["C", "D"]), ("skip", ["E"])]


async def test_a_next_link_to_another_host_is_not_followed() -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"value": records(["A"]),
                                         "@odata.nextLink": "https://elsewhere.example/x"})  # fmt: skip

    config = SourceConfig(name="mls", url="https://feed.example/Property")

    async def sleep(seconds: float) -> None:
        pass

    with pytest.raises(FeedError, match="another host"):
        await collect(FeedClient(config, {}, httpx.MockTransport(answer), sleep=sleep), Watermark())


def test_a_missing_secret_names_the_variable_not_a_value() -> None:
    from propdata.replication.schemas import Auth

    config = SourceConfig(name="mls", url="https://feed.example/Property",
                          auth=Auth(kind="token", token_env="FEED_TOKEN"))  # fmt: skip
    with pytest.raises(FeedError, match="FEED_TOKEN is not set"):
        FeedClient(config, {})


def _event_log(events: list[dict[str, object]], link: str | None = None) -> httpx.MockTransport:
    def answer(request: httpx.Request) -> httpx.Response:
        body: dict[str, object] = {"value": events}
        if link is not None:
            body["@odata.nextLink"] = link
        return httpx.Response(200, json=body)

    return httpx.MockTransport(answer)


async def _follow(transport: httpx.MockTransport, after: int | None = 5) -> None:
    config = SourceConfig(name="mls", url="https://feed.example/odata/Property",
                          events_url="https://feed.example/odata/EntityEvent",
                          requests_per_hour=360_000)  # fmt: skip
    async with FeedClient(config, {}, transport, sleep=_no_sleep) as client:
        async for _ in client.events(after):
            pass


async def _no_sleep(seconds: float) -> None:
    pass


@pytest.mark.parametrize(
    ("events", "said"),
    [
        ([{"EntityEventSequence": 7, "ResourceRecordKey": "A"},
          {"EntityEventSequence": 6, "ResourceRecordKey": "B"}], "not in EntityEventSequence order"),
        ([{"EntityEventSequence": 5, "ResourceRecordKey": "A"}], "not in EntityEventSequence order"),
        ([{"EntityEventSequence": "seven", "ResourceRecordKey": "A"}], "lacks a whole"),
        ([{"EntityEventSequence": 2**63, "ResourceRecordKey": "A"}], "lacks a whole"),
        ([{"EntityEventSequence": True, "ResourceRecordKey": "A"}], "lacks a whole"),
        ([{"ResourceRecordKey": "A"}], "lacks a whole"),
    ],
)  # fmt: skip
async def test_an_event_log_out_of_order_or_without_sequences_stops_the_pass(
    events: list[dict[str, object]], said: str
) -> None:
    with pytest.raises(FeedError, match=said):
        await _follow(_event_log(events))


async def test_an_event_logs_next_link_to_another_host_is_not_followed() -> None:
    log = _event_log([{"EntityEventSequence": 6, "ResourceRecordKey": "A"}],
                     "https://elsewhere.example/odata/EntityEvent?$skiptoken=1")  # fmt: skip
    with pytest.raises(FeedError, match="another host"):
        await _follow(log)
