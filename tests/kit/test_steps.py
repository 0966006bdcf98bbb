"""kit.steps: numbered steps run once each, in order, recorded; on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from propdata.kit.db import Database, connect
from propdata.kit.steps import Step, pending, upgrade
from tests.conftest import Store, drop_store, new_store

Apply = Callable[[Database], Awaitable[None]]


@pytest.fixture
async def store(backend: str, tmp_path: Path) -> AsyncIterator[Store]:
    made = await new_store(backend, tmp_path)
    yield made
    await drop_store(made)


def counted(runs: Counter[int]) -> list[Step[Apply]]:
    """Three steps that count their runs; the second waits a little, so workers overlap."""

    def make(version: int, sql: str) -> Step[Apply]:
        async def apply(db: Database) -> None:
            runs[version] += 1
            await db.execute(sql)
            await asyncio.sleep(0.05 if version == 2 else 0)

        return Step(version, f"step {version}", apply)

    return [make(1, "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)"),
            make(2, "INSERT INTO t (id, v) VALUES (1, 'one')"),
            make(3, "ALTER TABLE t ADD COLUMN w TEXT")]  # fmt: skip


async def test_workers_starting_together_run_each_step_once(store: Store) -> None:
    runs: Counter[int] = Counter()
    steps = counted(runs)
    workers = [await connect(store.url) for _ in range(4)]
    try:
        applied = await asyncio.gather(*(upgrade(db, steps) for db in workers))
        assert sorted(v for done in applied for v in done) == [1, 2, 3]
        assert runs == {1: 1, 2: 1, 3: 1}
        assert await workers[0].fetch_all("SELECT id, v, w FROM t") == [(1, "one", None)]
        assert await upgrade(workers[1], steps) == []
    finally:
        for db in workers:
            await db.close()


async def test_a_failing_step_leaves_no_trace_and_runs_again(store: Store) -> None:
    runs: Counter[int] = Counter()
    steps = counted(runs)

    async def broken(db: Database) -> None:
        await db.execute("INSERT INTO t (id, v) VALUES (2, 'two')")
        raise RuntimeError("the step fails midway")

    db = await connect(store.url)
    try:
        with pytest.raises(RuntimeError):
            await upgrade(db, [*steps[:2], Step(3, "broken", broken)])
        # Steps 1 and 2 stay applied and recorded; nothing of step 3 does.
        assert await db.fetch_all("SELECT id FROM t") == [(1,)]
        assert await db.fetch_all("SELECT version FROM schema_steps ORDER BY version") == [
            (1,),
            (2,),
        ]
        assert await upgrade(db, steps) == [3]
        assert runs == {1: 1, 2: 1, 3: 1}
    finally:
        await db.close()


def test_steps_must_be_numbered_in_order() -> None:
    steps: list[Step[tuple[str, ...]]] = [Step(1, "a", ()), Step(2, "b", ())]
    assert pending(steps, [1, 7]) == steps[1:]  # a newer version's record is left alone
    with pytest.raises(ValueError):
        pending([Step(2, "b", ()), Step(1, "a", ())], [])
    with pytest.raises(ValueError):
        pending([Step(1, "a", ()), Step(1, "b", ())], [])
