"""Data stays true as days pass: days on market grow and sales age out without a
load, and searches on days on market stay exact.

Before: statuses and daysOnMarket were frozen at the last load; a home sold 200 days ago
stayed recentlySold and a listing's days on market never grew.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import AsyncTestClient

from propdata.app import HeadAsGet, create_app
from propdata.properties.service import PropertyService
from tests.conftest import Store, build_store, create_key, drop_store, new_store, open_db
from tests.factories import AS_OF, event, record
from tests.live import until

LOADED = AS_OF  # 2026-11-21
LATER = LOADED + dt.timedelta(days=10)


def _records() -> list[Any]:
    return [
        record("listed", status="forSale", price_history=[
            event((LOADED - dt.timedelta(days=5)).isoformat(), "listedForSale", 300_000)]),
        record("listed-long", status="forSale", price_history=[
            event((LOADED - dt.timedelta(days=40)).isoformat(), "listedForSale", 310_000)]),
        record("rented", status="forRent", list_price=1_500, price_history=[
            event((LOADED - dt.timedelta(days=30)).isoformat(), "listedForRent", 1_500)]),
        record("sold-long-ago", status="recentlySold", price_history=[
            event((LOADED - dt.timedelta(days=175)).isoformat(), "sold", 290_000, "publicRecord"),
            event((LOADED - dt.timedelta(days=230)).isoformat(), "listedForSale", 295_000)]),
        record("sold-lately", status="recentlySold", price_history=[
            event((LOADED - dt.timedelta(days=20)).isoformat(), "sold", 280_000, "publicRecord"),
            event((LOADED - dt.timedelta(days=60)).isoformat(), "listedForSale", 285_000)]),
    ]  # fmt: skip


@pytest.fixture
async def aging_store(backend: str, tmp_path: Path) -> Any:
    store = await new_store(backend, tmp_path)
    await build_store(store, _records())
    yield store
    await drop_store(store)


async def _client_on(store: Store, today: dt.date, **settings: Any) -> AsyncTestClient[Any]:
    from tests.conftest import settings_for

    app = HeadAsGet(create_app(settings_for(store, as_of=today, **settings)))
    return AsyncTestClient(app=app)  # type: ignore[arg-type]


async def _wait_aged(client: Any, auth: dict[str, str], today: dt.date) -> None:
    async def aged() -> bool:
        answer = await client.get("/v1/properties/listed", headers=auth)
        return bool(answer.json()["data"]["daysOnMarket"] == (today - LOADED).days + 5)

    await until(aged, "the store aged")


@pytest.mark.parametrize("index", [True, False], ids=["index", "sql"])
async def test_ten_days_later(aging_store: Store, index: bool) -> None:
    auth = {"Authorization": f"Bearer {await create_key(aging_store)}"}
    async with await _client_on(aging_store, LATER, search_index=index) as client:
        await _wait_aged(client, auth, LATER)
        listed = (await client.get("/v1/properties/listed", headers=auth)).json()["data"]
        assert listed["daysOnMarket"] == 15 and listed["status"] == "forSale"
        rented = (await client.get("/v1/properties/rented", headers=auth)).json()["data"]
        assert rented["daysOnMarket"] == 40
        gone = (await client.get("/v1/properties/sold-long-ago", headers=auth)).json()["data"]
        assert gone["status"] == "offMarket" and gone["listPrice"] is None
        assert gone["daysOnMarket"] is None and gone["originalListPrice"] is None
        sale = dt.date.fromisoformat(gone["priceHistory"][0]["date"])
        assert gone["lastUpdated"] == f"{sale + dt.timedelta(days=181)}T00:00:00Z"
        lately = (await client.get("/v1/properties/sold-lately", headers=auth)).json()["data"]
        assert lately["status"] == "recentlySold" and lately["daysOnMarket"] == 40  # list->sale

        async def ids(query: str) -> list[str]:
            async def answered() -> Any:
                answer = await client.get(f"/v1/properties?{query}", headers=auth)
                return answer if answer.status_code == 200 else None

            # The index follows the new data version within moments.
            answer = await until(answered, f"an answer to {query}")
            return [item["id"] for item in answer.json()["data"]]

        assert await ids("status=recentlySold") == ["sold-lately"]
        assert set(await ids("maxDaysOnMarket=15")) == {"listed"}
        assert set(await ids("maxDaysOnMarket=14")) == set()
        order = await ids("sort=daysOnMarket&order=asc&status=forSale")
        assert order == ["listed", "listed-long"]


async def test_a_store_is_aged_once_a_day_by_one_process(aging_store: Store) -> None:
    db_a, db_b = await open_db(aging_store), await open_db(aging_store)
    try:
        one, two = (
            PropertyService(db_a),
            PropertyService(db_b),
        )
        results = await asyncio.gather(one.age(LATER), two.age(LATER))
        done = [r for r in results if r is not None]
        assert len(done) == 1 and len(done[0].expired) == 1 and len(done[0].days) == 3
        version = await one.data_version()
        assert await one.age(LATER) is None and await one.data_version() == version
        again = await one.age(LATER + dt.timedelta(days=1))  # the next day: one more day each
        assert again is not None and len(again.days) == 3 and not again.expired
    finally:
        await db_a.close()
        await db_b.close()


async def test_a_cached_answer_does_not_outlive_the_day(aging_store: Store) -> None:
    auth = {"Authorization": f"Bearer {await create_key(aging_store)}"}
    async with await _client_on(aging_store, LOADED, cache_ttl=600) as client:
        first = await client.get("/v1/properties/listed", headers=auth)
        assert first.json()["data"]["daysOnMarket"] == 5
    async with await _client_on(aging_store, LATER, cache_ttl=600) as client:
        await _wait_aged(client, auth, LATER)  # a new version: the old entry is unreachable
