"""Rate limits, quota, refunds, cache and headers, with an injected clock (no sleeps)."""

from __future__ import annotations

import math
from typing import Any

from propdata.accounts.keys import CustomLimits, keys_of
from propdata.ingest.loader import load
from tests.factories import AS_OF, record


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


async def spend(
    client: Any, headers: dict[str, str], n: int, path: str = "/v1/properties/t-000"
) -> list[Any]:
    return [await client.get(path, headers=headers) for _ in range(n)]


async def test_rate_headers_on_every_response(fresh: Any) -> None:
    client, clock, make_key = await fresh(cache_ttl=0)
    headers = bearer(await make_key("free"))
    for path, status in [("/v1/properties/t-000", 200), ("/v1/properties/zzz", 404),
                         ("/v1/properties?limit=0", 400), ("/v1/auth/status", 200)]:  # fmt: skip
        response = await client.get(path, headers=headers)
        assert response.status_code == status
        for name in ("x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset",
                     "x-quota-limit", "x-quota-remaining", "x-quota-reset", "x-request-id", "x-cache"):  # fmt: skip
            assert name in response.headers, (path, name)
        assert response.headers["x-ratelimit-limit"] == "10"
        assert response.headers["x-cache"] == "MISS"
    # only the first one counted
    response = await client.get("/v1/auth/status", headers=headers)
    assert response.headers["x-ratelimit-remaining"] == "9"
    assert int(response.headers["x-ratelimit-reset"]) == math.ceil(clock.now + 60)


async def test_per_minute_limit_and_retry_after_edges(fresh: Any) -> None:
    client, clock, make_key = await fresh(cache_ttl=0)
    headers = bearer(await make_key("free"))
    first = clock.now
    for i, response in enumerate(await spend(client, headers, 10)):
        assert response.status_code == 200
        assert response.headers["x-ratelimit-remaining"] == str(9 - i)
        clock.advance(1.5)  # the 10 requests span 13.5 s
    clock.now = first + 20.3
    refused = await client.get("/v1/properties/t-000", headers=headers)
    assert refused.status_code == 429
    error = refused.json()["error"]
    assert error["code"] == "rate_limit_exceeded" and error["status"] == 429
    retry = int(refused.headers["retry-after"])
    assert retry == math.ceil(first + 60 - clock.now) == 40
    assert f"{retry} seconds" in error["message"]
    assert refused.headers["x-ratelimit-remaining"] == "0"
    clock.advance(retry - 1)  # one second early: still full
    early = await client.get("/v1/properties/t-000", headers=headers)
    assert early.status_code == 429 and int(early.headers["retry-after"]) == 1
    clock.now = first + 20.3 + retry  # exactly at Retry-After
    assert (await client.get("/v1/properties/t-000", headers=headers)).status_code == 200


async def test_refused_requests_are_never_recorded(fresh: Any) -> None:
    client, clock, make_key = await fresh(cache_ttl=0)
    headers = bearer(await make_key("free"))
    await spend(client, headers, 10)
    for response in await spend(client, headers, 30):
        assert response.status_code == 429
        assert int(response.headers["retry-after"]) >= 1
    clock.advance(60)
    assert len([r for r in await spend(client, headers, 11) if r.status_code == 200]) == 10


async def test_daily_quota_is_a_rolling_window(fresh: Any) -> None:
    client, clock, make_key = await fresh(cache_ttl=0)
    headers = bearer(await make_key("free"))
    start = clock.now
    for _minute in range(10):  # 10 a minute for 10 minutes = the 100-request day
        assert all(r.status_code == 200 for r in await spend(client, headers, 10))
        clock.advance(60)
    refused = await client.get("/v1/properties/t-000", headers=headers)
    assert refused.status_code == 429
    assert refused.json()["error"]["code"] == "quota_exceeded"
    assert refused.headers["x-quota-remaining"] == "0"
    retry = int(refused.headers["retry-after"])
    assert retry == math.ceil(start + 86_400 - clock.now)
    assert f"{retry} seconds" in refused.json()["error"]["message"]
    clock.advance(retry - 1)
    assert (await client.get("/v1/properties/t-000", headers=headers)).status_code == 429
    clock.advance(1)
    assert (await client.get("/v1/properties/t-000", headers=headers)).status_code == 200


