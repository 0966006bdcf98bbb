"""The Redis limiter and cache on a real three-node Redis Cluster (`?cluster=true`).

A key's log and counter share a hash tag, so the limiter's one script per request runs on
the node that owns the key's slot; different keys spread over the nodes.
"""

from __future__ import annotations

import math
import shutil
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
import redis
from litestar.testing import AsyncTestClient
from redis.asyncio.cluster import RedisCluster

from propdata.app import HeadAsGet, create_app
from propdata.kit.cache import Cached
from propdata.kit.ratelimit.redis import RedisLimiter
from propdata.kit.redis_cache import RedisCache, ResilientCache
from propdata.kit.redis_link import connect
from tests.conftest import FakeClock
from tests.redis_support import RedisServer, new_key, sqlite_store, unavailable


def _bus_friendly_port() -> int:
    """A free port whose cluster bus port (port + 10000) is a valid, free port too."""
    for port in range(20_000, 40_000, 7):
        try:
            for candidate in (port, port + 10_000):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", candidate))
        except OSError:
            continue
        if port not in _taken:
            _taken.add(port)
            return port
    raise RuntimeError("no free port pair for a cluster node")


_taken: set[int] = set()


@pytest.fixture(scope="module")
def cluster_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    cli = shutil.which("redis-cli")
    if cli is None:
        unavailable("redis-cli is not installed; the Redis Cluster tests need it")
    folder = tmp_path_factory.mktemp("cluster")
    nodes = []
    for n in range(3):
        (folder / str(n)).mkdir()
        node = RedisServer(
            extra=("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                   "--cluster-node-timeout", "2000"),
            cwd=folder / str(n),
            port=_bus_friendly_port(),
        )  # fmt: skip
        nodes.append(node.start())
    try:
        subprocess.run(
            [str(cli), "--cluster", "create", *(f"127.0.0.1:{node.port}" for node in nodes),
             "--cluster-replicas", "0", "--cluster-yes"],
            check=True, capture_output=True, timeout=30,
        )  # fmt: skip
        deadline = time.monotonic() + 15
        for node in nodes:
            with node.client() as client:
                while client.execute_command("CLUSTER INFO").get("cluster_state") != "ok":
                    assert time.monotonic() < deadline, "the cluster did not come up"
                    time.sleep(0.1)
        yield f"redis://127.0.0.1:{nodes[0].port}/0?cluster=true"
    finally:
        for node in nodes:
            node.kill()


async def test_limiter_on_a_cluster(cluster_url: str) -> None:
    clock = FakeClock()
    limiter = RedisLimiter(connect(cluster_url), clock=clock)
    assert isinstance(limiter.client, RedisCluster)
    keys = [f"key_{uuid.uuid4().hex[:12]}" for _ in range(8)]
    try:
        start = clock.now
        for key in keys:
            stamps = []
            for _ in range(3):
                decision = await limiter.admit(key, 3, 100)
                assert decision.allowed and decision.stamp is not None
                stamps.append(decision.stamp)
                clock.advance(1)
            refused = await limiter.admit(key, 3, 100)
            assert not refused.allowed and refused.exceeded == "minute"
            assert refused.retry_after == math.ceil(start + 60 - clock.now)
            after = await limiter.refund(key, stamps[0], 3, 100)
            assert after.minute.used == 2 and after.day is not None and after.day.used == 2
            start = clock.now
            # The hourly counts live in the key's slot too: one script on one node.
            assert await limiter.hourly(key, clock.now - 3600) == {int(clock.now) // 3600 * 3600: 2}
        owners = [limiter.client.get_node_from_key(limiter.keys(k)[0]) for k in keys]
        assert len({node.name for node in owners if node is not None}) > 1  # spread over nodes
    finally:
        for key in keys:
            await limiter.client.delete(*limiter.keys(key))
        await limiter.close()


async def test_attempt_guards_on_a_cluster(cluster_url: str) -> None:
    """Each name's log is its own hash tag (the digest): names spread over the nodes."""
    limiter = RedisLimiter(connect(cluster_url))  # Redis's own clock, as in production
    names = [f"guard:{uuid.uuid4().hex}@example.com" for _ in range(8)]
    try:
        for name in names:
            got = [await limiter.attempt(name, 2, 900) for _ in range(3)]
            assert [a.allowed for a in got] == [True, True, False]
            assert got[2].retry_after is not None and 899 <= got[2].retry_after <= 900
        owners = [limiter.client.get_node_from_key(limiter.attempt_key_of(n)) for n in names]
        assert len({node.name for node in owners if node is not None}) > 1
    finally:
        for name in names:
            await limiter.client.delete(limiter.attempt_key_of(name))
        await limiter.close()


async def test_cache_on_a_cluster(cluster_url: str) -> None:
    cache = ResilientCache(RedisCache.from_url(cluster_url))
    try:
        for n in range(10):
            await cache.set(f"k{n}", Cached(200, b"application/json", b'{"n": %d}' % n), 60)
        assert await cache.get("k7") == Cached(200, b"application/json", b'{"n": 7}')
        assert cache.status() == "ok"
    finally:
        await cache.close()


async def test_an_app_on_a_cluster(cluster_url: str, tmp_path: Path) -> None:
    settings = await sqlite_store(tmp_path / "propdata.db")
    key_id, secret = await new_key(tmp_path / "propdata.db", "free")
    app = HeadAsGet(create_app(msgspec.structs.replace(settings, redis_url=cluster_url)))
    async with AsyncTestClient(app=app) as client:
        headers = {"Authorization": f"Bearer {secret}"}
        for n in range(2):
            response = await client.get("/v1/properties/t-000", headers=headers)
            assert response.status_code == 200
            assert response.headers["x-cache"] == ("MISS", "HIT")[n]
            assert response.headers["x-ratelimit-remaining"] == "9"
        health = (await client.get("/health")).json()
        assert health["status"] == "ok" and health["checks"]["limiter"] == "ok"
    with redis.RedisCluster.from_url(cluster_url.removesuffix("?cluster=true")) as admin:
        assert admin.zcard(RedisLimiter.keys_of(key_id)[0]) == 1
