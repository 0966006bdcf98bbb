"""Hourly counts of admitted requests, on every limiter (SQLite file, real Redis, fallback).

An admission counts in the hour that holds it, in the same step that records it; a refund
that takes an entry back uncounts it from that entry's hour, however late; refusals,
`usage` and `fail` never count. Buckets are unix seconds of the hour's start.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import redis

from propdata.kit.ratelimit.base import HOURLY_KEEP
from propdata.kit.ratelimit.redis import RedisLimiter
from propdata.kit.ratelimit.resilient import ResilientLimiter
from propdata.kit.ratelimit.sqlite import SQLiteLimiter
from propdata.kit.redis_link import connect
from tests.conftest import FakeClock
from tests.kit.ratelimit.rig import Rig, forget, new_key
from tests.redis_support import REDIS_URL, RedisServer, require_redis

H = 3600
START = 1_800_000_000  # the FakeClock's start: an hour's first second (500,000 * 3600)


def test_the_fake_clock_starts_on_an_hour() -> None:
    assert START % H == 0 and FakeClock().now == START


def stored_buckets(rig: Rig) -> int:
    """How many hour buckets the backend holds for the rig's key, whatever their age."""
    if rig.kind == "redis":
        with redis.Redis.from_url(REDIS_URL) as client:
            return int(client.hlen(RedisLimiter.keys_of(rig.key)[3]))
    ((rows,),) = rig.sql(
        "SELECT count(*) FROM limiter_hours h JOIN limiter_keys k ON k.num = h.num"
        " WHERE k.key_id = ?",
        (rig.key,),
    )
    ((current,),) = rig.sql(
        "SELECT count(*) FROM limiter_keys WHERE key_id = ? AND hour_count > 0", (rig.key,)
    )
    return int(rows) + int(current)


async def test_admissions_are_counted_in_the_hour_that_holds_them(rig: Rig) -> None:
    limiter, clock, key = rig.limiter, rig.clock, rig.key
    for at in (0.0, 10.0, H - 1e-6):  # the hour's first and last microsecond belong to it
        clock.now = START + at
        assert (await limiter.admit(key, 100, None)).allowed
    for at in (H, H + 1800.0):
        clock.now = START + at
        await limiter.admit(key, 100, None)
    clock.now = START + 3 * H + 5  # nothing in the hour at START + 2 h
    await limiter.admit(key, 100, None)
    expected = {START: 3, START + H: 2, START + 3 * H: 1}
    assert await limiter.hourly(key, START) == expected
    assert await limiter.hourly(key, START - 10 * H) == expected
    assert await limiter.hourly(new_key(), START) == {}  # a key never seen


async def test_hourly_answers_only_the_range_asked(rig: Rig) -> None:
    limiter, clock, key = rig.limiter, rig.clock, rig.key
    for hour in range(6):
        clock.now = START + hour * H + 100
        for _ in range(hour + 1):
            await limiter.admit(key, 100, 1000)
    clock.now = START + 5 * H + 200
    # `since` anywhere in an hour brings that whole hour, and the ones after it up to now.
    assert await limiter.hourly(key, START + 3 * H + 3599) == {
        START + 3 * H: 4,
        START + 4 * H: 5,
        START + 5 * H: 6,
    }
    assert await limiter.hourly(key, START + 5 * H) == {START + 5 * H: 6}
    assert await limiter.hourly(key, clock.now + H) == {}  # a range that starts after now
    clock.now = START + 2 * H  # asked from an earlier time: nothing after "now" is reported
    assert await limiter.hourly(key, START) == {START: 1, START + H: 2, START + 2 * H: 3}


async def test_a_refund_after_the_hour_turned_uncounts_the_earlier_hour(rig: Rig) -> None:
    limiter, clock, key = rig.limiter, rig.clock, rig.key
    clock.now = START + H - 30
    stamps = []
    for _ in range(3):
        decision = await limiter.admit(key, 100, 1000)
        assert decision.stamp is not None
        stamps.append(decision.stamp)
    clock.now = START + H + 10  # the next hour, nothing admitted in it yet
    await limiter.refund(key, stamps[0], 100, 1000)
    assert await limiter.hourly(key, START) == {START: 2}
    await limiter.admit(key, 100, 1000)  # the new hour's first admission
    clock.now = START + 5 * H  # hours later, the next hour's too
    await limiter.admit(key, 100, 1000)
    after = await limiter.refund(key, stamps[1], 100, 1000)
    assert after.day is not None and after.day.used == 3
    assert await limiter.hourly(key, START) == {START: 1, START + H: 1, START + 5 * H: 1}
    await limiter.refund(key, stamps[2], 100, 1000)
    assert await limiter.hourly(key, START) == {START + H: 1, START + 5 * H: 1}  # 0: absent


