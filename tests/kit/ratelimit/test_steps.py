"""The embedded limiter's counters file takes its schema by numbered steps (kit.steps)."""

from __future__ import annotations

import asyncio
import sqlite3
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from propdata.kit.ratelimit.sqlite import STEPS, SQLiteLimiter
from tests.conftest import FakeClock


def _layout(path: Path) -> list[tuple[str, ...]]:
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY type, name")
        return [tuple(row) for row in rows]


def _recorded(path: Path) -> list[tuple[int, str]]:
    with sqlite3.connect(path) as conn:
        return list(conn.execute("SELECT version, name FROM schema_steps ORDER BY version"))


async def test_a_new_file_records_each_step_once(tmp_path: Path) -> None:
    path = tmp_path / "usage.db"
    limiter = SQLiteLimiter(str(path))
    await limiter.close()
    assert _recorded(path) == [(s.version, s.name) for s in STEPS]
    layout = _layout(path)
    again = SQLiteLimiter(str(path))  # opening a current file changes nothing
    await again.close()
    assert _layout(path) == layout and _recorded(path) == [(s.version, s.name) for s in STEPS]


async def test_a_file_without_a_record_keeps_its_counts(tmp_path: Path) -> None:
    """The tables of step 1 and no record of steps (how the file was laid out before it kept
    one): it records step 1 and answers from the counts it holds."""
    path = tmp_path / "usage.db"
    now = 1_800_000_000.0
    with sqlite3.connect(path) as conn:
        for statement in STEPS[0].apply:
            conn.execute(statement)
        conn.execute("INSERT INTO limiter_keys (num, key_id, day_count, minute_count)"
                     " VALUES (1, 'k', 2, 2)")  # fmt: skip
        conn.executemany("INSERT INTO limiter_log VALUES (1, ?, 0)",
                         [(int((now - s) * 1e6),) for s in (30, 10)])  # fmt: skip
    limiter = SQLiteLimiter(str(path), clock=FakeClock(now))
    try:
        usage = await limiter.usage("k", 5, 100)
        assert usage.minute.used == 2 and usage.day is not None and usage.day.used == 2
        assert (await limiter.admit("k", 5, 100)).minute.used == 3
    finally:
        await limiter.close()
    assert [v for v, _ in _recorded(path)] == [s.version for s in STEPS]


def test_workers_opening_a_new_file_together_apply_each_step_once(tmp_path: Path) -> None:
    path = tmp_path / "usage.db"

    def open_one() -> None:
        asyncio.run(SQLiteLimiter(str(path)).close())

    with ThreadPoolExecutor(6) as pool:
        for future in [pool.submit(open_one) for _ in range(6)]:
            future.result()
    assert [v for v, _ in _recorded(path)] == [s.version for s in STEPS]
