"""The sliding windows on every limiter: SQLite (embedded), Redis (scale-out), the fallback.

Each edge case runs against all three with the same fake clock, and a random sequence of
admissions, refunds and plan changes must get identical decisions from all three, so the
implementations cannot drift apart. Redis is the real server at 127.0.0.1:6379.
"""

from __future__ import annotations

import asyncio
import math
import random
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import pytest
import redis
from redis.crc import key_slot

from propdata.kit.ratelimit.base import HOURLY_KEEP, Decision, Limiter
from propdata.kit.ratelimit.redis import RedisLimiter
from propdata.kit.ratelimit.sqlite import SQLiteLimiter
from propdata.kit.redis_link import connect
from tests.conftest import FakeClock
from tests.kit.ratelimit.rig import Rig, fallback, forget, new_key
from tests.redis_support import REDIS_URL, require_redis


async def test_retry_exactly_at_retry_after_succeeds_and_a_second_earlier_fails(rig: Rig) -> None:
    limiter, clock, key = rig.limiter, rig.clock, rig.key
    first = clock.now
    for i in range(10):
        decision = await limiter.admit(key, 10, 100)
        assert decision.allowed and decision.minute.remaining == 9 - i
        assert decision.minute.reset == math.ceil(first + 60)
        assert decision.day is not None and decision.day.remaining == 99 - i
        clock.advance(1.5)
    clock.now = first + 20.3
    refused = await limiter.admit(key, 10, 100)
    assert not refused.allowed and refused.exceeded == "minute" and refused.stamp is None
    assert refused.retry_after == math.ceil(first + 60 - clock.now) == 40
    assert refused.minute.remaining == 0 and refused.minute.used == 10
    clock.advance(39)
    early = await limiter.admit(key, 10, 100)
    assert not early.allowed and early.retry_after == 1
    clock.now = first + 20.3 + 40
    on_time = await limiter.admit(key, 10, 100)
    assert on_time.allowed and on_time.minute.remaining == 0
    # the oldest left; the second oldest (first + 1.5) is the window's new start
    assert on_time.minute.reset == math.ceil(first + 1.5 + 60)


async def test_retry_after_is_never_zero(rig: Rig) -> None:
    start = rig.clock.now
    assert (await rig.limiter.admit(rig.key, 1, None)).allowed
    for before_expiry in (0.5, 1e-3, 2e-6):
        rig.clock.now = start + 60 - before_expiry
        refused = await rig.limiter.admit(rig.key, 1, None)
        assert not refused.allowed and refused.retry_after == 1
    rig.clock.now = start + 60  # (now - 60, now]: the entry at `start` has left
    assert (await rig.limiter.admit(rig.key, 1, None)).allowed


async def test_same_microsecond_requests_are_counted_apart(rig: Rig) -> None:
    stamps = []
    for _ in range(3):
        decision = await rig.limiter.admit(rig.key, 5, None)
        assert decision.stamp is not None
        stamps.append(decision.stamp)
    assert len(set(stamps)) == 3 and len({at for at, _ in stamps}) == 1
    assert (await rig.limiter.usage(rig.key, 5, None)).minute.used == 3
    await rig.limiter.refund(rig.key, stamps[1], 5, None)
    assert (await rig.limiter.usage(rig.key, 5, None)).minute.used == 2


async def test_both_windows_full_takes_the_longer_wait(rig: Rig) -> None:
    for _ in range(5):
        assert (await rig.limiter.admit(rig.key, 5, 5)).allowed
    refused = await rig.limiter.admit(rig.key, 5, 5)
    assert not refused.allowed and refused.exceeded == "day" and refused.retry_after == 86_400
    assert refused.day is not None and refused.day.remaining == 0


async def test_daily_quota_is_a_rolling_window(rig: Rig) -> None:
    limiter, clock, key = rig.limiter, rig.clock, rig.key
    start = clock.now
    for _ in range(10):
        for _ in range(10):
            assert (await limiter.admit(key, 10, 100)).allowed
        clock.advance(60)
    refused = await limiter.admit(key, 10, 100)
    assert not refused.allowed and refused.exceeded == "day"
    assert refused.minute.remaining == 10  # the minute has room: only the day is full
    assert refused.retry_after == math.ceil(start + 86_400 - clock.now)
    assert refused.day is not None and refused.day.reset == math.ceil(start + 86_400)
    clock.advance(refused.retry_after - 1)
    assert not (await limiter.admit(key, 10, 100)).allowed
    clock.advance(1)
    assert (await limiter.admit(key, 10, 100)).allowed


