"""Two server instances on different ports share PostgreSQL and Redis: one set of limits,
one cache, and a plan change made through the store is seen by both on the next request."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from propdata.accounts.keys import CustomLimits, keys_of
from tests.conftest import Store, build_store, create_key, drop_store, new_store
from tests.live import healthy
from tests.redis_support import free_port


def _start(store: Store, port: int) -> subprocess.Popen[bytes]:
    env = {**os.environ, **store.env(), "PROPDATA_CACHE_TTL": "60", "PROPDATA_LOG_LEVEL": "ERROR"}
    return subprocess.Popen(
        [sys.executable, "-m", "propdata", "serve", "--port", str(port), "--workers", "2"], env=env
    )


@pytest.fixture
def two(tmp_path: Path) -> Iterator[tuple[Store, list[str]]]:
    store = asyncio.run(new_store("scaleout", tmp_path))
    asyncio.run(build_store(store))
    ports = [free_port(), free_port()]
    servers = [_start(store, port) for port in ports]
    bases = [f"http://127.0.0.1:{port}" for port in ports]
    try:
        for base in bases:
            healthy(base)
        time.sleep(1.0)  # every worker up
        yield store, bases
    finally:
        for server in servers:
            server.terminate()
        for server in servers:
            server.wait(20)
        asyncio.run(drop_store(store))


@pytest.mark.slow
def test_limits_are_exact_across_both_instances(two: tuple[Store, list[str]]) -> None:
    store, bases = two
    secret = asyncio.run(create_key(store, "free"))
    headers = {"Authorization": f"Bearer {secret}"}
    # distinct paths so no answer comes from the cache
    jobs = [(bases[n % 2], f"/v1/properties?offset={n}") for n in range(80)]

    def hit(job: tuple[str, str]) -> int:
        base, path = job
        with httpx.Client(base_url=base, timeout=30) as client:
            return client.get(path, headers=headers).status_code

    with ThreadPoolExecutor(max_workers=32) as pool:
        statuses = list(pool.map(hit, jobs))
    assert statuses.count(200) == 10, statuses
    assert statuses.count(429) == 70
    for base in bases:
        usage = httpx.get(base + "/v1/auth/status", headers=headers).json()["data"]["usage"]
        assert usage["minute"]["used"] == 10 and usage["day"]["used"] == 10


@pytest.mark.slow
def test_plan_change_and_cache_are_shared(two: tuple[Store, list[str]]) -> None:
    store, (a, b) = two
    secret = asyncio.run(create_key(store, "free"))
    headers = {"Authorization": f"Bearer {secret}"}
    first = httpx.get(a + "/v1/properties/t-005", headers=headers)
    assert first.status_code == 200 and first.headers["x-cache"] == "MISS"
    second = httpx.get(b + "/v1/properties/t-005", headers=headers)
    assert second.headers["x-cache"] == "HIT" and second.content == first.content
    assert second.headers["x-ratelimit-remaining"] == "9"  # the hit was not counted

    async def upgrade() -> None:
        async with keys_of(store.url) as keys:
            await keys.set_plan(secret, "developer", CustomLimits())

    asyncio.run(upgrade())
    for base in (b, a):
        response = httpx.get(base + "/v1/properties/t-006", headers=headers)
        assert response.headers["x-ratelimit-limit"] == "100"
        assert response.headers["x-quota-limit"] == "10000"
