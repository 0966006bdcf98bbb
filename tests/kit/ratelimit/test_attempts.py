"""Attempt guards ("at most N attempts per name per window") on every limiter.

A sliding log per name, (now - window, now], checked and recorded in one atomic step; the
name is stored only as its SHA-256. Real SQLite files, the real Redis, the fallback.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import random
import sqlite3
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import redis
import redis.asyncio as aioredis
from redis.crc import key_slot

from propdata.kit.ratelimit.base import Attempts, Limiter
from propdata.kit.ratelimit.redis import RedisLimiter
from propdata.kit.ratelimit.resilient import ResilientLimiter
from propdata.kit.ratelimit.sqlite import SQLiteLimiter
from propdata.kit.redis_link import connect
from tests.conftest import FakeClock
from tests.kit.ratelimit.rig import Rig, fallback, forget_names
from tests.redis_support import REDIS_URL, RedisServer, require_redis


def _name() -> str:
    """A name as a caller would make one: a purpose and an address, unique per test."""
    return f"sign-in:someone.{uuid.uuid4().hex[:10]}@example.com"


@pytest.fixture
def name(rig: Rig) -> Iterator[str]:
    value = _name()
    yield value
    if rig.kind == "redis":
        forget_names(value)


async def _spaced(
    rig: Rig, name: str, count: int, limit: int, window: float, every: float
) -> tuple[float, list[Attempts]]:
    """`count` attempts on `name`, `every` seconds apart: the clock at the first, and what
    each was answered."""
    start = rig.clock.now
    answers = []
    for _ in range(count):
        answers.append(await rig.limiter.attempt(name, limit, window))
        rig.clock.advance(every)
    return start, answers


async def test_the_limit_holds_and_retry_after_names_the_oldest(rig: Rig, name: str) -> None:
    limiter, clock = rig.limiter, rig.clock
    first, got = await _spaced(rig, name, 5, 5, 900, every=60)
    assert got == [Attempts(True, n + 1, 5) for n in range(5)]
    refused = await limiter.attempt(name, 5, 900)
    assert not refused.allowed and refused.used == 5 and refused.limit == 5
    assert refused.retry_after == math.ceil(first + 900 - clock.now) == 600
    assert (await limiter.attempt(name, 5, 900)).used == 5  # a refusal is not recorded
    other = _name()
    assert await limiter.attempt(other, 5, 900) == Attempts(True, 1, 5)  # counted apart
    if rig.kind == "redis":
        forget_names(other)


async def test_entries_leave_exactly_one_window_later(rig: Rig, name: str) -> None:
    limiter, clock = rig.limiter, rig.clock
    start, _ = await _spaced(rig, name, 3, 3, 3600, every=10)
    clock.now = start + 3600 - 1e-6  # a microsecond early: still in the window
    early = await limiter.attempt(name, 3, 3600)
    assert not early.allowed and early.retry_after == 1  # never below 1
    clock.now = start + 3600  # the first has left (the window is (now - 3600, now])
    assert await limiter.attempt(name, 3, 3600) == Attempts(True, 3, 3)
    refused = await limiter.attempt(name, 3, 3600)
    assert refused.retry_after == 10  # the one at start + 10 is the oldest now


async def test_a_lower_limit_waits_for_enough_to_leave(rig: Rig, name: str) -> None:
    limiter, clock = rig.limiter, rig.clock
    start, _ = await _spaced(rig, name, 4, 10, 60, every=10)
    clock.now = start + 35
    # 4 in the window, limit 2: the 3rd oldest (at start + 20) must leave for one more.
    refused = await limiter.attempt(name, 2, 60)
    assert refused == Attempts(False, 4, 2, math.ceil(start + 20 + 60 - clock.now))
    assert refused.retry_after == 45
    assert (await limiter.attempt(name, 2, 60, record=False)).retry_after == 45


async def test_looking_never_records(rig: Rig, name: str) -> None:
    limiter, clock = rig.limiter, rig.clock
    for _ in range(10):
        assert await limiter.attempt(name, 2, 900, record=False) == Attempts(True, 0, 2)
    await limiter.attempt(name, 2, 900)
    assert await limiter.attempt(name, 2, 900, record=False) == Attempts(True, 1, 2)
    assert await limiter.attempt(name, 2, 900, record=False) == Attempts(True, 1, 2)
    clock.advance(100)
    await limiter.attempt(name, 2, 900)
    looked = await limiter.attempt(name, 2, 900, record=False)
    assert looked == Attempts(False, 2, 2, 800)
    clock.advance(800)  # the first left; looking sees it gone without removing anything
    assert await limiter.attempt(name, 2, 900, record=False) == Attempts(True, 1, 2)
    assert await limiter.attempt(name, 2, 900) == Attempts(True, 2, 2)


async def test_attempts_in_one_microsecond_are_counted_apart(rig: Rig, name: str) -> None:
    got = [await rig.limiter.attempt(name, 3, 60) for _ in range(4)]
    assert [a.allowed for a in got] == [True, True, True, False]
    assert got[3].used == 3 and got[3].retry_after == 60


async def test_any_window_length(rig: Rig, name: str) -> None:
    limiter, clock = rig.limiter, rig.clock
    assert (await limiter.attempt(name, 1, 0.5)).allowed
    clock.advance(0.25)
    assert (await limiter.attempt(name, 1, 0.5)).retry_after == 1
    clock.advance(0.25)
    assert (await limiter.attempt(name, 1, 0.5)).allowed
    long = _name()
    assert (await limiter.attempt(long, 1, 7 * 86_400)).allowed
    clock.advance(86_400)
    assert (await limiter.attempt(long, 1, 7 * 86_400)).retry_after == 6 * 86_400
    if rig.kind == "redis":
        forget_names(long)


async def test_bad_arguments_are_refused(rig: Rig, name: str) -> None:
    for limit, window in ((0, 60.0), (-1, 60.0), (5, 0.0), (5, -1.0), (5, math.nan)):
        with pytest.raises(ValueError):
            await rig.limiter.attempt(name, limit, window)


async def test_names_are_stored_hashed(rig: Rig) -> None:
    secret = f"private.{uuid.uuid4().hex[:8]}@example.org"
    name = f"sign-in:{secret}"
    digest = hashlib.sha256(name.encode()).hexdigest()
    for _ in range(3):
        await rig.limiter.attempt(name, 5, 900)
    if rig.kind == "sqlite":
        assert rig.folder is not None
        with sqlite3.connect(rig.folder / "usage.db") as conn:
            names = {row[0] for row in conn.execute("SELECT name FROM limiter_attempts")}
        assert names == {digest}
        await rig.limiter.close()  # the file and its WAL, byte for byte
        stored = b"".join(p.read_bytes() for p in rig.folder.glob("usage.db*"))
        assert secret.encode() not in stored and b"example.org" not in stored
        assert digest.encode() in stored
    elif rig.kind == "redis":
        with redis.Redis.from_url(REDIS_URL) as client:
            assert not list(client.scan_iter(match="*example.org*"))
            key = RedisLimiter.attempt_key_of(name)
            assert key == f"pd:att:{{{digest}}}" and client.zcard(key) == 3
            assert key_slot(key.encode()) == key_slot(digest.encode())
            members = client.zrange(key, 0, -1)
            assert all(secret.encode() not in m for m in members)
            assert 900_000 < client.pttl(key) <= 901_000  # expires with the window
        forget_names(name)
    else:
        assert rig.sql("SELECT DISTINCT name FROM limiter_attempts") == [(digest,)]


async def test_storage_stays_bounded(rig: Rig) -> None:
    """Names never seen again leave with their window, not only when touched."""
    limiter, clock = rig.limiter, rig.clock
    names = [_name() for _ in range(60)]
    for name in names:
        await limiter.attempt(name, 3, 60)
        await limiter.attempt(name, 3, 60)
    clock.advance(60)
    survivor = _name()
    for _ in range(60):
        await limiter.attempt(survivor, 1000, 60)
    if rig.kind == "redis":
        with redis.Redis.from_url(REDIS_URL) as client:
            key = RedisLimiter.attempt_key_of(names[0])
            assert 0 < client.pttl(key) <= 61_000  # Redis drops the idle ones by expiry
            await limiter.attempt(names[0], 3, 60)  # a touch trims the old entries
            assert client.zcard(key) == 1
        forget_names(*names, survivor)
    else:
        survivor_digest = hashlib.sha256(survivor.encode()).hexdigest()
        assert rig.sql("SELECT name, count(*) FROM limiter_attempts GROUP BY name") == [
            (survivor_digest, 60)
        ]


async def test_concurrent_attempts_on_redis_never_pass_the_limit() -> None:
    """Many tasks on several clients, with Redis's own clock (TIME), as in production. The
    clients wait as long as it takes: this is about atomicity, not the fail-fast timeouts."""
    require_redis()
    limiters = [RedisLimiter(aioredis.Redis.from_url(REDIS_URL)) for _ in range(4)]
    name = _name()

    async def some(limiter: RedisLimiter) -> list[Attempts]:
        return [await limiter.attempt(name, 5, 900) for _ in range(10)]

    try:
        runs = await asyncio.gather(*(some(limiters[n % 4]) for n in range(20)))
        got = [a for run in runs for a in run]
        assert len(got) == 200 and sum(a.allowed for a in got) == 5
        assert sorted(a.used for a in got if a.allowed) == [1, 2, 3, 4, 5]
        assert all(a.used == 5 and 0 < (a.retry_after or 0) <= 900 for a in got if not a.allowed)
        assert (await limiters[0].attempt(name, 5, 900, record=False)).used == 5
    finally:
        for limiter in limiters:
            await limiter.close()
        forget_names(name)


def _attempt_from_a_thread(path: str, name: str, each: int) -> list[bool]:
    async def some() -> list[bool]:
        limiter = SQLiteLimiter(path)
        try:
            return [(await limiter.attempt(name, 7, 900)).allowed for _ in range(each)]
        finally:
            await limiter.close()

    return asyncio.run(some())


def test_concurrent_attempts_on_one_sqlite_file_never_pass_the_limit(tmp_path: Path) -> None:
    """Threads with their own connection and event loop: the workers of one host."""
    path = str(tmp_path / "usage.db")
    SQLiteLimiter(path)._conn.close()  # the file exists before they race
    name = _name()
    with ThreadPoolExecutor(6) as pool:
        futures = [pool.submit(_attempt_from_a_thread, path, name, 10) for _ in range(6)]
        results = [allowed for future in futures for allowed in future.result()]
    assert len(results) == 60 and results.count(True) == 7


@pytest.mark.parametrize("seed", range(3))
async def test_random_attempts_get_identical_answers(seed: int, tmp_path: Path) -> None:
    require_redis()
    rng = random.Random(seed)
    clock = FakeClock(1_800_000_000.0 + rng.random())
    limiters: list[Limiter] = [
        SQLiteLimiter(str(tmp_path / "usage.db"), clock=clock),
        RedisLimiter(connect(REDIS_URL), clock=clock),
        fallback(clock),
    ]
    names = {_name(): rng.choice([1.5, 60.0, 900.0]) for _ in range(3)}
    seen: set[bool] = set()
    try:
        for _ in range(600):
            name = rng.choice(list(names))
            limit, record = rng.choice([1, 3, 5]), rng.random() < 0.8
            got = [await lim.attempt(name, limit, names[name], record) for lim in limiters]
            assert got[0] == got[1] == got[2], (seed, clock.now, got)
            seen.add(got[0].allowed)
            clock.advance(rng.choice([0.0, 1e-6, 0.4, 1.5, 7.0, 59.999999, 60.0, 300.0]))
        assert seen == {True, False}
    finally:
        for limiter in limiters:
            await limiter.close()
        forget_names(*names)


async def test_resilient_attempts_fall_back_per_process(tmp_path: Path) -> None:
    server = RedisServer(cwd=tmp_path).start()
    clock = FakeClock()
    limiter = ResilientLimiter(RedisLimiter(connect(server.url), clock))
    limiter.outage.retry_every = 0.0
    name = _name()
    try:
        assert (await limiter.attempt(name, 2, 900)).used == 1
        server.kill()
        # Redis away: this process's own count, which starts empty.
        assert await limiter.attempt(name, 2, 900) == Attempts(True, 1, 2)
        assert limiter.status() == "degraded"
        server.start()  # back, empty: what the fallback counted is not carried over
        assert await limiter.attempt(name, 2, 900, record=False) == Attempts(True, 0, 2)
        assert limiter.status() == "ok"
    finally:
        await limiter.close()
        server.kill()


async def test_forget_takes_back_the_newest_attempt_only(rig: Rig, name: str) -> None:
    limiter, clock = rig.limiter, rig.clock
    first, earlier = await _spaced(rig, name, 3, 3, 900, every=10)
    assert all(a.allowed for a in earlier)
    assert not (await limiter.attempt(name, 3, 900)).allowed
    await limiter.forget(name)  # the newest (at first + 20) goes; the oldest still binds
    got = await limiter.attempt(name, 3, 900)
    assert got == Attempts(True, 3, 3)
    refused = await limiter.attempt(name, 3, 900)
    assert refused.retry_after == math.ceil(first + 900 - clock.now)
    await limiter.forget(_name())  # a name never seen: nothing happens
    for _ in range(5):
        await limiter.forget(name)  # more than there are: the log is just empty
    assert (await limiter.attempt(name, 3, 900, record=False)).used == 0
