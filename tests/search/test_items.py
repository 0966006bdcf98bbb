"""Search items from the index's snapshot: the same bytes as items built from the store.

The endpoint asks the service for encoded items (`search(..., encoded=True)`); while the
current index has a snapshot with items, they come from it instead of the store. Every page
of the generated searches of test_index.py (radius, box, every sort, deep offsets), and the
pages a cursor walk gives, must encode to exactly what the store's rows give.
"""

from __future__ import annotations

import dataclasses
import json
import zlib
from pathlib import Path
from typing import BinaryIO

import msgspec
import numpy as np

from propdata.kit.db import Database
from propdata.search.filters import SearchFilters
from propdata.search.index import INDEX_COLUMNS, ITEM_COLUMNS, SearchIndex
from propdata.search.indexer import IndexBuilder
from propdata.search.items import ItemFile
from propdata.search.query import SearchQuery
from propdata.search.repository import SearchRepository
from propdata.search.schemas import EncodedSearchResponse, SearchResponse
from propdata.search.service import SearchService
from propdata.search.snapshot import ITEMS, MANIFEST, Snapshots
from tests.conftest import Store, open_db
from tests.search.test_index import places, searches
from tests.search.test_index_snapshot import ready


async def _items_ready(db: Database, tmp_path: Path) -> tuple[SearchService, SearchIndex]:
    """A search service over `db` whose index, snapshot items included, is built and read."""
    service = SearchService(db, snapshots=tmp_path / "index")
    service.warm()
    index = await ready(service)
    assert index.items is not None and index.items.ready
    return service, index


async def test_encoded_pages_are_the_bytes_of_the_store_s_rows(
    mixed: Store, tmp_path: Path
) -> None:
    db = await open_db(mixed)
    try:
        service, _ = await _items_ready(db, tmp_path)
        encoded = 0
        for query in searches(await places(db), 250):
            plain = await service.search(query)
            fast = await service.search(query, encoded=True)
            assert isinstance(plain, SearchResponse)
            encoded += isinstance(fast, EncodedSearchResponse)
            assert msgspec.json.encode(fast) == msgspec.json.encode(plain), query
            for _ in range(3):  # the next pages by cursor, both ways
                cursor = plain.meta.next_cursor
                assert fast.meta.next_cursor == cursor
                if cursor is None:
                    break
                after = dataclasses.replace(query, offset=0, cursor=cursor)
                plain = await service.search(after)
                fast = await service.search(after, encoded=True)
                assert isinstance(plain, SearchResponse)
                assert msgspec.json.encode(fast) == msgspec.json.encode(plain)
        assert encoded == 250
    finally:
        await db.close()


async def test_a_snapshot_s_items_are_checked_before_use(mixed: Store, tmp_path: Path) -> None:
    """Items that do not match their checksum are never served: the store answers."""
    db = await open_db(mixed)
    try:
        repo = SearchRepository(db)
        snapshots = Snapshots(tmp_path / "index")
        draft = snapshots.draft(await repo.cache_namespace())
        with (draft / ITEMS).open("wb") as out:
            index = await built_with_items(repo, out)
        path = snapshots.write(index, draft)
        manifest = json.loads((path / MANIFEST).read_text())
        assert manifest["items"]["bytes"] == (path / ITEMS).stat().st_size > 0
        loaded = snapshots.load(index.namespace)
        assert loaded is not None and loaded.items is not None and loaded.items.ready
        raw = bytearray((path / ITEMS).read_bytes())
        raw[10] ^= 1
        (path / ITEMS).write_bytes(bytes(raw))
        again = snapshots.load(index.namespace)
        assert again is not None and again.items is not None and not again.items.ready
    finally:
        await db.close()


def test_a_page_of_items_is_a_json_array(tmp_path: Path) -> None:
    path = tmp_path / "items"
    path.write_bytes(b'{"id":"a"{"id":"bc"')
    file = ItemFile(path, np.array([0, 9, 19], np.int32), zlib.crc32(path.read_bytes()))
    assert file.ready
    assert json.loads(file.page(np.array([1, 0]), None)) == [{"id": "bc"}, {"id": "a"}]
    assert json.loads(file.page(np.array([0]), [1.234])) == [{"id": "a", "distanceMiles": 1.23}]
    assert file.page(np.zeros(0, np.int64), None) == b"[]"


async def built_with_items(repo: SearchRepository, out: BinaryIO) -> SearchIndex:
    builder = IndexBuilder(await repo.cache_namespace(), out)
    while True:
        rows = await repo.index_page(INDEX_COLUMNS + ITEM_COLUMNS, builder.last_id, 700)
        builder.add(rows)
        if len(rows) < 700:
            index = builder.finish()
            index.feed = (await repo.feed_position())[1]  # the store did not move meanwhile
            index.mark = await repo.feed_mark(index.feed)
            return index


async def test_items_that_go_away_leave_the_store_to_answer(mixed: Store, tmp_path: Path) -> None:
    db = await open_db(mixed)
    try:
        service, index = await _items_ready(db, tmp_path)
        query = (SearchFilters(state="IA"), "listPrice", "asc", 5, 0)
        expected = msgspec.json.encode(await service.search(SearchQuery(*query)))
        index.items.path.unlink()
        assert (
            msgspec.json.encode(await service.search(SearchQuery(*query), encoded=True)) == expected
        )
        assert not index.items.ready
        assert isinstance(await service.search(SearchQuery(*query), encoded=True), SearchResponse)
    finally:
        await db.close()
