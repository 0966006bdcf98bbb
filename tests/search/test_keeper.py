"""The index follows loads without a rebuild: each commit's changes reach searches through
the delta (a removed record leaves, a changed one moves between filters), a grown delta is
folded into a new snapshot with answers unchanged, the response cache and ETags follow the
data, and every worker of a server serves a commit within a second."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest

from propdata.ingest.loader import load
from propdata.kit.db import Database
from propdata.properties.repository import PropertyRepository
from propdata.search import live
from propdata.search.filters import SearchFilters
from propdata.search.query import SearchQuery
from propdata.search.service import SearchService
from tests.conftest import Store, build_store, create_key, drop_store, new_store, open_db
from tests.factories import AS_OF, event, record
from tests.redis_support import free_port
from tests.search.test_index import index_ready
from tests.search.test_index_snapshot import ready

QUERIES = [
    SearchQuery(SearchFilters(state="IA"), "listPrice", "asc", 5, 0),
    SearchQuery(SearchFilters(status="forSale"), "lastUpdated", "desc", 10, 2),
    SearchQuery(SearchFilters(), "daysOnMarket", "desc", 100, 0),
    SearchQuery(SearchFilters(min_price=200_000), "livingArea", "asc", 3, 1),
    SearchQuery(SearchFilters(near=(42.03, -93.62, 25.0)), "distance", "asc", 7, 0),
]


def off_market(pid: str, **overrides: Any) -> Any:
    """A record that was listed and is off the market now."""
    history = [event("2026-11-01", "delisted", None), event("2026-10-01", "listedForSale", 250_000)]
    return record(pid, status="offMarket", list_price=None, listing_type=None,
                  price_history=history, **overrides)  # fmt: skip


async def _load(db: Database, *records: Any) -> None:
    report = await load(db, iter(enumerate(records, 1)), origin="import", as_of=AS_OF)
    assert not report.rejects


async def _remove(db: Database, property_id: str) -> None:
    async with db.transaction():
        await db.execute("DELETE FROM properties WHERE id = ?", (property_id,))
        await PropertyRepository(db).bump_data_version()


def _bytes(answer: Any) -> bytes:
    return msgspec.json.encode(answer)


async def _same_as_sql(service: SearchService, db: Database) -> None:
    sql = SearchService(db, search_index=False)
    for query in QUERIES:
        expected = _bytes(await sql.search(query))
        assert _bytes(await service.search(query)) == expected, query
        assert _bytes(await service.search(query, encoded=True)) == expected, query


async def test_loads_reach_the_index_as_a_delta_and_a_fold_changes_no_answer(
    fresh_store: Store, tmp_path: Path
) -> None:
    db = await open_db(fresh_store)
    try:
        service = SearchService(db, snapshots=tmp_path / "index")
        service.indexes.fold_rows = 3  # a fold after more than three changed records
        service.warm()
        base = await ready(service)
        await _same_as_sql(service, db)
        await _load(db, record("zz-1", list_price=1), off_market("zz-2"))
        await _same_as_sql(service, db)  # the first search after the load has it
        assert service.indexes._index is base  # a delta on the same base
        await _load(db, record("t-000", list_price=3), record("zz-3", list_price=2))
        await _same_as_sql(service, db)
        for _ in range(500):  # four records changed: folded into a new snapshot
            if service.indexes._index is not base:
                break
            await service.index_status()
            await asyncio.sleep(0.01)
        folded = service.indexes._index
        assert folded is not None and folded is not base and folded.size == base.size + 3
        namespace = await service.repo.cache_namespace()
        live = service.indexes.current(namespace)
        assert live is not None and live.base is folded and live.delta.size == 0
        await _same_as_sql(service, db)
        await service.close()
    finally:
        await db.close()


async def test_a_cursor_walk_keeps_its_version_s_order_across_commits(
    fresh_store: Store, tmp_path: Path
) -> None:
    """Commits between pages (each a new data version, taken as a delta) neither repeat nor
    skip a row of the walk: it follows the order of the version it began on."""
    db = await open_db(fresh_store)
    try:
        service = SearchService(db, snapshots=tmp_path / "index")
        service.warm()
        await ready(service)
        await _load(db, record("zz-0", list_price=2))  # a delta before the walk, too
        whole = SearchQuery(SearchFilters(state="IA"), "listPrice", "asc", 100, 0)
        expected = [item.id for item in (await service.search(whole)).data]
        query = SearchQuery(SearchFilters(state="IA"), "listPrice", "asc", 4, 0)
        walked: list[str] = []
        page = await service.search(query)
        for n in range(100):
            walked += [item.id for item in page.data]
            cursor = page.meta.next_cursor
            if cursor is None:
                break
            if n < 3:  # a record that would come first, committed between pages
                await _load(db, record(f"zz-cheap-{n}", list_price=1))
            page = await service.search(SearchQuery(query.filters, "listPrice", "asc", 4,
                                                    cursor=cursor))  # fmt: skip
        assert walked == expected
        await service.close()
    finally:
        await db.close()


async def test_a_removed_record_leaves_and_a_changed_one_moves_with_new_etags(fresh: Any) -> None:
    """Through the API with the response cache on: the same search after a load gives the
    new answer and a new ETag; the earlier ETag gets a 200, not a 304."""
    client, _, make_key = await fresh(cache_ttl=60)
    headers = {"Authorization": f"Bearer {await make_key('enterprise')}"}
    for_sale = "/v1/properties?status=forSale&sort=listPrice&order=asc&limit=100"
    off_path = "/v1/properties?status=offMarket&sort=listPrice&order=asc&limit=100"

    async def ids(path: str) -> tuple[list[str], str]:
        answer = await client.get(path, headers=headers)
        assert answer.status_code == 200
        return [item["id"] for item in answer.json()["data"]], answer.headers["etag"]

    await index_ready(client)
    db = await fresh.db()
    try:
        await _load(db, record("zz-moves", list_price=7))
        selling, tag = await ids(for_sale)
        assert "zz-moves" in selling
        assert (await ids(for_sale))[1] == tag  # the cache, same data
        await _load(db, off_market("zz-moves"))
        selling, moved_tag = await ids(for_sale)
        assert "zz-moves" not in selling and moved_tag != tag
        stale = await client.get(for_sale, headers={**headers, "If-None-Match": tag})
        assert stale.status_code == 200
        assert "zz-moves" in (await ids(off_path))[0]
        await _remove(db, "zz-moves")
        assert "zz-moves" not in (await ids(off_path))[0]
        assert "zz-moves" not in (await ids(for_sale))[0]
        health = (await client.get("/health")).json()
        assert health["checks"]["searchIndex"] == "ok"  # the index answers this version
    finally:
        await db.close()


async def test_a_late_version_s_searches_get_the_last_one_made_and_none_is_cached(
    fresh: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When a commit's index takes longer than a search waits (PROPDATA_INDEX_REFRESH_WAIT), the search is
    answered from the newest version made (SQL over a large store would take seconds), and
    that answer is kept out of the response cache: once the version is made, the same
    search has the commit."""
    slow = asyncio.Event()
    applied = live.Delta.apply

    def late_apply(self: live.Delta, *args: Any) -> Any:
        if slow.is_set():
            time.sleep(1.0)  # in the keeper's thread: requests go on meanwhile
        return applied(self, *args)

    monkeypatch.setattr(live.Delta, "apply", late_apply)
    client, _, make_key = await fresh(cache_ttl=60, index_refresh_wait=0.1)
    headers = {"Authorization": f"Bearer {await make_key('enterprise')}"}
    path = "/v1/properties?status=forSale&sort=listPrice&order=asc&limit=5"
    await index_ready(client)
    before = (await client.get(path, headers=headers)).json()["data"]
    db = await fresh.db()
    try:
        slow.set()
        await _load(db, record("zz-cheapest", list_price=1))
        started = time.monotonic()
        late = await client.get(path, headers=headers)
        assert time.monotonic() - started < 0.9  # not waiting for the late version
        assert late.json()["data"] == before
        for _ in range(300):
            answer = await client.get(path, headers=headers)
            if answer.json()["data"][0]["id"] == "zz-cheapest":
                break
            assert answer.headers.get("x-cache") != "HIT"  # the late answers were not kept
            await asyncio.sleep(0.01)
        assert answer.json()["data"][0]["id"] == "zz-cheapest"
    finally:
        slow.clear()
        await db.close()


