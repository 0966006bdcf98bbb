"""The embedded limiter's writing decisions of one turn of the event loop share one
transaction, and are still made one at a time: exact within the process and across
processes, never answered before their commit, and an admission whose request was cancelled
is taken back."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

import pytest

from propdata.kit.ratelimit.sqlite import SQLiteLimiter
from tests.conftest import FakeClock


async def test_a_burst_shares_one_transaction_and_admits_exactly_the_limit(
    tmp_path: Path,
) -> None:
    clock = FakeClock()
    limiter = SQLiteLimiter(str(tmp_path / "usage.db"), clock=clock)
    try:
        before = limiter.transactions
        decisions = await asyncio.gather(*(limiter.admit("k", 10, 100) for _ in range(25)))
        assert limiter.transactions == before + 1
        assert [d.allowed for d in decisions] == [True] * 10 + [False] * 15
        assert [d.minute.remaining for d in decisions[:10]] == list(range(9, -1, -1))
        assert {d.stamp for d in decisions[:10]} == {(int(clock() * 1e6), n) for n in range(10)}
        assert all(d.retry_after == 60 for d in decisions[10:])
        # Refunds and failures of one turn share one too, each taking back its own entry.
        stamps = [d.stamp for d in decisions[:4] if d.stamp is not None]
        await asyncio.gather(
            *(limiter.refund("k", stamp, 10, 100) for stamp in stamps), limiter.fail("k")
        )
        assert limiter.transactions == before + 2
        usage = await limiter.usage("k", 10, 100, failures=20)
        assert usage.minute.used == 6 and usage.day is not None and usage.day.used == 6
        assert usage.failures is not None and usage.failures.used == 1
    finally:
        await limiter.close()


async def test_a_decision_is_answered_only_after_its_commit(tmp_path: Path) -> None:
    """While another process holds the write lock, the admission waits (the event loop
    serving on), and it is counted in the file when it is answered."""
    path = tmp_path / "usage.db"
    limiter = SQLiteLimiter(str(path), clock=FakeClock())
    other = sqlite3.connect(path, isolation_level=None)
    try:
        await limiter.admit("k", 10, None)  # the key's row exists
        other.execute("BEGIN IMMEDIATE")
        admitted = asyncio.ensure_future(limiter.admit("k", 10, None))
        for _ in range(50):
            await asyncio.sleep(0.001)
        assert not admitted.done()
        other.execute("COMMIT")
        decision = await admitted
        assert decision.allowed and decision.minute.used == 2
        assert other.execute("SELECT count(*) FROM limiter_log").fetchone()[0] == 2
    finally:
        other.close()
        await limiter.close()


async def test_a_cancelled_request_leaves_no_admission(tmp_path: Path) -> None:
    limiter = SQLiteLimiter(str(tmp_path / "usage.db"), clock=FakeClock())
    try:
        waiting = asyncio.ensure_future(limiter.admit("k", 10, 100))
        kept = asyncio.ensure_future(limiter.admit("k", 10, 100))
        await asyncio.sleep(0)  # both queued
        waiting.cancel()
        assert (await kept).allowed
        with pytest.raises(asyncio.CancelledError):
            await waiting
        for _ in range(100):  # the take-back is a step of a later transaction
            usage = await limiter.usage("k", 10, 100)
            if usage.minute.used == 1:
                break
            await asyncio.sleep(0.001)
        assert usage.minute.used == 1 and usage.day is not None and usage.day.used == 1
    finally:
        await limiter.close()


async def _turns_until(condition: Callable[[], bool]) -> None:
    """Turns of the event loop until `condition` holds (a few are enough)."""
    for _ in range(100):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError("not within 100 turns")


async def test_a_request_cancelled_once_admitted_is_refunded(tmp_path: Path) -> None:
    limiter = SQLiteLimiter(str(tmp_path / "usage.db"), clock=FakeClock())
    try:
        before = limiter.transactions
        admitted = asyncio.ensure_future(limiter.admit("k", 10, 100))
        await _turns_until(lambda: limiter.transactions > before)  # its request not yet resumed
        assert not admitted.done()
        admitted.cancel()
        with pytest.raises(asyncio.CancelledError):
            await admitted
        await _turns_until(lambda: limiter.transactions > before + 1)  # the refund's
        usage = await limiter.usage("k", 10, 100)
        assert usage.minute.used == 0 and usage.day is not None and usage.day.used == 0
    finally:
        await limiter.close()


async def test_a_failing_step_rolls_back_the_whole_transaction(tmp_path: Path) -> None:
    """Every waiter of a transaction that did not commit gets the error, and none of its
    steps is counted."""
    path = tmp_path / "usage.db"
    limiter = SQLiteLimiter(str(path), clock=FakeClock())
    other = sqlite3.connect(path, isolation_level=None)
    try:
        await limiter.admit("k", 10, None)
        await limiter.admit("j", 10, None)
        other.execute(
            "CREATE TRIGGER refuse BEFORE INSERT ON limiter_log WHEN NEW.num ="
            " (SELECT num FROM limiter_keys WHERE key_id = 'j')"
            " BEGIN SELECT RAISE(ABORT, 'refused'); END"
        )
        results = await asyncio.gather(
            limiter.admit("k", 10, None), limiter.admit("j", 10, None), return_exceptions=True
        )
        assert all(isinstance(r, sqlite3.DatabaseError) for r in results), results
        other.execute("DROP TRIGGER refuse")
        assert (await limiter.admit("k", 10, None)).minute.used == 2  # the first not counted
    finally:
        other.close()
        await limiter.close()


def _admit_in_a_process(path: str, tasks: int) -> list[tuple[bool, int]]:
    async def burst() -> list[tuple[bool, int]]:
        limiter = SQLiteLimiter(path)
        try:
            decisions = await asyncio.gather(
                *(limiter.admit("shared", 30, 40) for _ in range(tasks))
            )
            return [(d.allowed, d.minute.remaining) for d in decisions]
        finally:
            await limiter.close()

    return asyncio.run(burst())


@pytest.mark.slow
def test_processes_with_bursts_admit_exactly_the_limit(tmp_path: Path) -> None:
    path = str(tmp_path / "usage.db")
    asyncio.run(SQLiteLimiter(path).close())  # the file made once, not raced by four
    with ProcessPoolExecutor(4, mp_context=get_context("spawn")) as pool:
        futures = [pool.submit(_admit_in_a_process, path, 25) for _ in range(4)]
        results = [r for future in futures for r in future.result()]
    admitted = sorted(remaining for allowed, remaining in results if allowed)
    assert admitted == list(range(30))  # exactly the limit, each with its own place
