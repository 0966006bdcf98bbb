"""GET /v1/properties/{id}/valuation and the estimate fields of a record, after a rebuild."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator
from typing import Any

import pytest
from litestar.testing import AsyncTestClient

from propdata.app import HeadAsGet, create_app
from propdata.ingest.loader import load
from propdata.ingest.synthetic import generate
from propdata.markets.builder import rebuild
from propdata.valuation.rebuild import rebuild_valuations
from propdata.valuation.service import ValuationService
from tests.conftest import Store, create_key, drop_store, new_store, open_db, settings_for

AS_OF = dt.date(2026, 1, 15)


@pytest.fixture(scope="module")
async def valued(backend: str, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Store]:
    store = await new_store(backend, tmp_path_factory.mktemp(f"valued-{backend}"))
    db = await open_db(store)
    report = await load(db, generate(400, 5, AS_OF), origin="synthetic", as_of=AS_OF)
    assert not report.rejects
    await rebuild_valuations(db, AS_OF)
    await rebuild(db, AS_OF)
    await db.close()
    yield store
    await drop_store(store)


@pytest.fixture(scope="module")
async def api(valued: Store) -> AsyncIterator[tuple[AsyncTestClient[Any], dict[str, str]]]:
    secret = await create_key(valued, "developer")
    app = HeadAsGet(create_app(settings_for(valued, cache_ttl=0, as_of=AS_OF)))
    async with AsyncTestClient(app=app) as client:  # type: ignore[arg-type]
        yield client, {"Authorization": f"Bearer {secret}"}


async def ids_where(store: Store, condition: str) -> list[str]:
    db = await open_db(store)
    try:
        rows = await db.fetch_all(f"SELECT id FROM properties WHERE {condition} ORDER BY id")
    finally:
        await db.close()
    return [row[0] for row in rows]


async def test_valuation_answers_the_stored_estimates_and_their_comparables(
    valued: Store, api: tuple[AsyncTestClient[Any], dict[str, str]]
) -> None:
    client, auth = api
    pid = (await ids_where(valued, "value_value IS NOT NULL AND rent_value IS NOT NULL"))[0]
    answer = await client.get(f"/v1/properties/{pid}/valuation", headers=auth)
    assert answer.status_code == 200
    data = answer.json()["data"]
    assert set(data) == {"id", "valueEstimate", "rentEstimate", "grossYield", "comparables"}
    detail = (await client.get(f"/v1/properties/{pid}", headers=auth)).json()["data"]
    for name in ("valueEstimate", "rentEstimate", "grossYield"):
        assert data[name] == detail[name]
    value = data["valueEstimate"]
    assert set(value) == {"value", "low", "high", "asOfDate"}
    assert value["low"] <= value["value"] <= value["high"]
    assert data["grossYield"] == round(12 * data["rentEstimate"]["value"] / value["value"], 4)

    assert data["comparables"], "a valued home shows the sales behind its estimate"
    db = await open_db(valued)
    try:
        stored = await ValuationService(db).comparables(pid)
    finally:
        await db.close()
    assert [c["id"] for c in data["comparables"]] == [c.id for c in stored]
    for comp in data["comparables"]:
        assert set(comp) == {"id", "address", "distanceMiles", "saleDate", "salePrice",
                             "similarity"}  # fmt: skip
        assert set(comp["address"]) == {"streetAddress", "city", "state", "zipCode"}
        assert 0 <= comp["similarity"] <= 1 and comp["salePrice"] > 0
        assert comp["distanceMiles"] is None or comp["distanceMiles"] >= 0
    sims = [c["similarity"] for c in data["comparables"]]
    assert sims == sorted(sims, reverse=True)


async def test_land_has_no_estimate_and_no_comparables(
    valued: Store, api: tuple[AsyncTestClient[Any], dict[str, str]]
) -> None:
    client, auth = api
    land = await ids_where(valued, "property_type = 'land'")
    assert land, "the synthetic set holds land"
    data = (await client.get(f"/v1/properties/{land[0]}/valuation", headers=auth)).json()["data"]
    assert data["valueEstimate"] is None and data["rentEstimate"] is None
    assert data["grossYield"] is None and data["comparables"] == []


async def test_valuation_is_metered_and_unknown_ids_are_404(
    api: tuple[AsyncTestClient[Any], dict[str, str]], valued: Store
) -> None:
    client, auth = api
    pid = (await ids_where(valued, "1 = 1"))[0]
    first = await client.get(f"/v1/properties/{pid}/valuation", headers=auth)
    second = await client.get(f"/v1/properties/{pid}/valuation", headers=auth)
    left = int(first.headers["x-ratelimit-remaining"])
    assert int(second.headers["x-ratelimit-remaining"]) == left - 1
    missing = await client.get("/v1/properties/no-such-id/valuation", headers=auth)
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
