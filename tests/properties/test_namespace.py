"""A process keeps the store's namespace (identity and data version) it read while nothing
moved the version: SQLite tells it of any commit by its `changes()` marker; on PostgreSQL
each move of the data version is a "data" notice delivered with its commit, this process's
own writes move the marker at once, and without a notice the version is read again once a
poll."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from propdata.kit import meta
from propdata.kit.db import Database, PostgresDatabase, connect
from propdata.kit.wakeup import PostgresWakeups
from propdata.properties.repository import PropertyRepository
from tests.conftest import Fresh
from tests.live import until

LONG = 600.0
"""A poll no test waits for: a change seen sooner was seen by its notice."""


class Counted(PropertyRepository):
    """The repository, counting the statements it sends to read the namespace."""

    def __init__(self, db: Database) -> None:
        super().__init__(db)
        self.reads = 0

    async def cache_namespace(self) -> str:
        fetch_one = self.db.fetch_one

        async def counted(*args: Any, **kwargs: Any) -> Any:
            self.reads += 1
            return await fetch_one(*args, **kwargs)

        self.db.fetch_one = counted  # type: ignore[method-assign]
        try:
            return await super().cache_namespace()
        finally:
            del self.db.fetch_one


async def _bump(db: Database) -> None:
    async with db.transaction():
        await PropertyRepository(db).bump_data_version()


async def test_the_namespace_is_kept_until_a_commit_moves_the_version(fresh: Fresh) -> None:
    """One store, one process: its own commit is seen by the next read, at once."""
    db = await connect(fresh.store.url, private=True)
    wakeups = PostgresWakeups(db, LONG) if isinstance(db, PostgresDatabase) else None
    try:
        repo = Counted(db)
        if wakeups is not None:
            await wakeups.start()
        first = await repo.cache_namespace()
        reads = repo.reads
        for _ in range(5):
            assert await repo.cache_namespace() == first
        assert repo.reads == reads  # kept
        await _bump(db)
        moved = await repo.cache_namespace()
        assert moved.rpartition(".")[2] == str(int(first.rpartition(".")[2]) + 1)
    finally:
        if wakeups is not None:
            await wakeups.close()
        await db.close()


@pytest.fixture
async def two_processes(fresh: Fresh) -> AsyncIterator[tuple[PostgresDatabase, Database]]:
    """A server's store (its own pool and listener, a poll it never reaches) and a
    loader's (another pool, as `propdata data import` from another process)."""
    if fresh.store.schema is None:
        pytest.skip("LISTEN/NOTIFY is PostgreSQL's")
    server, loader = await connect(fresh.store.url, private=True), await connect(fresh.store.url)
    assert isinstance(server, PostgresDatabase)
    wakeups = PostgresWakeups(server, LONG)
    try:
        await wakeups.start()
        yield server, loader
    finally:
        await wakeups.close()
        assert server.heard is None  # a closed listener leaves the store reading each time
        await server.close()
        await loader.close()


async def test_postgresql_keeps_the_namespace_until_a_data_notice(
    two_processes: tuple[PostgresDatabase, Database],
) -> None:
    server, loader = two_processes
    repo = Counted(server)
    first = await repo.cache_namespace()
    assert server.notices(meta.DATA_TOPIC) is not None  # listening
    reads = repo.reads
    for _ in range(5):
        assert await repo.cache_namespace() == first
    assert repo.reads == reads

    await _bump(loader)

    async def moved() -> bool:
        return await repo.cache_namespace() != first

    await until(moved, "the new version, by its notice (the poll is ten minutes)", 5)
    assert repo.reads == reads + 1


async def test_postgresql_reads_the_version_again_within_a_poll_without_a_notice(
    fresh: Fresh,
) -> None:
    """A version moved without its notice (a listener that dropped without a word): read
    again once a poll all the same, so the next version is served within `poll` seconds."""
    if fresh.store.schema is None:
        pytest.skip("LISTEN/NOTIFY is PostgreSQL's")
    poll = 0.3
    server, other = await connect(fresh.store.url, private=True), await connect(fresh.store.url)
    assert isinstance(server, PostgresDatabase)
    wakeups = PostgresWakeups(server, poll)
    try:
        await wakeups.start()
        repo = PropertyRepository(server)
        first = await repo.cache_namespace()
        await other.execute(
            "UPDATE meta SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT) WHERE key = ?",
            (meta.DATA_VERSION.name,),
        )

        async def moved() -> bool:
            return await repo.cache_namespace() != first

        start = time.monotonic()
        await until(moved, "the new version, without a notice", 5)
        assert time.monotonic() - start < poll * 3
    finally:
        await wakeups.close()
        await server.close()
        await other.close()
