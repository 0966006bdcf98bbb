"""ETag and If-None-Match on records and search pages: 304 counted like the 200 it replaces."""

from __future__ import annotations

from typing import Any

import pytest

from propdata.ingest.loader import load
from propdata.kit.conditional import entity_tag, none_match
from tests.factories import AS_OF, record


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


PATHS = [
    "/v1/properties/t-000",
    "/v1/properties/t-000/history",
    "/v1/properties/t-000/valuation",
    "/v1/properties?zipCode=50010&limit=5",
    "/v1/properties/search?city=Ames&state=IA",
    "/v1/markets/50010",
]


@pytest.mark.parametrize("path", PATHS)
async def test_etag_then_304_without_a_body(fresh: Any, path: str) -> None:
    client, _, make_key = await fresh(cache_ttl=0)
    headers = bearer(await make_key("free"))
    first = await client.get(path, headers=headers)
    assert first.status_code == 200
    tag = first.headers["etag"]
    assert tag == entity_tag(first.content)  # the hash of the exact bytes sent
    again = await client.get(path, headers={**headers, "If-None-Match": tag})
    assert again.status_code == 304
    assert again.content == b""
    assert again.headers["etag"] == tag
    assert "content-type" not in again.headers
    for name in ("x-ratelimit-remaining", "x-request-id", "x-cache"):
        assert name in again.headers
    other = await client.get(path, headers={**headers, "If-None-Match": '"0000"'})
    assert other.status_code == 200 and other.headers["etag"] == tag


async def test_a_304_is_counted_like_the_200_unless_from_the_cache(fresh: Any) -> None:
    client, _, make_key = await fresh(cache_ttl=0)
    headers = bearer(await make_key("free"))
    tag = (await client.get("/v1/properties/t-000", headers=headers)).headers["etag"]
    cond = {**headers, "If-None-Match": tag}
    answer = await client.get("/v1/properties/t-000", headers=cond)
    assert answer.status_code == 304 and answer.headers["x-ratelimit-remaining"] == "8"

    cached, _, make_key = await fresh(cache_ttl=60)
    headers = bearer(await make_key("free"))
    tag = (await cached.get("/v1/properties/t-000", headers=headers)).headers["etag"]
    hit = await cached.get("/v1/properties/t-000", headers={**headers, "If-None-Match": tag})
    assert hit.status_code == 304 and hit.headers["x-cache"] == "HIT"
    assert hit.headers["etag"] == tag
    status = (await cached.get("/v1/auth/status", headers=headers)).json()
    assert status["data"]["usage"]["minute"]["used"] == 1  # the 304 from the cache was free


async def test_a_load_that_changes_the_record_changes_its_tag(fresh: Any) -> None:
    client, _, make_key = await fresh(cache_ttl=60)
    headers = bearer(await make_key("enterprise"))
    tag = (await client.get("/v1/properties/t-000", headers=headers)).headers["etag"]
    page = (await client.get("/v1/properties?zipCode=50010", headers=headers)).headers["etag"]
    db = await fresh.db()
    await load(db, [(1, record("t-000", list_price=199_000))], origin="import", as_of=AS_OF)
    await db.close()
    cond = {**headers, "If-None-Match": tag}
    changed = await client.get("/v1/properties/t-000", headers=cond)
    assert changed.status_code == 200 and changed.json()["data"]["listPrice"] == 199_000
    assert changed.headers["etag"] != tag
    fresh_page = await client.get(
        "/v1/properties?zipCode=50010", headers={**headers, "If-None-Match": page}
    )
    assert fresh_page.status_code == 200 and fresh_page.headers["etag"] != page
    # and the new tag gives a 304 again
    again = await client.get(
        "/v1/properties/t-000", headers={**headers, "If-None-Match": changed.headers["etag"]}
    )
    assert again.status_code == 304


async def test_errors_carry_no_tag_and_never_answer_304(fresh: Any) -> None:
    client, _, make_key = await fresh(cache_ttl=0)
    headers = bearer(await make_key("free"))
    for path in ("/v1/properties/nope", "/v1/properties?limit=0"):
        answer = await client.get(path, headers={**headers, "If-None-Match": "*"})
        assert answer.status_code in (400, 404) and "etag" not in answer.headers


def test_if_none_match_reading() -> None:
    assert none_match(b'W/"abc", "def"', '"abc"')
    assert none_match(b"*", '"x"')
    assert not none_match(b'"abc', '"abc"')
    assert not none_match(None, '"abc"')
    assert not none_match(b"", '"abc"')
    assert none_match(b",".join([b'"n"'] * 10_000) + b', "abc"', '"abc"') is False  # capped


async def test_head_is_conditional_too(fresh: Any) -> None:
    client, _, make_key = await fresh(cache_ttl=0)
    headers = bearer(await make_key("free"))
    tag = (await client.get("/v1/properties/t-000", headers=headers)).headers["etag"]
    head = await client.head("/v1/properties/t-000", headers=headers)
    assert head.status_code == 200 and head.headers["etag"] == tag and head.content == b""
    head = await client.head("/v1/properties/t-000", headers={**headers, "If-None-Match": tag})
    assert head.status_code == 304
