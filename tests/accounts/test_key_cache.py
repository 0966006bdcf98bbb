"""A process keeps the keys it verified while the accounts store's keys version stands:
writes to the event log or the webhooks leave them, a write to keys or accounts drops them.
SQLite tells a process of other processes' commits by its `changes()` marker; on PostgreSQL
each move of the keys version is a "keys" notice, delivered with its commit, and without a
notice the version is read again once a poll."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from propdata.accounts.keys import CustomLimits, KeyService, keys_of
from propdata.config import accounts_url
from propdata.errors import RevokedApiKey
from propdata.events.repository import EventRepository, NewEvent
from propdata.kit import meta
from propdata.kit.db import Database, PostgresDatabase, connect
from propdata.kit.wakeup import PostgresWakeups
from propdata.migrations.schema import migrate_accounts
from tests.conftest import Fresh

LONG = 600.0
"""A poll no test waits for: a change seen sooner was seen by its notice."""


def _event(n: int) -> NewEvent:
    body = f'{{"id": "evt_{n}", "type": "property.listed", "data": {{}}}}'
    return NewEvent(f"evt_{n}", "key:x", "property.listed", None, None,
                    "2026-11-28T00:00:00.000Z", body)  # fmt: skip


async def test_an_event_log_write_keeps_the_keys_and_a_revocation_drops_them(
    fresh: Fresh,
) -> None:
    async with keys_of(fresh.store.url) as keys:
        key, secret = await keys.create("developer", None, CustomLimits())
        header = f"Bearer {secret}"
        assert (await keys.authenticate(header)).id == key.id
        cached = keys.db.changes() is not None  # SQLite: a marker of commits, so a cache
        reads = keys.reads
        assert (await keys.authenticate(header)).id == key.id
        assert keys.reads == reads + (0 if cached else 1)
        version = await meta.get(keys.db, meta.KEYS_VERSION)

        marker = keys.db.changes()
        events = EventRepository(keys.db)
        async with keys.db.transaction():
            await events.insert_events([_event(1)])
        assert keys.db.changes() != marker or not cached  # the store did move
        assert (await keys.authenticate(header)).id == key.id
        assert keys.reads == reads + (0 if cached else 2)  # still warm
        assert await meta.get(keys.db, meta.KEYS_VERSION) == version

        await keys.revoke(key.id)
        assert await meta.get(keys.db, meta.KEYS_VERSION) > version
        reads = keys.reads
        with pytest.raises(RevokedApiKey):
            await keys.authenticate(header)
        assert keys.reads == reads + 1  # read again, and found revoked


async def _accounts(fresh: Fresh) -> Database:
    db = await connect(accounts_url(fresh.store.url), private=True)
    await migrate_accounts(db)
    return db


async def _within(seconds: float, condition: Callable[[], Awaitable[bool]]) -> float:
    """Seconds until `condition` held (asked every 5 ms); fails past `seconds`."""
    start = time.monotonic()
    while not await condition():
        assert time.monotonic() - start < seconds, "not within the time"
        await asyncio.sleep(0.005)
    return time.monotonic() - start


async def _refused(server: KeyService, header: str) -> bool:
    """Whether `server` refuses `header` as a revoked key."""
    try:
        await server.authenticate(header)
    except RevokedApiKey:
        return True
    return False


@pytest.fixture
async def two_processes(fresh: Fresh) -> AsyncIterator[tuple[KeyService, KeyService]]:
    """A server's keys (its own pool and listener, a poll it never reaches) and an
    operator's (another pool, as `propdata keys` from another process)."""
    if fresh.store.schema is None:
        pytest.skip("LISTEN/NOTIFY is PostgreSQL's")
    server_db, operator_db = await _accounts(fresh), await _accounts(fresh)
    assert isinstance(server_db, PostgresDatabase)
    wakeups = PostgresWakeups(server_db, LONG)
    try:
        yield KeyService(server_db), KeyService(operator_db)
    finally:
        await wakeups.close()
        await server_db.close()
        await operator_db.close()


async def _listening(server: KeyService) -> None:
    async def heard() -> bool:
        return server.db.notices(meta.KEYS_TOPIC) is not None

    await _within(10, heard)


async def test_postgresql_keeps_verified_keys_until_a_keys_notice(
    two_processes: tuple[KeyService, KeyService],
) -> None:
    server, operator = two_processes
    key, secret = await operator.create("developer", None, CustomLimits())
    header = f"Bearer {secret}"
    await server.authenticate(header)
    await _listening(server)
    await server.authenticate(header)  # read once more: the marker was None before
    reads = server.reads
    for _ in range(5):
        assert (await server.authenticate(header)).plan == "developer"
    assert server.reads == reads  # kept

    await operator.set_plan(key.id, "pro", CustomLimits())

    async def on_pro() -> bool:
        return (await server.authenticate(header)).plan == "pro"

    await _within(5, on_pro)  # by the notice: the poll is ten minutes
    assert server.reads == reads + 1

    await operator.revoke(key.id)

    await _within(5, lambda: _refused(server, header))


async def test_postgresql_reads_the_version_again_within_a_poll_without_a_notice(
    fresh: Fresh,
) -> None:
    """A notice lost (a listener that dropped without a word): the version is read again
    once a poll all the same, so a change is seen within `poll` seconds."""
    if fresh.store.schema is None:
        pytest.skip("LISTEN/NOTIFY is PostgreSQL's")
    poll = 0.3
    server_db, other = await _accounts(fresh), await _accounts(fresh)
    assert isinstance(server_db, PostgresDatabase)
    wakeups = PostgresWakeups(server_db, poll)
    try:
        server = KeyService(server_db)
        key, secret = await KeyService(other).create("developer", None, CustomLimits())
        header = f"Bearer {secret}"
        await _listening(server)
        await server.authenticate(header)
        # The revocation and the version's move, written without their notice.
        async with other.transaction():
            await other.execute("UPDATE api_keys SET status = 'revoked' WHERE id = ?", (key.id,))
            await other.execute(
                "UPDATE meta SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT) WHERE key = ?",
                (meta.KEYS_VERSION.name,),
            )

        assert await _within(5, lambda: _refused(server, header)) < poll * 3
    finally:
        await wakeups.close()
        await server_db.close()
        await other.close()
