"""Keys: missing, malformed, unknown, revoked; the auth status answer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from propdata.accounts.service import CustomLimits, KeyCommandError, KeyService, keys_of
from propdata.kit import crypto
from propdata.kit.db import SQLiteDatabase
from tests.conftest import Store


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
