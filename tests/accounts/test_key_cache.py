"""A process keeps the keys it verified while the accounts store's keys version stands:
writes to the event log or the webhooks leave them, a write to keys or accounts drops them.
PostgreSQL has no cheap marker of commits, so there every request reads its key."""

from __future__ import annotations

import pytest

from propdata.accounts.keys import CustomLimits, keys_of
from propdata.errors import RevokedApiKey
from propdata.events.repository import EventRepository, NewEvent
from propdata.kit import meta
from tests.conftest import Fresh


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
