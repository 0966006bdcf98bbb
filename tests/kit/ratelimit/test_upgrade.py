"""A counters file written before the running minute count existed is upgraded in place."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from propdata.kit.ratelimit.sqlite import SQLiteLimiter
from tests.conftest import FakeClock

START = 1_800_000_000
H = 3600


async def test_old_counter_file_keeps_its_windows(tmp_path: Path) -> None:
    path = tmp_path / "old-usage.db"
    now = 1_800_000_000.0
    conn = sqlite3.connect(path)
    conn.executescript(
        "CREATE TABLE limiter_keys (num INTEGER PRIMARY KEY, key_id TEXT UNIQUE NOT NULL,"
        " day_count INTEGER NOT NULL DEFAULT 0);"
        "CREATE TABLE limiter_log (num INTEGER NOT NULL, at INTEGER NOT NULL, dup INTEGER NOT NULL,"
        " PRIMARY KEY (num, at, dup)) WITHOUT ROWID;"
    )
    conn.execute("INSERT INTO limiter_keys (num, key_id, day_count) VALUES (1, 'k', 10)")
    stamps = [int((now - 3600) * 1e6) + n for n in range(6)] + [
        int((now - 10) * 1e6) + n for n in range(4)
    ]
    conn.executemany("INSERT INTO limiter_log VALUES (1, ?, 0)", [(s,) for s in stamps])
    conn.commit()
    conn.close()

    limiter = SQLiteLimiter(str(path), clock=lambda: now)
    usage = await limiter.usage("k", 5, 12)
    assert usage.minute.used == 4 and usage.day is not None and usage.day.used == 10
    decision = await limiter.admit("k", 5, 12)
    assert (
        decision.allowed
        and decision.minute.used == 5
        and decision.day is not None
        and decision.day.used == 11
    )
    refused = await limiter.admit("k", 5, 12)
    assert not refused.allowed and refused.exceeded == "minute" and refused.retry_after == 50
    await limiter.close()


async def test_old_sqlite_files_gain_hourly_counts(tmp_path: Path) -> None:
    """A counters file from before the hour columns: upgraded in place; requests admitted
    before it are not in any hour, and refunding one never takes a count below zero."""
    path = tmp_path / "usage.db"
    conn = sqlite3.connect(path)
    conn.executescript(
        "CREATE TABLE limiter_keys (num INTEGER PRIMARY KEY, key_id TEXT UNIQUE NOT NULL,"
        " day_count INTEGER NOT NULL DEFAULT 0, minute_count INTEGER NOT NULL DEFAULT 0,"
        " minute_floor INTEGER NOT NULL DEFAULT 0);"
        "CREATE TABLE limiter_log (num INTEGER NOT NULL, at INTEGER NOT NULL,"
        " dup INTEGER NOT NULL, PRIMARY KEY (num, at, dup)) WITHOUT ROWID;"
        "CREATE TABLE limiter_failures (num INTEGER NOT NULL, at INTEGER NOT NULL,"
        " dup INTEGER NOT NULL, PRIMARY KEY (num, at, dup)) WITHOUT ROWID;"
        f"INSERT INTO limiter_keys VALUES (1, 'k', 1, 1, 0);"
        f"INSERT INTO limiter_log VALUES (1, {(START - 10) * 1_000_000}, 0);"
    )
    conn.commit()
    conn.close()
    clock = FakeClock(START + 5)
    limiter = SQLiteLimiter(str(path), clock=clock)
    again = SQLiteLimiter(str(path), clock=clock)  # a second worker opening it: no error
    try:
        decision = await limiter.admit("k", 10, 100)
        assert decision.allowed and decision.minute.used == 2
        assert await limiter.hourly("k", START - H) == {START: 1}
        await limiter.refund("k", ((START - 10) * 1_000_000, 0), 10, 100)  # from before
        after = await again.usage("k", 10, 100)
        assert after.minute.used == 1
        assert await again.hourly("k", START - H) == {START: 1}
    finally:
        await limiter.close()
        await again.close()