def _serve(store: Store, port: int) -> subprocess.Popen[bytes]:
    env = {**os.environ, **store.env(), "PROPDATA_CACHE_TTL": "60", "PROPDATA_LOG_LEVEL": "ERROR"}
    return subprocess.Popen(
        [sys.executable, "-m", "propdata", "serve", "--port", str(port), "--workers", "2"], env=env
    )


@pytest.mark.slow
def test_every_worker_serves_a_commit_within_a_second(backend: str, tmp_path: Path) -> None:
    made = asyncio.run(new_store(backend, tmp_path))
    asyncio.run(build_store(made))
    port = free_port()
    server = _serve(made, port)
    base = f"http://127.0.0.1:{port}"
    try:
        secret = asyncio.run(create_key(made, "enterprise"))
        headers = {"Authorization": f"Bearer {secret}"}
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(base + "/health", timeout=1).json()["checks"]["searchIndex"] == "ok":
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        time.sleep(1.0)  # both workers up, each with its index
        path = "/v1/properties?state=IA&sort=listPrice&order=asc&limit=1"

        async def commit() -> None:
            db = await open_db(made)
            try:
                await _load(db, record("zz-live", list_price=1))
            finally:
                await db.close()

        asyncio.run(commit())
        time.sleep(1.0)
        seen = set()
        for _ in range(20):  # fresh connections, spread over both workers
            with httpx.Client(base_url=base, timeout=10) as one:
                answer = one.get(path, headers=headers)
                assert answer.status_code == 200
                seen.add(answer.json()["data"][0]["id"])
        assert seen == {"zz-live"}
    finally:
        server.terminate()
        server.wait(20)
        asyncio.run(drop_store(made))