async def test_downgrade_with_a_full_window(rig: Rig) -> None:
    start = rig.clock.now
    for _ in range(20):
        assert (await rig.limiter.admit(rig.key, 500, 100_000)).allowed
        rig.clock.advance(1)
    refused = await rig.limiter.admit(rig.key, 10, 100)  # the plan changed to Free
    assert not refused.allowed and refused.exceeded == "minute"
    assert refused.minute.limit == 10 and refused.minute.used == 20
    assert refused.minute.remaining == 0
    # 20 in the window, limit 10: the 11th oldest (sent at start + 10) must leave.
    assert refused.retry_after == math.ceil(start + 10 + 60 - rig.clock.now)
    assert refused.day is not None and refused.day.limit == 100 and refused.day.remaining == 80
    upgraded = await rig.limiter.admit(rig.key, 500, 100_000)  # and back: the next request
    assert upgraded.allowed and upgraded.minute.used == 21


async def test_refund_removes_exactly_the_recorded_entry(rig: Rig) -> None:
    limiter, clock, key = rig.limiter, rig.clock, rig.key
    start = clock.now
    stamps = []
    for _ in range(3):
        decision = await limiter.admit(key, 10, 100)
        assert decision.stamp is not None
        stamps.append(decision.stamp)
        clock.advance(2)
    after = await limiter.refund(key, stamps[1], 10, 100)
    assert after.allowed and after.stamp is None
    assert after.minute.used == 2 and after.day is not None and after.day.used == 2
    assert after.minute.reset == math.ceil(start + 60)
    again = await limiter.refund(key, stamps[1], 10, 100)  # a second refund changes nothing
    assert again.minute.used == 2
    after = await limiter.refund(key, stamps[0], 10, 100)
    assert after.minute.used == 1 and after.minute.reset == math.ceil(start + 4 + 60)
    after = await limiter.refund(key, stamps[2], 10, 100)
    assert after.minute.used == 0 and after.minute.reset == math.ceil(clock.now)


async def test_refused_requests_are_never_recorded(rig: Rig) -> None:
    for _ in range(10):
        assert (await rig.limiter.admit(rig.key, 10, 100)).allowed
    for _ in range(30):
        refused = await rig.limiter.admit(rig.key, 10, 100)
        assert not refused.allowed and refused.retry_after is not None
        assert refused.retry_after >= 1
    usage = await rig.limiter.usage(rig.key, 10, 100)
    assert usage.minute.used == 10 and usage.day is not None and usage.day.used == 10
    rig.clock.advance(60)
    results = [(await rig.limiter.admit(rig.key, 10, 100)).allowed for _ in range(11)]
    assert results.count(True) == 10


async def test_usage_never_records_and_is_answered_when_full(rig: Rig) -> None:
    for _ in range(3):
        usage = await rig.limiter.usage(rig.key, 2, 10)
        assert usage.allowed and usage.minute.used == 0 and usage.stamp is None
        assert usage.minute.reset == math.ceil(rig.clock.now)
    for _ in range(2):
        await rig.limiter.admit(rig.key, 2, 10)
    usage = await rig.limiter.usage(rig.key, 2, 10)
    assert usage.allowed and usage.minute.remaining == 0 and usage.retry_after is None


async def test_keys_without_a_daily_quota(rig: Rig) -> None:
    start = rig.clock.now
    for _ in range(3):
        decision = await rig.limiter.admit(rig.key, 3, None)
        assert decision.allowed and decision.day is None
        rig.clock.advance(10)
    refused = await rig.limiter.admit(rig.key, 3, None)
    assert not refused.allowed and refused.exceeded == "minute" and refused.day is None
    assert refused.retry_after == math.ceil(start + 60 - rig.clock.now) == 30
    rig.clock.advance(30)
    assert (await rig.limiter.admit(rig.key, 3, None)).allowed


