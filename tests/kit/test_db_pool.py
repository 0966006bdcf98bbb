"""PostgreSQL pool exhaustion is told apart from an outage (both answer 503)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from propdata.kit.db import PostgresDatabase, StoreBusy
from tests.conftest import drop_store, new_store


async def test_a_full_pool_is_busy_not_unreachable(tmp_path: Path) -> None:
    store = await new_store("scaleout", tmp_path)
    db = PostgresDatabase(store.url, max_size=1, acquire_timeout=0.2)
    holding, release = asyncio.Event(), asyncio.Event()

    async def hold() -> None:
        async with db.transaction():  # takes the pool's only connection
            holding.set()
            await release.wait()

    try:
        holder = asyncio.create_task(hold())
        await holding.wait()
        with pytest.raises(StoreBusy, match="busy: all 1 pooled connections"):
            await db.fetch_one("SELECT 1")
        release.set()
        await holder
        assert await db.fetch_one("SELECT 1") == (1,)  # and it recovers at once
    finally:
        await db.close()
        await drop_store(store)
