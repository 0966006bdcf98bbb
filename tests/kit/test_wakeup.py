"""Wake-ups on every carrier: a notice wakes a waiter (whose poll is made longer than the
test may take, so only the notice can), a wait without one ends by the poll, and PostgreSQL
and Redis carry notices between separate connections (as between processes)."""

from __future__ import annotations

import asyncio

import pytest

from propdata.kit.db import Database, PostgresDatabase, connect
from propdata.kit.wakeup import POLL, LocalWakeups, PostgresWakeups, RedisWakeups, Wakeups
from tests.conftest import REDIS_URL
from tests.live import until

LONG = 600.0
"""A poll no test waits for: a waiter that returns was woken by the notice."""


async def _woken(
    waiter: Wakeups, notifier: Wakeups, topic: str = "events", tries: int = 20
) -> bool:
    """Whether the notifier's notice wakes the waiter (tried a few times: a carrier starts
    listening on its first wait, and a notice before that is lost, as designed)."""
    await waiter.wait(topic, 0.01)
    for _ in range(tries):
        task = asyncio.create_task(waiter.wait(topic, LONG))
        await asyncio.sleep(0.1)
        await notifier.notify(topic)
        done, _ = await asyncio.wait({task}, timeout=1)
        if done:
            return True
        task.cancel()
    return False


async def test_in_process_notices_wake_and_waits_end_by_the_poll() -> None:
    assert await _woken(LocalWakeups(LONG), LocalWakeups(LONG), tries=2) is False  # another process
    wakeups = LocalWakeups(LONG)
    assert await _woken(wakeups, wakeups)
    await asyncio.wait_for(LocalWakeups().wait("changes", LONG), POLL * 5)  # ends by the poll


async def test_postgres_carries_notices_between_connections(empty_db: Database) -> None:
    if not isinstance(empty_db, PostgresDatabase):
        pytest.skip("LISTEN/NOTIFY is PostgreSQL's")
    other = await connect(empty_db.url)
    assert isinstance(other, PostgresDatabase)
    waiter, notifier = PostgresWakeups(empty_db, LONG), PostgresWakeups(other, LONG)
    try:
        assert await _woken(waiter, notifier)
    finally:
        await waiter.close()
        await notifier.close()
        await other.close()


async def test_redis_carries_notices_between_clients(backend: str) -> None:
    if backend != "scaleout":
        pytest.skip("Redis is the scale-out store's")
    waiter, notifier = RedisWakeups(REDIS_URL, LONG), RedisWakeups(REDIS_URL, LONG)
    try:
        assert await _woken(waiter, notifier, "changes")
    finally:
        await waiter.close()
        await notifier.close()


async def test_an_unreachable_redis_only_leaves_the_poll() -> None:
    wakeups = RedisWakeups("redis://127.0.0.1:1/0")
    try:
        await wakeups.notify("events")  # never raises
        await asyncio.wait_for(wakeups.wait("events", LONG), POLL * 5)
    finally:
        await wakeups.close()


async def test_each_carrier_is_a_loop_that_says_whether_it_hears_the_others(
    empty_db: Database, backend: str
) -> None:
    carriers: list[Wakeups] = [LocalWakeups(LONG)]
    if isinstance(empty_db, PostgresDatabase):
        carriers.append(PostgresWakeups(empty_db, LONG))
    if backend == "scaleout":
        carriers.append(RedisWakeups(REDIS_URL, LONG))
    for wakeups in carriers:
        assert wakeups.name == "wakeups" and wakeups.health() == "stopped"
        await wakeups.start()
        assert await until(lambda: wakeups.health() == "ok", f"{wakeups} listening")  # noqa: B023
        await wakeups.stop()
        await wakeups.stop()  # twice is harmless
        assert wakeups.health() == "stopped"
    away = RedisWakeups("redis://127.0.0.1:1/0", LONG)
    await away.start()
    try:  # notices of other processes are lost; the poll goes on
        failing = await until(lambda: away.health().startswith("failing"), "the subscriber down")
        assert failing
    finally:
        await away.stop()