async def test_entries_leave_their_windows(rig: Rig) -> None:
    start = rig.clock.now
    for _ in range(4):
        await rig.limiter.admit(rig.key, 10, 100)
    rig.clock.now = start + 60
    usage = await rig.limiter.usage(rig.key, 10, 100)
    assert usage.minute.used == 0 and usage.minute.reset == math.ceil(rig.clock.now)
    assert usage.day is not None and usage.day.used == 4
    assert usage.day.reset == math.ceil(start + 86_400)
    rig.clock.now = start + 86_400
    usage = await rig.limiter.usage(rig.key, 10, 100)
    assert usage.day is not None and usage.day.used == 0
    assert usage.day.reset == math.ceil(rig.clock.now)


def _same(decision: Decision) -> tuple[Any, ...]:
    """What must agree between limiters: everything but the stamp's internal form."""
    return (decision.allowed, decision.minute, decision.day, decision.retry_after,
            decision.exceeded, decision.stamp is not None, decision.failures)  # fmt: skip


async def test_failed_request_guard_edges(rig: Rig) -> None:
    """The guard refuses once `failures` failures are in (now - 60 s, now], admissions and
    usage alike, until the oldest leaves; it never moves the metered windows."""
    limiter, clock, key = rig.limiter, rig.clock, rig.key
    first = clock.now
    for _ in range(3):
        await limiter.fail(key)
        clock.advance(10.0)
    open_ = await limiter.admit(key, 100, 1000, failures=4)
    assert open_.allowed and open_.failures is not None and open_.failures.used == 3
    assert open_.failures.reset == math.ceil(first + 60)
    await limiter.fail(key)
    shut = await limiter.admit(key, 100, 1000, failures=4)
    assert not shut.allowed and shut.exceeded == "failures" and shut.stamp is None
    assert shut.retry_after == math.ceil(first + 60 - clock.now)
    assert shut.minute.used == 1 and shut.day is not None and shut.day.used == 1  # open_ only
    seen = await limiter.usage(key, 100, 1000, failures=4)
    assert not seen.allowed and seen.exceeded == "failures" and seen.retry_after == shut.retry_after
    described = await limiter.usage(key, 100, 1000)  # without the guard: a plain description
    assert described.allowed and described.failures is None
    clock.now = first + 60.0  # the oldest failure is now exactly 60 s old: out of the window
    assert (await limiter.admit(key, 100, 1000, failures=4)).allowed


