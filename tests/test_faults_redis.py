"""Redis faults, and several app instances sharing one Redis, against real redis-servers.

Each test starts a private redis-server (no persistence) on a free port, so it can kill and
restart it without touching anyone else's Redis.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from litestar.testing import AsyncTestClient

from propdata.app import HeadAsGet, create_app
from propdata.kit.ratelimit.redis import RedisLimiter
from propdata.kit.ratelimit.resilient import ResilientLimiter
from propdata.kit.ratelimit.sqlite import SQLiteLimiter
from propdata.kit.redis_link import connect
from tests.conftest import FakeClock
from tests.live import until
from tests.redis_support import RedisServer, free_port, new_key, sqlite_store

pytestmark = pytest.mark.slow

UNREACHABLE = "degraded: redis unreachable"


@pytest.fixture
def server() -> Iterator[RedisServer]:
    redis_server = RedisServer().start()
    yield redis_server
    redis_server.kill()


@pytest.fixture
async def app_over(tmp_path: Path) -> AsyncIterator[Any]:
    """open(settings overrides) -> a client of a new app over one SQLite store with keys."""
    settings = await sqlite_store(tmp_path / "propdata.db")
    clients: list[AsyncTestClient[Any]] = []

    async def open_app(**overrides: Any) -> AsyncTestClient[Any]:
        app = HeadAsGet(create_app(msgspec.structs.replace(settings, **overrides)))
        client = AsyncTestClient(app=app)
        await client.__aenter__()
        clients.append(client)
        return client

    yield open_app
    for client in clients:
        await client.__aexit__(None, None, None)


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


async def health(client: AsyncTestClient[Any]) -> tuple[int, dict[str, Any]]:
    """Status and body; the search index's check and the loops are informational and left
    out here."""
    response = await client.get("/health")
    body = response.json()
    assert body["checks"].pop("searchIndex") in ("ok", "building")
    assert set(body.pop("loops")) >= {"producer", "dispatcher"}
    return response.status_code, body


async def test_redis_down_and_back(
    server: RedisServer, app_over: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="propdata")
    client = await app_over(redis_url=server.url, cache_ttl=60)
    key_id, secret = await new_key(tmp_path / "propdata.db", "free")
    headers = bearer(secret)
    log_key = RedisLimiter.keys_of(key_id)[0]

    first = await client.get("/v1/properties/t-000", headers=headers)
    assert first.status_code == 200 and first.headers["x-ratelimit-remaining"] == "9"
    with server.client() as redis_client:
        assert redis_client.zcard(log_key) == 1
    assert await health(client) == (200, {"status": "ok", "checks": {
        "database": "ok", "limiter": "ok", "cache": "ok"}})  # fmt: skip

    server.kill()
    started = time.monotonic()
    answers = [await client.get(f"/v1/properties/t-{n:03d}", headers=headers) for n in range(1, 6)]
    assert time.monotonic() - started < 3  # an outage never stalls requests for long
    for n, response in enumerate(answers):
        assert response.status_code == 200 and response.headers["x-cache"] == "MISS"
        # the per-process limiter counts from its own start
        assert response.headers["x-ratelimit-limit"] == "10"
        assert response.headers["x-ratelimit-remaining"] == str(9 - n)
        assert response.headers["x-quota-remaining"] == str(99 - n)
    # the per-process cache serves repeats; an error is refunded to the limiter that counted it
    repeat = await client.get("/v1/properties/t-001", headers=headers)
    assert repeat.status_code == 200 and repeat.headers["x-cache"] == "HIT"
    missing = await client.get("/v1/properties/zzz", headers=headers)
    assert missing.status_code == 404 and missing.headers["x-ratelimit-remaining"] == "5"
    assert await health(client) == (200, {"status": "degraded", "checks": {
        "database": "ok", "limiter": UNREACHABLE, "cache": UNREACHABLE}})  # fmt: skip
    warnings = [r.getMessage() for r in caplog.records]
    assert sum("redis unreachable, using the per-process limiter" in m for m in warnings) == 1
    assert sum("redis unreachable, using the per-process cache" in m for m in warnings) == 1

    server.start()  # same port, empty: no persistence

    async def recovered() -> bool:
        return bool((await health(client))[1]["status"] == "ok")

    await until(recovered, "healthy once Redis came back", 10)
    assert (await health(client))[1]["checks"] == {
        "database": "ok", "limiter": "ok", "cache": "ok"}  # fmt: skip
    assert any("redis is back" in r.getMessage() for r in caplog.records)

    for n, path in enumerate(["/v1/properties/t-010", "/v1/properties/t-011"], 1):
        response = await client.get(path, headers=headers)
        assert response.status_code == 200 and response.headers["x-cache"] == "MISS"
        with server.client() as redis_client:
            assert redis_client.zcard(log_key) == n  # counting happens in Redis again
        assert response.headers["x-ratelimit-remaining"] == str(10 - n)


async def test_redis_unreachable_from_the_start(app_over: Any, tmp_path: Path) -> None:
    client = await app_over(redis_url=f"redis://127.0.0.1:{free_port()}/0", cache_ttl=0)
    _, secret = await new_key(tmp_path / "propdata.db", "free")
    for n in range(3):
        response = await client.get("/v1/properties/t-000", headers=bearer(secret))
        assert response.status_code == 200
        assert response.headers["x-ratelimit-remaining"] == str(9 - n)
    status, body = await health(client)
    assert status == 200 and body["status"] == "degraded"
    assert body["checks"]["limiter"] == UNREACHABLE


async def test_two_apps_share_counters_and_cache(
    server: RedisServer, app_over: Any, tmp_path: Path
) -> None:
    one = await app_over(redis_url=server.url, cache_ttl=60)
    two = await app_over(redis_url=server.url, cache_ttl=60)
    _, secret = await new_key(tmp_path / "propdata.db", "free")
    headers = bearer(secret)

    first = await one.get("/v1/properties/t-000", headers=headers)
    assert first.headers["x-cache"] == "MISS" and first.headers["x-ratelimit-remaining"] == "9"
    hit = await two.get("/v1/properties/t-000", headers=headers)
    assert hit.status_code == 200 and hit.headers["x-cache"] == "HIT"
    assert hit.content == first.content and hit.headers["x-ratelimit-remaining"] == "9"
    other = await two.get("/v1/properties/t-001", headers=headers)
    assert other.headers["x-cache"] == "MISS" and other.headers["x-ratelimit-remaining"] == "8"
    for n in range(2, 10):
        response = await (one if n % 2 else two).get(f"/v1/properties/t-{n:03d}", headers=headers)
        assert response.headers["x-ratelimit-remaining"] == str(9 - n)
    refused = await one.get("/v1/properties/t-020", headers=headers)
    assert refused.status_code == 429 and refused.json()["error"]["code"] == "rate_limit_exceeded"
    status = (await two.get("/v1/auth/status", headers=headers)).json()["data"]["usage"]
    assert status["minute"]["used"] == 10 and status["day"]["used"] == 10


async def test_a_refund_goes_to_the_limiter_that_recorded_it(server: RedisServer) -> None:
    clock = FakeClock()
    limiter = ResilientLimiter(
        RedisLimiter(connect(server.url), clock), SQLiteLimiter(":memory:", clock)
    )
    limiter.outage.retry_every = 0.0
    try:
        in_redis = await limiter.admit("key_a", 10, 100)
        server.kill()
        in_memory = await limiter.admit("key_a", 10, 100)
        assert limiter.status() == "degraded"
        assert in_redis.stamp is not None and in_memory.stamp is not None
        assert in_memory.minute.used == 1  # counted apart from Redis's
        server.start()
        assert (await limiter.usage("key_a", 10, 100)).minute.used == 0  # a new, empty Redis
        assert limiter.status() == "ok"
        again = await limiter.admit("key_a", 10, 100)
        assert again.stamp is not None and again.minute.used == 1
        await limiter.refund("key_a", in_memory.stamp, 10, 100)
        assert (await limiter.fallback.usage("key_a", 10, 100)).minute.used == 0
        assert (await limiter.usage("key_a", 10, 100)).minute.used == 1  # Redis untouched
        after = await limiter.refund("key_a", again.stamp, 10, 100)
        assert after.minute.used == 0
    finally:
        await limiter.close()


async def test_connections_from_before_a_restart_do_not_look_like_an_outage(
    server: RedisServer,
) -> None:
    """Found by the soak: after Redis restarted, each pooled connection from before failed
    once when first used again, minutes later; each failure sent its process to the
    per-process fallback for a second, and the fallback admitted beyond the limit (2 over a
    Pro key's 500 in one minute). A dead pooled connection is now retried once on a new one."""
    clock = FakeClock()
    limiter = ResilientLimiter(
        RedisLimiter(connect(server.url), clock), SQLiteLimiter(":memory:", clock)
    )
    try:
        # Several pooled connections, as a busy worker has.
        await asyncio.gather(*(limiter.admit(f"key_{n}", 10, 100) for n in range(6)))
        server.kill()
        server.start()
        fell_back = []
        for _ in range(6):
            decision = await asyncio.gather(*(limiter.admit(f"key_{m}", 10, 100)
                                              for m in range(6)))  # fmt: skip
            fell_back += [d for d in decision if d.stamp is not None and d.stamp[1] < 0]
        assert not fell_back and limiter.status() == "ok"
    finally:
        await limiter.close()