async def test_both_windows_full_takes_the_longer_wait(fresh: Any) -> None:
    client, _clock, make_key = await fresh(cache_ttl=0)
    headers = bearer(await make_key("enterprise", per_minute=5, daily=5))
    await spend(client, headers, 5)
    refused = await client.get("/v1/properties/t-000", headers=headers)
    assert refused.status_code == 429
    assert refused.json()["error"]["code"] == "quota_exceeded"
    assert int(refused.headers["retry-after"]) == 86_400


async def test_downgrade_with_a_full_window(fresh: Any) -> None:
    client, clock, make_key = await fresh(cache_ttl=0)
    secret = await make_key("pro")
    headers = bearer(secret)
    start = clock.now
    for _ in range(20):
        assert (await client.get("/v1/properties/t-000", headers=headers)).status_code == 200
        clock.advance(1)
    async with keys_of(fresh.store.url) as keys:
        await keys.set_plan(secret, "free", CustomLimits())
    refused = await client.get("/v1/properties/t-000", headers=headers)
    assert refused.status_code == 429 and refused.headers["x-ratelimit-limit"] == "10"
    # 20 in the window, limit 10: the 11th oldest (sent at start + 10) must leave.
    assert int(refused.headers["retry-after"]) == math.ceil(start + 10 + 60 - clock.now)
    assert refused.headers["x-quota-limit"] == "100"


async def test_errors_are_refunded(fresh: Any) -> None:
    client, headers = await fresh.keyed("free", cache_ttl=0)
    for path in ("/v1/properties/zzz", "/v1/properties?limit=0", "/v1/markets/00000",
                 "/v1/properties/lookup?streetAddress=1%20X%20St&city=Ames&state=IA"):  # fmt: skip
        response = await client.get(path, headers=headers)
        assert response.status_code in (400, 404)
        assert response.headers["x-ratelimit-remaining"] == "10"
        assert response.headers["x-quota-remaining"] == "100"
    assert all(r.status_code == 200 for r in await spend(client, headers, 10))


async def test_auth_status_is_never_counted(fresh: Any) -> None:
    client, clock, make_key = await fresh(cache_ttl=0)
    headers = bearer(await make_key("free"))
    for _ in range(25):
        assert (await client.get("/v1/auth/status", headers=headers)).status_code == 200
    await spend(client, headers, 10)
    status = await client.get("/v1/auth/status", headers=headers)
    assert status.status_code == 200  # answered even with the minute full
    assert status.json()["data"]["usage"]["minute"] == {
        "used": 10,
        "remaining": 0,
        "reset": math.ceil(clock.now + 60),
    }


async def test_cache_hits_are_not_counted_and_are_served_over_quota(fresh: Any) -> None:
    client, headers = await fresh.keyed("free", cache_ttl=60)
    first = await client.get("/v1/properties/t-000", headers=headers)
    assert first.headers["x-cache"] == "MISS" and first.headers["x-ratelimit-remaining"] == "9"
    hit = await client.get("/v1/properties/t-000", headers=headers)
    assert hit.headers["x-cache"] == "HIT" and hit.headers["x-ratelimit-remaining"] == "9"
    assert hit.content == first.content and "x-request-id" in hit.headers
    for n in range(1, 10):
        assert (await client.get(f"/v1/properties/t-{n:03d}", headers=headers)).status_code == 200
    assert (await client.get("/v1/properties/t-020", headers=headers)).status_code == 429
    over = await client.get("/v1/properties/t-000", headers=headers)
    assert over.status_code == 200 and over.headers["x-cache"] == "HIT"
    # the key is still verified on a hit
    bad = await client.get("/v1/properties/t-000", headers=bearer("pmd_live_" + "A" * 28))
    assert bad.status_code == 401


