"""GET /metrics and the request log of an in-process app (one process: its own counts)."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest
from litestar.testing import AsyncTestClient
from prometheus_client.parser import text_string_to_metric_families

from propdata import __version__
from propdata.app import HeadAsGet, create_app
from propdata.ingest.loader import Item, Reject, load
from propdata.kit.db import Database
from propdata.properties.loads import LoadsRepository
from tests.conftest import KeyMaker, Store, drop_store, new_store, open_db, settings_for
from tests.factories import record
from tests.live import serving_process

TOKEN = "metrics-token-0123456789"
BEARER = {"Authorization": f"Bearer {TOKEN}"}
FAMILIES = {
    "propdata_http_requests", "propdata_http_request_duration_seconds",
    "propdata_limiter_decisions", "propdata_cache_requests", "propdata_store_up",
    "propdata_data_version", "propdata_search_index_age_seconds", "propdata_events",
    "propdata_webhook_deliveries", "propdata_webhook_backlog",
    "propdata_webhook_delivery_lag_seconds", "propdata_ingest_records", "propdata_ingest_feeds",
    "propdata_build_info", "propdata_loop_up",
}  # fmt: skip


@pytest.fixture
async def watched(store: Store) -> AsyncIterator[AsyncTestClient[Any]]:
    app = HeadAsGet(create_app(settings_for(store, cache_ttl=60, metrics_token=TOKEN)))
    async with AsyncTestClient(app=app) as c:  # type: ignore[arg-type]
        yield c


async def scrape(client: AsyncTestClient[Any]) -> dict[str, dict[tuple[str, ...], float]]:
    """Each family's samples: {sample name + sorted label pairs: value}."""
    response = await client.get("/metrics", headers=BEARER)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    found: dict[str, dict[tuple[str, ...], float]] = {}
    for family in text_string_to_metric_families(response.text):
        samples = found.setdefault(family.name, {})
        for s in family.samples:
            samples[(s.name, *(f"{k}={v}" for k, v in sorted(s.labels.items())))] = s.value
    return found


def value(found: dict[str, dict[tuple[str, ...], float]], family: str, *key: str) -> float:
    return found.get(family, {}).get(key, 0.0)


async def test_every_family_is_exposed(watched: AsyncTestClient[Any], key: str) -> None:
    await watched.get("/v1/properties/t-000", headers={"Authorization": f"Bearer {key}"})
    found = await scrape(watched)
    assert set(found) >= FAMILIES
    assert value(found, "propdata_store_up", "propdata_store_up", "store=database") == 1
    version = f"version={__version__}"
    assert value(found, "propdata_build_info", "propdata_build_info", version) == 1
    assert value(found, "propdata_data_version", "propdata_data_version") >= 1
    assert value(found, "propdata_loop_up", "propdata_loop_up", "loop=producer") == 1


async def test_requests_are_counted_by_route_template(
    watched: AsyncTestClient[Any], make_key: KeyMaker
) -> None:
    auth = {"Authorization": f"Bearer {await make_key('enterprise')}"}
    total = ("propdata_http_requests_total", "method=GET", "route=/v1/properties/{id}",
             "status=200")  # fmt: skip
    missing = ("propdata_http_requests_total", "method=GET", "route=/v1/properties/{id}",
               "status=404")  # fmt: skip
    before = await scrape(watched)
    for _ in range(3):
        assert (await watched.get("/v1/properties/t-001", headers=auth)).status_code == 200
    assert (await watched.get("/v1/properties/no-such-id", headers=auth)).status_code == 404
    after = await scrape(watched)
    family = "propdata_http_requests"
    assert value(after, family, *total) - value(before, family, *total) == 3
    assert value(after, family, *missing) - value(before, family, *missing) == 1
    # Labels carry templates: no id, key or raw path anywhere in the exposition.
    text = (await watched.get("/metrics", headers=BEARER)).text
    assert "t-001" not in text and "no-such-id" not in text and "pmd_live_" not in text
    count = ("propdata_http_request_duration_seconds_count", "route=/v1/properties/{id}")
    duration = "propdata_http_request_duration_seconds"
    assert value(after, duration, *count) - value(before, duration, *count) == 4
    # Two of the three 200s were cache hits; admitted requests are the limiter's decisions.
    hits = ("propdata_cache_requests_total", "result=hit")
    allowed = ("propdata_limiter_decisions_total", "decision=allowed")
    assert (
        value(after, "propdata_cache_requests", *hits)
        - value(before, "propdata_cache_requests", *hits)
        == 2
    )
    assert (
        value(after, "propdata_limiter_decisions", *allowed)
        - value(before, "propdata_limiter_decisions", *allowed)
        == 2
    )


