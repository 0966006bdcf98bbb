"""Leases ("at most N holders under a name at once") on every limiter: taken and renewed in
one atomic step, given back, and free again when a holder stops renewing (a process that
died). Real SQLite files, the real Redis, the fallback."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from propdata.kit.ratelimit.redis import RedisLimiter
from propdata.kit.ratelimit.sqlite import SQLiteLimiter
from propdata.kit.redis_link import connect
from tests.conftest import FakeClock
from tests.kit.ratelimit.rig import Rig
from tests.redis_support import REDIS_URL, require_redis


@pytest.fixture
def name(rig: Rig) -> Iterator[str]:
    value = f"streams:acct:{uuid.uuid4().hex[:10]}"
    yield value
    if rig.kind == "redis":
        with redis.Redis.from_url(REDIS_URL) as client:
            client.delete(RedisLimiter.lease_key_of(value))


async def test_at_most_limit_holders_and_a_holder_renews_its_own(rig: Rig, name: str) -> None:
    limiter = rig.limiter
    assert [await limiter.hold(name, f"h{n}", 3, 30) for n in range(4)] == [True] * 3 + [False]
    assert await limiter.hold(name, "h1", 3, 30)  # renewing takes no slot more
    assert await limiter.hold(f"{name}:other", "h9", 3, 30)  # names are apart
    await limiter.release(name, "h0")
    assert await limiter.hold(name, "h3", 3, 30)
    assert not await limiter.hold(name, "h4", 3, 30)
    await limiter.release(name, "nobody")  # nothing to give back: nothing happens


async def test_a_holder_that_stops_renewing_frees_its_slot_when_its_lease_runs_out(
    rig: Rig, name: str
) -> None:
    limiter, clock = rig.limiter, rig.clock
    assert await limiter.hold(name, "crashed", 1, 30)
    clock.advance(20)
    assert not await limiter.hold(name, "next", 1, 30)
    clock.advance(10)  # the lease ran out: nobody renewed it
    assert await limiter.hold(name, "next", 1, 30)
    assert not await limiter.hold(name, "crashed", 1, 30)  # its slot is gone


async def test_bad_arguments_are_refused(rig: Rig, name: str) -> None:
    for limit, ttl in ((0, 30), (1, 0), (1, -1)):
        with pytest.raises(ValueError, match="hold"):
            await rig.limiter.hold(name, "h", limit, ttl)


async def test_workers_of_one_host_share_the_slots_of_one_file(tmp_path: Path) -> None:
    clock = FakeClock()
    workers = [SQLiteLimiter(str(tmp_path / "usage.db"), clock=clock) for _ in range(4)]
    try:
        got = await asyncio.gather(*(w.hold("streams:one", f"h{n}.{i}", 5, 30)
                                     for n in range(3) for i, w in enumerate(workers)))  # fmt: skip
        assert sum(got) == 5
    finally:
        for worker in workers:
            await worker.close()


async def test_hosts_sharing_a_redis_share_its_slots() -> None:
    require_redis()
    name = f"streams:acct:{uuid.uuid4().hex[:10]}"
    hosts = [RedisLimiter(connect(REDIS_URL)) for _ in range(3)]
    try:
        got = await asyncio.gather(*(h.hold(name, f"h{n}.{i}", 5, 30)
                                     for n in range(4) for i, h in enumerate(hosts)))  # fmt: skip
        assert sum(got) == 5
    finally:
        await hosts[0].client.delete(RedisLimiter.lease_key_of(name))
        for host in hosts:
            await host.close()