async def test_the_guard_and_a_full_minute_take_the_longer_wait(rig: Rig) -> None:
    limiter, clock, key = rig.limiter, rig.clock, rig.key
    assert (await limiter.admit(key, 1, None, failures=1)).allowed
    clock.advance(30.0)
    await limiter.fail(key)
    refused = await limiter.admit(key, 1, None, failures=1)
    assert refused.exceeded == "failures" and refused.retry_after == 60
    clock.advance(31.0)  # the minute is free again, the failure is not
    assert (await limiter.admit(key, 1, None, failures=1)).exceeded == "failures"


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.slow
async def test_random_traffic_gets_identical_decisions(seed: int, tmp_path: Path) -> None:
    require_redis()
    rng = random.Random(seed)
    checks = random.Random(-seed)  # its own, so the traffic stays what it was
    clock = FakeClock(1_800_000_000.0 + rng.random())
    limiters: list[Limiter] = [
        SQLiteLimiter(str(tmp_path / "usage.db"), clock=clock),
        RedisLimiter(connect(REDIS_URL), clock=clock),
        fallback(clock),
    ]
    # A key's daily quota is fixed (a log without one keeps only the minute, trimmed by the
    # Redis script on a `usage` too, by SQLite only on a writing decision); its per-minute
    # limit and quota size change as plan changes would.
    keys: dict[str, int | None] = {new_key(): daily for daily in (None, 15, 60)}
    stamps: dict[str, list[list[tuple[int, int]]]] = {key: [] for key in keys}
    counted = dict.fromkeys(keys, 0)
    seen: set[str] = set()
    try:
        for _ in range(1500):
            key = rng.choice(list(keys))
            per_minute = rng.choice([3, 10, 25])
            daily = keys[key]
            if daily is not None and rng.random() < 0.05:
                daily = keys[key] = rng.choice([15, 60, 12])
            action = rng.random()
            guard = rng.choice([None, None, None, 2, 5])
            if action < 0.08:
                for limiter in limiters:
                    await limiter.fail(key)
                got = [await limiter.usage(key, per_minute, daily, guard) for limiter in limiters]
            elif action < 0.7:
                got = [await limiter.admit(key, per_minute, daily, guard) for limiter in limiters]
                if got[0].allowed:
                    stamps[key].append([d.stamp for d in got if d.stamp is not None])
                    counted[key] += 1
            elif action < 0.85 and stamps[key]:
                entry = stamps[key].pop(rng.randrange(len(stamps[key])))
                # Taken back only while inside the longest window the key keeps.
                age_us = int(clock.now * 1_000_000) - entry[0][0]
                counted[key] -= age_us < (60 if daily is None else 86_400) * 1_000_000
                got = [
                    await limiter.refund(key, stamp, per_minute, daily)
                    for limiter, stamp in zip(limiters, entry, strict=True)
                ]
            else:
                got = [await limiter.usage(key, per_minute, daily, guard) for limiter in limiters]
            assert _same(got[0]) == _same(got[1]) == _same(got[2]), (seed, clock.now, got)
            if checks.random() < 0.1:  # the hourly counts agree as well, over a random range
                since = clock.now - checks.choice([0.0, 1_800.0, 7_200.0, 86_400.0, 40 * 86_400.0])
                hours = [await limiter.hourly(key, since) for limiter in limiters]
                assert hours[0] == hours[1] == hours[2], (seed, clock.now, hours)
            seen.add(got[0].exceeded or ("refund" if 0.7 <= action < 0.85 else "admit"))
            # Mostly small steps, some in the same microsecond, now and then a long gap.
            step = rng.choice([0.0, 1e-6, 0.3, 1.7, 4.0, 13.0, 59.999999, 60.0, 3_000.0])
            clock.advance(step)
        assert seen == {"admit", "refund", "minute", "day", "failures"}  # every path was taken
        for key in keys:
            hours = [await limiter.hourly(key, clock.now - 40 * 86_400) for limiter in limiters]
            assert hours[0] == hours[1] == hours[2] and len(hours[0]) > 10, (seed, hours)
            # Every admission not refunded is counted, in its hour; refused ones never.
            assert sum(hours[0].values()) == counted[key], (seed, key)
    finally:
        for limiter in limiters:
            await limiter.close()
        for key in keys:
            forget(key)


async def test_redis_keys_share_one_cluster_slot_and_expire() -> None:
    require_redis()
    limiter = RedisLimiter(connect(REDIS_URL), clock=FakeClock())
    daily, unlimited = new_key(), new_key()
    try:
        log, seq, fails, hours = limiter.keys(daily)
        assert log == f"pd:{{{daily}}}:log" and key_slot(log.encode()) == key_slot(seq.encode())
        assert key_slot(fails.encode()) == key_slot(log.encode())
        assert key_slot(hours.encode()) == key_slot(log.encode())
        await limiter.admit(daily, 10, 100)
        await limiter.admit(unlimited, 10, None)
        client = limiter.client
        assert 86_400_000 < await client.pttl(log) <= 86_401_000
        assert 86_400_000 < await client.pttl(seq) <= 86_401_000
        for name in limiter.keys(unlimited)[:2]:
            assert 60_000 < await client.pttl(name) <= 61_000
        assert await client.zcard(log) == 1
        # The hourly counts outlive the logs: the retention (32 days) and an hour.
        keep_ms = (HOURLY_KEEP + 3600) * 1000
        for key in (daily, unlimited):
            assert keep_ms - 5_000 < await client.pttl(limiter.keys(key)[3]) <= keep_ms
        await limiter.fail(unlimited)  # the failures log keeps a minute, then goes
        assert 60_000 < await client.pttl(limiter.keys(unlimited)[2]) <= 61_000
    finally:
        await limiter.close()
        forget(daily)
        forget(unlimited)


