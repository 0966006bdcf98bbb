"""A page of saved searches is written a few searches at a time: the parts are the bytes of
the page encoded whole, whatever its length, and none holds more than PART_BYTES of stored
JSON unless one search alone does."""

from __future__ import annotations

import json

import msgspec
import pytest

from propdata.api.schemas import PageMeta
from propdata.saved_searches import endpoints
from propdata.saved_searches.schemas import RawSavedSearch, RawSavedSearchList


def _page(n: int, ids: int = 1) -> RawSavedSearchList:
    return RawSavedSearchList(
        meta=PageMeta(total=n, limit=500, offset=0),
        data=[
            RawSavedSearch(
                id=f"srch_{i:024d}", name=f"watch {i}", filters=msgspec.Raw(b'{"state":"TX"}'),
                property_ids=msgspec.Raw(json.dumps([f"syn-{j:07d}" for j in range(ids)]).encode()),
                created_at="2026-11-28T10:00:00.000Z", match_count=i, data_version=7,
            )
            for i in range(n)
        ],
    )  # fmt: skip


@pytest.mark.parametrize(
    ("n", "ids"), [(0, 1), (1, 1), (120, 1), (1, 1_000), (40, 1_000), (3, 20_000)]
)
async def test_the_parts_are_the_page_encoded_whole(n: int, ids: int) -> None:
    page = _page(n, ids)
    parts = [part async for part in endpoints._in_parts(page)]
    assert b"".join(parts) == msgspec.json.encode(page)
    searches = [json.loads(b"[" + part.lstrip(b",") + b"]") for part in parts[1:-1]]
    assert sum(map(len, searches)) == n
    for part, held in zip(parts[1:-1], searches, strict=True):
        assert len(part) <= endpoints.PART_BYTES * 1.01 or len(held) == 1
    if n and ids == 1:
        assert len(parts) == 3  # small searches: one part