async def test_cache_key_is_path_canonical_query_and_page_size(fresh: Any) -> None:
    client, _clock, make_key = await fresh(cache_ttl=60)
    free, pro = bearer(await make_key("free")), bearer(await make_key("pro"))
    a = await client.get("/v1/properties?state=IA&status=forSale", headers=free)
    b = await client.get("/v1/properties?status=forSale&state=IA", headers=free)
    assert a.headers["x-cache"] == "MISS" and b.headers["x-cache"] == "HIT"
    c = await client.get("/v1/properties?status=forSale&state=IA", headers=pro)  # other page size
    assert c.headers["x-cache"] == "MISS" and c.json()["meta"]["limit"] == 50
    assert (
        await client.get("/v1/properties?state=IA&status=forSale&limit=10", headers=free)
    ).headers["x-cache"] == "HIT"


async def test_cache_entries_expire(fresh: Any) -> None:
    client, headers = await fresh.keyed("pro", cache_ttl=0.2)
    await client.get("/v1/properties/t-000", headers=headers)
    assert (await client.get("/v1/properties/t-000", headers=headers)).headers["x-cache"] == "HIT"
    import asyncio

    await asyncio.sleep(0.25)  # the cache runs on the monotonic clock
    assert (await client.get("/v1/properties/t-000", headers=headers)).headers["x-cache"] == "MISS"


async def test_a_load_invalidates_the_cache(fresh: Any) -> None:
    client, headers = await fresh.keyed("pro", cache_ttl=60)
    await client.get("/v1/properties/t-000", headers=headers)
    assert (await client.get("/v1/properties/t-000", headers=headers)).headers["x-cache"] == "HIT"
    db = await fresh.db()
    await load(db, [(1, record("t-900"))], origin="import", as_of=AS_OF)
    await db.close()
    assert (await client.get("/v1/properties/t-000", headers=headers)).headers["x-cache"] == "MISS"


async def test_errors_are_not_cached(fresh: Any) -> None:
    client, headers = await fresh.keyed("pro", cache_ttl=60)
    for _ in range(2):
        response = await client.get("/v1/properties/zzz", headers=headers)
        assert response.status_code == 404 and response.headers["x-cache"] == "MISS"


async def test_counters_survive_a_restart(fresh: Any) -> None:
    client, clock, make_key = await fresh(cache_ttl=0)
    secret = await make_key("free")
    await spend(client, bearer(secret), 10)
    again, clock2, _ = await fresh(cache_ttl=0)  # a second app over the same files
    clock2.now = clock.now
    response = await again.get("/v1/properties/t-000", headers=bearer(secret))
    assert response.status_code == 429


async def test_custom_enterprise_limits_apply_on_the_next_request(fresh: Any) -> None:
    client, _clock, make_key = await fresh(cache_ttl=0)
    secret = await make_key("enterprise")
    headers = bearer(secret)
    first = await client.get("/v1/properties", headers=headers)
    assert first.status_code == 200, first.text  # once seen flaky under load: say what came
    assert first.json()["meta"]["limit"] == 100
    async with keys_of(fresh.store.url) as keys:
        await keys.set_plan(
            secret,
            "enterprise",
            CustomLimits(per_minute=3, daily=50, default_page_size=7, max_page_size=9),
        )
    response = await client.get("/v1/properties?limit=500", headers=headers)
    assert response.status_code == 200, response.text
    assert response.json()["meta"]["limit"] == 9
    assert (
        response.headers["x-ratelimit-limit"] == "3" and response.headers["x-quota-limit"] == "50"
    )
    last = await client.get("/v1/properties", headers=headers)
    assert last.status_code == 200, last.text
    assert last.json()["meta"]["limit"] == 7


