"""A page of saved searches is written a few searches at a time: the parts are the bytes of
the page encoded whole, whatever its length."""

from __future__ import annotations

import json

import msgspec
import pytest

from propdata.api.schemas import PageMeta
from propdata.saved_searches import endpoints
from propdata.saved_searches.schemas import RawSavedSearch, RawSavedSearchList


def _page(n: int) -> RawSavedSearchList:
    return RawSavedSearchList(
        meta=PageMeta(total=n, limit=500, offset=0),
        data=[
            RawSavedSearch(
                id=f"srch_{i:024d}", name=f"watch {i}", filters=msgspec.Raw(b'{"state":"TX"}'),
                property_ids=msgspec.Raw(json.dumps([f"syn-{i:07d}"]).encode()),
                created_at="2026-11-28T10:00:00.000Z", match_count=i, data_version=7,
            )
            for i in range(n)
        ],
    )  # fmt: skip


@pytest.mark.parametrize("n", [0, 1, endpoints.LISTED_AT_ONCE, endpoints.LISTED_AT_ONCE + 1, 120])
async def test_the_parts_are_the_page_encoded_whole(n: int) -> None:
    page = _page(n)
    parts = [part async for part in endpoints._in_parts(page)]
    assert b"".join(parts) == msgspec.json.encode(page)
    assert len(parts) == 2 + -(-n // endpoints.LISTED_AT_ONCE)