async def test_without_a_daily_quota_redis_keeps_only_the_minute() -> None:
    require_redis()
    clock = FakeClock()
    limiter = RedisLimiter(connect(REDIS_URL), clock=clock)
    key = new_key()
    try:
        for _ in range(5):
            await limiter.admit(key, 100, None)
            clock.advance(20)
        assert await limiter.client.zcard(limiter.keys(key)[0]) == 3  # 100 s: the last minute
    finally:
        await limiter.close()
        forget(key)


async def test_without_a_daily_quota_sqlite_keeps_only_the_minute(tmp_path: Path) -> None:
    clock = FakeClock()
    limiter = SQLiteLimiter(str(tmp_path / "usage.db"), clock=clock)
    unlimited, quota = new_key(), new_key()

    def stored(key: str) -> int:
        row = limiter._conn.execute(
            "SELECT count(*) FROM limiter_log l JOIN limiter_keys k ON k.num = l.num"
            " WHERE k.key_id = ?",
            (key,),
        ).fetchone()
        return int(row[0])

    try:
        start = clock.now
        for _ in range(600):  # one request each of the two keys every 0.5 s: 300 s
            assert (await limiter.admit(unlimited, 1_000, None)).allowed
            assert (await limiter.admit(quota, 1_000, 100_000)).allowed
            clock.advance(0.5)
            assert stored(unlimited) <= 120  # at most the minute's entries, at every step
        assert stored(unlimited) == 120  # (now - 60 s, now]: the last 120 requests
        usage = await limiter.usage(unlimited, 1_000, None)
        assert usage.minute.used == 119 and usage.day is None  # the first is at now - 60 s
        # "Requests today" of such a key come from the hour buckets, which keep them all.
        assert sum((await limiter.hourly(unlimited, start)).values()) == 600
        # A key with a daily quota keeps, and counts, its whole day.
        assert stored(quota) == 600
        day = (await limiter.usage(quota, 1_000, 100_000)).day
        assert day is not None and day.used == 600 and day.reset == math.ceil(start + 86_400)
        clock.now = start + 86_400 + 100  # the first 201 requests (at start .. start + 100 s) left
        decision = await limiter.admit(quota, 1_000, 100_000)
        assert decision.day is not None and decision.day.used == 600 - 201 + 1
        assert stored(quota) == 400
    finally:
        await limiter.close()


async def test_redis_takes_the_time_from_redis() -> None:
    require_redis()
    limiter = RedisLimiter(connect(REDIS_URL))  # production: no clock
    key = new_key()
    try:
        seconds, micros = await limiter.client.time()
        decision = await limiter.admit(key, 10, None)
        assert decision.stamp is not None
        at, n = decision.stamp
        assert isinstance(at, int) and isinstance(n, int) and n >= 1
        assert 0 <= at - (seconds * 1_000_000 + micros) < 2_000_000
        assert decision.minute.reset == math.ceil(at / 1e6 + 60)
    finally:
        await limiter.close()
        forget(key)


def _admit_from_threads(key: str, threads: int, each: int) -> list[tuple[bool, int]]:
    """One process: `threads` threads, each with its own event loop and client, admitting."""

    async def admit_some() -> list[tuple[bool, int]]:
        limiter = RedisLimiter(connect(REDIS_URL))
        try:
            out = []
            for _ in range(each):
                decision = await limiter.admit(key, 10, 1_000)
                out.append((decision.allowed, decision.minute.remaining))
            return out
        finally:
            await limiter.close()

    with ThreadPoolExecutor(threads) as pool:
        futures = [pool.submit(asyncio.run, admit_some()) for _ in range(threads)]
        return [result for future in futures for result in future.result()]


@pytest.mark.slow
@pytest.mark.slow
def test_processes_and_threads_admit_exactly_the_limit() -> None:
    require_redis()
    key = new_key()
    try:
        context = get_context("spawn")
        with ProcessPoolExecutor(4, mp_context=context) as pool:
            futures = [pool.submit(_admit_from_threads, key, 6, 5) for _ in range(4)]
            results = [result for future in futures for result in future.result()]
        assert len(results) == 120
        admitted = sorted(remaining for allowed, remaining in results if allowed)
        assert admitted == list(range(10))  # exactly 10, each with its own place
        with redis.Redis.from_url(REDIS_URL) as client:
            assert client.zcard(RedisLimiter.keys_of(key)[0]) == 10
    finally:
        forget(key)
