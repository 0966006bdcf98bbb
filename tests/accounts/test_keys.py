"""Keys: missing, malformed, unknown, revoked; the auth status answer."""

from __future__ import annotations

import secrets
from itertools import product
from pathlib import Path
from typing import Any

import httpx
import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

from propdata.accounts.keys import CustomLimits, KeyCommandError, KeyService, keys_of
from propdata.accounts.repository import AccountRepository
from propdata.accounts.schemas import Account
from propdata.app import create_app
from propdata.kit import crypto
from propdata.kit.db import SQLiteDatabase
from tests.conftest import Store, settings_for


@pytest.mark.parametrize(
    ("headers", "code"),
    [
        ({}, "missing_api_key"),
        ({"Authorization": ""}, "missing_api_key"),
        ({"Authorization": "Basic dXNlcjpwYXNz"}, "missing_api_key"),
        ({"Authorization": "Bearer"}, "missing_api_key"),
        ({"Authorization": "Bearer not-a-key"}, "invalid_api_key"),
        ({"Authorization": "Bearer pmd_live_" + "A" * 28}, "invalid_api_key"),  # bad checksum
        (
            {"Authorization": f"Bearer {crypto.new_key()}"},
            "invalid_api_key",
        ),  # well formed, unknown
    ],
)
async def test_bad_keys_are_401_with_their_code(
    client: Any, headers: dict[str, str], code: str
) -> None:
    for path in ("/v1/properties/t-000", "/v1/auth/status", "/v1/markets/50010", "/v1/properties"):
        response = await client.get(path, headers=headers)
        assert response.status_code == 401
        error = response.json()["error"]
        assert error["code"] == code and error["status"] == 401
        assert response.headers["www-authenticate"].startswith("Bearer")
        assert "x-request-id" in response.headers
        assert "pmd_live_" not in response.text  # never echoed


