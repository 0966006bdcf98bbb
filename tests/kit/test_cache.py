"""The in-process response cache stays within its budget, counting what entries really cost."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

from propdata.app import SERVING_PAGE_CACHE_KIB, build_services
from propdata.config import Settings
from propdata.kit.cache import Cached, MemoryCache
from propdata.kit.db import connect
from tests.conftest import FakeClock

BODY = b'{"data":{"id":"t-000"}}' * 4


def _key(i: int) -> str:
    return f"0f3c9a1e5b7d4c2a9e8f6b1d3c5a7e9f.41|/v1/properties/syn-{i:07d}?|0"


@pytest.mark.slow
async def test_what_entries_cost_stays_within_the_budget() -> None:
    """Keys and per-entry overhead count against the budget, not bodies alone (counting only
    bodies let 1.3 million small entries, 460 MB, fit in a 64 MB cache)."""
    budget = 2 * 1024 * 1024
    cache = MemoryCache(max_bytes=budget, clock=FakeClock())
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(100_000):
            await cache.set(_key(i), Cached(200, b"application/json", BODY), 60)
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert cache.size <= budget
    assert held <= 1.2 * budget, f"{held / 1e6:.1f} MB held for a {budget / 1e6:.1f} MB budget"
    assert await cache.get(_key(99_999)) is not None  # the newest stay, the oldest went
    assert await cache.get(_key(0)) is None


async def test_expired_entries_leave_without_being_looked_up() -> None:
    clock = FakeClock()
    cache = MemoryCache(max_bytes=64 * 1024 * 1024, clock=clock)
    for i in range(1_000):
        await cache.set(_key(i), Cached(200, b"application/json", BODY), 60)
    assert len(cache) == 1_000
    clock.advance(60.0)
    await cache.set(_key(-1), Cached(200, b"application/json", BODY), 60)
    assert len(cache) == 1 and await cache.get(_key(5)) is None


async def test_an_entry_lives_its_time_then_expires() -> None:
    clock = FakeClock()
    cache = MemoryCache(clock=clock)
    await cache.set("k", Cached(200, b"application/json", b"{}"), 60)
    clock.advance(59.9)
    assert await cache.get("k") == Cached(200, b"application/json", b"{}")
    clock.advance(0.1)
    assert await cache.get("k") is None and cache.size == 0


async def test_an_answer_over_a_quarter_of_the_budget_or_4_mib_is_not_kept() -> None:
    small = MemoryCache(max_bytes=4_000, clock=FakeClock())
    await small.set("big", Cached(200, b"application/json", b"x" * 1_200), 60)
    await small.set("fits", Cached(200, b"application/json", b"x" * 500), 60)
    assert await small.get("big") is None and await small.get("fits") is not None
    large = MemoryCache(max_bytes=64 * 1024 * 1024, clock=FakeClock())
    await large.set("huge", Cached(200, b"application/json", b"x" * (4 * 1024 * 1024 + 1)), 60)
    assert await large.get("huge") is None


async def test_each_worker_keeps_its_share_of_the_host_budget(tmp_path: Path) -> None:
    settings = Settings(database_url=str(tmp_path / "p.db"), cache_mb=8, workers=4)
    services = await build_services(settings)
    try:
        assert isinstance(services.cache, MemoryCache)
        assert services.cache.max_bytes == 2 * 1024 * 1024
    finally:
        await services.close()


async def test_a_server_keeps_a_small_sqlite_page_cache_and_commands_the_larger(
    tmp_path: Path,
) -> None:
    """A worker's own page cache is 4 MB (the OS cache, shared by every worker, holds the
    rest); a command (a load, a copy) keeps 16 MB."""
    settings = Settings(database_url=str(tmp_path / "p.db"))
    services = await build_services(settings)
    try:
        for store in (services.db, services.accounts_db):
            assert await store.fetch_one("PRAGMA cache_size") == (-SERVING_PAGE_CACHE_KIB,)
    finally:
        await services.close()
    command = await connect(str(tmp_path / "p.db"))
    try:
        assert await command.fetch_one("PRAGMA cache_size") == (-16384,)
    finally:
        await command.close()