async def test_a_refund_in_the_same_hour_uncounts_it(rig: Rig) -> None:
    decision = await rig.limiter.admit(rig.key, 10, None)
    assert decision.stamp is not None
    await rig.limiter.admit(rig.key, 10, None)
    await rig.limiter.refund(rig.key, decision.stamp, 10, None)
    assert await rig.limiter.hourly(rig.key, START) == {START: 1}


async def test_refusals_usage_and_failures_never_count(rig: Rig) -> None:
    limiter, key = rig.limiter, rig.key
    results = [(await limiter.admit(key, 2, 100)).allowed for _ in range(5)]
    assert results == [True, True, False, False, False]
    for _ in range(3):
        await limiter.usage(key, 2, 100)
        await limiter.fail(key)
    refused = await limiter.admit(key, 100, 100, failures=3)  # the failed-request guard
    assert not refused.allowed and refused.exceeded == "failures"
    assert await limiter.hourly(key, START) == {START: 2}


async def test_a_refund_of_an_entry_that_is_not_there_changes_nothing(rig: Rig) -> None:
    limiter, clock, key = rig.limiter, rig.clock, rig.key
    decision = await limiter.admit(key, 10, 100)
    assert decision.stamp is not None
    at, n = decision.stamp
    for unknown in ((at, n + 7 if n > 0 else n - 7), (at + 1, n), (at - H * 1_000_000, n)):
        await limiter.refund(key, unknown, 10, 100)
    assert await limiter.hourly(key, START) == {START: 1}
    await limiter.refund(key, decision.stamp, 10, 100)
    await limiter.refund(key, decision.stamp, 10, 100)  # a second refund of the same entry
    assert await limiter.hourly(key, START) == {}
    # A request for another key: its stamp means nothing here.
    clock.advance(5)
    other = await limiter.admit(new_key(), 10, 100)
    assert other.stamp is not None
    await limiter.refund(key, other.stamp, 10, 100)
    assert await limiter.hourly(key, START) == {}


async def test_an_entry_past_the_kept_window_is_not_taken_back(rig: Rig) -> None:
    """Without a daily quota the Redis log keeps a minute; the SQLite limiter
    follows the same rule, so a refund later than that leaves the hour's count alone."""
    limiter, clock, key = rig.limiter, rig.clock, rig.key
    late = await limiter.admit(key, 10, None)
    in_time = await limiter.admit(key, 10, None)
    assert late.stamp is not None and in_time.stamp is not None
    clock.now = START + 59.999999
    await limiter.refund(key, in_time.stamp, 10, None)
    clock.now = START + 60  # exactly 60 s: the entry has left the minute
    await limiter.refund(key, late.stamp, 10, None)
    assert await limiter.hourly(key, START) == {START: 1}
    with_quota = new_key()  # with a daily quota, the log keeps a day
    kept = [await limiter.admit(with_quota, 10, 100) for _ in range(2)]
    assert kept[0].stamp is not None and kept[1].stamp is not None
    clock.now = START + 60 + 86_400 - 1e-6
    await limiter.refund(with_quota, kept[0].stamp, 10, 100)
    clock.now = START + 60 + 86_400
    await limiter.refund(with_quota, kept[1].stamp, 10, 100)
    assert await limiter.hourly(with_quota, START) == {START: 1}
    if rig.kind == "redis":
        forget(with_quota)


