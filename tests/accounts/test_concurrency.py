"""Several server processes share one set of counters: no over-admission under concurrency."""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tests.conftest import Store, build_store, create_key, drop_store, new_store
from tests.live import running_server


async def _prepare(store: Store) -> str:
    await build_store(store)
    return await create_key(store, "free")


@pytest.mark.slow
def test_four_workers_and_many_threads_admit_exactly_the_free_limit(
    backend: str, tmp_path: Path
) -> None:
    store = asyncio.run(new_store(backend, tmp_path))
    secret = asyncio.run(_prepare(store))
    env = {**store.env(), "PROPDATA_CACHE_TTL": "0"}
    try:
        with running_server(env, workers=4) as base:
            time.sleep(1.0)  # every worker started: all of them take requests
            _admit_exactly(base, secret)
    finally:
        asyncio.run(drop_store(store))


def _admit_exactly(base: str, secret: str) -> None:
    """64 requests at once over the workers: exactly the Free plan's 10 are admitted."""
    headers = {"Authorization": f"Bearer {secret}"}
    paths = [f"/v1/properties/t-{n % 40:03d}" for n in range(64)]

    def hit(path: str) -> tuple[int, str]:
        with httpx.Client(base_url=base, timeout=30) as client:
            response = client.get(path, headers=headers)
            return response.status_code, response.headers.get("x-ratelimit-remaining", "")

    with ThreadPoolExecutor(max_workers=32) as pool:
        results = list(pool.map(hit, paths))
    statuses = [status for status, _ in results]
    assert statuses.count(200) == 10, statuses
    assert statuses.count(429) == 54
    # every admitted request saw a distinct place in the window
    remaining = sorted(int(r) for status, r in results if status == 200)
    assert remaining == list(range(10))
    status = httpx.get(base + "/v1/auth/status", headers=headers).json()["data"]
    assert status["usage"]["minute"]["used"] == 10 and status["usage"]["day"]["used"] == 10
