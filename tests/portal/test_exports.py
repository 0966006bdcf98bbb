"""A download from GET /dashboard/exports counts as one request of the account's paying key,
as the API's download with that key would: a failed one is given back, and a key with none
left gets the 429 page and no bytes (both configs)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from propdata.accounts.keys import CustomLimits, KeyService
from propdata.config import accounts_url
from propdata.exports.snapshot import export
from propdata.kit.db import connect
from tests.portal.conftest import Person, new_key_of


@pytest.fixture
async def person(
    fresh: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> AsyncIterator[Person]:
    """A visitor on a fresh store whose app serves the snapshots under tmp_path/exports."""
    monkeypatch.chdir(tmp_path)
    client, clock, make_key = await fresh(cache_ttl=0, export_dir=str(tmp_path / "exports"))
    db = await connect(accounts_url(fresh.store.url))
    yield Person(client, clock, make_key, tmp_path / "outbox", db)
    await db.close()


async def test_a_dashboard_download_is_one_request_of_the_paying_key(
    person: Person, fresh: Any, tmp_path: Path
) -> None:
    await person.sign_up("paula@example.com")
    key = new_key_of((await person.client.get("/dashboard")).text)
    assert key is not None
    assert person.db is not None
    await KeyService(person.db, person.clock).set_plan(
        key, "enterprise", CustomLimits(per_minute=3)
    )
    data = await fresh.db()
    try:
        snapshot = await export(data, tmp_path / "exports", "csv")
    finally:
        await data.close()
    files = f"/dashboard/exports/{snapshot.id}/files"
    auth = {"Authorization": f"Bearer {key}"}

    def remaining(answer: Any) -> int:
        return int(answer.headers["x-ratelimit-remaining"])

    assert remaining(await person.client.get("/v1/properties/t-000", headers=auth)) == 2
    missing = await person.client.get(f"{files}/properties/../x.csv")
    assert missing.status_code == 404 and "text/html" in missing.headers["content-type"]
    assert remaining(await person.client.get("/v1/properties/t-000", headers=auth)) == 1
    whole = await person.client.get(f"{files}/markets.csv")
    assert whole.status_code == 200
    assert whole.content == (tmp_path / "exports" / snapshot.id / "markets.csv").read_bytes()
    refused = await person.client.get(f"{files}/markets.csv")
    assert refused.status_code == 429 and "text/html" in refused.headers["content-type"]
    assert "Rate limit of 3 requests per minute" in refused.text
    assert "retry-after" in refused.headers and "content-disposition" not in refused.headers
    assert whole.content.splitlines()[0] not in refused.content  # no byte of the file
    assert (await person.client.get("/v1/properties/t-000", headers=auth)).status_code == 429