async def test_refused_requests_are_counted_by_window(
    watched: AsyncTestClient[Any], make_key: KeyMaker
) -> None:
    auth = {"Authorization": f"Bearer {await make_key('enterprise', per_minute=1)}"}
    minute = ("propdata_limiter_decisions_total", "decision=minute")
    before = await scrape(watched)
    assert (await watched.get("/v1/properties/t-002", headers=auth)).status_code == 200
    assert (await watched.get("/v1/properties/t-003", headers=auth)).status_code == 429
    after = await scrape(watched)
    family = "propdata_limiter_decisions"
    assert value(after, family, *minute) - value(before, family, *minute) == 1


async def test_metrics_answer_404_to_others(watched: AsyncTestClient[Any]) -> None:
    # The test client's peer is not an address in the allowed networks.
    unknown = (await watched.get("/nowhere")).json()["error"]
    for headers in ({}, {"Authorization": "Bearer wrong-token-0123456789"},
                    {"Authorization": TOKEN}, {"X-Forwarded-For": "127.0.0.1"}):  # fmt: skip
        response = await watched.get("/metrics", headers=headers)
        assert response.status_code == 404
        error = response.json()["error"]
        assert error["code"] == unknown["code"] == "not_found" and error["requestId"]
        assert error["message"] == unknown["message"].replace("/nowhere", "/metrics")


async def test_the_tokens_scheme_is_case_insensitive_as_the_apis(
    watched: AsyncTestClient[Any], key: str
) -> None:
    for scheme in ("Bearer", "bearer", "BEARER", "bEaReR"):
        answer = await watched.get("/metrics", headers={"Authorization": f"{scheme} {TOKEN}"})
        assert answer.status_code == 200, scheme
        api = await watched.get("/v1/auth/status", headers={"Authorization": f"{scheme} {key}"})
        assert api.status_code == 200, scheme
    for sent in (f"Basic {TOKEN}", f"Bearer{TOKEN}", f"Bearer {TOKEN}x", "Bearer é" + TOKEN):
        answer = await watched.get("/metrics", headers={"Authorization": sent.encode()})
        assert answer.status_code == 404, sent


FORWARDED = [{"X-Forwarded-For": "203.0.113.9"}, {"Forwarded": "for=203.0.113.9"},
             {"X-Real-IP": "203.0.113.9"}, {"X-Forwarded-Proto": "https"},
             {"X-Forwarded-For": "127.0.0.1"}, {"Via": "1.1 proxy"}]  # fmt: skip
"""What a proxy on this host adds to a request it forwards from outside."""


async def test_a_request_an_undeclared_proxy_forwarded_is_refused_token_or_not(
    watched: AsyncTestClient[Any],
) -> None:
    for headers in FORWARDED:
        answer = await watched.get("/metrics", headers={**headers, **BEARER})
        assert answer.status_code == 404, headers


@pytest.mark.slow
def test_behind_a_proxy_on_the_same_host_metrics_are_not_open(store: Store) -> None:
    """A real server on loopback, its default networks (loopback) and no trusted proxy: a
    request that carries a forwarding header came through a proxy on this host from anyone,
    and is refused; one from the declared proxy is judged by the client it names."""
    if store.schema is not None:
        pytest.skip("one store is enough: the embedded one")
    with serving_process(store.env()) as (base, _):
        assert httpx.get(base + "/metrics").status_code == 200  # loopback itself
        for headers in FORWARDED:
            assert httpx.get(base + "/metrics", headers=headers).status_code == 404, headers
    with serving_process({**store.env(), "PROPDATA_TRUSTED_PROXIES": "127.0.0.1"}) as (base, _):
        outside = httpx.get(base + "/metrics", headers={"X-Forwarded-For": "203.0.113.9"})
        inside = httpx.get(base + "/metrics", headers={"X-Forwarded-For": "127.0.0.1"})
        assert (outside.status_code, inside.status_code) == (404, 200)


async def test_metrics_stay_out_of_the_openapi_document(watched: AsyncTestClient[Any]) -> None:
    document = (await watched.get("/openapi.json")).json()
    assert "/metrics" not in document["paths"]


