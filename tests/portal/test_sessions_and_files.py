"""Transport security, session lifetimes, and the portal's files kept from other users."""

from __future__ import annotations

import os
import stat
from typing import Any

from tests.portal.conftest import Person

HSTS = "strict-transport-security"


async def test_https_pages_and_answers_carry_hsts(person: Person, fresh: Any) -> None:
    assert HSTS not in (await person.client.get("/")).headers  # plain http: the header is void
    client, _, make_key = await fresh(cache_ttl=0, public_url="https://api.example.com")
    for path in ("/", "/login", "/nowhere", "/health"):
        answer = await client.get(path)
        assert "max-age=" in answer.headers[HSTS], path
    api = await client.get(
        "/v1/auth/status", headers={"Authorization": f"Bearer {await make_key()}"}
    )
    assert "max-age=" in api.headers[HSTS]


async def test_a_session_ends_at_its_absolute_lifetime_however_active(person: Person) -> None:
    await person.sign_up("abe@example.com")
    for _ in range(3):  # seen every ten days: never idle
        person.clock.advance(10 * 86_400 - 60)
        assert (await person.client.get("/dashboard", follow_redirects=False)).status_code == 200
    person.clock.advance(2 * 86_400)  # 32 days since sign-in
    away = await person.client.get("/dashboard", follow_redirects=False)
    assert away.status_code == 303 and away.headers["location"] == "/login"


async def test_get_on_the_keys_form_leads_to_the_dashboards_keys(person: Person) -> None:
    away = await person.client.get("/dashboard/keys", follow_redirects=False)
    assert away.status_code == 303 and away.headers["location"] == "/login"
    await person.sign_up("bea@example.com")
    there = await person.client.get("/dashboard/keys", follow_redirects=False)
    assert there.status_code == 303 and there.headers["location"] == "/dashboard#keys"
    page = await person.client.get("/dashboard/keys")
    assert page.status_code == 200 and 'id="keys"' in page.text


def private(path: Any, mode: int) -> bool:
    return stat.S_IMODE(os.stat(path).st_mode) == mode


async def test_mail_and_the_accounts_store_are_private_to_the_service(
    person: Person, fresh: Any
) -> None:
    await person.sign_up("cal@example.com")
    (mail,) = sorted(person.outbox.glob("*.eml"))
    assert private(person.outbox, 0o700) and private(mail, 0o600)
    if fresh.store.backend == "embedded":
        store = fresh.store.folder / "propdata-accounts.db"
        assert private(store, 0o600)
        for extra in (store.with_name(store.name + "-wal"), store.with_name(store.name + "-shm")):
            assert not extra.exists() or private(extra, 0o600), extra