async def test_buckets_past_the_retention_go_and_storage_stays_bounded(rig: Rig) -> None:
    limiter, clock, key = rig.limiter, rig.clock, rig.key
    every = 5 * H
    for n in range(200):  # 1,000 hours, about 42 days: one admission every 5 hours
        clock.now = START + n * every + 7
        await limiter.admit(key, 10, None)
    now_hour = START + 199 * every
    oldest = now_hour - HOURLY_KEEP
    hours = await limiter.hourly(key, START)
    assert hours == {START + n * every: 1 for n in range(200) if START + n * every >= oldest}
    assert min(hours) - oldest < every and len(hours) == HOURLY_KEEP // every + 1
    # At most the retention's buckets are held (the new one dropped the older ones).
    assert stored_buckets(rig) <= HOURLY_KEEP // every + 2
    # The edge: the bucket exactly HOURLY_KEEP before the current hour is still answered.
    edge = new_key()
    clock.now = START
    await limiter.admit(edge, 10, None)
    clock.now = START + HOURLY_KEEP + 10
    assert await limiter.hourly(edge, START) == {START: 1}
    clock.now = START + HOURLY_KEEP + H
    assert await limiter.hourly(edge, START) == {}  # past it: gone even before any pruning
    await limiter.admit(edge, 10, None)
    assert await limiter.hourly(edge, START) == {START + HOURLY_KEEP + H: 1}
    if rig.kind == "redis":
        forget(edge)


async def test_a_clock_that_steps_back_counts_in_the_right_hours(rig: Rig) -> None:
    limiter, clock, key = rig.limiter, rig.clock, rig.key
    clock.now = START + 2 * H
    first = await limiter.admit(key, 100, 1000)
    clock.now = START + H + 10  # an hour back (a host's clock corrected)
    back = await limiter.admit(key, 100, 1000)
    clock.now = START + 2 * H + 20
    await limiter.admit(key, 100, 1000)
    assert await limiter.hourly(key, START) == {START + H: 1, START + 2 * H: 2}
    assert first.stamp is not None and back.stamp is not None
    await limiter.refund(key, back.stamp, 100, 1000)
    await limiter.refund(key, first.stamp, 100, 1000)
    assert await limiter.hourly(key, START) == {START + 2 * H: 1}


async def test_redis_counts_in_redis_hours() -> None:
    """Production passes no clock: the buckets (and the range asked) come from Redis's TIME."""
    require_redis()
    limiter = RedisLimiter(connect(REDIS_URL))
    key = new_key()
    try:
        seconds, _ = await limiter.client.time()
        decision = await limiter.admit(key, 10, None)
        assert decision.stamp is not None
        hour = decision.stamp[0] // 3_600_000_000 * H
        assert hour in (seconds // H * H, seconds // H * H + H)
        assert await limiter.hourly(key, seconds - 2 * H) == {hour: 1}
        await limiter.refund(key, decision.stamp, 10, None)
        assert await limiter.hourly(key, seconds - 2 * H) == {}
    finally:
        await limiter.close()
        forget(key)


async def test_resilient_hourly_answers_from_the_fallback_in_an_outage(tmp_path: Path) -> None:
    server = RedisServer(cwd=tmp_path).start()
    clock = FakeClock()
    limiter = ResilientLimiter(RedisLimiter(connect(server.url), clock))
    limiter.outage.retry_every = 0.0
    try:
        await limiter.admit("key_a", 10, 100)
        assert await limiter.hourly("key_a", START) == {START: 1}
        server.kill()
        clock.advance(H)
        in_memory = await limiter.admit("key_a", 10, 100)
        assert limiter.status() == "degraded" and in_memory.stamp is not None
        # Redis away: only what this process admitted while it was, not Redis's count.
        assert await limiter.hourly("key_a", START) == {START + H: 1}
        server.start()
        assert await limiter.hourly("key_a", START) == {}  # a new, empty Redis
        assert limiter.status() == "ok"
        await limiter.admit("key_a", 10, 100)
        await limiter.refund("key_a", in_memory.stamp, 10, 100)  # to the fallback
        assert await limiter.fallback.hourly("key_a", START) == {}
        assert await limiter.hourly("key_a", START) == {START + H: 1}
    finally:
        await limiter.close()
        server.kill()


@pytest.mark.parametrize("kind", ["file", "memory"])
async def test_hourly_of_many_keys_stay_apart(kind: str, tmp_path: Path) -> None:
    clock = FakeClock()
    limiter = SQLiteLimiter(
        str(tmp_path / "usage.db") if kind == "file" else ":memory:", clock=clock
    )
    keys = [new_key() for _ in range(5)]
    for hour in range(3):
        clock.now = START + hour * H
        for n, key in enumerate(keys):
            for _ in range(n + hour):
                await limiter.admit(key, 100, None)
    for n, key in enumerate(keys):
        expected = {START + hour * H: n + hour for hour in range(3) if n + hour}
        assert await limiter.hourly(key, START) == expected
    await limiter.close()