async def test_kept_search_totals_follow_a_load(fresh: Any) -> None:
    """Totals are kept per data version: a load changes meta.total on the very next search."""
    client, headers = await fresh.keyed("enterprise", cache_ttl=0)
    before = (await client.get("/v1/properties?zipCode=50010", headers=headers)).json()["meta"][
        "total"
    ]
    assert (await client.get("/v1/properties?zipCode=50010&offset=5", headers=headers)).json()[
        "meta"
    ]["total"] == before
    db = await fresh.db()
    await load(db, [(1, record("t-901"))], origin="import", as_of=AS_OF)  # Ames 50010
    await db.close()
    after = (await client.get("/v1/properties?zipCode=50010", headers=headers)).json()["meta"][
        "total"
    ]
    assert after == before + 1


# -- the failed-request guard (contract.md, "Abuse and bad input") ----------------------------


async def test_failed_requests_are_limited_without_touching_the_metered_counts(
    fresh: Any,
) -> None:
    """A 4xx is refunded but limited: max(20, 2 x per minute) in any 60 s, so a Free key
    cannot make 45 requests ending 404 in a minute."""
    client, clock, make_key = await fresh(cache_ttl=0)
    headers = bearer(await make_key("free"))  # 10 a minute: 20 failures allowed
    first = clock.now
    for i in range(20):
        answer = await client.get(f"/v1/properties/missing-{i}", headers=headers)
        assert answer.status_code == 404, i
        clock.advance(1.0)
    refused = await client.get("/v1/properties/t-000", headers=headers)  # even a good one
    assert refused.status_code == 429
    error = refused.json()["error"]
    assert error["code"] == "rate_limit_exceeded" and "failed requests" in error["message"]
    assert int(refused.headers["retry-after"]) == math.ceil(first + 60 - clock.now)
    # The metered windows never saw any of it.
    status = (await client.get("/v1/auth/status", headers=headers)).json()["data"]
    assert status["usage"]["minute"]["used"] == 0 and status["usage"]["day"]["used"] == 0
    # Once the oldest failure leaves the window, one more request fits.
    clock.now = first + 60.000001
    assert (await client.get("/v1/properties/t-000", headers=headers)).status_code == 200


async def test_bad_parameters_count_as_failures_too(fresh: Any) -> None:
    client, headers = await fresh.keyed("free", cache_ttl=0)
    for i in range(20):
        path = "/v1/properties?limit=0" if i % 2 else "/v1/properties?minPrice=1e3"
        assert (await client.get(path, headers=headers)).status_code == 400
    answer = await client.get("/v1/properties?limit=0", headers=headers)
    assert answer.status_code == 429  # the guard answers before the parameter is read


async def test_the_guard_scales_with_the_per_minute_limit(fresh: Any) -> None:
    client, _clock, make_key = await fresh(cache_ttl=0)
    headers = bearer(await make_key("enterprise", per_minute=40))  # 80 failures allowed
    for i in range(80):
        assert (await client.get(f"/v1/properties/no-{i}", headers=headers)).status_code == 404
    assert (await client.get("/v1/properties/no-x", headers=headers)).status_code == 429


async def test_a_closed_guard_refuses_cached_answers_too(fresh: Any) -> None:
    client, headers = await fresh.keyed("free", cache_ttl=600)
    assert (await client.get("/v1/properties/t-000", headers=headers)).status_code == 200
    assert (await client.get("/v1/properties/t-000", headers=headers)).headers["x-cache"] == "HIT"
    for i in range(20):
        await client.get(f"/v1/properties/missing-{i}", headers=headers)
    answer = await client.get("/v1/properties/t-000", headers=headers)
    assert answer.status_code == 429 and answer.headers["x-cache"] == "MISS"


async def test_rate_limited_requests_are_not_failures(fresh: Any) -> None:
    client, clock, make_key = await fresh(cache_ttl=0)
    headers = bearer(await make_key("free"))
    answers = await spend(client, headers, 40)  # 10 admitted, 30 refused with 429
    assert [a.status_code for a in answers].count(429) == 30
    clock.advance(60.001)
    assert (await client.get("/v1/properties/t-000", headers=headers)).status_code == 200
