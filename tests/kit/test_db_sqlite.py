"""SQLite work never stalls the event loop.

A query run inline, or a write waiting for another process's lock inside SQLite's busy
handler (up to 30 s), would stall every request queued on that worker: slow reads run on
threads, and lock waits on the loop.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import stat
import threading
import time
from collections.abc import AsyncIterator, Awaitable
from pathlib import Path
from typing import Any

import pytest

from propdata.kit.db import SQLiteDatabase
from propdata.kit.ratelimit.sqlite import SQLiteLimiter

HEAVY = (
    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000000)"
    " SELECT count(*) FROM n"
)
"""A query that takes about a second here."""


async def _longest_stall(work: Awaitable[Any]) -> tuple[Any, float]:
    """Run `work` while a heartbeat ticks every 10 ms; return its result and the longest
    time the heartbeat had to wait for the loop."""
    stalls: list[float] = []
    done = asyncio.Event()

    async def heartbeat() -> None:
        while not done.is_set():
            start = time.perf_counter()
            await asyncio.sleep(0.01)
            stalls.append(time.perf_counter() - start - 0.01)

    beat = asyncio.create_task(heartbeat())
    try:
        result = await work
    finally:
        done.set()
        await beat
    return result, max(stalls, default=0.0)


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[SQLiteDatabase]:
    database = SQLiteDatabase(str(tmp_path / "data.db"))
    await database.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)")
    yield database
    await database.close()


def _hold_write_lock(path: Path, seconds: float) -> threading.Thread:
    """Another process's writer, holding the lock for `seconds` (a load, a backup)."""
    held = threading.Event()

    def hold() -> None:
        conn = sqlite3.connect(path, isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")
        held.set()
        time.sleep(seconds)
        conn.execute("COMMIT")
        conn.close()

    thread = threading.Thread(target=hold)
    thread.start()
    held.wait()
    return thread


async def test_a_slow_query_runs_beside_the_loop(db: SQLiteDatabase) -> None:
    started = time.perf_counter()
    rows, stall = await _longest_stall(db.fetch_all(HEAVY, slow=True))
    took = time.perf_counter() - started
    assert rows == [(3_000_000,)]
    assert took > 0.3, "the query should take a while for this test to mean anything"
    assert stall < 0.1, f"the loop stalled {stall:.3f} s during a {took:.2f} s query"


async def test_a_held_write_lock_is_waited_for_on_the_loop(
    db: SQLiteDatabase, tmp_path: Path
) -> None:
    holder = _hold_write_lock(tmp_path / "data.db", 0.8)

    async def write() -> float:
        start = time.perf_counter()
        async with db.transaction():
            await db.execute("INSERT INTO t (v) VALUES ('after the lock')")
        return time.perf_counter() - start

    waited, stall = await _longest_stall(write())
    holder.join()
    assert waited > 0.5 and stall < 0.1, (waited, stall)
    assert await db.fetch_all("SELECT v FROM t") == [("after the lock",)]


async def test_the_limiter_waits_for_a_held_lock_on_the_loop(tmp_path: Path) -> None:
    limiter = SQLiteLimiter(str(tmp_path / "usage.db"))
    await limiter.admit("key_a", 10, 100)
    holder = _hold_write_lock(tmp_path / "usage.db", 0.8)
    try:
        decision, stall = await _longest_stall(limiter.admit("key_a", 10, 100))
    finally:
        holder.join()
        await limiter.close()
    assert decision.allowed and decision.minute.used == 2
    assert stall < 0.1, f"the loop stalled {stall:.3f} s"


async def test_two_tasks_transactions_never_merge(db: SQLiteDatabase) -> None:
    """One connection, two tasks: the second waits for the first's transaction to end
    instead of joining it (and being rolled back with it)."""
    inside = asyncio.Event()

    async def failing() -> None:
        async with db.transaction():
            await db.execute("INSERT INTO t (v) VALUES ('rolled back')")
            inside.set()
            await asyncio.sleep(0.05)  # the other task runs meanwhile
            raise RuntimeError("this one fails")

    async def committing() -> None:
        await inside.wait()
        async with db.transaction():
            await db.execute("INSERT INTO t (v) VALUES ('kept')")

    results = await asyncio.gather(failing(), committing(), return_exceptions=True)
    assert isinstance(results[0], RuntimeError) and results[1] is None
    assert await db.fetch_all("SELECT v FROM t") == [("kept",)]


def _open_together(kind: str, path: str, start: Any, answers: Any) -> None:
    start.wait()
    try:
        if kind == "limiter":
            SQLiteLimiter(path)
        else:
            asyncio.run(SQLiteDatabase(path).close())
        answers.put("ok")
    except Exception as exc:  # the test's answer: what each process met
        answers.put(repr(exc))


@pytest.mark.parametrize("kind", ["limiter", "store"])
def test_processes_opening_a_new_file_together_all_open_it(tmp_path: Path, kind: str) -> None:
    """The workers of `propdata serve` make the counters file together at their first start.
    SQLite's switch of a new file to WAL answers "database is locked" at once, past its busy
    wait, when another process holds the file: here about one round in five, unless retried
    (`kit.db.use_wal`)."""
    import multiprocessing

    context = multiprocessing.get_context("fork")
    met: list[str] = []
    for round_ in range(12):
        start, answers = context.Barrier(4), context.Queue()
        path = str(tmp_path / f"{kind}-{round_}.db")
        processes = [context.Process(target=_open_together, args=(kind, path, start, answers))
                     for _ in range(4)]  # fmt: skip
        for process in processes:
            process.start()
        met += [answers.get(timeout=60) for _ in processes]
        for process in processes:
            process.join(60)
    assert met == ["ok"] * len(met)


def _write_and_close(path: str) -> None:
    """Another process's short visit (a `propdata keys create`): write, then close, which
    as the file's last connection checkpoints the WAL and deletes it."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("INSERT INTO t (v) VALUES ('from another process')")
    conn.close()


async def test_opening_a_private_file_again_keeps_the_open_connections_locks(
    tmp_path: Path,
) -> None:
    """SQLite's locks are POSIX locks, which any close of a descriptor of the file in the
    process drops. Made private by opening and closing it, a file open in this process lost
    its connection's locks: another process closing it then deleted the WAL under that
    connection ("database disk image is malformed")."""
    import multiprocessing

    path = str(tmp_path / "accounts.db")
    first = SQLiteDatabase(path, private=True)
    await first.execute("CREATE TABLE t (v TEXT)")
    await first.execute("INSERT INTO t (v) VALUES ('first')")
    second = SQLiteDatabase(path, private=True)  # another app of the same process
    visit = multiprocessing.get_context("spawn").Process(target=_write_and_close, args=(path,))
    visit.start()
    visit.join()
    assert visit.exitcode == 0
    await first.execute("INSERT INTO t (v) VALUES ('after')")
    assert os.access(path + "-wal", os.F_OK), "the open connections' WAL was deleted under them"
    kept = sorted(value for (value,) in await first.fetch_all("SELECT v FROM t"))
    assert kept == ["after", "first", "from another process"]
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    await second.close()
    await first.close()