async def test_two_authorization_headers_are_a_400(client: Any, key: str) -> None:
    """Neither the first nor the last wins: proxies and frameworks disagree on which counts."""
    # The test client joins repeated headers with a comma, as a proxy may; httpx's own ASGI
    # transport sends them apart, as uvicorn delivers them.
    transport = httpx.ASGITransport(app=client.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as apart:
        for first, second in ((key, "pmd_live_x"), ("pmd_live_x", key), (key, key)):
            headers = [("Authorization", f"Bearer {first}"), ("Authorization", f"Bearer {second}")]
            paths = ("/v1/auth/status", "/v1/properties?limit=1")
            for path, sender in product(paths, (client, apart)):
                response = await sender.get(path, headers=headers)
                assert response.status_code == 400, (path, response.text)
                error = response.json()["error"]
                assert error["code"] == "invalid_parameter"
                assert error["parameter"] == "Authorization"
                assert "pmd_live_" not in response.text


async def test_scheme_is_case_insensitive(client: Any, key: str) -> None:
    response = await client.get("/v1/auth/status", headers={"Authorization": f"bearer {key}"})
    assert response.status_code == 200


async def test_revoked_key_is_refused_on_its_next_request(
    client: Any, store: Store, make_key: Any
) -> None:
    secret = await make_key("free")
    headers = {"Authorization": f"Bearer {secret}"}
    assert (await client.get("/v1/properties/t-000", headers=headers)).status_code == 200
    async with keys_of(store.url) as keys:
        await keys.revoke(secret)
    response = await client.get("/v1/properties/t-000", headers=headers)
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "revoked_api_key"


async def test_auth_status_describes_the_key(client: Any, make_key: Any) -> None:
    secret = await make_key("developer")
    headers = {"Authorization": f"Bearer {secret}"}
    await client.get("/v1/properties/t-000", headers=headers)
    body = (await client.get("/v1/auth/status", headers=headers)).json()
    data = body["data"]
    assert set(data) == {"keyId", "name", "plan", "status", "limits", "usage"}
    assert data["plan"] == "developer" and data["status"] == "active"
    assert data["limits"] == {
        "perMinute": 100,
        "daily": 10000,
        "defaultPageSize": 25,
        "maxPageSize": 100,
    }
    assert data["usage"]["minute"]["used"] == 1 and data["usage"]["minute"]["remaining"] == 99
    assert data["usage"]["day"]["used"] == 1 and data["usage"]["day"]["remaining"] == 9999
    assert set(data["usage"]["minute"]) == {"used", "remaining", "reset"}


async def test_auth_status_of_unlimited_quota_is_null(client: Any, make_key: Any) -> None:
    headers = {"Authorization": f"Bearer {await make_key('enterprise')}"}
    response = await client.get("/v1/auth/status", headers=headers)
    data = response.json()["data"]
    assert data["limits"]["daily"] is None and data["usage"]["day"] is None
    assert data["limits"]["perMinute"] == 2000
    assert "x-quota-limit" not in response.headers


async def test_keys_are_stored_hashed_and_well_formed(tmp_path: Path) -> None:
    db = SQLiteDatabase(str(tmp_path / "k.db"))
    from propdata.migrations.schema import migrate_accounts

    await migrate_accounts(db)
    key, secret = await KeyService(db).create("pro", "mine", CustomLimits())
    assert secret.startswith("pmd_live_") and len(secret) == 9 + 22 + 6
    assert crypto.well_formed(secret)
    stored = await db.fetch_all("SELECT * FROM api_keys")
    assert secret not in repr(stored)
    assert crypto.key_hash(secret) in repr(stored)
    assert key.prefix == secret[:13]
    with pytest.raises(KeyCommandError):
        await KeyService(db).create("pro", None, CustomLimits(per_minute=5))  # enterprise only
    with pytest.raises(KeyCommandError):
        await KeyService(db).create("gold", None, CustomLimits())
    await db.close()


def test_checksum_catches_a_typo() -> None:
    secret = crypto.new_key()
    typo = secret[:12] + ("a" if secret[12] != "a" else "b") + secret[13:]
    assert crypto.well_formed(secret) and not crypto.well_formed(typo)
    assert len({crypto.new_key() for _ in range(1000)}) == 1000


@pytest.mark.parametrize("change", ["plan", "limits", "revoke", "account", "own process"])
async def test_every_key_change_holds_on_the_key_next_request(store: Store, change: str) -> None:
    """Verified keys are kept in each process: a change made by another process (a key
    command, another worker or host) or by this one must still hold on the next request."""
    app = create_app(settings_for(store, cache_ttl=0))
    async with AsyncTestClient(app=app) as client:
        await _change_and_ask(client, app, store, change)


async def _change_and_ask(client: Any, app: Litestar, store: Store, change: str) -> None:
    account_id = "acct_" + secrets.token_hex(8)
    async with keys_of(store.url) as keys:
        if change == "account":
            await AccountRepository(keys.db).insert(Account(
                id=account_id, email=f"{account_id}@example.com", password_hash="-",
                status="active", is_admin=False, email_verified_at=None,
                created_at="2026-11-21T00:00:00Z",
            ))  # fmt: skip
        _, secret = await keys.create(
            "enterprise" if change == "limits" else "free", None, CustomLimits(),
            account_id=account_id if change == "account" else None,
        )  # fmt: skip
    headers = {"Authorization": f"Bearer {secret}"}
    for _ in range(2):  # the second answer comes from the kept key
        first = await client.get("/v1/properties/t-000", headers=headers)
        assert first.status_code == 200
    if change == "own process":
        if store.backend != "embedded":
            return  # the app runs on the test client's own loop, which PostgreSQL's pool minds
        services = app.state.services
        await services.keys.set_plan(secret, "developer", CustomLimits())
    else:
        async with keys_of(store.url) as keys:
            if change == "plan":
                await keys.set_plan(secret, "developer", CustomLimits())
            elif change == "limits":
                await keys.set_plan(secret, "enterprise", CustomLimits(per_minute=7))
            elif change == "revoke":
                await keys.revoke(secret)
            else:
                await AccountRepository(keys.db).set_status(account_id, "disabled")
    response = await client.get("/v1/properties/t-000", headers=headers)
    if change in ("revoke", "account"):
        assert response.status_code == 401
        assert response.json()["error"]["code"] == "revoked_api_key"
    else:
        assert response.status_code == 200
        assert response.headers["x-ratelimit-limit"] == ("7" if change == "limits" else "100")
