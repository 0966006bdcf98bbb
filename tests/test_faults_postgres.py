"""PostgreSQL unreachable: 503 with the contract's body, never a 500, and recovery without a
restart. A TCP proxy between the app and PostgreSQL is cut and restored by the test."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest
from litestar.testing import AsyncTestClient

from propdata.app import HeadAsGet, create_app
from tests.conftest import PG_URL, build_store, create_key, drop_store, new_store, settings_for
from tests.live import Proxy, until
from tests.redis_support import free_port

pytestmark = pytest.mark.slow


async def test_postgresql_outage_is_503_and_heals_without_restart(tmp_path: Path) -> None:
    store = await new_store("scaleout", tmp_path)
    await build_store(store)
    secret = await create_key(store, "enterprise")
    proxy = Proxy(("127.0.0.1", 5432))
    proxy.restore()
    through_proxy = store.url.replace("127.0.0.1:5432", f"127.0.0.1:{proxy.port}")
    assert through_proxy != store.url, PG_URL
    app = HeadAsGet(create_app(settings_for(store, database_url=through_proxy, cache_ttl=0)))
    headers = {"Authorization": f"Bearer {secret}"}
    try:
        async with AsyncTestClient(app=app) as client:  # type: ignore[arg-type]
            assert (await client.get("/v1/properties/t-000", headers=headers)).status_code == 200
            proxy.cut()
            for path in ("/v1/properties/t-000", "/v1/properties?state=IA", "/v1/markets/50010"):
                response = await client.get(path, headers=headers)
                assert response.status_code == 503, response.text
                error = response.json()["error"]
                assert error["code"] == "service_unavailable" and error["status"] == 503
                assert error["requestId"] == response.headers["x-request-id"]
                assert int(response.headers["retry-after"]) >= 1
            health = await client.get("/health")
            assert health.status_code == 503 and health.json()["status"] == "down"
            proxy.restore()

            async def served() -> bool:  # the pool opens fresh connections on its own
                response = await client.get("/v1/properties/t-000", headers=headers)
                assert response.status_code in (200, 503)
                return response.status_code == 200

            await until(served, "a record served once PostgreSQL is back")
            assert (await client.get("/health")).json()["status"] in ("ok", "degraded")
    finally:
        proxy.close()
        await drop_store(store)


@pytest.mark.parametrize("path", ["/v1/properties/t-000", "/v1/auth/status"])
async def test_unreachable_at_start_still_answers_503(tmp_path: Path, path: str) -> None:
    """A server started while PostgreSQL is down answers 503 until it comes up."""
    store = await new_store("scaleout", tmp_path)
    dead = free_port()  # nobody listens there
    url = store.url.replace("127.0.0.1:5432", f"127.0.0.1:{dead}")
    app = HeadAsGet(create_app(settings_for(store, database_url=url, cache_ttl=0)))
    try:
        async with AsyncTestClient(app=app) as client:  # type: ignore[arg-type]
            response = await client.get(path, headers={"Authorization": "Bearer pmd_live_x"})
            assert response.status_code in (401, 503)  # a malformed key needs no store
            from propdata.kit import crypto

            response = await client.get(
                path, headers={"Authorization": f"Bearer {crypto.new_key()}"}
            )
            assert response.status_code == 503
            assert response.json()["error"]["code"] == "service_unavailable"
    finally:
        await drop_store(store)


async def test_an_outage_logs_a_line_a_second_not_one_a_request(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Found by the soak: a PostgreSQL outage at a few hundred requests a second wrote one
    ERROR line per 503. Now one a second, saying how many it stands for."""
    store = await new_store("scaleout", tmp_path)
    dead = free_port()  # nobody listens there
    url = store.url.replace("127.0.0.1:5432", f"127.0.0.1:{dead}")
    app = HeadAsGet(create_app(settings_for(store, database_url=url, cache_ttl=0)))
    from propdata.kit import crypto

    headers = {"Authorization": f"Bearer {crypto.new_key()}"}
    try:
        async with AsyncTestClient(app=app) as client:  # type: ignore[arg-type]
            await asyncio.sleep(1.1)  # past any line another test just logged
            caplog.clear()
            with caplog.at_level(logging.ERROR, logger="propdata"):
                answers = [await client.get("/v1/properties/x", headers=headers) for _ in range(40)]
        assert all(a.status_code == 503 for a in answers)
        lines = [r for r in caplog.records if "store unavailable" in r.getMessage()]
        assert 1 <= len(lines) <= 2, [r.getMessage() for r in lines]
    finally:
        await drop_store(store)