async def test_one_log_line_per_request(
    store: Store, key: str, capfd: pytest.CaptureFixture[str]
) -> None:
    app = HeadAsGet(create_app(settings_for(store, cache_ttl=0, log_format="json")))
    auth = {"Authorization": f"Bearer {key}"}
    capfd.readouterr()
    async with AsyncTestClient(app=app) as c:  # type: ignore[arg-type]
        capfd.readouterr()
        answers = [
            await c.get("/v1/properties/t-004", headers=auth),
            await c.get("/v1/properties/nope", headers=auth),
            await c.get("/v1/nowhere"),
            await c.get("/health"),
        ]
    err = capfd.readouterr().err  # the lines are all written when the app stops, at the latest
    lines = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    assert [line["requestId"] for line in lines] == [a.headers["x-request-id"] for a in answers]
    first, missing, unknown, health = lines
    assert first["route"] == "/v1/properties/{id}" and first["status"] == 200
    assert first["method"] == "GET" and first["cache"] == "miss"
    assert first["bytes"] == len(answers[0].content) and first["durationMs"] > 0
    assert first["keyId"].startswith("key_") and key not in err
    assert missing["status"] == 404 and missing["route"] == "/v1/properties/{id}"
    assert unknown["route"] == "unmatched" and unknown["keyId"] is None
    assert health["route"] == "/health" and set(first) == {
        "time", "requestId", "method", "route", "status", "durationMs", "bytes", "keyId",
        "cache", "client",
    }  # fmt: skip
    assert first["time"].endswith("Z")


async def test_text_log_lines_are_logfmt(
    store: Store, key: str, capfd: pytest.CaptureFixture[str]
) -> None:
    app = HeadAsGet(create_app(settings_for(store, cache_ttl=0)))
    async with AsyncTestClient(app=app) as c:  # type: ignore[arg-type]
        capfd.readouterr()
        answer = await c.get("/v1/properties/t-005", headers={"Authorization": f"Bearer {key}"})
    err = capfd.readouterr().err
    (line,) = [x for x in err.splitlines() if x.startswith("time=")]
    pairs = dict(part.split("=", 1) for part in line.split(" "))
    assert pairs["request_id"] == answer.headers["x-request-id"]
    assert pairs["route"] == "/v1/properties/{id}" and pairs["status"] == "200"
    assert pairs["bytes"] == str(len(answer.content)) and pairs["cache"] == "miss"


async def test_loads_count_accepted_and_rejected_records(empty_db: Database) -> None:
    items: list[Item] = [(1, record("ops-1")), (2, Reject(2, "no id")), (3, record("ops-1"))]
    await load(empty_db, items, origin="test", as_of=dt.date(2026, 11, 21))
    await load(empty_db, [(1, record("ops-1"))], origin="test", as_of=dt.date(2026, 11, 21))
    # the second load changed nothing, and still read one record
    assert await LoadsRepository(empty_db).counts() == {"accepted": 2, "rejected": 2}


async def test_a_commands_loads_show_on_a_servers_metrics(backend: str, tmp_path: Path) -> None:
    """`propdata data import` is a process of its own: what it read is counted in the store,
    so /metrics of any server of that store shows it."""
    made = await new_store(backend, tmp_path)
    try:
        await (await open_db(made)).close()
        app = HeadAsGet(create_app(settings_for(made, metrics_token=TOKEN)))
        async with AsyncTestClient(app=app) as client:  # type: ignore[arg-type]
            before = await scrape(client)
            assert value(before, "propdata_ingest_feeds", "propdata_ingest_feeds") == 0
            source = tmp_path / "two.jsonl"
            source.write_bytes(msgspec.json.encode(record("ops-9")) + b"\n" + b'{"id": 1}\n')
            env = {**os.environ, **made.env(), "PROPDATA_AS_OF": "2026-11-21"}
            ran = await asyncio.to_thread(
                subprocess.run, [sys.executable, "-m", "propdata", "data", "import", str(source)],
                env=env, capture_output=True, text=True, timeout=120,
            )  # fmt: skip
            assert "1 new, 0 updated, 0 unchanged, 1 rejected" in ran.stderr, ran.stderr
            after = await scrape(client)
    finally:
        await drop_store(made)
    family = "propdata_ingest_records"
    for result in ("accepted", "rejected"):
        key = (f"{family}_total", f"result={result}")
        assert value(after, family, *key) - value(before, family, *key) == 1, result
